"""``bob-envelope`` v1's schema: the checkpoint file (contract §5) as construct reads it.

The header is a construct ``Struct`` built from the layout's field tables
(:mod:`bob.formats.layout`) with the rules of :mod:`bob.formats.rules`; its
digest is computed over a ``RawCopy`` of the header body; the three planes are
``Bytes`` fields of ``chunk_bytes``. :mod:`bob.formats.checks` examines a
file with it; :mod:`bob.formats.envelope` builds the typed checkpoint on both.
"""

from __future__ import annotations

from construct import Bytes, Const, RawCopy, Rebuild, Struct, Terminated, len_, this

from bob.formats.constants import CHECKPOINT_MAGIC, CHUNK_TAGS
from bob.formats.contract import CHUNK_BYTES, STRING_LIMIT, V1, Contract
from bob.formats.layout import (
    CANONICAL_HEADER_BYTES,
    CHUNK_ENTRY_FIELDS,
    CONTRACT_STRINGS,
    DIGEST_BYTES,
    ENVELOPE_HEAD,
    ENVELOPE_TAIL_FIELDS,
    aligned_header_bytes,
    envelope_layout,
)
from bob.formats.rules import ENVELOPE_VERSION
from bob.formats.rules import HEADER_BYTES as HEADER_BYTES_RULE
from bob.formats.schema import LengthPrefixed, Sha256Of, Table, ZeroPadding, const_value, ruled, schema_fields

__all__ = [
    "ENVELOPE",
    "ENVELOPE_HEADER",
    "HEADER_BODY",
    "CHUNK_ENTRY",
    "ENVELOPE_MAGIC",
    "CHUNK_TAGS",
    "HEADER_BYTES",
    "canonical_header_bytes",
    "header_length",
]


ContractString = LengthPrefixed(STRING_LIMIT)
"""A contract string: u32 length (at most 4,096) + raw bytes."""

CHUNK_ENTRY = Struct(*schema_fields(CHUNK_ENTRY_FIELDS, {
    "tag": "`P\\0\\0\\0`, `M\\0\\0\\0` or `V\\0\\0\\0`",
    "offset": "absolute file offset of the chunk: header_bytes + i × chunk_bytes",
    "length": "the chunk's length: chunk_bytes",
    "digest": "SHA-256 of the chunk's bytes",
}))

_STRING_DOCS = {
    "state": "state contract (§2)",
    "learner": "learner contract: text + 5 × f32 (lr, β1, β2, ε, weight decay)",
    "data": "data contract (§2)",
    "seed": "initialization seed, `bob-seed-v1`",
}

HEADER_BODY = Struct(
    *schema_fields(ENVELOPE_HEAD, {
        "magic": "ASCII `BOB-CKPT`",
        "version": "format version, u64 = 1",
        "header_bytes": "file offset of plane P: a multiple of 64, at most 65,536",
        "step": "updates completed so far, u64",
    }, {
        "magic": lambda sc: Const(CHECKPOINT_MAGIC, sc),
        "version": ruled(ENVELOPE_VERSION),
        "header_bytes": ruled(HEADER_BYTES_RULE),
    }),
    *(name / ContractString * _STRING_DOCS[name] for name in CONTRACT_STRINGS),
    *schema_fields(ENVELOPE_TAIL_FIELDS, {
        "payload_bytes": "u64 = 786,432",
        "chunk_bytes": "u64 = 262,144",
        "updates_per_invocation": "u64 = 10",
        "chunk_count": "u32 = 3",
    }, {"chunk_count": lambda sc: Rebuild(sc, len_(this.chunk_table))}),
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
    "padding" / ZeroPadding(lambda this: this.header.value.header_bytes - this.header.length - DIGEST_BYTES)
    * "zero bytes up to header_bytes",
    "P" / Bytes(CHUNK_BYTES) * "plane P (parameters), 65,536 × f32, row-major `context * 256 + next`",
    "M" / Bytes(CHUNK_BYTES) * "plane M (first moment), 65,536 × f32",
    "V" / Bytes(CHUNK_BYTES) * "plane V (second moment), 65,536 × f32",
    Terminated,
)
"""The whole bob-envelope v1 file."""

ENVELOPE_MAGIC: bytes = const_value(HEADER_BODY, "magic")
assert ENVELOPE_MAGIC == CHECKPOINT_MAGIC


def header_length(contract: Contract = V1) -> int:
    """Bytes from offset 0 to the end of the header digest for ``contract`` (447 for v1)."""
    strings = (contract.state, contract.learner, contract.data, contract.seed)
    return envelope_layout(tuple(len(s) for s in strings)).header_length  # type: ignore[arg-type]


def canonical_header_bytes(contract: Contract = V1) -> int:
    """The header length rounded up to a multiple of 64 (448 for v1)."""
    return aligned_header_bytes(header_length(contract))


HEADER_BYTES = CANONICAL_HEADER_BYTES
