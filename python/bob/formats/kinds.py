"""Which of bob's formats a file holds, from its first bytes and its size.

Standard library only. The rule (``docs/bob-inspect.md``, "Detecting the kind"):

1. a file that starts with the checkpoint magic is a checkpoint, and so are
   zero bytes (a fresh run's checkpoint, contract §5);
2. a file that starts with the input magic is an input record;
3. a file that starts with the trace magic is a trace (formats/trace.md);
4. a file of exactly :data:`~bob.formats.constants.PREDICTION_BYTES` is
   predictions. The magics are checked first: a valid predictions file can
   never start with a bob magic, the trace's included (its first validity word,
   bytes 4 to 8, would be ASCII letters, never 0 or 1);
5. anything else is of no known kind (``None``).
"""

from __future__ import annotations

from bob.formats.constants import CHECKPOINT_MAGIC, INPUT_MAGIC, PREDICTION_BYTES, TRACE_MAGIC
from bob.text import show_bytes

__all__ = ["CHECKPOINT", "INPUT", "PREDICTIONS", "TRACE", "KINDS", "ALIASES", "MAGIC_BYTES", "KIND_RULES", "detect_kind"]

CHECKPOINT = "checkpoint"
INPUT = "input"
PREDICTIONS = "predictions"
TRACE = "trace"
KINDS = (CHECKPOINT, INPUT, PREDICTIONS, TRACE)
ALIASES = {"ckpt": CHECKPOINT, "envelope": CHECKPOINT, "pred": PREDICTIONS}
"""The old short names, accepted wherever a format is named (one name each is shown)."""

MAGIC_BYTES = len(CHECKPOINT_MAGIC)
"""How many first bytes :func:`detect_kind` looks at."""
assert len(INPUT_MAGIC) == len(TRACE_MAGIC) == MAGIC_BYTES

KIND_RULES = (f"a checkpoint starts {show_bytes(CHECKPOINT_MAGIC)}, an input record {show_bytes(INPUT_MAGIC)}, "
              f"a trace {show_bytes(TRACE_MAGIC)}, predictions are {PREDICTION_BYTES} bytes")
"""The rule in words, for a refusal of a file of no known kind."""


def detect_kind(head: bytes, size: int) -> str | None:
    """``"checkpoint"``, ``"input"``, ``"trace"`` or ``"predictions"`` for a file of ``size`` bytes starting
    with ``head`` (at least its first :data:`MAGIC_BYTES` bytes, when it has
    that many), or ``None`` when it is none of bob's formats."""
    magic = bytes(head[:MAGIC_BYTES])
    if magic == CHECKPOINT_MAGIC or size == 0:
        return CHECKPOINT
    if magic == INPUT_MAGIC:
        return INPUT
    if magic == TRACE_MAGIC:
        return TRACE
    if size == PREDICTION_BYTES:
        return PREDICTIONS
    return None
