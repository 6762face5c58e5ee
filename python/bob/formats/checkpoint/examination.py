"""A checkpoint's findings: :func:`examine`, in the order ``formats/envelope.md`` gives;
bob's own file is its first branch, any other is parsed by the schema (imported then)."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bob.errors import BadValue, FormatError, IntegrityError, Truncated, flag_value
from bob.formats.checkpoint.header import (CHECKPOINT_BYTES, HEADER_BYTES, checkpoint_header, chunk_digests,
                                           has_canonical_prefix, hashlib_sha256, header_fields, sealed_step)
from bob.formats.checkpoint.state import state_findings
from bob.formats.constants import CHUNK_TAGS, MAX_CHECKPOINT_BYTES, MAX_HEADER_BYTES, PARAMETER_COUNT, PAYLOAD_BYTES, PLANE_NAMES
from bob.formats.contract import CONTRACT_FIELDS, Contract
from bob.formats.files import CHECKPOINT_FILE, Examined, as_bytes, magic_finding
from bob.formats.layout import (CANONICAL, CONTRACT_STRINGS, DIGEST_BYTES, ENVELOPE_HEAD, HEADER_ALIGNMENT,
                                PLANE_DTYPE, EnvelopeLayout, envelope_layout)
from bob.formats.rules import CHUNK_COUNT, CHUNK_LENGTH, CHUNK_OFFSET, CHUNK_TAG, PADDING, chunk_offset

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - the schemas (construct) are imported only for a file that needs them
    from bob.formats.schema import FieldRow

__all__ = ["Examination", "HeaderFields", "examine", "examine_by_schema", "plane_views",
           "checkpoint_findings"]

_MAGIC = ENVELOPE_HEAD["magic"].slice


class HeaderFields(dict[str, Any]):
    """A header's fields by the schema's names, as items and as attributes (``h["step"]``,
    ``h.step``), the same whichever path (canonical or schema) read them."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    @classmethod
    def of(cls, parsed: Any) -> "HeaderFields":
        """A header body's fields (construct's Container, or the canonical path's dicts) as HeaderFields."""
        fields = cls((k, v) for k, v in parsed.items() if k != "_io")  # (_io: construct's stream, not a field)
        fields["chunk_table"] = [cls((k, v) for k, v in e.items() if k != "_io") for e in fields["chunk_table"]]
        return fields


@dataclass(eq=False)
class Examination(Examined):
    """What a reader found in a checkpoint's bytes: ``findings`` in the contract's order, and whatever could be read
    (``header`` None if it did not parse; ``planes``, read-only views, when all the payload is there)."""

    size: int
    findings: list[FormatError] = field(default_factory=list)
    header: HeaderFields | None = None
    header_raw: bytes | None = None
    header_digest: bytes | None = None
    computed_header_digest: bytes | None = None
    planes: np.ndarray | None = None
    chunk_digests: tuple[bytes, ...] | None = None  # the SHA-256 of each chunk the file holds whole, in order
    magic: bytes = b""
    # The bytes whose header did not parse (None otherwise): kept so that partial_header, which only bob-inspect shows,
    # is computed when asked (it re-parses ever shorter prefixes) and not by every reader.
    unparsed: bytes | None = field(default=None, repr=False, compare=False)

    @functools.cached_property
    def partial_header(self) -> list[tuple[str, Any]] | None:
        """``[(field, value)]`` of the longest prefix of the header's fields that parses, when the
        whole header did not (None: not even the magic)."""
        if self.unparsed is None:
            return None
        from construct import Struct

        from bob.formats.checkpoint.schema import HEADER_BODY
        from bob.formats.schema import parse

        subcons = HEADER_BODY.subcons
        for k in range(len(subcons) - 1, 0, -1):
            try:
                parsed = parse(Struct(*subcons[:k]), self.unparsed)
            except FormatError:
                continue
            return [(sc.name, parsed[sc.name]) for sc in subcons[:k]]
        return None

    @property
    def damaged_length(self) -> tuple[str, int, int] | None:
        """``(string, offset, stated length)`` of the one contract string whose length prefix alone keeps the header
        (parsed or not) from holding bob v1's strings (v1's length put back, they and the field after are v1's)."""
        data = self.unparsed or self.header_raw or b""
        v1 = checkpoint_header(0, [bytes(DIGEST_BYTES)] * len(CHUNK_TAGS), hashlib_sha256)
        at, end = ENVELOPE_HEAD["step"].end, CANONICAL.fields["payload_bytes"].end
        for name in CONTRACT_STRINGS:
            f = CANONICAL.fields[f"{name}.length"]
            if data[f.slice] != v1[f.slice] and data[at:f.offset] + v1[f.slice] + data[f.end:end] == v1[at:end]:
                return name, f.offset, f.unpack(data)[0]
        return None

    @property
    def fresh(self) -> bool:
        return self.size == 0

    @property
    def step(self) -> int | None:
        """0 for a fresh file, else the step the header holds, or the parsed prefix of one; None if not read."""
        return 0 if self.fresh else (self.header or dict(self.partial_header or ())).get("step")

    @property
    def header_end(self) -> int | None:
        return None if self.header_raw is None else len(self.header_raw) + DIGEST_BYTES

    @property
    def layout(self) -> EnvelopeLayout | None:
        """This header's offsets (its contract strings' lengths decide them)."""
        h = self.header
        return None if h is None else envelope_layout((len(h.state), len(h.learner), len(h.data), len(h.seed)))

    @property
    def contract(self) -> Contract | None:
        return None if (h := self.header) is None else Contract(**{name: h[name] for name in CONTRACT_FIELDS})

    def header_rows(self) -> list[FieldRow]:
        """The layout of this file's header (offset, size, field, meaning), from the schema."""
        if self.header_raw is None:
            return []
        from bob.formats.checkpoint.schema import HEADER_BODY
        from bob.formats.schema import layout

        return layout(HEADER_BODY, self.header_raw)

    def offset_of(self, name: str) -> int | None:
        """Where field ``name`` starts (a contract string: its length prefix)."""
        fields = {} if (layout := self.layout) is None else layout.fields
        entry = fields.get(f"{name}.length") or fields.get(name)
        return None if entry is None else entry.offset


def plane_views(data: bytes, header_bytes: int) -> np.ndarray:
    """P, M and V of a checkpoint file's bytes: read-only float32 views, one row per plane, from ``header_bytes`` on."""
    return np.frombuffer(data, dtype=PLANE_DTYPE, count=len(PLANE_NAMES) * PARAMETER_COUNT,
                         offset=header_bytes).reshape(len(PLANE_NAMES), PARAMETER_COUNT)


def examine(data: bytes, *, for_resume: bool = True) -> Examination:
    """Check ``data`` as a bob-envelope v1 file and collect every finding."""
    data, for_resume = as_bytes(data, "the checkpoint"), flag_value(for_resume, "for_resume")
    digests = None
    if has_canonical_prefix(data):  # bob's own file: findings 1-8 cannot occur once its bytes are rebuilt
        digests = chunk_digests(memoryview(data)[HEADER_BYTES:], hashlib_sha256)
        if (step := sealed_step(data, digests, hashlib_sha256)) is not None:
            at, planes = CANONICAL.header_digest, plane_views(data, HEADER_BYTES)
            stored = data[at:at + DIGEST_BYTES]
            return Examination(size=len(data), header=HeaderFields.of(header_fields(step, digests)),
                               header_raw=data[:at], header_digest=stored, computed_header_digest=stored, planes=planes,
                               chunk_digests=tuple(digests), magic=data[_MAGIC],
                               findings=state_findings(step, planes, HEADER_BYTES) if for_resume else [])
    return examine_by_schema(data, for_resume=for_resume, plane_digests=digests)


def examine_by_schema(data: bytes, *, for_resume: bool = True, plane_digests: "list[bytes] | None" = None) -> Examination:
    """:func:`examine` by the schema, whatever the file. ``plane_digests``: the SHA-256s of the
    chunks after a canonical header, if computed already (used only if the chunks lie there)."""
    data = as_bytes(data, "the checkpoint")
    ex = Examination(size=len(data), magic=data[_MAGIC])
    if _header_findings(data, ex) and _payload_findings(data, ex, plane_digests):
        h = ex.header
        assert h is not None
        ex.planes = planes = plane_views(data, h.header_bytes)
        if for_resume:  # -- 9. state, for resuming
            ex.findings.extend(state_findings(h.step, planes, h.header_bytes))
    return ex


def _header_findings(data: bytes, ex: Examination) -> bool:
    """Steps 1-4 (magic, size bound, the header in file order, ``header_bytes`` against the header's length, header
    digest, contract fields); False when nothing after them can be located, or ``payload_bytes`` or ``chunk_bytes``
    leave the planes unplaced."""
    from bob.formats.checkpoint.schema import ENVELOPE_HEADER
    from bob.formats.schema import parse

    n, out = len(data), ex.findings
    if n == 0:
        return False  # a fresh run's checkpoint
    if (problem := magic_finding(data, *CHECKPOINT_FILE)) is not None:
        out.append(problem)
        return False
    if n > MAX_CHECKPOINT_BYTES:
        out.append(Truncated("file_size", f"a checkpoint is never larger than {MAX_HEADER_BYTES} + {PAYLOAD_BYTES} bytes",
                             expected=f"at most {MAX_CHECKPOINT_BYTES}", actual=n))
        ex.unparsed = data
        return False
    try:
        parsed = parse(ENVELOPE_HEADER, data)
    except FormatError as exc:
        out.append(exc)
        ex.unparsed = data
        return False
    h = ex.header = HeaderFields.of(parsed.header.value)
    ex.header_raw, ex.header_digest = parsed.header.data, parsed.header_digest
    end = ex.header_end
    assert end is not None
    if h.header_bytes < end:
        out.append(BadValue("header_bytes", "header_bytes is smaller than the header itself",
                            expected=f"at least {end} (a multiple of {HEADER_ALIGNMENT})", actual=h.header_bytes,
                            offset=ENVELOPE_HEAD["header_bytes"].offset))
        return False
    lay, contract = ex.layout, ex.contract
    assert lay is not None and contract is not None
    # -- 3. header digest
    ex.computed_header_digest = hashlib_sha256(ex.header_raw)
    if ex.computed_header_digest != ex.header_digest:
        out.append(IntegrityError("header_digest", "the header's SHA-256 does not match its bytes",
                                  expected=ex.computed_header_digest, actual=ex.header_digest,
                                  offset=lay.header_digest))
    # -- 4. contract fields
    mismatches = contract.mismatch_findings(ex.offset_of)
    out.extend(mismatches)
    return not any(m.field in ("payload_bytes", "chunk_bytes") for m in mismatches)


def _payload_findings(data: bytes, ex: Examination, plane_digests: "list[bytes] | None") -> bool:
    """Steps 5-8 (the chunk table, the padding, exact size, each chunk's SHA-256); False when the file is too short
    to hold the planes."""
    h, lay, out = ex.header, ex.layout, ex.findings
    assert h is not None and lay is not None
    end, hb, n = lay.header_length, h.header_bytes, len(data)
    # -- 5. chunk table
    if not CHUNK_COUNT.ok(h.chunk_count):
        out.append(CHUNK_COUNT.finding(h.chunk_count, offset=lay.fields["chunk_count"].offset))
    for i, entry in enumerate(h.chunk_table[:len(CHUNK_TAGS)]):
        want = chunk_offset(hb, i)
        for name, rule, args, words in (("tag", CHUNK_TAG, (i,), {"expected": CHUNK_TAGS[i], "plane": PLANE_NAMES[i]}),
                                        ("offset", CHUNK_OFFSET, (want,), {"expected": want}),
                                        ("length", CHUNK_LENGTH, (), {})):  # (field, rule, its arguments, words)
            if not rule.ok(entry[name], *args):
                out.append(rule.finding(entry[name], offset=lay.chunk_field(i, name).offset, index=i, **words))
    # -- 6. padding
    pad = data[end:min(hb, n)]
    if not PADDING.ok(pad):
        k = len(pad) - len(pad.lstrip(b"\0"))
        out.append(PADDING.finding(pad[k], offset=end + k, index=k))
    # -- 7. exact size
    want_size = hb + PAYLOAD_BYTES
    if n != want_size:
        out.append(Truncated("file_size", "the file is header_bytes + payload_bytes long",
                             expected=want_size, actual=n))
    # -- 8. chunk digests, of every chunk the file holds whole (a short file's too: every problem; not where its
    if n < want_size and any(f.field == "chunk_table.offset" for f in out):  # table says header_bytes is damaged)
        return False
    if plane_digests is None or hb != HEADER_BYTES or n != CHECKPOINT_BYTES:  # else: these ranges, hashed already
        whole = sum(chunk_offset(hb, i + 1) <= n for i in range(len(CHUNK_TAGS)))
        plane_digests = chunk_digests(memoryview(data)[hb:], hashlib_sha256)[:whole]
    ex.chunk_digests = digests = tuple(plane_digests)
    for i, (entry, digest) in enumerate(zip(h.chunk_table, digests)):
        if entry.digest != digest:
            out.append(IntegrityError(
                "chunk_table.digest",
                f"plane {PLANE_NAMES[i]} (bytes {chunk_offset(hb, i)}..{chunk_offset(hb, i + 1) - 1}) "
                "does not match the chunk table's SHA-256",
                expected=digest, actual=entry.digest, offset=lay.chunk_field(i, "digest").offset, index=i))
    return n >= want_size


def checkpoint_findings(data: bytes, *, for_resume: bool = True) -> list[FormatError]:
    """Every problem with ``data`` as a checkpoint, in the contract's order (none for zero bytes)."""
    return examine(data, for_resume=for_resume).findings
