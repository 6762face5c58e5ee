"""What ``--trace`` costs: a whole resuming ``bob-run`` with and without it, interleaved.

    PYTHONPATH=python .venv/bin/python benchmarks/bench_trace.py [--rounds N] [--calls N]

Each round runs both commands once, in turn (the checkout's ``bob-run``
script, the bob on PYTHONPATH), each resuming its own checkpoint, so load
elsewhere on the machine slows both alike; the table gives median and
minimum wall time and the median's ratio to the untraced run (aim: under
1.10). A second table times the part that changes, in one process: an
invocation's updates in one call of the core against one update per call
with the XXH3-128 of P, M and V before the first and after each (``bob.invocation.traced_train``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _table import load_line, ratio_table

import bob
from bob import core
from bob.formats.constants import UPDATES_PER_INVOCATION
from bob.invocation import traced_train

SCRIPT = Path(bob.__file__).resolve().parent.parent / "bob.data" / "scripts" / "bob-run"
ENV = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def timed(argv: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=ENV)
    return time.perf_counter() - t0


def whole_runs(rounds: int) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory() as d:
        rec = Path(d, "rec.bin")
        bob.build_input(b"abracadabra", [b"abra", b"cad", b""]).write(rec)

        def argv(name: str, *extra: str) -> list[str]:
            return [sys.executable, str(SCRIPT), "--input", str(rec), "--checkpoint", str(Path(d, f"{name}.ck")),
                    "--predictions", str(Path(d, f"{name}.pred")), *extra]

        commands = {"bob-run (resuming)": argv("plain"),
                    "bob-run --trace (resuming)": argv("traced", "--trace", str(Path(d, "t.trace")))}
        for command in commands.values():  # a checkpoint to resume from, and the bytecode cached
            timed(command)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(rounds):
            for name, command in commands.items():
                times[name].append(timed(command))
        assert Path(d, "plain.ck").read_bytes() == Path(d, "traced.ck").read_bytes()  # the same runs
    return times


def updates(rounds: int, calls: int) -> dict[str, list[float]]:
    p, m, v = core.initial_planes()
    record = bob.build_input(b"abracadabra", [b"abra", b"cad", b""])
    contexts, targets = record.contexts, record.targets
    times: dict[str, list[float]] = {"one call of the updates": [], "one update per call + digests of P, M, V": []}
    step = 0
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            core.train(p, m, v, contexts, targets, step, UPDATES_PER_INVOCATION, threads=1)
            step += UPDATES_PER_INVOCATION
        times["one call of the updates"].append((time.perf_counter() - t0) / calls)
        t0 = time.perf_counter()
        for _ in range(calls):
            traced_train(p, m, v, contexts, targets, step, UPDATES_PER_INVOCATION, [], threads=1)
            step += UPDATES_PER_INVOCATION
        times["one update per call + digests of P, M, V"].append((time.perf_counter() - t0) / calls)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=41)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    runs = whole_runs(args.rounds)
    inner = updates(max(5, args.rounds // 4), args.calls)
    print(f"{args.rounds} interleaved rounds; {load_line()}")
    print(ratio_table(runs, "bob-run (resuming)", first_column="command", unit="ms", scale=1e3, ratio_to="untraced"))
    print()
    print(ratio_table(inner, "one call of the updates", first_column="an invocation's updates, 1 thread", unit="µs",
                      scale=1e6, ratio_to="one call"))


if __name__ == "__main__":
    main()
