"""The value rules of bob's formats, as data: field, predicate, error class, message.

Standard library only, so that every user takes the same entry: the schemas, each ``examine``, the typed constructors,
``bob-run``'s fast path, the inspect reports and the rule tables in ``formats/*.md``. In Python a rule is stated here
and nowhere else (``tests/house/test_one_home.py``, naming the fuzz oracle that transcribes some on purpose); the native
core states the state rules again, for ``bob.core.resume_problem``, and ``tests/formats/test_rules.py`` holds the two
equal. Each predicate takes the values it judges (a rule over two fields takes both) and returns True when they are
allowed."""

from __future__ import annotations

import math

from bob.errors import BadValue, ContractMismatch, FormatError, StateRefused
from bob.formats.constants import (CHUNK_BYTES, CHUNK_TAGS, EMPTY_PROMPT, ENVELOPE_FORMAT_VERSION, INPUT_FORMAT_VERSION,
                                   MAX_HEADER_BYTES, TRACE_UPDATES, TRACE_VERSION, U64_MAX, UPDATES_PER_INVOCATION,
                                   VOCABULARY)
from bob.formats.layout import F32_EXPONENT, F32_MAGNITUDE, F32_SIGN, HEADER_ALIGNMENT

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any, Callable

__all__ = ["ValueRule", "INPUT_VERSION", "TARGET_AGREES", "PROMPT_WORD", "ENVELOPE_VERSION", "HEADER_BYTES",
           "CHUNK_COUNT", "CHUNK_TAG", "CHUNK_OFFSET", "CHUNK_LENGTH", "PADDING", "FINITE", "V_NOT_NEGATIVE",
           "MOMENTS_ZERO_AT_STEP_0", "ROOM_FOR_UPDATES", "chunk_offset", "VALIDITY", "TOKEN", "INVALID_TOKEN",
           "TRACE_VERSION_RULE", "TRACE_STEP_BEFORE", "TRACE_UPDATE_COUNT", "TRACE_CONTRACT", "TRACE_STEP", "TRACE_LOSS",
           "RULES", "prompt_word_ok"]

class ValueRule:
    """One rule: ``field`` must satisfy ``ok``; a value that does not is refused with ``error(field, message,
    expected=expected, …)``. ``given`` is the wording for a value a caller passed to a typed constructor (the reader's
    ``message`` speaks of the file), when it differs."""

    __slots__ = ("field", "ok", "error", "message", "expected", "given", "bad")
    field: str
    ok: "Callable[..., bool]"
    error: "type[FormatError]"
    message: str
    expected: "Any"
    given: str
    bad: "Callable[[Any, Any], Any] | None"

    def __init__(self, field: str, ok: "Callable[..., bool]", message: str, expected: "Any",
                 error: "type[FormatError]" = BadValue, given: "str | None" = None,
                 bad: "Callable[[Any, Any], Any] | None" = None) -> None:
        self.field = field
        self.ok = ok
        self.error = error
        self.message = message
        self.expected = expected
        self.given = given or message
        # A rule over every value of a plane also comes as ``bad(np, plane)``: the mask of the values ``ok`` refuses,
        # computed by NumPy for the whole plane (this module imports no NumPy; the caller passes it in).
        # tests/formats/test_rules.py holds the two equal on every kind of float.
        self.bad = bad

    def finding(self, actual: "Any", *, offset: "int | None" = None, index: "int | None" = None,
                expected: "Any" = None, given: bool = False, **words: "Any") -> FormatError:
        """The refusal of ``actual`` (``expected`` overrides the rule's own, for a
        value that depends on others; ``words`` fill the message's ``{names}``)."""
        message = self.given if given else self.message
        field = words.pop("field", self.field)
        return self.error(field, message.format(index=index, **words) if words else message,
                          expected=self.expected if expected is None else expected, actual=actual,
                          offset=offset, index=index)

    def __repr__(self) -> str:
        return f"ValueRule({self.field!r}, {self.message!r})"


def prompt_word_ok(word: int) -> bool:
    """A prompt word is a byte or the empty prompt's word (§3)."""
    return 0 <= word < VOCABULARY or word == EMPTY_PROMPT


# ------------------------------------------------------------------ bob-input v1 (§3)
INPUT_VERSION = ValueRule("version", lambda v: v == INPUT_FORMAT_VERSION, "unsupported input record version",
                          INPUT_FORMAT_VERSION)
TARGET_AGREES = ValueRule("targets", lambda widened, target: widened == target,
                          "the widened target differs from the pair's target", "the pair's target")
PROMPT_WORD = ValueRule("prompt_words", prompt_word_ok,
                        f"a prompt word is a byte (< {VOCABULARY}) or 0xFFFFFFFF for an empty prompt",
                        f"< {VOCABULARY} or 0xffffffff",
                        given=f"a prompt word is a byte (< {VOCABULARY}) or 0xFFFFFFFF")

# ------------------------------------------------------------------ bob-envelope v1 (§5)
ENVELOPE_VERSION = ValueRule("version", lambda v: v == ENVELOPE_FORMAT_VERSION, "unsupported envelope version",
                             ENVELOPE_FORMAT_VERSION)
HEADER_BYTES = ValueRule("header_bytes", lambda v: v % HEADER_ALIGNMENT == 0 and v <= MAX_HEADER_BYTES,
                         f"header_bytes must be a multiple of {HEADER_ALIGNMENT} and at most {MAX_HEADER_BYTES}",
                         f"a multiple of {HEADER_ALIGNMENT}, at most {MAX_HEADER_BYTES}")


def chunk_offset(header_bytes: int, index: int, chunk_bytes: int = CHUNK_BYTES) -> int:
    """Where chunk ``index`` starts: right after the header, the planes in order (§5)."""
    return header_bytes + index * chunk_bytes


CHUNK_COUNT = ValueRule("chunk_count", lambda n: n == len(CHUNK_TAGS), "there is one chunk per plane", len(CHUNK_TAGS))
CHUNK_TAG = ValueRule("chunk_table.tag", lambda tag, index: tag == CHUNK_TAGS[index], "chunk {index} is plane {plane}",
                      "P, M, V in order")
CHUNK_OFFSET = ValueRule("chunk_table.offset", lambda offset, want: offset == want,
                         "chunk i starts at header_bytes + i * chunk_bytes", "header_bytes + i * chunk_bytes")
CHUNK_LENGTH = ValueRule("chunk_table.length", lambda length: length == CHUNK_BYTES, "each chunk is chunk_bytes long",
                         CHUNK_BYTES)
PADDING = ValueRule("padding", lambda pad: pad.count(0) == len(pad), "padding bytes are zero", 0)

# ------------------------------------------------------------------ the state, for resuming (§5)
# The NumPy forms hold in any floating-point environment (formats/DECISIONS.md D17): under denormals-are-zero a
# subnormal compares as zero, so `plane < 0` would pass a negative subnormal V and `plane != 0` a subnormal moment at
# step 0; those two judge the bit patterns (binary32 as int32: the sign bit makes it negative), and `isfinite`, which
# subnormals do not change, is kept (tests/hostile/test_floating_point_environment.py). NumPy's functions, not its
# operators: docs/fuzzing.md (atheris kept every `array < 0`'s 64 KiB result; benchmarks/bench_fuzz.py).
NEGATIVE_ZERO_BITS = F32_SIGN - (1 << 32)  # -0.0 as an int32 (the least); every other signed value is above it
NEGATIVE_INFINITY_BITS = (F32_SIGN | F32_EXPONENT) - (1 << 32)  # -inf; from it down to -0.0 (excluded), the negatives


def _negative(np: "Any", plane: "Any") -> "Any":
    """Below zero: from -inf to the smallest negative subnormal (not -0.0, not a NaN)."""
    bits = np.asarray(plane, dtype=np.float32).view(np.int32)
    signed = np.less(bits, 0)  # the sign bit: these, -0.0 and the NaNs with it; a V bob wrote has none
    if not signed.any():
        return signed
    return np.logical_and(np.less_equal(bits, NEGATIVE_INFINITY_BITS), np.greater(bits, NEGATIVE_ZERO_BITS))


def _not_zero(np: "Any", plane: "Any") -> "Any":
    """Neither +0.0 nor -0.0."""
    bits = np.asarray(plane, dtype=np.float32).view(np.int32)
    any_bit = np.not_equal(bits, 0)  # all but +0.0; a fresh state's moments have none
    if not any_bit.any():
        return any_bit
    return np.not_equal(np.bitwise_and(bits, F32_MAGNITUDE), 0)


FINITE = ValueRule("P, M, V", math.isfinite, "{count} non-finite value(s) in plane {plane}; the first at {cell}",
                   "finite", error=StateRefused, bad=lambda np, plane: np.logical_not(np.isfinite(plane)))
V_NOT_NEGATIVE = ValueRule("V", lambda x: not x < 0, "{count} negative value(s) in plane V (a second moment is never "
                           "negative); the first at {cell}", ">= 0", error=StateRefused, bad=_negative)
MOMENTS_ZERO_AT_STEP_0 = ValueRule(
    "step", lambda step, moment: step != 0 or moment == 0,
    "step is 0 but plane {plane} is not all zero ({count} non-zero value(s); the first at {cell})",
    "M and V all zero at step 0", error=StateRefused, bad=_not_zero)
ROOM_FOR_UPDATES = ValueRule("step", lambda step: step <= U64_MAX - UPDATES_PER_INVOCATION,
                             f"no room for the next {UPDATES_PER_INVOCATION} updates in a u64",
                             f"at most {U64_MAX - UPDATES_PER_INVOCATION}", error=StateRefused)

# ------------------------------------------------------------------ predictions (§4)
VALIDITY = ValueRule("validity", lambda v: v in (0, 1), "validity is 0 or 1", "0 or 1")
TOKEN = ValueRule("token", lambda t: t < VOCABULARY, f"a token is a byte (< {VOCABULARY})", f"< {VOCABULARY}")
INVALID_TOKEN = ValueRule("token", lambda token, validity: validity != 0 or token == 0,
                          "an invalid prediction (validity 0) has token 0", 0)

# ------------------------------------------------------------------ bob-trace v2 (formats/trace.md)
TRACE_VERSION_RULE = ValueRule("version", lambda v: v == TRACE_VERSION, "unsupported trace version", TRACE_VERSION)
TRACE_UPDATE_COUNT = ValueRule("update_count", lambda n: n == TRACE_UPDATES,
                               "a trace holds one invocation: one entry per update", TRACE_UPDATES)
TRACE_CONTRACT = ValueRule("contract_sha256", lambda digest, v1: digest == v1,
                           "a trace of a run under another contract", "bob v1's (bob.formats.trace.contract_sha256())",
                           error=ContractMismatch)
TRACE_STEP_BEFORE = ValueRule("step_before", lambda s: s <= U64_MAX - TRACE_UPDATES,
                              "entry i's step, step_before + i + 1, would pass 2**64 - 1",
                              f"at most {U64_MAX - TRACE_UPDATES}")
TRACE_STEP = ValueRule("entries.step", lambda step, want: step == want,
                       "entry i is the update that makes step step_before + i + 1", "step_before + i + 1")
TRACE_LOSS = ValueRule("entries.loss", lambda loss: loss >= 0, "a mean cross-entropy (section 6.4) is never negative "
                       "or NaN (+inf: a pair's target of probability 0)", "at least 0")

RULES: "dict[str, tuple[ValueRule, ...]]" = {
    "input": (INPUT_VERSION, TARGET_AGREES, PROMPT_WORD),
    "envelope": (ENVELOPE_VERSION, HEADER_BYTES, CHUNK_COUNT, CHUNK_TAG, CHUNK_OFFSET, CHUNK_LENGTH, PADDING,
                 FINITE, V_NOT_NEGATIVE, MOMENTS_ZERO_AT_STEP_0, ROOM_FOR_UPDATES),
    "predictions": (VALIDITY, TOKEN, INVALID_TOKEN),
    "trace": (TRACE_VERSION_RULE, TRACE_UPDATE_COUNT, TRACE_CONTRACT, TRACE_STEP_BEFORE, TRACE_STEP, TRACE_LOSS),
}
"""Each format's value rules, in the order its ``examine`` checks them (the docs' rule tables)."""
