"""bob-run's whole-process time in two checkouts, interleaved, against `python -c pass`.

    .venv/bin/python benchmarks/compare_checkouts.py OLD_CHECKOUT NEW_CHECKOUT [ROUNDS]

Each checkout needs its own `.venv` (scripts/bootstrap.sh). Both resume the
same checkpoint on the same record each round (bob-run replaces it, so the
work is identical up to the step number). Prints medians and minima and the
NEW / OLD ratio — for checking that a change did not slow start-up down.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bob-compare-") as scratch:  # (its files go with it)
        compare(Path(scratch))


def compare(work: Path) -> None:
    old, new = (Path(a).resolve() for a in sys.argv[1:3])
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 30
    subprocess.run([str(new / ".venv/bin/bob-fixture"), "--text", "abracadabra", "--prompt", "abra", "--prompt",
                    "cad", "--prompt", "", "--output", str(work / "rec.bin")], check=True, capture_output=True)

    def run(root: Path) -> list[str]:
        return [str(root / ".venv/bin/bob-run"), "--input", str(work / "rec.bin"), "--checkpoint",
                str(work / "ck.bin"), "--predictions", str(work / "pred.bin")]

    subprocess.run(run(new), check=True, capture_output=True)  # a checkpoint to resume
    times: dict[str, list[float]] = {"python -c pass": [], "old": [], "new": []}
    commands = {"python -c pass": [sys.executable, "-c", "pass"], "old": run(old), "new": run(new)}
    for _ in range(rounds):
        for name, argv in commands.items():
            t0 = time.perf_counter()
            subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
            times[name].append(time.perf_counter() - t0)
    for name, t in times.items():
        print(f"{name:16s} median {statistics.median(t) * 1e3:6.1f} ms   min {min(t) * 1e3:6.1f} ms")
    ratio = statistics.median(times["new"]) / statistics.median(times["old"])
    print(f"new / old: {ratio:.2f} (medians), {min(times['new']) / min(times['old']):.2f} (minima)")


if __name__ == "__main__":
    main()
