"""``bob-envelope`` v1, the checkpoint (contract §5): its one door.

A checkpoint is the whole training state — the step and the planes P
(parameters), M (first moment) and V (second moment), each
``PARAMETER_COUNT`` little-endian float32 values in parameter order
``context * VOCABULARY + next`` — after a header that names the contract the
state belongs to. Zero bytes (a missing or empty file) are a fresh run: the
state at step 0, which the native core makes (§6.1).

The file, in order (offsets: :func:`bob.formats.layout.envelope_layout`;
the table with bob v1's strings: ``formats/envelope.md``)::

    magic "BOB-CKPT" | version u64 = 1 | header_bytes u64 | step u64
    state, learner, data, seed         each a u32 length + raw bytes
    payload_bytes u64 | chunk_bytes u64 | updates_per_invocation u64 | chunk_count u32
    chunk table: per plane P, M, V a tag, offset = header_bytes + i * chunk_bytes,
                 length = chunk_bytes and the SHA-256 of the chunk
    header digest: SHA-256 of every byte before it
    zero padding up to header_bytes (a multiple of 64, at most MAX_HEADER_BYTES)
    P | M | V                          chunk_bytes each

bob writes one layout, the *canonical* file: ``header_bytes`` =
:data:`HEADER_BYTES`, the header rounded up to a multiple of 64, and the
file :data:`CHECKPOINT_BYTES` long. A reader accepts any valid
``header_bytes`` and keeps it, so bytes read are written back unchanged.

:func:`examine` collects every finding, in this order:

1. the magic (a non-bob file is named as such), the size bound
   (``MAX_CHECKPOINT_BYTES``);
2. while parsing the header, in file order: version, ``header_bytes``, each
   length prefix, any field the file ends inside; then ``header_bytes``
   against the header's own length;
3. the header digest;
4. each contract field (§2);
5. the chunk table (count, tags, offsets, lengths);
6. the padding (all zero);
7. the exact size (``header_bytes + payload_bytes``);
8. each chunk's SHA-256;
9. for resuming only (:func:`state_findings`): finite planes, no negative
   V, step 0 only with all-zero M and V, room for 10 more updates in a u64.

Problems in steps 1–2 stop the examination (nothing after them can be
located); a ``payload_bytes`` or ``chunk_bytes`` mismatch stops it after
step 4; a file too short to hold the planes stops it after step 7. Anything
else is one finding among others; the loaders raise the first.

:func:`examine`'s first branch is the canonical file: bytes of its size
that start as it does are rebuilt from their step and their planes'
digests (:func:`sealed_step`) and compared byte for byte. Such a file has
none of the findings 1–8, so only step 9 is left, and construct is not
imported; any other file is parsed by the schema (:data:`ENVELOPE_HEADER`),
reusing the planes' digests already computed. ``tests/formats/test_canonical.py``
holds both paths to the same examination.

The rooms behind this door, each importing only those below it:

* :mod:`.header` — the one header builder (:func:`envelope_header`), the
  canonical file built, sealed and recognised (standard library: bob-run's
  fast path);
* :mod:`.schema` — the construct schema: :data:`HEADER_BODY`,
  :data:`ENVELOPE_HEADER`, :data:`ENVELOPE`, :data:`CHUNK_ENTRY`;
* :mod:`.state` — the state checks: step 9 (:func:`state_findings`) and the
  writers' refusal of a state bob would not resume (:func:`refuse_unresumable`);
* :mod:`.examination` — :func:`examine` and :class:`Examination`;
* :mod:`.typed` — :class:`Checkpoint`, :func:`load_checkpoint`,
  :func:`read_checkpoint_file`, :func:`describe_envelope`.

A read of a file runs one way, each call to a room below the caller: the
reader (:mod:`.typed`) calls the examination, which calls the header's
recognition (or the schema) and the state checks; the typed checkpoint is
built from what it returns. No room calls one above it, nor is handed a
function of one to call back.
Names are imported lazily: ``from bob.formats.checkpoint import
recognize_checkpoint`` imports neither NumPy nor construct.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

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
    "state": ("ResumableState", "state_findings", "resume_findings", "refuse_unresumable"),
    "examination": ("Examination", "HeaderFields", "examine", "examine_by_schema", "plane_views",
                    "checkpoint_findings"),
    "typed": ("Checkpoint", "TABLE_SHAPE", "load_checkpoint", "read_checkpoint_file", "describe_envelope"),
}
_LAZY = {name: f"{__name__}.{room}" for room, names in _ROOMS.items() for name in names}

__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(__import__(module, fromlist=["__name__"]), name)
    globals()[name] = value
    return value
