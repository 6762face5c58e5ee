"""The value rules of bob's three formats, as data: field, predicate, error class, message.

Standard library only, so every user takes the same entry: the construct
schemas (:class:`bob.formats.schema.Rule` wraps a field with its entry), each
format's ``examine`` (one finding per broken entry), the typed constructors
(``InputRecord``, ``Predictions``), ``bob-run``'s fast path
(:mod:`bob.formats.canonical`, plain function calls), the inspect reports
(``ok`` flags) and the generated rule tables in ``formats/*.md``
(:func:`bob.formats.docs.rules_table`). A rule is stated here and nowhere
else (``tests/house/test_one_home.py`` holds that).

Each predicate takes the values it judges (a rule over two fields, such as
the target agreement, takes both) and returns True when they are allowed.
"""

from __future__ import annotations

from bob.errors import BadValue, FormatError
from bob.formats.constants import EMPTY_PROMPT, MAX_HEADER_BYTES, VOCABULARY
from bob.formats.layout import HEADER_ALIGNMENT

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any, Callable

__all__ = [
    "ValueRule",
    "INPUT_VERSION",
    "TARGET_AGREES",
    "PROMPT_WORD",
    "ENVELOPE_VERSION",
    "HEADER_BYTES",
    "VALIDITY",
    "TOKEN",
    "INVALID_TOKEN",
    "RULES",
    "prompt_word_ok",
]

class ValueRule:
    """One rule: ``field`` must satisfy ``ok``; a value that does not is refused
    with ``error(field, message, expected=expected, …)``. ``given`` is the
    wording for a value a caller passed to a typed constructor (the reader's
    ``message`` speaks of the file), when it differs."""

    __slots__ = ("field", "ok", "error", "message", "expected", "given")

    def __init__(self, field: str, ok: "Callable[..., bool]", message: str, expected: "Any",
                 error: "type[FormatError]" = BadValue, given: "str | None" = None) -> None:
        self.field = field
        self.ok = ok
        self.error = error
        self.message = message
        self.expected = expected
        self.given = given or message

    def finding(self, actual: "Any", *, offset: "int | None" = None, index: "int | None" = None,
                expected: "Any" = None, given: bool = False) -> FormatError:
        """The refusal of ``actual`` (``expected`` overrides the rule's own, for a value that depends on others)."""
        return self.error(self.field, self.given if given else self.message,
                          expected=self.expected if expected is None else expected, actual=actual,
                          offset=offset, index=index)

    def __repr__(self) -> str:
        return f"ValueRule({self.field!r}, {self.message!r})"


def prompt_word_ok(word: int) -> bool:
    """A prompt word is a byte or the empty prompt's word (§3)."""
    return 0 <= word < VOCABULARY or word == EMPTY_PROMPT


# ------------------------------------------------------------------ bob-input v1 (§3)
INPUT_VERSION = ValueRule("version", lambda v: v == 1, "unsupported input record version", 1)
TARGET_AGREES = ValueRule("targets", lambda widened, target: widened == target,
                          "the widened target differs from the pair's target", "the pair's target")
PROMPT_WORD = ValueRule("prompt_words", prompt_word_ok,
                        "a prompt word is a byte (< 256) or 0xFFFFFFFF for an empty prompt", "< 256 or 0xffffffff",
                        given="a prompt word is a byte (< 256) or 0xFFFFFFFF")

# ------------------------------------------------------------------ bob-envelope v1 (§5)
ENVELOPE_VERSION = ValueRule("version", lambda v: v == 1, "unsupported envelope version", 1)
HEADER_BYTES = ValueRule("header_bytes", lambda v: v % HEADER_ALIGNMENT == 0 and v <= MAX_HEADER_BYTES,
                         f"header_bytes must be a multiple of {HEADER_ALIGNMENT} and at most {MAX_HEADER_BYTES}",
                         f"a multiple of {HEADER_ALIGNMENT}, at most {MAX_HEADER_BYTES}")

# ------------------------------------------------------------------ predictions (§4)
VALIDITY = ValueRule("validity", lambda v: v in (0, 1), "validity is 0 or 1", "0 or 1")
TOKEN = ValueRule("token", lambda t: t < VOCABULARY, "a token is a byte (< 256)", "< 256")
INVALID_TOKEN = ValueRule("token", lambda token, validity: validity != 0 or token == 0,
                          "an invalid prediction (validity 0) has token 0", 0)

RULES = {
    "input": (INPUT_VERSION, TARGET_AGREES, PROMPT_WORD),
    "envelope": (ENVELOPE_VERSION, HEADER_BYTES),
    "predictions": (VALIDITY, TOKEN, INVALID_TOKEN),
}
"""Each format's value rules, in the order its ``examine`` checks them (the docs' rule tables)."""
