"""A whole bob-run invocation against the interpreter's own start.

    .venv/bin/python benchmarks/bench_startup.py

Median wall time of N runs each of `python -c pass` (the venv's interpreter),
`python -c "import bob.core"`, and a full `bob-run` invocation that resumes a
checkpoint (read, verify, 10 updates, write both files atomically).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

N = 15
BIN = Path(sys.executable).parent


def median_seconds(argv: list[str]) -> float:
    times = []
    for _ in range(N):
        t0 = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        rec = Path(d, "rec.bin")
        subprocess.run([str(BIN / "bob-fixture"), "--text", "abracadabra", "--prompt", "abra", "--prompt", "cad",
                        "--prompt", "", "--output", str(rec)], check=True, stdout=subprocess.DEVNULL)
        run = [str(BIN / "bob-run"), "--input", str(rec), "--checkpoint", str(Path(d, "ck.bin")),
               "--predictions", str(Path(d, "pred.bin"))]
        base = median_seconds([sys.executable, "-c", "pass"])
        rows = [
            ("python -c pass", base),
            ("python -c 'import numpy'", median_seconds([sys.executable, "-c", "import numpy"])),
            ("python -c 'import construct'", median_seconds([sys.executable, "-c", "import construct"])),
            ("bob-run (one invocation, resuming)", median_seconds(run)),
        ]
    for name, s in rows:
        print(f"{name:<38} {s * 1e3:8.1f} ms   {s / base:5.2f}x python start")


if __name__ == "__main__":
    main()
