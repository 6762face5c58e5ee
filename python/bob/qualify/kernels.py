"""Kernels × threads: every kernel this CPU offers, at several thread counts,
bit-identical to the plain scalar transcription of §6 shipped in the core
(``kernel="scalar"``, selectable for qualification only; ``auto`` never picks it).

The states are drawn from a seeded NumPy generator, so a failure is reproduced
by ``bob-qualify --seed N``. They stress what a vectorised or threaded kernel
could get wrong: logits of ±80 and ±1e30, subnormals, signed zeros, tied
maxima and whole tied rows, rows no pair uses (count 0), non-zero moments,
steps from 0 up to the last one with room for one invocation's updates.

When a kernel's result differs, both runs are traced update by update
(:func:`first_diverging_update`, formats/trace.md) and the verdict names the
first update after which the two states differ, and in which planes.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from bob import core
from bob.formats.canonical import record_bytes
from bob.formats.constants import (EMPTY_PROMPT, PARAMETER_COUNT, PLANE_NAMES, PROMPTS, U64_MAX,
                                   UPDATES_PER_INVOCATION, VOCABULARY)
from bob.formats.trace import Trace, TraceEntry, contract_sha256
from bob.invocation import traced_train
from bob.qualify.verdict import Verdict, first_plane_difference, losses_agree

CHECK = "kernels"
KINDS = ("ordinary", "extreme", "tied", "all-rows", "fresh")
PERTURBED_PLANE, PERTURBED_INDEX = 0, 12_345  # P, context 48, next 57


@dataclass(frozen=True)
class State:
    """One qualification state: planes, pairs and step, and how it was drawn."""

    case: int
    kind: str
    step: int
    p: np.ndarray
    m: np.ndarray
    v: np.ndarray
    contexts: np.ndarray
    targets: np.ndarray

    @property
    def label(self) -> str:
        live = int(np.unique(self.contexts).size)
        return f"case {self.case} ({self.kind}, step {self.step}, {live} live rows)"


def thread_counts() -> list[int]:
    """1, 2, this machine's CPU count and an odd count (3, or 5 on a 3-CPU machine)."""
    cpus = os.cpu_count() or 1
    odd = 3 if cpus != 3 else 5
    return sorted({1, 2, cpus, odd})


def configurations() -> list[tuple[str, int]]:
    """(kernel, threads) to qualify: every kernel this CPU offers at every
    thread count, and ``auto`` at 0 threads — what ``bob-run`` itself uses."""
    return [(k, t) for k in core.kernels() for t in thread_counts()] + [("auto", 0)]


def _logits(rng: np.random.Generator, size: int) -> np.ndarray:
    """Logits that stress the kernels, as the core's own transcription tests draw them."""
    choice = rng.integers(0, 10, size)
    sign = np.where(rng.integers(0, 2, size) == 0, 1.0, -1.0).astype(np.float32)
    subnormal = rng.integers(1, 0x7FFFFF, size, dtype=np.uint32).view(np.float32) * sign
    ordinary = ((rng.random(size, dtype=np.float32) - 0.5) * 20.0).astype(np.float32)
    out = ordinary.copy()
    out[choice == 0] = 80.0
    out[choice == 1] = -80.0
    out[choice == 2] = (1e30 * sign)[choice == 2]
    out[choice == 3] = subnormal[choice == 3]
    out[choice == 4] = 0.25  # ties
    out[choice == 5] = (0.0 * sign)[choice == 5]  # +0.0 and -0.0
    return out.astype(np.float32)


ODD_VALUES = 200  # zeros, and as many subnormals, put in M and V by an odd state


def _moments(rng: np.random.Generator, odd: bool) -> tuple[np.ndarray, np.ndarray]:
    """M and V as training leaves them (V of the order of M squared), and with
    ``odd`` also exact zeros and subnormals in both, which blow P up."""
    m = ((rng.random(PARAMETER_COUNT, dtype=np.float32) - 0.5) * 0.01).astype(np.float32)
    v = (m * m * (1.0 + 9.0 * rng.random(PARAMETER_COUNT, dtype=np.float32))).astype(np.float32)
    if odd:
        for plane in (m, v):
            zeros, subnormals = np.split(rng.integers(0, PARAMETER_COUNT, 2 * ODD_VALUES), 2)
            plane[zeros] = 0.0
            plane[subnormals] = rng.integers(1, 0x7FFFFF, ODD_VALUES, dtype=np.uint32).view(np.float32)
    return m, v


def _step(rng: np.random.Generator, case: int) -> int:
    choice = case % 4
    if choice == 0:
        return int(rng.integers(1, 100))
    if choice == 1:
        return int(rng.integers(100, 1 << 40))
    if choice == 2:
        return U64_MAX - UPDATES_PER_INVOCATION - int(rng.integers(0, 1000))  # the last steps with room
    return int(rng.integers(1, 1 << 20))


def draw_state(seed: int, case: int) -> State:
    """State number ``case`` of the seeded series (independent of how many are drawn)."""
    rng = np.random.default_rng([seed, case])
    kind = KINDS[case % len(KINDS)]
    if kind == "all-rows":  # every context byte present: all 256 rows live
        contexts = rng.permutation(VOCABULARY).astype(np.uint8)
    else:  # contexts from a random subset of bytes: the other rows have count 0
        live = rng.choice(VOCABULARY, size=int(rng.integers(1, VOCABULARY)), replace=False)
        contexts = rng.choice(live, size=VOCABULARY).astype(np.uint8)
    targets = rng.integers(0, VOCABULARY, VOCABULARY).astype(np.uint8)
    if kind == "fresh":
        p, m, v = core.initial_planes()
        return State(case, kind, 0, p, m, v, contexts, targets)
    m, v = _moments(rng, odd=kind in ("extreme", "tied"))
    if kind == "ordinary":
        p = ((rng.random(PARAMETER_COUNT, dtype=np.float32) - 0.5) * 0.1).astype(np.float32)
    elif kind == "extreme":
        p = _logits(rng, PARAMETER_COUNT)
    else:  # tied: whole rows of one value, and rows whose maximum appears several times
        p = np.repeat(rng.choice(np.array([0.0, 0.25, -80.0, 1e30, 7.5], dtype=np.float32), VOCABULARY),
                      VOCABULARY).astype(np.float32)
        rows = rng.choice(VOCABULARY, 128, replace=False)
        for r in rows:
            row = ((rng.random(VOCABULARY, dtype=np.float32) - 0.5) * 4).astype(np.float32)
            row[rng.choice(VOCABULARY, int(rng.integers(2, 9)), replace=False)] = 3.0
            p[r * VOCABULARY:(r + 1) * VOCABULARY] = row
    return State(case, kind, _step(rng, case), p, m, v, contexts, targets)


def _train(state: State, kernel: str, threads: int) -> tuple[tuple[np.ndarray, ...], list[float]]:
    p, m, v = state.p.copy(), state.m.copy(), state.v.copy()
    losses = core.train(p, m, v, state.contexts, state.targets, state.step, UPDATES_PER_INVOCATION,
                        threads=threads, kernel=kernel)
    return (p, m, v), losses


def _flip(planes: "tuple[np.ndarray, ...]") -> None:
    """The test hook's damage: one bit of the perturbed plane (:data:`PERTURBED_PLANE`, :data:`PERTURBED_INDEX`)."""
    bits = planes[PERTURBED_PLANE].view(np.uint32)
    bits[PERTURBED_INDEX] ^= 1


def kernel_trace(state: State, kernel: str, threads: int, flip: bool) -> Trace:
    """The trace (formats/trace.md) of ``kernel``'s updates from ``state``, on copies of its planes."""
    planes = (state.p.copy(), state.m.copy(), state.v.copy())
    digests: list[tuple[bytes, bytes, bytes]] = []
    last = UPDATES_PER_INVOCATION - 1
    losses = traced_train(*planes, state.contexts, state.targets, state.step, UPDATES_PER_INVOCATION, digests,
                          threads=threads, kernel=kernel, after=lambda i: _flip(planes) if flip and i == last else None)
    record = record_bytes(state.contexts.tobytes(), state.targets.tobytes(), (EMPTY_PROMPT,) * PROMPTS)
    entries = tuple(TraceEntry(state.step + i + 1, loss, d) for i, (loss, d) in enumerate(zip(losses, digests[1:])))
    return Trace(contract_sha256(), hashlib.sha256(record).digest(), state.step, digests[0], entries)


def first_diverging_update(state: State, kernel: str, threads: int, *, flip: bool = False) -> "dict[str, Any]":
    """Where ``kernel`` at ``threads`` parts from the scalar reference on ``state``, by the
    two runs' traces: ``first_diverging_update`` (1-based, None if the traces agree), its step and planes."""
    reference, traced = kernel_trace(state, "scalar", 1, False), kernel_trace(state, kernel, threads, flip)
    index = reference.first_divergence(traced)
    if index is None:
        return {"first_diverging_update": None}
    want, got = reference.entries[index], traced.entries[index]
    return {"first_diverging_update": index + 1, "diverging_step": want.step,
            "diverging_planes": [n for n, a, b in zip(PLANE_NAMES, want.digests, got.digests) if a != b]}


def _parted(parting: "dict[str, Any]") -> str:
    update = parting["first_diverging_update"]
    if update is None:
        return "; traced update by update the two agree"
    return (f"; the runs part at update {update} of {UPDATES_PER_INVOCATION} (to step {parting['diverging_step']}, "
            f"{' and '.join(parting['diverging_planes'])})")


def check_kernels(seed: int, cases: int, *, perturb: tuple[str, int] | None = None,
                  tick: Callable[[], None] = lambda: None) -> list[Verdict]:
    """One verdict per (kernel, threads): its first difference from the scalar
    reference over ``cases`` seeded states, or that there was none.

    ``perturb`` (a test hook) flips one bit of that configuration's result.
    """
    configs = configurations()
    first_failure: dict[tuple[str, int], Verdict] = {}
    seconds = {c: 0.0 for c in configs}
    for case in range(cases):
        state = draw_state(seed, case)
        want, want_losses = _train(state, "scalar", 1)
        for kernel, threads in configs:
            if (kernel, threads) in first_failure:
                continue
            started = time.perf_counter()
            got, losses = _train(state, kernel, threads)
            seconds[(kernel, threads)] += time.perf_counter() - started
            if perturb == (kernel, threads):
                _flip(got)
            diff = first_plane_difference(want, got)
            if diff is not None:
                parting = first_diverging_update(state, kernel, threads, flip=perturb == (kernel, threads))
                first_failure[(kernel, threads)] = Verdict(
                    CHECK, False, f"differs from the scalar transcription on {state.label}{_parted(parting)}",
                    kernel=kernel, threads=threads, plane=diff.plane, index=diff.index,
                    expected=diff.expected, actual=diff.actual,
                    details={"seed": seed, "case": case, "kind": state.kind, "step": state.step, **parting})
            elif not losses_agree(want_losses, losses):
                first_failure[(kernel, threads)] = Verdict(
                    CHECK, False, f"losses differ from the scalar transcription's on {state.label}",
                    kernel=kernel, threads=threads, expected=repr(want_losses), actual=repr(losses),
                    details={"seed": seed, "case": case, "kind": state.kind, "step": state.step})
        tick()
    verdicts = []
    for config in configs:
        kernel, threads = config
        reference = config == ("scalar", 1)  # the reference itself: a second run gives the same bits
        verdict = first_failure.get(config) or Verdict(
            CHECK, True, f"{'the reference: reruns' if reference else 'bit-identical to scalar'} on {cases} states",
            kernel=kernel, threads=threads, details={"seed": seed, "states": cases})
        if kernel == "auto":
            resolved = core._core.resolved_kernel("auto")
            verdict.details["resolves_to"] = resolved
            if resolved not in core.kernels() or resolved == "scalar":  # scalar is for qualification only
                verdict = Verdict(CHECK, False, f"auto resolves to {resolved!r}, which must be a fast kernel "
                                                "this CPU offers", kernel=kernel, threads=threads)
        verdict.seconds = seconds[config]
        verdicts.append(verdict)
    return verdicts
