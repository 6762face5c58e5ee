"""``bob-envelope`` v1, the checkpoint (contract §5): its one door.

The format, the order of :func:`examine`'s findings and where it stops are specified once, in ``formats/envelope.md``.
The rooms, each importing only those before it: :mod:`.header` (standard library: bob-run's fast path), :mod:`.schema`
(construct), :mod:`.state`, :mod:`.examination` and :mod:`.typed`. Names are imported lazily, so that ``from
bob.formats.checkpoint import recognize_checkpoint`` imports neither NumPy nor construct."""

from __future__ import annotations

from bob.formats import lazy_names

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any, Callable

    from bob.formats.checkpoint.header import *
    from bob.formats.checkpoint.schema import *
    from bob.formats.checkpoint.state import *
    from bob.formats.checkpoint.examination import *
    from bob.formats.checkpoint.typed import *

# The names each room offers (its __all__), read here without importing it.
_ROOMS = {
    "header": ("HEADER_BYTES", "CHECKPOINT_BYTES", "envelope_header", "checkpoint_header", "chunk_digests",
               "seal_checkpoint", "build_checkpoint", "has_canonical_prefix", "sealed_step",
               "recognize_checkpoint", "header_fields", "header_length", "canonical_header_bytes", "sha256",
               "hashlib_sha256", "pin_problem", "check_pin"),
    "schema": ("ENVELOPE", "ENVELOPE_HEADER", "HEADER_BODY", "CHUNK_ENTRY", "ENVELOPE_MAGIC", "ContractString"),
    "state": ("ResumableState", "state_findings", "resume_findings", "refuse_unresumable", "finite_range"),
    "examination": ("Examination", "HeaderFields", "examine", "examine_by_schema", "plane_views",
                    "checkpoint_findings"),
    "typed": ("Checkpoint", "TABLE_SHAPE", "load_checkpoint", "read_checkpoint_file", "describe_envelope"),
}
_LAZY = {name: f"{__name__}.{room}" for room, names in _ROOMS.items() for name in names}

__all__ = list(_LAZY)

__getattr__: "Callable[[str], Any]" = lazy_names(__name__, _LAZY)
