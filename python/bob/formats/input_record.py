"""``bob-input`` v1: the input record (contract §3), ``RECORD_BYTES`` long.

The schema reads like the contract's table; the tables of one entry per
byte value are ``Bytes`` fields with NumPy views on them.
"""

from __future__ import annotations

import hashlib
import os
import struct
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np
from construct import Const, Rebuild, Struct

from bob.arrays import is_masked
from bob.errors import BadValue, FormatError, Truncated, integer_field, ordered_items, shown_kind
from bob.formats.canonical import record_bytes
from bob.formats.constants import EMPTY_PROMPT, INPUT_FORMAT_VERSION, INPUT_MAGIC, PROMPTS, RECORD_BYTES, VOCABULARY
from bob.formats.files import INPUT_FILE, BobFile, Examined, as_bytes, magic_finding
from bob.formats.layout import INPUT, WORD_DTYPE
from bob.formats.rules import INPUT_VERSION, PROMPT_WORD, TARGET_AGREES
from bob.formats.schema import END, parse, ruled, schema_fields
from bob.text import plural

__all__ = ["INPUT_RECORD", "INPUT_MAGIC", "InputRecord", "InputExamination", "examine", "input_findings", "load_input",
           "read_input_file", "build_input", "prompt_word"]

PAIRS = VOCABULARY  # 256 pairs, K in the contract


INPUT_RECORD = Struct(
    *schema_fields(INPUT, {
        "magic": "ASCII `BOB-INPT`",
        "version": f"format version, u64 = {INPUT_FORMAT_VERSION}",
        "pairs": f"{VOCABULARY} pairs `(byte u8, target u8)`, in corpus order",
        "targets": f"{VOCABULARY} × u32: pair i's target, widened",
        "prompt_words": f"{PROMPTS} × u32: each prompt's last byte, or `0xFFFFFFFF` for an empty prompt",
    }, {
        "magic": lambda sc: Const(INPUT_MAGIC, sc),
        "version": ruled(INPUT_VERSION),
        "targets": lambda sc: Rebuild(sc, lambda this: struct.pack(INPUT["targets"].format or "", *this.pairs[1::2])),
    }),
    END,
)
"""The bob-input v1 schema (``RECORD_BYTES``), built from :data:`bob.formats.layout.INPUT`."""

assert INPUT_RECORD.sizeof() == RECORD_BYTES


def prompt_word(prompt: bytes) -> int:
    """A prompt's word: its last byte, or ``0xFFFFFFFF`` when it is empty (§3)."""
    prompt = bytes(prompt)
    return prompt[-1] if prompt else EMPTY_PROMPT


def _byte_table(value: Any, name: str) -> np.ndarray:
    """``PAIRS`` byte values as a record holds them: a uint8 array whose memory is a ``bytes``
    object's, so that nothing can make it writable again (the record is hashed by its bytes)."""
    if is_masked(value):
        raise BadValue(name, "a masked array is refused: every value is read, masked or not (pass np.ma.getdata "
                       "or .filled() of it)", actual=f"type {type(value).__name__}")
    array_like = isinstance(value, (bytes, bytearray, memoryview, np.ndarray)) or hasattr(value, "__array__") \
        or hasattr(value, "typecode")  # (an array.array)
    given = None if array_like else ordered_items(value)
    if given is not None:  # a list, a range: each item an integer (a bool is no byte), as given (never a float64)
        value = np.array([integer_field(v, name, "a byte value is an integer", i) for i, v in enumerate(given)], object)
    try:
        arr = np.frombuffer(value, np.uint8) if isinstance(value, (bytes, bytearray)) else np.asarray(value)
    except (TypeError, ValueError) as exc:  # a ragged list, an object NumPy cannot read
        raise BadValue(name, f"must hold {PAIRS} bytes ({type(exc).__name__})", actual=shown_kind(value)) from None
    if arr.shape != (PAIRS,):
        raise BadValue(name, f"must hold {PAIRS} bytes", expected=(PAIRS,), actual=str(arr.shape))
    if arr.dtype != np.uint8:  # the dtype, or the first value that is no byte
        if arr.dtype.kind not in "iu" and given is None:
            raise BadValue(name, "values must be bytes (integers 0 to 255)", actual=f"dtype {arr.dtype}")
        if (bad := np.flatnonzero(np.less(arr, 0) | np.greater(arr, 255))).size:
            raise BadValue(name, "values must be bytes (integers 0 to 255)", actual=int(arr[bad[0]]), index=int(bad[0]))
    return np.frombuffer(arr.astype(np.uint8).tobytes(), np.uint8)


def _words(value: Iterable[int]) -> tuple[int, int, int]:
    given = ordered_items(value)
    if given is None:
        raise BadValue("prompt_words", f"the prompt words are {PROMPTS} integers", actual=shown_kind(value))
    if len(given) != PROMPTS:
        raise BadValue("prompt_words", f"there are exactly {PROMPTS} prompts", expected=PROMPTS, actual=len(given))
    words = tuple(integer_field(w, "prompt_words", "a prompt word is an integer", i) for i, w in enumerate(given))
    for i, w in enumerate(words):
        if not PROMPT_WORD.ok(w):
            raise PROMPT_WORD.finding(w, index=i, given=True)
    return words  # type: ignore[return-value]


@dataclass(frozen=True, eq=False)
class InputRecord(BobFile):
    """A bob-input v1 record: one (context, target) pair per byte value, and a word per prompt.

    ``contexts`` and ``targets`` are read-only ``uint8`` arrays, one entry per pair;
    ``prompt_words`` holds each prompt's last byte or ``0xFFFFFFFF``.
    """

    contexts: np.ndarray
    targets: np.ndarray
    prompt_words: tuple[int, int, int]

    def __post_init__(self) -> None:
        object.__setattr__(self, "contexts", _byte_table(self.contexts, "contexts"))
        object.__setattr__(self, "targets", _byte_table(self.targets, "targets"))
        object.__setattr__(self, "prompt_words", _words(self.prompt_words))

    # -- views --------------------------------------------------------------
    @property
    def pairs(self) -> tuple[tuple[int, int], ...]:
        """The ``(context, target)`` pairs, in corpus order."""
        return tuple(zip(self.contexts.tolist(), self.targets.tolist()))

    @property
    def prompts(self) -> tuple[int | None, int | None, int | None]:
        """Each prompt's last byte, or None for an empty prompt."""
        return tuple(None if w == EMPTY_PROMPT else w for w in self.prompt_words)  # type: ignore[return-value]

    def context_counts(self) -> np.ndarray:
        """``c[r]``: how many pairs have context byte r (int64, one count per byte value)."""
        return np.bincount(self.contexts, minlength=VOCABULARY).astype(np.int64)

    def pair_counts(self) -> np.ndarray:
        """``h[r][j]``: how many pairs are ``(r, j)`` (int64, a count per pair of byte values)."""
        flat = self.contexts.astype(np.int64) * VOCABULARY + self.targets
        return np.bincount(flat, minlength=VOCABULARY * VOCABULARY).reshape(VOCABULARY, VOCABULARY)

    # -- bytes --------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """The canonical record's bytes, built as bob-run builds them (the schema reads them)."""
        return record_bytes(self.contexts.tobytes(), self.targets.tobytes(), self.prompt_words)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready description (the golden vectors' ``.json``)."""
        raw, counts = self.to_bytes(), self.context_counts()
        return {"format": "bob-input", "version": INPUT_FORMAT_VERSION, "size": len(raw),
                "sha256": hashlib.sha256(raw).hexdigest(), "pairs": [list(p) for p in self.pairs],
                "prompt_words": list(self.prompt_words),
                "context_counts": {str(r): int(counts[r]) for r in np.nonzero(counts)[0]}}

    def __reduce__(self) -> "tuple[Any, tuple[bytes]]":  # a copy or a pickle is built again: read-only tables
        return load_input, (self.to_bytes(),)

    def __repr__(self) -> str:
        return f"InputRecord(pairs={len(self.contexts)}, prompt_words={self.prompt_words!r})"


# -- Reading


@dataclass(eq=False)
class InputExamination(Examined):
    """What a reader found in an input record's bytes: every finding, in the contract's order, the fields as far as they
    could be read (``widened``: the u32 targets table) and the :class:`InputRecord` of a valid file."""

    size: int
    magic: bytes
    findings: list[FormatError] = field(default_factory=list)
    version: int | None = None
    contexts: np.ndarray | None = None
    targets: np.ndarray | None = None
    widened: list[int] | None = None
    prompt_words: list[int] | None = None
    record: InputRecord | None = None

    @property
    def target_mismatches(self) -> list[int]:
        """The pairs whose widened target is not the pair's (:data:`~bob.formats.rules.TARGET_AGREES`)."""
        return [p.index for p in self.findings if p.field == TARGET_AGREES.field and p.index is not None]


def examine(data: bytes) -> InputExamination:
    """Check ``data`` as a bob-input v1 record and collect every finding."""
    data = as_bytes(data, "the input record")
    ex = InputExamination(size=len(data), magic=data[INPUT["magic"].slice])
    problem = magic_finding(data, *INPUT_FILE)
    if problem is None and len(data) != RECORD_BYTES:
        problem = Truncated("file_size", f"an input record is exactly {RECORD_BYTES} bytes", expected=RECORD_BYTES,
                            actual=len(data))
    if problem is None:
        try:
            rec = parse(INPUT_RECORD, data)
        except FormatError as exc:
            problem = exc
    if problem is not None:
        ex.findings.append(problem)
        return ex
    ex.version = rec.version
    ex.contexts, ex.targets = (np.frombuffer(rec.pairs[k::2], np.uint8) for k in (0, 1))  # read-only for good
    widened = np.frombuffer(rec.targets, dtype=WORD_DTYPE)
    ex.widened = widened.tolist()
    for i in np.flatnonzero(~TARGET_AGREES.ok(widened, ex.targets)).tolist():  # the rule on the whole table at once
        ex.findings.append(TARGET_AGREES.finding(ex.widened[i], expected=int(ex.targets[i]),
                                                 offset=INPUT["targets"].item(i), index=i))
    ex.prompt_words = words = np.frombuffer(rec.prompt_words, dtype=WORD_DTYPE).tolist()
    for i, w in enumerate(words):
        if not PROMPT_WORD.ok(w):
            ex.findings.append(PROMPT_WORD.finding(w, offset=INPUT["prompt_words"].item(i), index=i))
    if not ex.findings:
        ex.record = InputRecord._trusted(contexts=ex.contexts, targets=ex.targets, prompt_words=tuple(words))
    return ex


def input_findings(data: bytes) -> list[FormatError]:
    """Every problem with ``data`` as a bob-input v1 record, in the contract's order; empty if it is valid."""
    return examine(data).findings


def load_input(data: bytes) -> InputRecord:
    """Parse and check a bob-input v1 record; raise the first finding."""
    return InputRecord.from_bytes(data)


def read_input_file(path: "str | os.PathLike[str]") -> InputRecord:
    """Read and check an input record; a file larger than ``RECORD_BYTES`` is refused unread."""
    return InputRecord.read(path)


InputRecord._format = (examine, "record", RECORD_BYTES, INPUT_FILE)


def build_input(corpus: bytes, prompts: Sequence[bytes]) -> InputRecord:
    """The fixture builder (§3): pair k is ``(corpus[k mod n], corpus[(k+1) mod n])``;
    refuses (BadValue) a corpus of fewer than 2 bytes and a prompt count other than ``PROMPTS``."""
    corpus = as_bytes(corpus, "the corpus")
    given = None if isinstance(prompts, (bytes, bytearray, str)) else ordered_items(prompts)
    if given is None:
        raise TypeError(f"prompts is a list of {PROMPTS} byte strings")
    if len(corpus) < 2:
        raise BadValue("corpus", "a corpus needs at least 2 bytes",
                       expected="at least 2 bytes", actual=plural(len(corpus), "byte"))
    if len(given) != PROMPTS:
        raise BadValue("prompts", f"there are exactly {PROMPTS} prompts", expected=PROMPTS, actual=len(given))
    words = []
    for index, p in enumerate(given):
        if isinstance(p, str):
            raise TypeError("a prompt is bytes, not str (use os.fsencode)")
        words.append(prompt_word(as_bytes(p, f"prompt {index}")))
    n = len(corpus)
    cyc = np.frombuffer(corpus[: min(n, PAIRS + 1)], dtype=np.uint8)
    k = np.arange(PAIRS)  # when n > 256 only the first 257 bytes take part
    return InputRecord(cyc[k % n], cyc[(k + 1) % n], tuple(words))  # type: ignore[arg-type]
