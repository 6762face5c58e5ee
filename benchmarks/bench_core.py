"""µs per update of the native core at vocabulary 256 with all 256 rows live,
next to the plain-NumPy reference (tests/reference.py).

    .venv/bin/python benchmarks/bench_core.py

Each core measurement is the best of 15 runs, each training a fresh state
through 10 invocations (steps 0 to 10 x UPDATES_PER_INVOCATION) through the
binding bob-run uses, divided by the number of updates.
"""

from __future__ import annotations

import os
import sys
import timeit

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

import reference  # noqa: E402

import bob.core  # noqa: E402
from bob import _core  # noqa: E402
from bob.formats.constants import UPDATES_PER_INVOCATION as U  # noqa: E402


def all_rows_live():
    contexts = np.arange(256, dtype=np.uint32)
    targets = ((contexts * 7 + 3) % 256).astype(np.uint32)
    return contexts, targets


def core_us_per_update(threads: int, kernel: str) -> float:
    """Best of 15 runs of 10 invocations from a fresh state."""
    contexts, targets = all_rows_live()
    best = float("inf")
    for _ in range(15):
        p, m, v = bob.core.initial_planes()
        start = timeit.default_timer()
        for call in range(10):
            _core.train((p, m, v), (contexts, targets), U * call, U, threads=threads, kernel=kernel)
        best = min(best, timeit.default_timer() - start)
    return best / (10 * U) * 1e6


def reference_us_per_update() -> float:
    contexts, targets = all_rows_live()
    p, m, v = reference.initial_planes()
    state = {"step": 0}

    def invocation():
        reference.train(p, m, v, contexts, targets, state["step"], U)
        state["step"] += U

    best = min(timeit.repeat(invocation, number=1, repeat=3))
    return best / U * 1e6


def main() -> None:
    print(f"CPU kernel chosen by 'auto': {_core.resolved_kernel()}; os.cpu_count() = {os.cpu_count()}")
    rows = []
    for kernel in ("auto", "avx2", "portable"):
        for threads in (1, 2):
            rows.append((f"core, kernel {_core.resolved_kernel(kernel)}, {threads} thread(s)",
                         core_us_per_update(threads, kernel)))
    rows.append(("core, default (auto kernel, threads = cores)", core_us_per_update(0, "auto")))
    rows.append(("NumPy reference (tests/reference.py)", reference_us_per_update()))
    width = max(len(r[0]) for r in rows)
    for name, us in rows:
        print(f"{name:<{width}}  {us:10.1f} µs/update")


if __name__ == "__main__":
    main()
