"""A checkpoint's round trip against one SHA-256 pass over its planes, interleaved.

    .venv/bin/python benchmarks/bench_serialise.py [--rounds N] [--calls K]

Each round times every call K times in turn (so load elsewhere on the
machine slows all of them alike) and keeps the per-call mean; the table gives
the median and minimum over the rounds and each median's ratio to one
``hashlib.sha256`` pass over 786,432 bytes (the planes), the floor of both
``bob.load_checkpoint`` (every chunk's digest verified) and
``Checkpoint.to_bytes`` (every chunk's digest computed). One copy of 786,432
bytes is shown beside it. Standard timing only (``time.perf_counter``).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

from _table import load_line, ratio_table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

import bob  # noqa: E402
from bob.formats.constants import PAYLOAD_BYTES  # noqa: E402

GOLDEN = ROOT / "python" / "bob" / "data" / "golden" / "checkpoint-abracadabra-step10.bin"


def calls() -> dict[str, object]:
    data = GOLDEN.read_bytes()
    checkpoint = bob.load_checkpoint(data)
    planes = data[-PAYLOAD_BYTES:]
    return {
        "sha256 of 786,432 bytes": lambda: hashlib.sha256(planes).digest(),
        "copy of 786,432 bytes": lambda: bytearray(planes),
        "bob.load_checkpoint(bytes)": lambda: bob.load_checkpoint(data),
        "Checkpoint.to_bytes()": checkpoint.to_bytes,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args(argv)
    table = calls()
    times: dict[str, list[float]] = {name: [] for name in table}
    for _ in range(args.rounds):
        for name, call in table.items():
            t0 = time.perf_counter()
            for _ in range(args.calls):
                call()  # type: ignore[operator]
            times[name].append((time.perf_counter() - t0) / args.calls)
    print(load_line())
    print(ratio_table(times, "sha256 of 786,432 bytes", first_column="call", unit="µs", scale=1e6,
                      ratio_to="one SHA-256"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
