"""``bob-trace`` v2: where a run went, update by update (specified in ``formats/trace.md``).

``bob-run --trace`` and ``bob.invoke(..., trace=True)`` write it, built without construct
by :func:`bob.formats.canonical.trace_bytes`; this module reads it.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from construct import Const, RawCopy, Struct, this

from bob.errors import (BadValue, FormatError, IntegrityError, integer_field, integer_value, ordered_items, real_value,
                        shown_kind)
from bob.formats.canonical import contract_identity, trace_bytes
from bob.formats.constants import PLANE_NAMES, TRACE_MAGIC, TRACE_UPDATES, TRACE_VERSION, U64_MAX
from bob.formats.contract import V1
from bob.formats.files import BobFile, Examined, as_bytes, magic_finding
from bob.formats.layout import (DIGEST_BYTES, TRACE_BODY_BYTES, TRACE_BYTES, TRACE_DIGEST_BYTES, TRACE_ENTRY,
                                TRACE_ENTRY_FIELDS, TRACE_HEAD, TRACE_HEAD_STRUCT)
from bob.formats.rules import TRACE_CONTRACT, TRACE_LOSS, TRACE_STEP, TRACE_STEP_BEFORE, TRACE_UPDATE_COUNT, \
    TRACE_VERSION_RULE
from bob.formats.schema import END, Sha256Of, Table, parse, ruled, schema_fields
from bob.text import json_number

__all__ = ["TRACE", "TRACE_FILE", "TraceEntry", "Trace", "TraceExamination", "examine", "trace_findings",
           "load_trace", "read_trace_file", "contract_sha256", "IDENTITY"]

TRACE_FILE = (TRACE_MAGIC, "a trace (bob-trace)")
IDENTITY = ("contract_sha256", "input_sha256", "step_before")
"""The fields that say whose run a trace is: two traces are compared only when all three agree."""

TRACE_ENTRY_SCHEMA = Struct(*schema_fields(TRACE_ENTRY_FIELDS, {
    "step": "updates completed after this one: step_before + i + 1",
    "loss": "the loss before this update (§6.4), f64",
    **{name: f"XXH3-128 of plane {name} after this update (big-endian)" for name in PLANE_NAMES},
}))

TRACE = Struct(
    # "header": construct's RawCopy, transparent in fields' names (bob.formats.schema.field_from_path)
    "header" / RawCopy(Struct(
        *schema_fields(TRACE_HEAD, {
            "magic": "ASCII `BOB-TRCE`",
            "version": f"format version, u64 = {TRACE_VERSION}",
            "contract_sha256": "SHA-256 of the §2 contract as a checkpoint header stores it (formats/trace.md)",
            "input_sha256": "SHA-256 of the input record the run learned from",
            "step_before": "updates completed before the run's first update, u64",
            **{f"start_{n}": f"XXH3-128 of plane {n} before the first update (big-endian): the state resumed"
               for n in PLANE_NAMES},
            "update_count": f"u64 = {TRACE_UPDATES}: one entry per update of the invocation",
        }, {
            "magic": lambda sc: Const(TRACE_MAGIC, sc),
            "version": ruled(TRACE_VERSION_RULE),
            "update_count": ruled(TRACE_UPDATE_COUNT),
        }),
        "entries" / Table(TRACE_UPDATES, TRACE_ENTRY_SCHEMA) * f"one {TRACE_ENTRY.size}-byte entry per update",
    )),
    "digest" / Sha256Of(this.header.data) * "SHA-256 of every byte before it",
    END,
)
"""The bob-trace v2 schema (``TRACE_BYTES``), built from :mod:`bob.formats.layout`'s ``TRACE_*`` tables."""

assert TRACE.sizeof() == TRACE_BYTES


def contract_sha256(contract: Any = None) -> bytes:
    """The SHA-256 of ``contract``'s identity (bob v1's by default), as a trace records it."""
    c = V1 if contract is None else contract
    return hashlib.sha256(contract_identity((c.state, c.learner, c.data, c.seed), c.payload_bytes, c.chunk_bytes,
                                            c.updates_per_invocation)).digest()


class TraceEntry(NamedTuple):
    """One update: ``step`` after it, its ``loss`` and the XXH3-128 ``digests`` of P, M, V after it."""

    step: int
    loss: float
    digests: tuple[bytes, bytes, bytes]


def _entry(entry: Any, i: int) -> TraceEntry:
    """A caller's entry ``(step, loss, digests)`` as a :class:`TraceEntry`, or the BadValue naming its field."""
    try:
        step, loss, digests = entry
        digests = tuple(digests)
    except (TypeError, ValueError):
        raise BadValue("entries", "an entry is (step, loss, (P, M, V digests))", actual=shown_kind(entry),
                       index=i) from None
    number = real_value(loss)
    if number is None:
        raise BadValue("entries.loss", "a real number a float64 holds", actual=shown_kind(loss), index=i)
    return TraceEntry(integer_field(step, "entries.step", "an integer", i), number,
                      tuple(as_bytes(d, "entries.digests") for d in digests))  # type: ignore[arg-type]


@dataclass(frozen=True, eq=False)
class Trace(BobFile):
    """A bob-trace v2 trace: the run's identity, the ``start`` it resumed (the XXH3-128 of P, M and V) and one
    :class:`TraceEntry` per update."""

    contract_sha256: bytes
    input_sha256: bytes
    step_before: int
    start: tuple[bytes, bytes, bytes]
    entries: tuple[TraceEntry, ...]

    def __post_init__(self) -> None:
        for name in ("contract_sha256", "input_sha256"):
            value = as_bytes(getattr(self, name), name)  # (bytes(32) would be 32 zero bytes)
            if len(value) != DIGEST_BYTES:
                raise BadValue(name, f"a SHA-256 is {DIGEST_BYTES} bytes", expected=DIGEST_BYTES, actual=len(value))
            object.__setattr__(self, name, value)
        if not TRACE_CONTRACT.ok(self.contract_sha256, contract_sha256()):
            raise TRACE_CONTRACT.finding(self.contract_sha256.hex(), expected=contract_sha256().hex(), given=True)
        step_before = integer_value(self.step_before)
        if step_before is None or not 0 <= step_before <= U64_MAX - TRACE_UPDATES:  # every entry's step a u64
            raise BadValue("step_before", f"an integer from 0 to 2**64 - 1 - {TRACE_UPDATES}",
                           actual=shown_kind(self.step_before) if step_before is None else step_before)
        object.__setattr__(self, "step_before", step_before)
        start = None if isinstance(self.start, (bytes, bytearray, memoryview, str)) else ordered_items(self.start)
        digests = None if start is None else tuple(as_bytes(d, "start") for d in start)  # (the state resumed)
        if digests is None or len(digests) != len(PLANE_NAMES) or any(len(d) != TRACE_DIGEST_BYTES for d in digests):
            raise BadValue("start", f"the {TRACE_DIGEST_BYTES}-byte XXH3-128 of P, M and V",
                           actual=shown_kind(self.start))
        object.__setattr__(self, "start", digests)
        given = ordered_items(self.entries)
        if given is None:
            raise BadValue("entries", f"the entries are {TRACE_UPDATES} (step, loss, digests)",
                           actual=shown_kind(self.entries))
        entries = tuple(_entry(e, i) for i, e in enumerate(given))
        if len(entries) != TRACE_UPDATES:
            raise TRACE_UPDATE_COUNT.finding(len(entries), given=True)
        for i, entry in enumerate(entries):
            if not TRACE_STEP.ok(entry.step, self.step_before + i + 1):
                raise TRACE_STEP.finding(entry.step, expected=self.step_before + i + 1, index=i)
            if not TRACE_LOSS.ok(entry.loss):
                raise TRACE_LOSS.finding(entry.loss, index=i, given=True)
            if len(entry.digests) != len(PLANE_NAMES) or any(len(d) != TRACE_DIGEST_BYTES for d in entry.digests):
                raise BadValue("entries.digests",
                               f"an entry holds the {TRACE_DIGEST_BYTES}-byte XXH3-128 of P, M and V", index=i)
        object.__setattr__(self, "entries", entries)

    @property
    def step_after(self) -> int:
        return self.step_before + len(self.entries)

    @property
    def losses(self) -> tuple[float, ...]:
        return tuple(e.loss for e in self.entries)

    def identity(self) -> tuple[bytes, bytes, int]:
        """(contract_sha256, input_sha256, step_before): whose run this is."""
        return self.contract_sha256, self.input_sha256, self.step_before

    def refuse_other_run(self, other: "Trace", offset_base: int = 0) -> None:
        """Raise a :class:`~bob.errors.BadValue` naming the first identity field
        in which ``other`` is the trace of another run than this one."""
        if not isinstance(other, Trace):
            raise TypeError(f"a trace is compared with a bob.Trace (a file's bytes: bob.load_trace); "
                            f"got {shown_kind(other)}")
        for name in IDENTITY:
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine != theirs:
                raise BadValue(name, "a trace of another run (its identity differs); only traces of one run "
                               "are compared", expected=mine.hex() if isinstance(mine, bytes) else mine,
                               actual=theirs.hex() if isinstance(theirs, bytes) else theirs,
                               offset=offset_base + TRACE_HEAD[name].offset)

    def first_divergence(self, other: "Trace") -> int | None:
        """The index (0-based) of the first entry whose digests differ from ``other``'s, or None when every entry's
        digests agree (the states resumed, ``start``, are not entries: :func:`bob.diff` compares them first); ``other``
        must be a trace of the same run (else :meth:`refuse_other_run`'s refusal)."""
        self.refuse_other_run(other)
        return next((i for i, (a, b) in enumerate(zip(self.entries, other.entries)) if a.digests != b.digests), None)

    def to_bytes(self) -> bytes:
        return trace_bytes(self.contract_sha256, self.input_sha256, self.step_before, self.losses,
                           [self.start, *(e.digests for e in self.entries)], lambda b: hashlib.sha256(b).digest())

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready description (a non-finite loss as ``"nan"``, ``"inf"``, ``"-inf"``)."""
        return {
            "format": "bob-trace", "version": TRACE_VERSION,
            "contract_sha256": self.contract_sha256.hex(), "input_sha256": self.input_sha256.hex(),
            "step_before": self.step_before, "step_after": self.step_after,
            "start": {n: d.hex() for n, d in zip(PLANE_NAMES, self.start)},
            "entries": [{"step": e.step, "loss": json_number(e.loss),
                         **{n: d.hex() for n, d in zip(PLANE_NAMES, e.digests)}}
                        for e in self.entries],
        }


@dataclass(eq=False)
class TraceExamination(Examined):
    """What a reader found in a trace's bytes: ``findings`` (:func:`examine`'s order), a valid file's :class:`Trace`,
    and ``read``, what its whole layout holds, problems or not (:meth:`Trace.as_dict`'s keys: what a report shows)."""

    size: int
    findings: list[FormatError] = field(default_factory=list)
    trace: Trace | None = None
    read: dict[str, Any] | None = None


def examine(data: bytes) -> TraceExamination:
    """Every finding of ``data`` as a bob-trace v2 file: the layout's refusal alone, or the digest's, the contract's
    then the steps'."""
    data = as_bytes(data, "the trace")
    ex = TraceExamination(size=len(data))
    problem = magic_finding(data, *TRACE_FILE)
    if problem is None:
        try:
            parsed = parse(TRACE, data)
        except FormatError as exc:
            problem = exc
    if problem is not None:
        ex.findings.append(problem)
        return ex
    head, digest = parsed.header.value, hashlib.sha256(parsed.header.data).digest()
    entries = tuple(TraceEntry(e.step, e.loss, tuple(e[n] for n in PLANE_NAMES)) for e in head.entries)
    trace = Trace._trusted(contract_sha256=head.contract_sha256, input_sha256=head.input_sha256,
                           step_before=head.step_before, start=tuple(head[f"start_{n}"] for n in PLANE_NAMES),
                           entries=entries)  # (a Trace only once no rule refuses it)
    ex.read = trace.as_dict()
    if digest != parsed.digest:
        ex.findings.append(IntegrityError("digest", "the trace's bytes do not match its digest (changed or damaged)",
                                          expected=digest.hex(), actual=parsed.digest.hex(), offset=TRACE_BODY_BYTES))
    if not TRACE_CONTRACT.ok(head.contract_sha256, contract_sha256()):
        ex.findings.append(TRACE_CONTRACT.finding(head.contract_sha256.hex(), expected=contract_sha256().hex(),
                                                  offset=TRACE_HEAD["contract_sha256"].offset))
    if not (room := TRACE_STEP_BEFORE.ok(head.step_before)):  # (then no entry's step can be right: not one each)
        ex.findings.append(TRACE_STEP_BEFORE.finding(head.step_before, offset=TRACE_HEAD["step_before"].offset))
        ex.read["step_after"] = None  # (no u64)
    for i, entry in enumerate(head.entries):
        at, want = TRACE_HEAD_STRUCT.size + i * TRACE_ENTRY.size, head.step_before + i + 1
        if room and not TRACE_STEP.ok(entry.step, want):
            step_at = at + TRACE_ENTRY_FIELDS["step"].offset
            ex.findings.append(TRACE_STEP.finding(entry.step, expected=want, offset=step_at, index=i))
        if not TRACE_LOSS.ok(entry.loss):
            ex.findings.append(TRACE_LOSS.finding(entry.loss, offset=at + TRACE_ENTRY_FIELDS["loss"].offset, index=i))
    ex.trace = None if ex.findings else trace
    return ex


def trace_findings(data: bytes) -> list[FormatError]:
    """Every problem with ``data`` as a bob-trace v2 file; empty if it is valid."""
    return examine(data).findings


def load_trace(data: bytes) -> Trace:
    """Parse and check a bob-trace v2 file; raise the first finding."""
    return Trace.from_bytes(data)


def read_trace_file(path: "str | os.PathLike[str]") -> Trace:
    """Read and check a trace; a file larger than ``TRACE_BYTES`` is refused unread."""
    return Trace.read(path)


Trace._format = (examine, "trace", TRACE_BYTES, TRACE_FILE)
