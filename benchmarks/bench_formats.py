#!/usr/bin/env python3
"""Time bob's format readers (the aims: a 786,880-byte checkpoint fully
verified in under 2 ms, the 1,564-byte input record in under 50 µs).

    .venv/bin/python benchmarks/bench_formats.py [--runs N] [--json]

Each figure is the median of N timed calls (after warm-up), measured with
``time.perf_counter_ns``. "Fully verified" is everything ``bob.load_checkpoint``
does: magic, header parse (construct, interpreted), header digest, contract
fields, chunk table, padding, size, the three chunk SHA-256s, the state checks
for resuming, and one copy of the planes into writable arrays. No native core
is needed: the checkpoint is the §8 golden file.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

import bob  # noqa: E402

GOLDEN = os.path.join(ROOT, "python", "bob", "data", "golden")


def median_ns(fn, runs: int, warmup: int = 20) -> float:
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - t0)
    return statistics.median(samples)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    with open(os.path.join(GOLDEN, "checkpoint-abracadabra-step10.bin"), "rb") as f:
        ckpt = f.read()
    with open(os.path.join(GOLDEN, "input-abracadabra.bin"), "rb") as f:
        record = f.read()
    with open(os.path.join(GOLDEN, "predictions-abracadabra.bin"), "rb") as f:
        preds = f.read()
    loaded = bob.load_checkpoint(ckpt)
    rec = bob.load_input(record)

    runs_big = max(50, args.runs // 4)
    results = {
        "load_checkpoint_786880_us": median_ns(lambda: bob.load_checkpoint(ckpt), runs_big) / 1e3,
        "checkpoint_findings_786880_us": median_ns(lambda: bob.checkpoint_findings(ckpt), runs_big) / 1e3,
        "checkpoint_to_bytes_us": median_ns(loaded.to_bytes, runs_big) / 1e3,
        "load_input_1564_us": median_ns(lambda: bob.load_input(record), args.runs) / 1e3,
        "input_to_bytes_us": median_ns(rec.to_bytes, args.runs) / 1e3,
        "load_predictions_24_us": median_ns(lambda: bob.load_predictions(preds), args.runs) / 1e3,
    }
    aims = {"load_checkpoint_786880_us": 2000.0, "load_input_1564_us": 50.0}
    meta = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "runs": args.runs,
    }
    if args.json:
        print(json.dumps({"results": results, "aims": aims, "meta": meta}, indent=2))
    else:
        print(f"bob format readers — median of timed calls (Python {meta['python']}, {meta['cpus']} CPUs)")
        for name, value in results.items():
            aim = aims.get(name)
            note = f"   aim < {aim:g} µs: {'ok' if value < aim else 'MISSED'}" if aim else ""
            print(f"  {name:<32} {value:10.1f} µs{note}")
    return 0 if all(results[k] < v for k, v in aims.items()) else 1


if __name__ == "__main__":
    sys.exit(main())
