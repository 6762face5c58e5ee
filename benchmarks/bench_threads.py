"""Back-to-back `train` calls against the fused-loop floor, in one process.

    cargo build --release -p bob-py ... (or maturin develop --release)
    PYTHONPATH=python .venv/bin/python benchmarks/bench_threads.py [--rounds 15] [--before PATH]

At vocabulary 256 with every row live, each round measures, interleaved:

- a sequence of 40 back-to-back `_core.train` calls of one invocation's
  updates each (a fresh state per round), at 1 and at 2 threads, the way
  qualification, fuzzing and library loops call the core: µs per update;
- the fused-loop floor (`bob_core::floor`, through `_core._fused_loop_floor`)
  at 1 and 2 threads, on the steps of a first call: µs per update;
- a lone call (one invocation's updates from the seeded start) after 20 ms asleep, at 1
  thread (bob-run's) and at 2 threads (a pool that has parked).

Each measurement starts after 20 ms asleep, when the pool has parked, as
a caller that comes back later finds it (a sequence's first call wakes it).
The tables give medians and minima over the rounds, and the ratios of
both. `--before PATH` loads a second build of the extension (for example
the previous commit's `python/bob/_core.abi3.so`, copied aside) as its own
module and times its sequences and lone calls in the same rounds, the two
builds taking turns to go first.

Last, the CPU time the process uses (all threads, from /proc/self/stat)
over 1 s of sleep right after a 2-thread call: a pool that parks uses its
moment of yielding and nothing more. The load average is printed before and after:
the machine may be shared, and the ratios move with the load.
"""

from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import os
import statistics
import time
from types import ModuleType

import numpy as np

import bob.core
from bob import _core
from bob.formats.constants import UPDATES_PER_INVOCATION

CALLS = 40
UPDATES = UPDATES_PER_INVOCATION
PAUSE = 0.020


def load_other_core(path: str) -> ModuleType:
    """Another build of the extension, as a module of its own (its own pool)."""
    loader = importlib.machinery.ExtensionFileLoader("_core", path)
    spec = importlib.util.spec_from_loader("_core", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def pairs() -> tuple[np.ndarray, np.ndarray]:
    contexts = np.arange(256, dtype=np.uint32)
    return contexts, ((contexts * 7 + 3) % 256).astype(np.uint32)


def train(core: ModuleType, planes: tuple, pairs: tuple, step: int, threads: int) -> None:
    """UPDATES updates through ``core``'s binding; a build older than the
    binding's (planes, pairs) signature takes the five buffers one by one."""
    if (core.train.__text_signature__ or "").startswith("(planes"):
        core.train(planes, pairs, step, UPDATES, threads=threads)
    else:
        core.train(*planes, *pairs, step, UPDATES, threads=threads)


def sequence_us(core: ModuleType, threads: int) -> float:
    """µs per update of CALLS back-to-back calls from a fresh state."""
    contexts, targets = pairs()
    p, m, v = bob.core.initial_planes()
    time.sleep(PAUSE)
    start = time.perf_counter()
    for call in range(CALLS):
        train(core, (p, m, v), (contexts, targets), UPDATES * call, threads)
    return (time.perf_counter() - start) / (CALLS * UPDATES) * 1e6


def lone_us(core: ModuleType, threads: int) -> float:
    """µs per update of one call after PAUSE asleep."""
    contexts, targets = pairs()
    p, m, v = bob.core.initial_planes()
    time.sleep(PAUSE)
    start = time.perf_counter()
    train(core, (p, m, v), (contexts, targets), 0, threads)
    return (time.perf_counter() - start) / UPDATES * 1e6


def cpu_seconds() -> float:
    """User + system CPU time of the whole process (every thread)."""
    with open("/proc/self/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def idle_cpu_ms(core: ModuleType) -> float:
    contexts, targets = pairs()
    p, m, v = bob.core.initial_planes()
    train(core, (p, m, v), (contexts, targets), 0, 2)
    before = cpu_seconds()
    time.sleep(1.0)
    return (cpu_seconds() - before) * 1e3


def loadavg() -> str:
    with open("/proc/loadavg", encoding="ascii") as f:
        return " ".join(f.read().split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--before", help="another build of _core.abi3.so to time in the same rounds")
    args = parser.parse_args()
    cores = {"this": _core}
    if args.before:
        cores["before"] = load_other_core(args.before)
    print(f"load average before: {loadavg()}; os.cpu_count() = {os.cpu_count()}; "
          f"kernel {_core.resolved_kernel()}; {args.rounds} interleaved rounds")
    results: dict[str, list[float]] = {}

    def record(name: str, value: float) -> None:
        results.setdefault(name, []).append(value)

    for round_number in range(args.rounds):
        # Every other round the builds take turns going first.
        order = list(cores.items())[:: 1 if round_number % 2 == 0 else -1]
        for threads in (1, 2):
            time.sleep(PAUSE)
            record(f"floor: fused loop, {threads} thread(s)", _core._fused_loop_floor(threads) * 1e6)
            for label, core in order:
                record(f"{label}: {CALLS}-call sequence, {threads} thread(s)", sequence_us(core, threads))
        for threads in (1, 2):
            for label, core in order:
                record(f"{label}: lone call, {threads} thread(s)", lone_us(core, threads))
    width = max(map(len, results))
    print(f"{'µs per update':<{width}}  {'median':>8} {'min':>8}")
    for name, values in results.items():
        print(f"{name:<{width}}  {statistics.median(values):8.1f} {min(values):8.1f}")
    for stat_name, stat in (("medians", statistics.median), ("minima", min)):
        value = {name: stat(values) for name, values in results.items()}
        print(f"ratios of the {stat_name}:")
        for label in cores:
            for threads in (1, 2):
                floor = value[f"floor: fused loop, {threads} thread(s)"]
                seq = value[f"{label}: {CALLS}-call sequence, {threads} thread(s)"]
                print(f"  {label}: sequence / floor, {threads} thread(s): {seq / floor:5.2f}")
        if "before" in cores:
            for threads in (1, 2):
                this, before = (value[f"{label}: lone call, {threads} thread(s)"] for label in ("this", "before"))
                print(f"  lone call, this / before, {threads} thread(s): {this / before:5.2f}")
    for label, core in cores.items():
        print(f"{label}: CPU over 1 s asleep right after a 2-thread call: {idle_cpu_ms(core):.0f} ms")
    print(f"load average after: {loadavg()}")


if __name__ == "__main__":
    main()
