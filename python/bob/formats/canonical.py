"""The input record, the predictions and the trace as bob-run meets them, with the standard library only.

This module recognises bytes as *exactly* a valid input record and builds the predictions
and the trace, so that ``bob-run`` need not import construct and NumPy when nothing is
wrong; the schemas' ``examine`` functions stay the only source of refusals (a record not
recognised here goes to them). ``tests/formats/test_canonical.py`` holds this to the schemas.
"""

from __future__ import annotations

import struct

from bob.formats.constants import (CHUNK_BYTES, DATA, INPUT_FORMAT_VERSION, INPUT_MAGIC, LEARNER, PAYLOAD_BYTES,
                                   PREDICTION_BYTES, RECORD_BYTES, SEED, STATE, TRACE_MAGIC, TRACE_UPDATES,
                                   TRACE_VERSION, UPDATES_PER_INVOCATION)
from bob.formats.layout import INPUT, PREDICTION_RECORD, TRACE_ENTRY, TRACE_HEAD_STRUCT, U32, U64
from bob.formats.rules import PROMPT_WORD, TARGET_AGREES

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any, Callable, Sequence

__all__ = ["recognize_record", "predictions_bytes", "record_bytes", "contract_identity", "trace_bytes", "run_trace"]

_RECORD_HEAD = INPUT_MAGIC + U64.pack(INPUT_FORMAT_VERSION)
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


def record_bytes(contexts: bytes, targets: bytes, prompt_words: "Sequence[int]") -> bytes:
    """The input record of these pairs and prompt words, byte for byte (every
    valid record is its own canonical form: its digest is the file's)."""
    pairs = bytearray(2 * len(contexts))
    pairs[0::2], pairs[1::2] = bytes(contexts), bytes(targets)
    return b"".join((_RECORD_HEAD, pairs, struct.pack(_TARGETS.format or "", *targets),
                     struct.pack(_WORDS.format or "", *prompt_words)))


def contract_identity(strings: "tuple[bytes, ...]" = (STATE, LEARNER, DATA, SEED), payload_bytes: int = PAYLOAD_BYTES,
                      chunk_bytes: int = CHUNK_BYTES, updates: int = UPDATES_PER_INVOCATION) -> bytes:
    """The §2 contract as a checkpoint header stores it: the bytes a trace's ``contract_sha256`` is the SHA-256 of."""
    return b"".join(U32.pack(len(s)) + s for s in strings) + b"".join(U64.pack(n) for n in (payload_bytes, chunk_bytes,
                                                                                           updates))


def trace_bytes(contract_sha256: bytes, input_sha256: bytes, step_before: int, losses: "Sequence[float]",
                digests: "Sequence[tuple[bytes, bytes, bytes]]", digest: "Callable[[Any], bytes]") -> bytes:
    """The bob-trace v2 file (formats/trace.md) of one invocation: ``digests`` of P, M and V before its first
    update, then after each (``digest``: the SHA-256 function)."""
    if len(losses) != TRACE_UPDATES or len(digests) != TRACE_UPDATES + 1:
        raise ValueError(f"a trace has {TRACE_UPDATES} losses and {TRACE_UPDATES + 1} digests, got {len(losses)} and "
                         f"{len(digests)}")
    resumed, *after = digests
    body = TRACE_HEAD_STRUCT.pack(TRACE_MAGIC, TRACE_VERSION, contract_sha256, input_sha256, step_before, *resumed,
                                  TRACE_UPDATES) + b"".join(
        TRACE_ENTRY.pack(step_before + i + 1, loss, *planes) for i, (loss, planes) in enumerate(zip(losses, after)))
    return body + digest(body)


def run_trace(contexts: bytes, targets: bytes, prompt_words: "Sequence[int]", step_before: int,
              losses: "Sequence[float]", digests: "Sequence[tuple[bytes, bytes, bytes]]",
              digest: "Callable[[Any], bytes]") -> bytes:
    """The trace of a bob v1 run on the record of these pairs and prompt words (``bob-run --trace``)."""
    return trace_bytes(digest(contract_identity()), digest(record_bytes(contexts, targets, prompt_words)),
                       step_before, losses, digests, digest)
