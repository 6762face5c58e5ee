#!/usr/bin/env python3
"""Fuzz throughput: executions per second of bob-fuzz's format targets on a fixed input set.

    .venv/bin/python benchmarks/bench_fuzz.py [--inputs N] [--rounds R] [--targets T,...]
                                              [--baseline CHECKOUT] [--instrumented] [--json]

For each target (default ``input,checkpoint,predictions``) the same ``N``
inputs are drawn once, seeded, by this checkout's mutator from the target's
seeds (the seeded loop's mix: 60% fast-path-keeping mutations of an accepted
file, the rest the campaign's custom mutator), written to a temporary
directory, and run through the target in a fresh process per round: the
figures are the median executions per second over the rounds, of wall time
and of the process's CPU time (steadier on a shared machine), and the
process's peak resident memory. Findings are counted, not raised (a
baseline may disagree with inputs the newer mutator draws).

``--baseline CHECKOUT`` (repeatable) runs the same inputs through another
checkout's targets too (its ``python/`` first on ``sys.path``; it needs a built
``python/bob/_core*.so``, e.g. ``git archive OLD python | tar -x -C DIR`` and a
copy of this checkout's), interleaved round by round, and prints NEW / each.
No engine: plain Python, or with ``--instrumented`` bob imported under
atheris's instrumentation exactly as a campaign worker imports it (the
coverage callbacks run; libFuzzer's own work is not counted).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

RUNNER = r"""
import json, resource, sys, time
from pathlib import Path
if sys.argv[3] == "instrumented":  # as a campaign worker imports bob (bob.fuzz.campaign's WORKER)
    import atheris
    harness = ["bob.fuzz." + m for m in ("mutator", "structural", "dictionary", "campaign", "common", "cli",
                                         "replay", "strategies", "keys", "loop")]  # (old modules: a baseline's)
    with atheris.instrument_imports(include=["bob"], exclude=harness):
        from bob.fuzz import mutator, targets
        targets.preload()
from bob.fuzz.targets import get
target = get(sys.argv[1]).run
inputs = [p.read_bytes() for p in sorted(Path(sys.argv[2]).iterdir())]
target(inputs[0])  # warm-up: lazy imports, the native core
findings = 0
t0, c0 = time.perf_counter(), time.process_time()
for data in inputs:
    try:
        target(data)
    except Exception:
        findings += 1
seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
print(json.dumps({"exec_per_s": len(inputs) / seconds, "exec_per_cpu_s": len(inputs) / cpu, "findings": findings,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def draw_inputs(target: str, n: int, outdir: Path, seed: int = 20261201) -> None:
    sys.path.insert(0, str(ROOT / "python"))
    from bob.fuzz.conformance import judge  # the seeded loop's own test of "accepted"
    from bob.fuzz.mutator import custom_mutator, mutate_canonical
    from bob.fuzz.targets import TARGETS, seed_files

    fmt = TARGETS[target].format
    seeds = [p.read_bytes() for p in seed_files(target)]
    accepted = [s for s in seeds if s and target in ("input", "checkpoint") and judge(target, s)["verdict"] == "accept"]
    mutator = custom_mutator(fmt, None)
    rnd = random.Random(seed)
    outdir.mkdir(parents=True)
    for i in range(n):
        if accepted and rnd.random() < 0.6:
            data = mutate_canonical(accepted[rnd.randrange(len(accepted))], rnd, fmt)
        else:
            data = mutator(seeds[rnd.randrange(len(seeds))], 1 << 20, rnd.getrandbits(32))
        (outdir / f"{i:06d}.bin").write_bytes(data)


def run_once(checkout: Path, target: str, inputs: Path, mode: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(checkout / "python"), PYTHONHASHSEED="0")
    out = subprocess.run([sys.executable, "-c", RUNNER, target, str(inputs), mode], env=env, check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--inputs", type=int, default=400)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--targets", default="input,checkpoint,predictions")
    ap.add_argument("--baseline", type=Path, action="append", default=[],
                    help="another checkout to compare with (repeatable; named by its directory)")
    ap.add_argument("--instrumented", action="store_true",
                    help="import bob under atheris's instrumentation, as a campaign worker does (needs atheris)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    checkouts = {"new": ROOT} | {b.resolve().name: b.resolve() for b in args.baseline}
    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="bob-bench-fuzz-") as tmp:
        for target in args.targets.split(","):
            inputs = Path(tmp) / target
            draw_inputs(target, args.inputs, inputs)
            runs: dict[str, list[dict]] = {k: [] for k in checkouts}
            for _ in range(args.rounds):
                for name, checkout in checkouts.items():
                    runs[name].append(run_once(checkout, target, inputs,
                                               "instrumented" if args.instrumented else "plain"))
            results[target] = {
                name: {"exec_per_s": statistics.median(r["exec_per_s"] for r in rs),
                       "exec_per_cpu_s": statistics.median(r["exec_per_cpu_s"] for r in rs),
                       "peak_rss_mb": max(r["peak_rss_mb"] for r in rs),
                       "findings": rs[0]["findings"]}
                for name, rs in runs.items()}
    if args.json:
        print(json.dumps(results, indent=1))
        return
    print(f"{'target':<12} {'checkout':<16} {'exec/s':>9} {'exec/CPU-s':>11} {'peak RSS MB':>12} {'findings':>9}")
    for target, by in results.items():
        for name, r in by.items():
            print(f"{target:<12} {name:<16} {r['exec_per_s']:>9.0f} {r['exec_per_cpu_s']:>11.0f} "
                  f"{r['peak_rss_mb']:>12.0f} {r['findings']:>9}")
        new = by["new"]
        for name, old in by.items():
            if name != "new":
                print(f"{target:<12} {'new/' + name:<16} {new['exec_per_s'] / old['exec_per_s']:>8.2f}x "
                      f"{new['exec_per_cpu_s'] / old['exec_per_cpu_s']:>10.2f}x")


if __name__ == "__main__":
    main()
