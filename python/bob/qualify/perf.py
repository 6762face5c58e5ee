"""Performance snapshot: µs per update for each kernel × thread count at
bob's vocabulary, and a whole ``bob-run`` process against the interpreter's own
start. Measured interleaved (one sample of each configuration per round, the
order rotating each round) so a noisy machine slows all of them alike; medians
and minima are reported. A snapshot, not a benchmark: nothing here passes or fails.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from bob import core
from bob.formats.constants import VOCABULARY
from bob.qualify.checks import section8_record
from bob.qualify.kernels import configurations
from bob.qualify.processes import RunFiles, bob_run_command, raise_shortage, run_once, started
from bob.scratch import scratch_directory

UPDATES_PER_SAMPLE = 20


def _summary(samples: list[float]) -> dict[str, Any]:
    return {"median": statistics.median(samples), "min": min(samples), "samples": len(samples)}


def _rotations(items: list, rounds: int):
    for r in range(rounds):
        shift = r % len(items)
        yield items[shift:] + items[:shift]


def kernel_speeds(rounds: int, tick: Callable[[], None] = lambda: None) -> list[dict[str, Any]]:
    """µs/update per (kernel, threads) on a state where every row is live (the most work per update)."""
    rng = np.random.default_rng(0)
    contexts = rng.permutation(VOCABULARY).astype(np.uint8)
    targets = rng.integers(0, VOCABULARY, VOCABULARY).astype(np.uint8)
    start = core.initial_planes()
    configs = configurations()
    samples: dict[tuple[str, int], list[float]] = {c: [] for c in configs}
    for order in _rotations(configs, rounds):
        for kernel, threads in order:
            p, m, v = (a.copy() for a in start)
            began = time.perf_counter()
            core.train(p, m, v, contexts, targets, 0, UPDATES_PER_SAMPLE, threads=threads, kernel=kernel)
            samples[(kernel, threads)].append((time.perf_counter() - began) / UPDATES_PER_SAMPLE * 1e6)
        tick()
    return [{"kernel": k, "threads": t, "us_per_update": _summary(samples[(k, t)])} for k, t in configs]


def process_speeds(rounds: int, tick: Callable[[], None] = lambda: None) -> dict[str, Any]:
    """Wall seconds of a whole ``bob-run`` (resuming a step-10 checkpoint) and of ``python -c pass``."""
    command = bob_run_command()
    with scratch_directory("bob-qualify-perf-") as directory:
        files = RunFiles(Path(directory))
        files.record.write_bytes(section8_record())
        run_once(files, command)  # (a failure, a shortage included, as every check's first bob-run)
        checkpoint = files.checkpoint.read_bytes()
        runs = {
            "bob-run": command + files.arguments(),
            "python -c pass": [sys.executable, "-c", "pass"],
        }
        samples: dict[str, list[float]] = {name: [] for name in runs}
        for order in _rotations(list(runs), rounds):
            for name in order:
                files.checkpoint.write_bytes(checkpoint)  # every bob-run does the same invocation
                began = time.perf_counter()
                with started(runs[name]) as proc:
                    out, err = proc.communicate(timeout=60)
                if proc.returncode:
                    raise_shortage(subprocess.CompletedProcess(runs[name], proc.returncode, out, err))
                    raise subprocess.CalledProcessError(proc.returncode, runs[name])
                samples[name].append(time.perf_counter() - began)
            tick()
    bob_run, python = _summary(samples["bob-run"]), _summary(samples["python -c pass"])
    return {
        "command": command,
        "bob_run_seconds": bob_run,
        "python_seconds": python,
        "ratio_of_medians": bob_run["median"] / python["median"],
        "ratio_of_minima": bob_run["min"] / python["min"],
    }
