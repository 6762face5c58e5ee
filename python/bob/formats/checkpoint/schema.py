"""The checkpoint as construct reads it, built from the layout's field tables and the rules;
the field texts are the meanings of the layout tables in ``formats/envelope.md``."""

from __future__ import annotations

from construct import Bytes, Const, RawCopy, Rebuild, Struct, Terminated, len_, this

from bob.formats.constants import (CHECKPOINT_MAGIC, CHUNK_BYTES, CHUNK_TAGS, ENVELOPE_FORMAT_VERSION, MAX_HEADER_BYTES,
                                   PARAMETER_COUNT, PAYLOAD_BYTES, STRING_LIMIT, UPDATES_PER_INVOCATION, VOCABULARY)
from bob.formats.layout import (CHUNK_ENTRY_FIELDS, CONTRACT_STRINGS, DIGEST_BYTES, ENVELOPE_HEAD, ENVELOPE_TAIL_FIELDS,
                                HEADER_ALIGNMENT)
from bob.formats.rules import ENVELOPE_VERSION
from bob.formats.rules import HEADER_BYTES as HEADER_BYTES_RULE
from bob.formats.schema import LengthPrefixed, Sha256Of, Table, ZeroPadding, ruled, schema_fields

__all__ = ["ENVELOPE", "ENVELOPE_HEADER", "HEADER_BODY", "CHUNK_ENTRY", "ENVELOPE_MAGIC", "ContractString"]

ContractString = LengthPrefixed(STRING_LIMIT)
"""A contract string: u32 length (at most :data:`~bob.formats.constants.STRING_LIMIT`) + raw bytes."""

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
        "version": f"format version, u64 = {ENVELOPE_FORMAT_VERSION}",
        "header_bytes": f"file offset of plane P: a multiple of {HEADER_ALIGNMENT}, at most {MAX_HEADER_BYTES:,}",
        "step": "updates completed so far, u64",
    }, {
        "magic": lambda sc: Const(CHECKPOINT_MAGIC, sc),
        "version": ruled(ENVELOPE_VERSION),
        "header_bytes": ruled(HEADER_BYTES_RULE),
    }),
    *(name / ContractString * _STRING_DOCS[name] for name in CONTRACT_STRINGS),
    *schema_fields(ENVELOPE_TAIL_FIELDS, {
        "payload_bytes": f"u64 = {PAYLOAD_BYTES:,}",
        "chunk_bytes": f"u64 = {CHUNK_BYTES:,}",
        "updates_per_invocation": f"u64 = {UPDATES_PER_INVOCATION}",
        "chunk_count": f"u32 = {len(CHUNK_TAGS)}",
    }, {"chunk_count": lambda sc: Rebuild(sc, len_(this.chunk_table))}),
    "chunk_table" / Table(len(CHUNK_TAGS), CHUNK_ENTRY) * f"one {CHUNK_ENTRY.sizeof()}-byte entry per plane: P, M, V",
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
    "P" / Bytes(CHUNK_BYTES)
    * f"plane P (parameters), {PARAMETER_COUNT:,} × f32, row-major `context * {VOCABULARY} + next`",
    "M" / Bytes(CHUNK_BYTES) * f"plane M (first moment), {PARAMETER_COUNT:,} × f32",
    "V" / Bytes(CHUNK_BYTES) * f"plane V (second moment), {PARAMETER_COUNT:,} × f32",
    Terminated,
)
"""The whole bob-envelope v1 file."""

ENVELOPE_MAGIC: bytes = CHECKPOINT_MAGIC
"""The magic the schema matches."""
