"""The core's scaling with the vocabulary: µs per update and ns per parameter
for V = 64 … 4096 at 1 and 2 threads, through the binding bob-run uses.

    .venv/bin/python benchmarks/bench_scaling.py [--rounds N] [--out docs/scaling]

Every row live (pair k = (k, 7k + 3 mod V)); each measurement is one call of
the updates of one invocation from the seeded start, with every plane page
touched before the clock. Rounds interleave every (V, threads) cell, so load
elsewhere on the machine spreads over all of them; the table gives the
median and the minimum. Writes OUT.md (the table) and OUT.png (the plot;
needs the `plot` extra, matplotlib).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from bob import _core
from bob.formats.constants import UPDATES_PER_INVOCATION

from _table import load_line

VOCABULARIES = (64, 128, 256, 512, 1024, 2048, 4096)
THREADS = (1, 2)
UPDATES = UPDATES_PER_INVOCATION


def one_call(n: int, threads: int) -> float:
    """Seconds per update of one call of UPDATES updates at vocabulary n."""
    p, _, _ = _core.initial_planes(b"bob-seed-v1", n)
    m = np.full(n * n, 0.0, dtype=np.float32)  # written, so no page faults inside the clock
    v = np.full(n * n, 0.0, dtype=np.float32)
    contexts = np.arange(n, dtype=np.uint32)
    targets = ((contexts * 7 + 3) % n).astype(np.uint32)
    start = time.perf_counter()
    _core.train((p, m, v), (contexts, targets), 0, UPDATES, threads=threads)
    return (time.perf_counter() - start) / UPDATES


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--out", default="docs/scaling")
    args = parser.parse_args()
    cells = [(n, t) for n in VOCABULARIES for t in THREADS]
    times: dict[tuple[int, int], list[float]] = {cell: [] for cell in cells}
    for cell in cells:
        one_call(*cell)  # warm: the core's thread pool, the allocator
    for _ in range(args.rounds):
        for cell in cells:
            times[cell].append(one_call(*cell))
    lines = [
        "# Core scaling",
        "",
        f"Core scaling ({args.rounds} interleaved rounds; {load_line()}; kernel {_core.resolved_kernel('auto')}; "
        "V is the vocabulary, the planes V × V). Reproduce (it rewrites this page and docs/scaling.png): "
        f"`.venv/bin/python benchmarks/bench_scaling.py --rounds {args.rounds}`.",
        "",
        "| V | µs/update, 1 thread (median / min) | µs/update, 2 threads (median / min) | "
        "ns/parameter 1 thr (median) | ns/parameter 2 thr (median) | 2-thread speedup (median / min) |",
        "|---|---|---|---|---|---|",
    ]
    summary = {}
    for n in VOCABULARIES:
        row = [f"| {n}"]
        med = {}
        for t in THREADS:
            xs = times[(n, t)]
            med[t] = statistics.median(xs)
            row.append(f"{med[t] * 1e6:,.1f} / {min(xs) * 1e6:,.1f}")
        for t in THREADS:
            row.append(f"{med[t] * 1e9 / (n * n):.3f}")
        speedup_min = min(times[(n, 1)]) / min(times[(n, 2)])
        row.append(f"{med[1] / med[2]:.2f} / {speedup_min:.2f}")
        lines.append(" | ".join(row) + " |")
        summary[n] = med
    ratio = (summary[4096][2] / 4096**2) / (summary[256][2] / 256**2)
    lines += ["", f"ns/parameter at V = 4096 over V = 256, 2 threads (medians): {ratio:.2f}"]
    text = "\n".join(lines) + "\n"
    print(text)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text(text)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed (the `plot` extra): no plot")
        return
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for t in THREADS:
        us = [statistics.median(times[(n, t)]) * 1e6 for n in VOCABULARIES]
        ns = [statistics.median(times[(n, t)]) * 1e9 / (n * n) for n in VOCABULARIES]
        left.plot(VOCABULARIES, us, marker="o", label=f"{t} thread{'s' if t > 1 else ''}")
        right.plot(VOCABULARIES, ns, marker="o", label=f"{t} thread{'s' if t > 1 else ''}")
    for ax, label in ((left, "µs per update (median)"), (right, "ns per parameter (median)")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("vocabulary V (V × V parameters)")
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
        ax.legend()
    left.set_yscale("log")
    right.set_ylim(bottom=0)
    fig.suptitle(f"bob core: one {UPDATES}-update call, every row live")
    fig.tight_layout()
    fig.savefig(out.with_suffix(".png"), dpi=100)
    print(f"wrote {out.with_suffix('.md')} and {out.with_suffix('.png')}")


if __name__ == "__main__":
    main()
