"""The input record and the predictions as bob-run meets them, with the standard library only.

The construct schemas (:mod:`~bob.formats.input_record`,
:mod:`~bob.formats.predictions`) and their ``examine`` functions are the
only source of refusals. This module recognises bytes as *exactly* a valid
input record, and builds the predictions file, so that ``bob-run`` need not
import construct and NumPy when nothing is wrong; a record it does not
recognise goes to the schema, which accepts it or says precisely what is
wrong. (The checkpoint's own fast path is :mod:`bob.formats.checkpoint`'s.)
``tests/formats/test_canonical.py`` holds this to the schemas.
"""

from __future__ import annotations

from bob.formats.constants import INPUT_MAGIC, PREDICTION_BYTES, RECORD_BYTES
from bob.formats.layout import INPUT, PREDICTION_RECORD, U64
from bob.formats.rules import PROMPT_WORD, TARGET_AGREES

VERSION = 1
_RECORD_HEAD = INPUT_MAGIC + U64.pack(VERSION)
_PAIRS = INPUT["pairs"]
_TARGETS = INPUT["targets"]
_WORDS = INPUT["prompt_words"]
assert len(_RECORD_HEAD) == _PAIRS.offset


def recognize_record(data: "bytes | bytearray") -> "tuple[bytes, bytes, tuple[int, ...]] | None":
    """(contexts, targets, prompt words) if ``data`` is a valid input record; else None."""
    if len(data) != RECORD_BYTES or data[:_PAIRS.offset] != _RECORD_HEAD:
        return None
    pairs = bytes(data[_PAIRS.slice])
    contexts, targets = pairs[0::2], pairs[1::2]
    if not all(map(TARGET_AGREES.ok, _TARGETS.unpack(data), targets)):
        return None
    words = _WORDS.unpack(data)
    if not all(map(PROMPT_WORD.ok, words)):
        return None
    return contexts, targets, words


def predictions_bytes(records: "list[tuple[int, int]]") -> bytes:
    """The predictions file for (token, validity) records."""
    data = b"".join(PREDICTION_RECORD.pack(token, validity) for token, validity in records)
    if len(data) != PREDICTION_BYTES:
        raise ValueError(f"predictions are {PREDICTION_BYTES} bytes, got {len(data)}")
    return data
