"""One invocation of contract §7, in memory: ``bob.invoke``.

:func:`advance` is the one place in bob that sequences an invocation's math
(the updates in the native core, the check that the new state can be resumed,
the predictions); :func:`invoke` (the library) and ``bob-run`` (the command,
on its own plane buffers) both call it, so they cannot drift apart.

``bob-run`` trains in one buffer of a checkpoint's size: :func:`state_buffer`
makes it from the bytes of its checkpoint file (a fast path for the files bob
writes, the schemas for the rest), :func:`buffer_planes` are its planes, and
:func:`sealed_buffer` seals it with the new step.

::

    result = bob.invoke(record, checkpoint)      # checkpoint: b"" for a fresh run
    result.predictions.write("predictions.bin")  # the checkpoint last: a crash between leaves the old one
    result.checkpoint.write("model.bob")
"""

from __future__ import annotations

import sys

from bob.errors import StateRefused, as_bytes, flag_value
from bob.formats.constants import PARAMETER_COUNT, PLANE_DTYPE, PLANE_NAMES, UPDATES_PER_INVOCATION, cell_name

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - typing costs start-up time bob-run does not pay
    from typing import Any, Callable, Sequence

    from bob.formats.contract import Contract
    from bob.formats.checkpoint import Checkpoint
    from bob.formats.input_record import InputRecord
    from bob.formats.predictions import Predictions
    from bob.formats.trace import Trace

__all__ = ["Invocation", "invoke", "advance", "unadvanceable", "traced_train", "state_buffer", "buffer_planes",
           "sealed_buffer"]

_FAST = sys.byteorder == "little"  # the planes are little-endian float32 in memory too

_CHECKS = {
    "non_finite": "would make plane {plane} non-finite",
    "negative": "would make plane V negative",
    "no_room": f"would leave no room for the next {UPDATES_PER_INVOCATION} updates in a u64 step",
}


def advance(p, m, v, contexts, targets, prompt_words: Sequence[int], step: int, *,
            threads: int = 0, digests: "list[tuple[bytes, bytes, bytes]] | None" = None,
            ) -> "tuple[int, list[float], list[tuple[int, int]]]":
    """Make one invocation's updates in place on the float32 buffers P, M, V
    (``step`` updates made before) and predict for ``prompt_words``.

    Returns ``(step_after, losses, records)``: the new step (the one place
    that counts the invocation's updates on), the loss before each update, and the
    (token, validity) per prompt. Raises :class:`~bob.errors.StateRefused`
    (naming the plane and index) when the new state could not be resumed —
    a value became non-finite, or the step has no room left — so nothing that
    bob would refuse to read is ever written. The buffers then hold the
    refused state; callers train on copies (``invoke``) or discard them
    (``bob-run``). With ``digests`` (a list), the updates are traced:
    :func:`traced_train` appends the digests (XXH3-128) of P, M and V before them, then after each.
    """
    from bob import core  # no fallback: NativeCoreUnavailable propagates

    if digests is None:
        losses = core.train(p, m, v, contexts, targets, step, UPDATES_PER_INVOCATION, threads=threads)
    else:
        losses = traced_train(p, m, v, contexts, targets, step, UPDATES_PER_INVOCATION, digests, threads=threads)
    step_after = step + UPDATES_PER_INVOCATION
    problem = core.resume_problem(p, m, v, step_after)
    if problem is not None:
        check, plane, index = problem
        where = cell_name(index)
        field = plane or "step"
        message = f"the {UPDATES_PER_INVOCATION} updates from step {step} {_CHECKS[check].format(plane=plane)}"
        if plane:
            message += f" (first at {where}); nothing was written"
            offset_in_plane = PLANE_NAMES.index(plane)
            raise StateRefused(field, message, expected="finite" if check == "non_finite" else ">= 0",
                               actual=_value_at((p, m, v)[offset_in_plane], index), index=index)
        raise StateRefused(field, message + "; nothing was written", actual=step_after)
    return step_after, losses, core.predict(p, prompt_words)


def unadvanceable(step: int) -> "StateRefused | None":
    """bob-run's refusal of every run from ``step``, whatever the input record (D14): its updates would
    leave the state no room for the next ones; None when there is room."""
    from bob.formats.constants import U64_MAX
    from bob.formats.rules import ROOM_FOR_UPDATES

    if ROOM_FOR_UPDATES.ok(step + UPDATES_PER_INVOCATION):
        return None
    return StateRefused("step", f"the {UPDATES_PER_INVOCATION} updates from step {step} {_CHECKS['no_room']}; "
                        "bob-run refuses every run from it", expected=f"at most {U64_MAX - 2 * UPDATES_PER_INVOCATION}",
                        actual=step)


def traced_train(p, m, v, contexts, targets, step: int, updates: int, digests: "list[tuple[bytes, bytes, bytes]]",
                 *, threads: int = 0, kernel: str = "auto", after: "Callable[[int], None] | None" = None,
                 ) -> "list[float]":
    """``bob.core.train`` one update per call, appending to ``digests`` the XXH3-128 of P, M and V before the first,
    then after each (the core's; formats/trace.md); returns the losses. The same bits as one call of ``updates``
    updates: each update depends only on the state and its own step. ``after(i)`` (bob-qualify's test hook) runs
    after update ``i`` (0-based), before its digests."""
    from bob import core

    def state() -> None:  # (after the updates so far)
        p_digest, m_digest, v_digest = core.xxh3_128_each([p, m, v])
        digests.append((p_digest, m_digest, v_digest))

    losses: list[float] = []
    state()  # the state resumed
    for done in range(updates):
        losses += core.train(p, m, v, contexts, targets, step + done, 1, threads=threads, kernel=kernel)
        if after is not None:
            after(done)
        state()
    return losses


def _value_at(plane, index: int) -> float:
    """Value ``index`` of a float32 buffer, from its bits (right in any floating-point environment)."""
    from bob.formats.layout import f32_from_bits

    return f32_from_bits(memoryview(plane).cast("B").cast("I")[index])


def state_buffer(data: "bytearray | None") -> "tuple[int, bytearray, int | None]":
    """(step, buffer, header_bytes) of a checkpoint file's bytes (None or empty:
    the fresh state, the contract's command convention). ``buffer`` has a
    canonical checkpoint's size, with the planes (P, M, V, little-endian
    float32) in place after the header: bob-run trains in it and writes it
    back sealed with the new header (:func:`sealed_buffer`). header_bytes
    is None for the canonical layout. ``data`` itself becomes the buffer when
    it is a canonical checkpoint that may be resumed."""
    from bob import core
    from bob.formats.checkpoint import CHECKPOINT_BYTES, HEADER_BYTES, recognize_checkpoint

    if _FAST:
        if not data:
            buffer = bytearray(CHECKPOINT_BYTES)
            core.initialize(buffer_planes(buffer)[0])
            return 0, buffer, None
        step = recognize_checkpoint(data)
        if step is not None:
            if core.resume_problem(*buffer_planes(data), step) is None:
                return step, data, None
    from bob.failures import load_numpy

    load_numpy()  # the schemas need NumPy: where address space is short, out of memory, not OpenBLAS's abort
    from bob.formats.checkpoint import load_checkpoint

    # The schemas judge the same bytes (zero bytes: the fresh state).
    checkpoint = load_checkpoint(bytes(data or b""))
    buffer = bytearray(HEADER_BYTES)
    for plane in (checkpoint.p, checkpoint.m, checkpoint.v):
        buffer += plane.astype(PLANE_DTYPE).tobytes()
    return checkpoint.step, buffer, checkpoint.header_bytes


def buffer_planes(buffer: bytearray) -> "tuple[memoryview, memoryview, memoryview]":
    """P, M and V as writable float32 memoryviews into a checkpoint buffer from :func:`state_buffer`."""
    from bob.formats.checkpoint import HEADER_BYTES
    from bob.formats.constants import CHUNK_BYTES

    view = memoryview(buffer)
    return tuple(  # type: ignore[return-value]
        view[HEADER_BYTES + i * CHUNK_BYTES:HEADER_BYTES + (i + 1) * CHUNK_BYTES].cast("f") for i in range(3)
    )


def sealed_buffer(step: int, buffer: bytearray, header_bytes: "int | None") -> "bytes | bytearray":
    """The checkpoint file of a buffer from :func:`state_buffer` at ``step``."""
    from bob.formats.checkpoint import HEADER_BYTES, seal_checkpoint

    if header_bytes in (None, HEADER_BYTES):
        return seal_checkpoint(step, buffer)
    # A valid checkpoint with a larger header keeps it (formats/DECISIONS.md D9).
    import numpy as np

    from bob.formats.checkpoint import Checkpoint

    p, m, v = (np.frombuffer(view, dtype=PLANE_DTYPE).copy() for view in buffer_planes(buffer))
    return Checkpoint(step, p, m, v, header_bytes=header_bytes).to_bytes()


class Invocation:
    """The result of one invocation (frozen): the new checkpoint and
    predictions, and how it went. Nothing here shares memory with what
    :func:`invoke` was given.

    ``checkpoint``: the state after the invocation's updates (step ``step_after``);
    ``predictions``: one per prompt of the record, from the new P;
    ``losses``: the loss before each of the invocation's updates (contract §6.4);
    ``trace``: the :class:`~bob.Trace` of its updates with ``invoke(..., trace=True)``, else None.

    (A plain class, not a dataclass: ``bob-run`` imports this module and does
    not pay for importing ``dataclasses``.)
    """

    __slots__ = ("checkpoint", "predictions", "losses", "step_before", "step_after", "trace")
    checkpoint: "Checkpoint"
    predictions: "Predictions"
    losses: tuple[float, ...]
    step_before: int
    step_after: int
    trace: "Trace | None"

    def __init__(self, checkpoint: "Checkpoint", predictions: "Predictions", losses: tuple[float, ...],
                 step_before: int, step_after: int, trace: "Trace | None" = None) -> None:
        for name, value in zip(self.__slots__, (checkpoint, predictions, losses, step_before, step_after, trace)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Invocation is frozen; cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Invocation is frozen; cannot delete {name!r}")

    def __reduce__(self):  # pickle and copy through the constructor (the frozen __setattr__ refuses state)
        return type(self), tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Invocation):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.__slots__)

    __hash__ = None  # type: ignore[assignment]  # equal by value, and the planes are mutable arrays

    def __repr__(self) -> str:
        return (f"Invocation(step {self.step_before} -> {self.step_after}, "
                f"loss {self.losses[0]:.6f} -> {self.losses[-1]:.6f}, tokens {self.predictions.tokens})")

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

    def trace_bytes(self) -> bytes:
        """The trace file (bob-trace v2), byte for byte what ``bob-run --trace`` writes;
        only for ``invoke(..., trace=True)``."""
        if self.trace is None:
            raise ValueError("this invocation was not traced; call bob.invoke(..., trace=True)")
        return self.trace.to_bytes()


def invoke(record: "InputRecord | bytes", checkpoint: "Checkpoint | bytes" = b"", *,
           threads: int = 0, trace: bool = False, expect: "str | None" = None) -> Invocation:
    """One invocation of contract §7 in memory; never mutates its arguments.

    ``record`` is an :class:`~bob.InputRecord` or its bytes;
    ``checkpoint`` a :class:`~bob.Checkpoint`, a checkpoint file's bytes, or
    ``b""`` for the fresh state (§6.1). Bytes are checked fully (§3, §5) and
    refused with a :class:`~bob.FormatError` naming the field; a
    ``Checkpoint`` object is checked for resuming the same way. ``threads``
    (0: what the machine offers) changes no bit of the result. ``trace``:
    also record a digest (XXH3-128) of P, M and V as resumed, then each update's loss and their digests after
    it (``Invocation.trace``, formats/trace.md); the result is the same bits.
    ``expect`` pins the checkpoint's bytes (64 hexadecimal digits, either
    case): bytes whose SHA-256 is another, or zero bytes, are refused before
    the checkpoint is read (after the record, as ``bob-run --expect-checkpoint``
    refuses them) with an ``IntegrityError`` naming ``expect``
    (:func:`~bob.formats.checkpoint.check_pin`).
    """
    from bob.formats.checkpoint import Checkpoint, check_pin, resume_findings
    from bob.formats.input_record import InputRecord, load_input
    from bob.formats.predictions import Predictions

    trace = flag_value(trace, "trace")
    if expect is not None:
        if isinstance(checkpoint, Checkpoint):
            raise TypeError("expect pins a checkpoint file's bytes, not a Checkpoint; pin them where they are "
                            "loaded: bob.load_checkpoint(data, expected_sha256=...)")
        check_pin(None, expect, "expect")  # (its form, before anything is read: the arguments' checks come first)
    if not isinstance(record, InputRecord):
        record = load_input(record)
    if not isinstance(checkpoint, Checkpoint):  # its bytes taken once: what is pinned and digested is what is
        checkpoint = as_bytes(checkpoint, "the checkpoint")  # trained (None is no checkpoint, pinned or not)
    if expect is not None:  # (after the record, before the checkpoint: §7's order, bob-run's)
        check_pin(checkpoint, expect, "expect")
    if isinstance(checkpoint, Checkpoint):  # checked as built (its fields may have been reassigned): not mutated
        checkpoint = Checkpoint(checkpoint.step, checkpoint.p, checkpoint.m, checkpoint.v, checkpoint.header_bytes,
                                checkpoint.contract)
        owned = _checked_planes(checkpoint.contract, checkpoint.step, (checkpoint.p, checkpoint.m, checkpoint.v))
        if owned is not None:
            start = _with_planes(checkpoint.step, owned, checkpoint.header_bytes, checkpoint.contract)
        else:  # the core refused the state, or could not read it: the findings say why
            findings = resume_findings(checkpoint)
            if findings:
                raise findings[0]
            start = _owned_copy(checkpoint)
    else:
        start = _loaded(checkpoint)  # b"" -> the fresh state; a new object either way
    step_before = start.step
    digests: "list[tuple[bytes, bytes, bytes]] | None" = [] if trace else None
    start.step, losses, records = advance(start.p, start.m, start.v, record.contexts, record.targets,
                                          record.prompt_words, step_before, threads=threads, digests=digests)
    return Invocation(start, Predictions.from_core(records), tuple(float(x) for x in losses),
                      step_before, start.step, None if digests is None else _trace_of(record, start, losses, digests))


def _trace_of(record: "InputRecord", start: "Checkpoint", losses: "Sequence[float]",
              digests: "list[tuple[bytes, bytes, bytes]]") -> "Trace":
    """The :class:`~bob.Trace` of a traced :func:`invoke` (``start``: the checkpoint after it)."""
    import hashlib

    from bob.formats.trace import Trace, TraceEntry, contract_sha256

    step_before, (resumed, *after) = start.step - len(losses), digests
    entries = tuple(TraceEntry(step_before + i + 1, float(x), d) for i, (x, d) in enumerate(zip(losses, after)))
    return Trace(contract_sha256(start.contract), hashlib.sha256(record.to_bytes()).digest(), step_before, resumed,
                 entries)


def _checked_planes(contract: "Contract", step: int, planes: "Any") -> "Any":
    """P, M and V (``planes``, indexable) copied into the rows of one new
    (3, PARAMETER_COUNT) float32 array by the native core's resume check, in one call
    (``bob.core.resume_problem(..., into=)``, a vectorized pass: a fifth of
    the time of :func:`~bob.formats.checkpoint.state_findings`' NumPy). None when
    the contract is not bob v1's, the core finds something to refuse, or it
    cannot read the planes or the step (values reassigned to a
    ``Checkpoint``): the readers' checks then name what is wrong. The two
    refuse exactly the same states (``tests/formats/test_rules.py`` holds
    them equal on every kind of float32, ``tests/hostile/`` in a hostile
    floating-point environment). The readers themselves never import the core."""
    import numpy as np

    from bob import core

    if not contract.is_v1:
        return None
    owned = np.empty((len(PLANE_NAMES), PARAMETER_COUNT), dtype=np.float32)
    try:
        problem = core.resume_problem(planes[0], planes[1], planes[2], step, into=owned)
    except (TypeError, ValueError, core.CoreError):
        return None
    return owned if problem is None else None


def _owned_copy(checkpoint: "Checkpoint") -> "Checkpoint":
    """A copy of ``checkpoint`` whose P, M and V are rows of one new array:
    one allocation and one pass over the planes' bytes. Three separate
    plane-sized arrays (``Checkpoint.copy``) measured several times the cost in
    a loop of invocations: glibc gives their pages back to the system when
    they are freed (its trim threshold follows the largest block freed), so
    each copy faulted them in again, 160 page faults a call; one block of
    all three planes is kept and reused. Planes reassigned to anything but flat
    float32 arrays take :meth:`~bob.Checkpoint.copy`, which converts and
    checks them."""
    import numpy as np

    planes = (checkpoint.p, checkpoint.m, checkpoint.v)
    if not all(isinstance(a, np.ndarray) and a.dtype == np.float32 and a.shape == (PARAMETER_COUNT,)
               for a in planes):
        return checkpoint.copy()
    owned = np.empty((len(planes), PARAMETER_COUNT), dtype=np.float32)
    for row, plane in zip(owned, planes):
        row[...] = plane
    return _with_planes(checkpoint.step, owned, checkpoint.header_bytes, checkpoint.contract)


def _loaded(data: bytes) -> "Checkpoint":
    """The checkpoint in ``data``, checked for resuming as
    :func:`~bob.load_checkpoint` checks it. The file bob writes (canonical,
    every digest holding) is recognized with one SHA-256 pass
    (:func:`bob.formats.checkpoint.recognize_checkpoint`, which
    ``tests/formats/test_canonical.py`` holds to the schemas) and its planes
    copied once; anything else, and any state that may not be resumed, is
    judged by the schemas, which name what is wrong."""
    from bob.formats.checkpoint import load_checkpoint

    if type(data) is not bytes:
        return load_checkpoint(data)
    from bob.formats.checkpoint import HEADER_BYTES, plane_views, recognize_checkpoint
    from bob.formats.contract import V1

    step = recognize_checkpoint(data)
    if step is None:
        return load_checkpoint(data)
    owned = _checked_planes(V1, step, plane_views(data, HEADER_BYTES))
    if owned is None:
        return load_checkpoint(data)  # raises the finding, placed in the file
    return _with_planes(step, owned, HEADER_BYTES, V1)


def _with_planes(step: int, planes, header_bytes: int, contract: "Contract") -> "Checkpoint":
    """A Checkpoint over the rows of ``planes`` (3 x PARAMETER_COUNT float32, owned by the new checkpoint)."""
    from bob.formats.checkpoint import Checkpoint

    return Checkpoint(step, planes[0], planes[1], planes[2], header_bytes, contract)
