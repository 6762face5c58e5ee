"""``bob-envelope`` v1: the checkpoint file (contract §5).

The header is a construct ``Struct`` that reads like the contract's table; its
digest is computed over a ``RawCopy`` of the header body; the three planes are
``Bytes`` fields of ``chunk_bytes`` with NumPy float32 views on them.

Checking is a list of named findings (:func:`examine`,
:func:`checkpoint_findings`) in the contract's order:

1. magic (a non-bob file is named as such), the size bound (65,536 + 786,432);
2. while parsing the header, in file order: version, ``header_bytes`` (a
   multiple of 64, at most 65,536), each length prefix against the bytes that
   remain and against 4,096, and any field the file ends inside; then
   ``header_bytes`` against the header's own length;
3. the header digest;
4. each contract field (§2);
5. the chunk table (count, tags, offsets, lengths);
6. the padding (all zero);
7. the exact file size (``header_bytes + payload_bytes``);
8. each chunk's SHA-256;
9. for resuming only: finite planes, no negative V, step 0 only with all-zero
   M and V, room for 10 more updates in a u64.

Problems in steps 1–2 stop the examination (nothing after them can be located);
a ``payload_bytes`` or ``chunk_bytes`` mismatch stops it after step 4 (the
layout is not v1's); a file too short to hold the planes stops it after step 7.
Anything else is one finding among others: a wrong learner and a damaged V
chunk are two findings. The loaders raise the first.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from construct import Bytes, Const, Container, Int32ul, Int64ul, RawCopy, Struct, Terminated, this

from bob.errors import (
    BadValue,
    f32_text,
    ContractMismatch,
    FormatError,
    IntegrityError,
    StateRefused,
    Truncated,
)
from bob.formats.contract import (
    CHUNK_BYTES,
    CONTRACT_FIELDS,
    MAX_CHECKPOINT_BYTES,
    MAX_HEADER_BYTES,
    PARAMETER_COUNT,
    PAYLOAD_BYTES,
    PLANE_NAMES,
    STRING_LIMIT,
    U64_MAX,
    UPDATES_PER_INVOCATION,
    V1,
    VOCABULARY,
    Contract,
)
from bob.formats.constants import CHECKPOINT_MAGIC, CHUNK_TAGS
from bob.formats.schema import (
    FieldRow,
    LengthPrefixed,
    Rule,
    Sha256Of,
    Table,
    ZeroPadding,
    _walk,
    as_bytes,
    const_value,
    magic_finding,
    parse,
)

__all__ = [
    "ENVELOPE",
    "ENVELOPE_HEADER",
    "HEADER_BODY",
    "CHUNK_ENTRY",
    "ENVELOPE_MAGIC",
    "CHUNK_TAGS",
    "HEADER_BYTES",
    "Checkpoint",
    "Examination",
    "examine",
    "checkpoint_findings",
    "load_checkpoint",
    "read_checkpoint_file",
    "canonical_header_bytes",
    "header_length",
]


ContractString = LengthPrefixed(STRING_LIMIT)
"""A contract string: u32 length (at most 4,096) + raw bytes."""

CHUNK_ENTRY = Struct(
    "tag" / Bytes(4) * "`P\\0\\0\\0`, `M\\0\\0\\0` or `V\\0\\0\\0`",
    "offset" / Int64ul * "absolute file offset of the chunk: header_bytes + i × chunk_bytes",
    "length" / Int64ul * "the chunk's length: chunk_bytes",
    "digest" / Bytes(32) * "SHA-256 of the chunk's bytes",
)

HEADER_BODY = Struct(
    "magic" / Const(CHECKPOINT_MAGIC) * "ASCII `BOB-CKPT`",
    "version" / Rule(Int64ul, lambda v: v == 1, 1, "unsupported envelope version")
    * "format version, u64 = 1",
    "header_bytes" / Rule(
        Int64ul,
        lambda v: v % 64 == 0 and v <= MAX_HEADER_BYTES,
        f"a multiple of 64, at most {MAX_HEADER_BYTES}",
        "header_bytes must be a multiple of 64 and at most 65536",
    )
    * "file offset of plane P: a multiple of 64, at most 65,536",
    "step" / Int64ul * "updates completed so far, u64",
    "state" / ContractString * "state contract (§2)",
    "learner" / ContractString * "learner contract: text + 5 × f32 (lr, β1, β2, ε, weight decay)",
    "data" / ContractString * "data contract (§2)",
    "seed" / ContractString * "initialization seed, `bob-seed-v1`",
    "payload_bytes" / Int64ul * "u64 = 786,432",
    "chunk_bytes" / Int64ul * "u64 = 262,144",
    "updates_per_invocation" / Int64ul * "u64 = 10",
    "chunk_count" / Int32ul * "u32 = 3",
    "chunk_table" / Table(len(CHUNK_TAGS), CHUNK_ENTRY) * "one 52-byte entry per plane: P, M, V",
)
"""The envelope header from the magic to the end of the chunk table."""

ENVELOPE_HEADER = Struct(
    "header" / RawCopy(HEADER_BODY),
    "header_digest" / Sha256Of(this.header.data) * "SHA-256 of every byte from offset 0 up to here",
)
"""The header body (as a RawCopy) and its digest: what a reader parses first."""

ENVELOPE = Struct(
    *ENVELOPE_HEADER.subcons,
    "padding" / ZeroPadding(lambda this: this.header.value.header_bytes - this.header.length - 32)
    * "zero bytes up to header_bytes",
    "P" / Bytes(CHUNK_BYTES) * "plane P (parameters), 65,536 × f32, row-major `context * 256 + next`",
    "M" / Bytes(CHUNK_BYTES) * "plane M (first moment), 65,536 × f32",
    "V" / Bytes(CHUNK_BYTES) * "plane V (second moment), 65,536 × f32",
    Terminated,
)
"""The whole bob-envelope v1 file."""

ENVELOPE_MAGIC: bytes = const_value(HEADER_BODY, "magic")
FIXED_HEAD = 32  # magic, version, header_bytes, step
TAIL_SIZE = 3 * 8 + 4 + CHUNK_ENTRY.sizeof() * len(CHUNK_TAGS) + 32  # after the seed, with the digest


def header_length(contract: Contract = V1) -> int:
    """Bytes from offset 0 to the end of the header digest for ``contract`` (447 for v1)."""
    strings = (contract.state, contract.learner, contract.data, contract.seed)
    return FIXED_HEAD + sum(4 + len(s) for s in strings) + TAIL_SIZE


def canonical_header_bytes(contract: Contract = V1) -> int:
    """The header length rounded up to a multiple of 64 (448 for v1)."""
    return -(-header_length(contract) // 64) * 64


HEADER_BYTES = canonical_header_bytes(V1)
assert HEADER_BYTES == 448 and header_length(V1) == 447


# --------------------------------------------------------------------------- #
# The typed checkpoint
# --------------------------------------------------------------------------- #


def _plane(value: Any, name: str) -> np.ndarray:
    arr = value if isinstance(value, np.ndarray) else np.asarray(value)
    if arr.shape != (PARAMETER_COUNT,):
        raise BadValue(name, "a plane holds 65536 values", expected=(PARAMETER_COUNT,), actual=str(arr.shape))
    if arr.dtype != np.float32 or not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr, dtype=np.float32)
    return arr


@dataclass(eq=False)
class Checkpoint:
    """A bob checkpoint: the step, the planes P, M, V and the header's contract.

    ``p``, ``m`` and ``v`` are writable float32 arrays of 65,536 (parameter
    order ``context * 256 + next``); the native core trains them in place.
    ``header_bytes`` is where plane P starts: 448 for every checkpoint the
    library makes; a loaded file keeps its own (a larger valid value), so
    :meth:`to_bytes` gives back exactly the bytes it was read from.
    """

    step: int
    p: np.ndarray
    m: np.ndarray
    v: np.ndarray
    header_bytes: int = HEADER_BYTES
    contract: Contract = field(default=V1)

    def __post_init__(self) -> None:
        self.p = _plane(self.p, "P")
        self.m = _plane(self.m, "M")
        self.v = _plane(self.v, "V")
        if not isinstance(self.step, (int, np.integer)) or not 0 <= int(self.step) <= U64_MAX:
            raise BadValue("step", "the step is a u64", actual=self.step)
        self.step = int(self.step)
        _check_header_bytes(int(self.header_bytes), self.contract)
        self.header_bytes = int(self.header_bytes)

    @classmethod
    def fresh(cls) -> "Checkpoint":
        """The fresh state at step 0 (§6.1), made by the native core."""
        from bob import core  # lazily: parsing never needs the core

        p, m, v = core.initial_planes(V1.seed, VOCABULARY)
        return cls(0, p, m, v)

    @property
    def invocations(self) -> int:
        """Invocations completed: ``step // 10``."""
        return self.step // UPDATES_PER_INVOCATION

    @property
    def planes(self) -> dict[str, np.ndarray]:
        return {"P": self.p, "M": self.m, "V": self.v}

    def to_bytes(self, header_bytes: int | None = None) -> bytes:
        """The envelope file. ``header_bytes`` defaults to the checkpoint's own
        (448 unless it was loaded from a file with a larger header)."""
        hb = self.header_bytes if header_bytes is None else int(header_bytes)
        _check_header_bytes(hb, self.contract)
        planes = [np.ascontiguousarray(a, dtype="<f4").tobytes() for a in (self.p, self.m, self.v)]
        c = self.contract
        table = [
            dict(tag=tag, offset=hb + i * c.chunk_bytes, length=c.chunk_bytes,
                 digest=hashlib.sha256(planes[i]).digest())
            for i, tag in enumerate(CHUNK_TAGS)
        ]
        body = dict(
            version=1, header_bytes=hb, step=self.step,
            state=c.state, learner=c.learner, data=c.data, seed=c.seed,
            payload_bytes=c.payload_bytes, chunk_bytes=c.chunk_bytes,
            updates_per_invocation=c.updates_per_invocation,
            chunk_count=len(CHUNK_TAGS), chunk_table=table,
        )
        return ENVELOPE.build(dict(header=dict(value=body), P=planes[0], M=planes[1], V=planes[2]))

    @classmethod
    def from_bytes(cls, data: bytes, *, for_resume: bool = True) -> "Checkpoint":
        return load_checkpoint(data, for_resume=for_resume)

    def copy(self) -> "Checkpoint":
        return Checkpoint(self.step, self.p.copy(), self.m.copy(), self.v.copy(), self.header_bytes, self.contract)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready description (the golden vectors' ``.json``)."""
        raw = self.to_bytes()
        return describe_envelope(raw)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Checkpoint):
            return NotImplemented
        return (
            self.step == other.step
            and self.header_bytes == other.header_bytes
            and self.contract == other.contract
            and all(
                np.array_equal(a.view(np.uint32), b.view(np.uint32))
                for a, b in ((self.p, other.p), (self.m, other.m), (self.v, other.v))
            )
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"Checkpoint(step={self.step}, invocations={self.invocations}, "
                f"header_bytes={self.header_bytes}, contract={'v1' if self.contract.is_v1 else 'non-v1'})")


def _check_header_bytes(hb: int, contract: Contract) -> None:
    need = header_length(contract)
    if hb % 64 or hb > MAX_HEADER_BYTES or hb < need:
        raise BadValue("header_bytes", f"a multiple of 64, at least the header's {need} bytes, at most 65536",
                       actual=hb)


# --------------------------------------------------------------------------- #
# Examining bytes
# --------------------------------------------------------------------------- #


@dataclass
class Examination:
    """What a reader found in a checkpoint's bytes.

    ``header`` is construct's parse of the header body (``None`` if it could
    not be parsed); ``planes`` the read-only float32 views (3 × 65,536) when all
    the payload bytes are there; ``findings`` every problem, in the contract's
    order. ``fresh`` is True for zero bytes (a fresh run).
    """

    size: int
    findings: list[FormatError] = field(default_factory=list)
    header: Container | None = None
    header_raw: bytes | None = None
    header_digest: bytes | None = None
    computed_header_digest: bytes | None = None
    planes: np.ndarray | None = None
    chunk_digests: tuple[bytes, ...] | None = None

    @property
    def fresh(self) -> bool:
        return self.size == 0

    @property
    def ok(self) -> bool:
        return not self.findings

    @property
    def header_end(self) -> int | None:
        return None if self.header_raw is None else len(self.header_raw) + 32

    @property
    def contract(self) -> Contract | None:
        h = self.header
        if h is None:
            return None
        return Contract(**{name: h[name] for name in CONTRACT_FIELDS})

    def header_rows(self) -> list[FieldRow]:
        """The layout of this file's header (offset, size, field, meaning), from the schema."""
        if self.header is None:
            return []
        rows: list[FieldRow] = []
        _walk(HEADER_BODY, self.header, 0, "", "", rows)
        return rows

    def offset_of(self, name: str) -> int | None:
        for row in self.header_rows():
            if row.field == name or row.field == f"{name}.length":
                return row.offset
        return None


def examine(data: bytes, *, for_resume: bool = True) -> Examination:
    """Check ``data`` as a bob-envelope v1 file and collect every finding."""
    data = as_bytes(data)
    n = len(data)
    ex = Examination(size=n)
    out = ex.findings
    if n == 0:
        return ex  # a fresh run's checkpoint
    problem = magic_finding(data, ENVELOPE_MAGIC, "a checkpoint (bob-envelope)")
    if problem is not None:
        out.append(problem)
        return ex
    if n > MAX_CHECKPOINT_BYTES:
        out.append(Truncated("file_size", "a checkpoint is never larger than 65536 + 786432 bytes",
                             expected=f"at most {MAX_CHECKPOINT_BYTES}", actual=n))
        return ex

    # -- 2. the header, parsed in file order ---------------------------------
    try:
        parsed = parse(ENVELOPE_HEADER, data)
    except FormatError as exc:
        out.append(exc)
        return ex
    h = parsed.header.value
    ex.header = h
    ex.header_raw = parsed.header.data
    ex.header_digest = parsed.header_digest
    end = parsed.header.length + 32
    hb = h.header_bytes
    if hb < end:
        out.append(BadValue("header_bytes", "header_bytes is smaller than the header itself",
                            expected=f"at least {end} (a multiple of 64)", actual=hb, offset=16))
        return ex

    # -- 3. header digest ------------------------------------------------------
    ex.computed_header_digest = hashlib.sha256(parsed.header.data).digest()
    if ex.computed_header_digest != parsed.header_digest:
        out.append(IntegrityError("header_digest", "the header's SHA-256 does not match its bytes",
                                  expected=ex.computed_header_digest, actual=parsed.header_digest,
                                  offset=end - 32))

    # -- 4. contract fields ------------------------------------------------------
    layout_ok = True
    for name in CONTRACT_FIELDS:
        want = getattr(V1, name)
        if h[name] != want:
            out.append(ContractMismatch(name, "differs from the bob v1 contract", expected=want,
                                        actual=h[name], offset=ex.offset_of(name)))
            if name in ("payload_bytes", "chunk_bytes"):
                layout_ok = False
    if not layout_ok:
        return ex

    # -- 5. chunk table ----------------------------------------------------------
    table_at = end - 32 - CHUNK_ENTRY.sizeof() * len(CHUNK_TAGS)
    if h.chunk_count != len(CHUNK_TAGS):
        out.append(BadValue("chunk_count", "there is one chunk per plane", expected=len(CHUNK_TAGS),
                            actual=h.chunk_count, offset=table_at - 4))
    for i, (entry, tag) in enumerate(zip(h.chunk_table, CHUNK_TAGS)):
        at = table_at + i * CHUNK_ENTRY.sizeof()
        if entry.tag != tag:
            out.append(BadValue("chunk_table.tag", f"chunk {i} is plane {PLANE_NAMES[i]}", expected=tag,
                                actual=entry.tag, offset=at, index=i))
        if entry.offset != hb + i * CHUNK_BYTES:
            out.append(BadValue("chunk_table.offset", "chunk i starts at header_bytes + i * chunk_bytes",
                                expected=hb + i * CHUNK_BYTES, actual=entry.offset, offset=at + 4, index=i))
        if entry.length != CHUNK_BYTES:
            out.append(BadValue("chunk_table.length", "each chunk is chunk_bytes long", expected=CHUNK_BYTES,
                                actual=entry.length, offset=at + 12, index=i))

    # -- 6. padding --------------------------------------------------------------
    pad = data[end:min(hb, n)]
    if pad.count(0) != len(pad):
        k = len(pad) - len(pad.lstrip(b"\0"))
        out.append(BadValue("padding", "padding bytes are zero", expected=0, actual=pad[k], offset=end + k,
                            index=k))

    # -- 7. exact size -----------------------------------------------------------
    want_size = hb + PAYLOAD_BYTES
    if n != want_size:
        out.append(Truncated("file_size", "the file is header_bytes + payload_bytes long",
                             expected=want_size, actual=n))
        if n < want_size:
            return ex

    # -- 8. chunk digests ----------------------------------------------------------
    view = memoryview(data)
    digests = tuple(
        hashlib.sha256(view[hb + i * CHUNK_BYTES: hb + (i + 1) * CHUNK_BYTES]).digest()
        for i in range(len(CHUNK_TAGS))
    )
    ex.chunk_digests = digests
    for i, (entry, digest) in enumerate(zip(h.chunk_table, digests)):
        if entry.digest != digest:
            out.append(IntegrityError(
                "chunk_table.digest",
                f"plane {PLANE_NAMES[i]} (bytes {hb + i * CHUNK_BYTES}..{hb + (i + 1) * CHUNK_BYTES - 1}) "
                "does not match the chunk table's SHA-256",
                expected=digest, actual=entry.digest, offset=table_at + i * CHUNK_ENTRY.sizeof() + 20, index=i))
    planes = np.frombuffer(data, dtype="<f4", count=3 * PARAMETER_COUNT, offset=hb).reshape(3, PARAMETER_COUNT)
    ex.planes = planes

    # -- 9. state, for resuming ------------------------------------------------------
    if for_resume:
        out.extend(_state_findings(h.step, planes, hb))
    return ex


def _where(index: int) -> str:
    return f"context {index // VOCABULARY}, next {index % VOCABULARY}"


def _state_findings(step: int, planes: np.ndarray, hb: int) -> list[FormatError]:
    out: list[FormatError] = []
    if not np.isfinite(planes).all():
        for i, name in enumerate(PLANE_NAMES):
            bad = np.flatnonzero(~np.isfinite(planes[i]))
            if bad.size:
                k = int(bad[0])
                out.append(StateRefused(
                    name, f"{bad.size} non-finite value(s) in plane {name}; the first at {_where(k)}",
                    expected="finite", actual=float(planes[i, k]), offset=hb + i * CHUNK_BYTES + 4 * k, index=k))
    v = planes[2]
    if (v < 0).any():
        neg = np.flatnonzero(v < 0)
        k = int(neg[0])
        out.append(StateRefused(
            "V", f"{neg.size} negative value(s) in plane V (a second moment is never negative); "
            f"the first at {_where(k)}",
            expected=">= 0", actual=float(v[k]), offset=hb + 2 * CHUNK_BYTES + 4 * k, index=k))
    if step == 0:
        for i in (1, 2):
            nz = np.flatnonzero(planes[i] != 0)
            if nz.size:
                k = int(nz[0])
                out.append(StateRefused(
                    "step", f"step is 0 but plane {PLANE_NAMES[i]} is not all zero "
                    f"({nz.size} non-zero value(s); the first at {_where(k)})",
                    expected=f"{PLANE_NAMES[i]} all zero at step 0", actual=0, offset=24))
                break
    if step > U64_MAX - UPDATES_PER_INVOCATION:
        out.append(StateRefused("step", "no room for the next 10 updates in a u64",
                                expected=f"at most {U64_MAX - UPDATES_PER_INVOCATION}", actual=step, offset=24))
    return out


def checkpoint_findings(data: bytes, *, for_resume: bool = True) -> list[FormatError]:
    """Every problem with ``data`` as a checkpoint, in the contract's order
    (empty for a valid file and for zero bytes, the fresh run)."""
    return examine(data, for_resume=for_resume).findings


def load_checkpoint(data: bytes, *, for_resume: bool = True) -> Checkpoint:
    """Parse and fully check a checkpoint; raise the first finding.

    Zero bytes are a fresh run: the state at step 0, made by the native core.
    ``for_resume=False`` skips the state checks (an inspector loads such files).
    """
    ex = examine(data, for_resume=for_resume)
    if ex.findings:
        raise ex.findings[0]
    if ex.fresh:
        return Checkpoint.fresh()
    assert ex.header is not None and ex.planes is not None
    planes = ex.planes.copy()  # one copy: the checkpoint owns writable planes
    ckpt = object.__new__(Checkpoint)
    ckpt.step = ex.header.step
    ckpt.p, ckpt.m, ckpt.v = planes[0], planes[1], planes[2]
    ckpt.header_bytes = ex.header.header_bytes
    ckpt.contract = V1
    return ckpt


def read_bounded(path: "str | os.PathLike[str]", limit: int, magic: bytes | None = None,
                 what: str = "a checkpoint (bob-envelope)") -> bytes | None:
    """A file's bytes, or None if it does not exist; never more than ``limit`` bytes are read.

    A regular file's size is taken with ``os.fstat`` first: if it is larger
    than ``limit`` it is not read — only its first bytes, to name a non-bob
    file as such (when ``magic`` is given) — and it is refused as
    :class:`Truncated` (``file_size``). Otherwise exactly ``st_size`` bytes are
    read. A pipe or device is read up to ``limit`` bytes, then probed for one
    more byte.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(path))
        if stat.S_ISREG(st.st_mode):
            if st.st_size <= limit:
                return f.read(st.st_size)
            size: object = st.st_size
            head = f.read(len(magic)) if magic is not None else b""
        else:
            data = f.read(limit)
            if len(data) < limit or not f.read(1):
                return data
            size = f"more than {limit}"
            head = data[: len(magic)] if magic is not None else b""
        if magic is not None:
            problem = magic_finding(head, magic, what)
            if problem is not None and not isinstance(problem, Truncated):
                raise problem
        raise Truncated("file_size", f"the file is larger than any valid one ({limit} bytes); it was not read",
                        expected=f"at most {limit}", actual=size)


def read_checkpoint_file(path: "str | os.PathLike[str]", *, for_resume: bool = True) -> Checkpoint:
    """Read and check a checkpoint file. A missing or empty file is the fresh state.

    The size is checked with ``os.fstat`` before the file is read whole; no
    more than 65,536 + 786,432 bytes are ever read.
    """
    data = read_bounded(path, MAX_CHECKPOINT_BYTES, ENVELOPE_MAGIC)
    return load_checkpoint(data or b"", for_resume=for_resume)


# --------------------------------------------------------------------------- #
# Description (golden JSON, inspectors)
# --------------------------------------------------------------------------- #


def describe_envelope(data: bytes) -> dict[str, Any]:
    """A JSON-ready description of a valid envelope file, from the schema's parse."""
    ex = examine(data, for_resume=False)
    if ex.findings:
        raise ex.findings[0]
    assert ex.header is not None and ex.planes is not None and ex.chunk_digests is not None
    h = ex.header
    contract = ex.contract
    assert contract is not None
    return {
        "format": "bob-envelope",
        "version": h.version,
        "size": ex.size,
        "sha256": hashlib.sha256(as_bytes(data)).hexdigest(),
        "header_bytes": h.header_bytes,
        "header_length": ex.header_end,
        "step": h.step,
        "invocations": h.step // UPDATES_PER_INVOCATION,
        "contract": {
            "state": h.state.decode("ascii", "backslashreplace"),
            "learner": {
                "text": h.learner[:-20].decode("ascii", "backslashreplace"),
                **{k: float(f32_text(x)) for k, x in (contract.learner_hyperparameters or {}).items()},
                "f32_hex": h.learner[-20:].hex(),
            },
            "data": h.data.decode("ascii", "backslashreplace"),
            "seed": h.seed.decode("ascii", "backslashreplace"),
            "payload_bytes": h.payload_bytes,
            "chunk_bytes": h.chunk_bytes,
            "updates_per_invocation": h.updates_per_invocation,
        },
        "chunk_count": h.chunk_count,
        "chunk_table": [
            {"tag": e.tag.rstrip(b"\0").decode("ascii", "backslashreplace"), "offset": e.offset,
             "length": e.length, "sha256": e.digest.hex()}
            for e in h.chunk_table
        ],
        "header_sha256": ex.header_digest.hex() if ex.header_digest else None,
        "planes": {
            name: {
                "first_words_hex": [f"{w:08x}" for w in ex.planes[i, :4].view("<u4").tolist()],
                "min": float(ex.planes[i].min()),
                "max": float(ex.planes[i].max()),
                "nonzero": int(np.count_nonzero(ex.planes[i])),
            }
            for i, name in enumerate(PLANE_NAMES)
        },
    }
