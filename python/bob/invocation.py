"""One invocation of contract §7, in memory: ``bob.invoke``.

:func:`advance` (defined in :mod:`bob.stepping`, which ``bob-run`` imports
without this module's dataclass machinery) is the one place in bob that sequences an invocation's math
(10 updates in the native core, the check that the new state can be resumed,
the predictions); :func:`invoke` (the library) and ``bob-run`` (the command,
on its own plane buffers) both call it, so they cannot drift apart.

::

    result = bob.invoke(record, checkpoint)      # checkpoint: b"" for a fresh run
    result.checkpoint.write("model.bob")
    result.predictions.write("predictions.bin")
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from bob.formats.constants import UPDATES_PER_INVOCATION
from bob.stepping import advance

if TYPE_CHECKING:  # pragma: no cover
    from bob.formats.envelope import Checkpoint
    from bob.formats.input_record import InputRecord
    from bob.formats.predictions import Predictions

__all__ = ["Invocation", "invoke", "advance"]

@dataclass(frozen=True)
class Invocation:
    """The result of one invocation: the new checkpoint and predictions, and how it went.

    Nothing here shares memory with what :func:`invoke` was given.
    """

    checkpoint: "Checkpoint"
    """The state after the 10 updates (step ``step_after``)."""
    predictions: "Predictions"
    """The prediction for each of the record's 3 prompts, from the new P."""
    losses: tuple[float, ...]
    """The loss before each of the 10 updates (contract §6.4)."""
    step_before: int
    step_after: int

    @property
    def fresh(self) -> bool:
        """True when the invocation started from the fresh state (step 0)."""
        return self.step_before == 0

    def checkpoint_bytes(self) -> bytes:
        """The new checkpoint file, byte for byte what ``bob-run`` writes."""
        return self.checkpoint.to_bytes()

    def predictions_bytes(self) -> bytes:
        """The 24-byte predictions file."""
        return self.predictions.to_bytes()


def invoke(record: "InputRecord | bytes", checkpoint: "Checkpoint | bytes" = b"", *,
           threads: int = 0) -> Invocation:
    """One invocation of contract §7 in memory; never mutates its arguments.

    ``record`` is an :class:`~bob.InputRecord` or its 1,564 bytes;
    ``checkpoint`` a :class:`~bob.Checkpoint`, a checkpoint file's bytes, or
    ``b""`` for the fresh state (§6.1). Bytes are checked fully (§3, §5) and
    refused with a :class:`~bob.FormatError` naming the field; a
    ``Checkpoint`` object is checked for resuming the same way. ``threads``
    (0: what the machine offers) changes no bit of the result.
    """
    from bob.formats.checks import load_checkpoint, state_findings
    from bob.formats.envelope import Checkpoint
    from bob.formats.input_record import InputRecord, load_input
    from bob.formats.predictions import Predictions

    if not isinstance(record, InputRecord):
        record = load_input(record)
    if isinstance(checkpoint, Checkpoint):
        findings = state_findings(checkpoint.step, (checkpoint.p, checkpoint.m, checkpoint.v))
        if findings:
            raise findings[0]
        start = checkpoint.copy()
    else:
        start = load_checkpoint(checkpoint)  # b"" -> the fresh state; a new object either way
    losses, records = advance(start.p, start.m, start.v, record.contexts, record.targets,
                              record.prompt_words, start.step, threads=threads)
    step_before = start.step
    start.step = step_before + UPDATES_PER_INVOCATION
    return Invocation(start, Predictions.from_core(records), tuple(float(x) for x in losses),
                      step_before, start.step)
