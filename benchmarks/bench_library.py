"""The library's round trip against its floors, in one process, interleaved.

    PYTHONPATH=python .venv/bin/python benchmarks/bench_library.py [--rounds N] [--calls N]

Every round times each row once, in turn (``--calls`` calls each, the mean
per call), so load elsewhere on the machine slows all rows alike; the table
gives, per row, the median and the best of the rounds, and the median's
ratio to the row's floor:

* ``load_checkpoint(bytes)`` and ``Checkpoint.to_bytes()`` against one
  SHA-256 pass over the 786,432 bytes of planes (hashlib), and that pass
  plus one copy of them;
* ``bob.invoke(record, checkpoint, threads=1)`` from a ``Checkpoint`` against
  the core's own work: ``core.train`` (one invocation's updates) + ``core.resume_problem``
  (the resume check of the new state) + ``core.predict``, on planes trained
  in place; from the checkpoint's bytes against that plus the SHA-256 pass
  (reading bytes is verifying them).

The input is the §8 checkpoint (step 10) and its record, from the golden files.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import time

from _table import load_line

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLDEN = os.path.join(ROOT, "python", "bob", "data", "golden")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=40)
    args = parser.parse_args()

    import numpy as np

    import bob
    from bob import core

    with open(os.path.join(GOLDEN, "checkpoint-abracadabra-step10.bin"), "rb") as f:
        data = f.read()
    with open(os.path.join(GOLDEN, "input-abracadabra.bin"), "rb") as f:
        record = bob.load_input(f.read())
    checkpoint = bob.load_checkpoint(data)
    planes = data[checkpoint.header_bytes:]
    work = checkpoint.copy()
    words = record.prompt_words

    def floor() -> None:
        core.train(work.p, work.m, work.v, record.contexts, record.targets, checkpoint.step, threads=1)
        core.resume_problem(work.p, work.m, work.v, checkpoint.step + core.UPDATES_PER_INVOCATION)
        core.predict(work.p, words)

    def floor_and_hash() -> None:
        hashlib.sha256(planes).digest()
        floor()

    rows = {
        "SHA-256 of 786,432 bytes (hashlib)": lambda: hashlib.sha256(planes).digest(),
        "one copy of 786,432 bytes": lambda: bytearray(planes),
        "SHA-256 + one copy": lambda: (hashlib.sha256(planes).digest(), bytearray(planes)),
        "bob.load_checkpoint(bytes)": lambda: bob.load_checkpoint(data),
        "Checkpoint.to_bytes()": checkpoint.to_bytes,
        "core train + resume check + predict": floor,
        "  the same + SHA-256": floor_and_hash,
        "bob.invoke(record, Checkpoint)": lambda: bob.invoke(record, checkpoint, threads=1),
        "bob.invoke(record, bytes)": lambda: bob.invoke(record, data, threads=1),
    }
    floors = {
        "bob.load_checkpoint(bytes)": "SHA-256 of 786,432 bytes (hashlib)",
        "Checkpoint.to_bytes()": "SHA-256 + one copy",
        "bob.invoke(record, Checkpoint)": "core train + resume check + predict",
        "bob.invoke(record, bytes)": "  the same + SHA-256",
    }
    for fn in rows.values():  # warm: the core's first call, NumPy's caches
        for _ in range(5):
            fn()
    times: dict[str, list[float]] = {name: [] for name in rows}
    for _ in range(args.rounds):
        np.copyto(work.p, checkpoint.p)  # the floor trains from the same state every round
        np.copyto(work.m, checkpoint.m)
        np.copyto(work.v, checkpoint.v)
        for name, fn in rows.items():
            t0 = time.perf_counter()
            for _ in range(args.calls):
                fn()
            times[name].append((time.perf_counter() - t0) / args.calls)

    print(f"{args.rounds} interleaved rounds of {args.calls} calls each, threads=1; {load_line()}")
    width = max(len(name) for name in rows)
    print(f"{'call':<{width}} {'median µs':>10} {'best µs':>9}  median / floor (best / best)")
    for name, xs in times.items():
        line = f"{name:<{width}} {statistics.median(xs) * 1e6:10.1f} {min(xs) * 1e6:9.1f}"
        if name in floors:
            base = times[floors[name]]
            line += (f"  {statistics.median(xs) / statistics.median(base):5.2f}"
                     f" ({min(xs) / min(base):.2f}) of {floors[name].strip()}")
        print(line)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
