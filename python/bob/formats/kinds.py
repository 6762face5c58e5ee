"""Which of bob's formats a file holds, from its first bytes and its size, with the standard
library only: the rule of ``docs/bob-inspect.md``, "Detecting the kind" (the magics first,
since a valid predictions file can never start with one)."""

from __future__ import annotations

from bob.formats.constants import CHECKPOINT_MAGIC, INPUT_MAGIC, PREDICTION_BYTES, TRACE_MAGIC
from bob.text import show_bytes

__all__ = ["CHECKPOINT", "INPUT", "PREDICTIONS", "TRACE", "KINDS", "FORMATS", "ALIASES", "MAGIC_BYTES", "KIND_RULES",
           "detect_kind", "ends_inside"]

CHECKPOINT = "checkpoint"
INPUT = "input"
PREDICTIONS = "predictions"
TRACE = "trace"
KINDS = (CHECKPOINT, INPUT, PREDICTIONS, TRACE)
FORMATS = (INPUT, CHECKPOINT, PREDICTIONS)  # where a format is chosen (bob-fuzz; bob-inspect schema, then the trace)
ALIASES = {"ckpt": CHECKPOINT, "envelope": CHECKPOINT, "pred": PREDICTIONS}
"""The old short names, accepted wherever a format is named (one name each is shown)."""

MAGIC_BYTES = len(CHECKPOINT_MAGIC)
"""How many first bytes :func:`detect_kind` looks at."""
assert len(INPUT_MAGIC) == len(TRACE_MAGIC) == MAGIC_BYTES

KIND_RULES = (f"a checkpoint starts {show_bytes(CHECKPOINT_MAGIC)}, an input record {show_bytes(INPUT_MAGIC)}, "
              f"a trace {show_bytes(TRACE_MAGIC)}, predictions are {PREDICTION_BYTES} bytes")
"""The rule in words, for a refusal of a file of no known kind."""
_BY_MAGIC = {CHECKPOINT_MAGIC: CHECKPOINT, INPUT_MAGIC: INPUT, TRACE_MAGIC: TRACE}


def ends_inside(head: bytes, magic: bytes) -> bool:
    """Whether a file whose bytes are ``head`` ends inside ``magic`` (D1: cut short, not another file)."""
    return len(head) < len(magic) and magic.startswith(head)


def detect_kind(head: bytes, size: int) -> str | None:
    """``"checkpoint"``, ``"input"``, ``"trace"`` or ``"predictions"`` for a file of ``size`` bytes starting
    with ``head`` (at least its first :data:`MAGIC_BYTES` bytes, when it has
    that many), or ``None`` when it is none of bob's formats."""
    if size == 0:
        return CHECKPOINT
    cut = [kind for magic, kind in _BY_MAGIC.items() if ends_inside(bytes(head[:size]), magic)]
    if len(cut) == 1:  # cut short inside one magic: that kind, whose reader says where it ends
        return cut[0]
    return _BY_MAGIC.get(bytes(head[:MAGIC_BYTES]), PREDICTIONS if size == PREDICTION_BYTES else None)
