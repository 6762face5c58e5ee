"""bob's core side by side with PyTorch eager AdamW, vectorised NumPy and the
floor microbenchmarks, at vocabulary 256 with every row live, interleaved.

    cargo build --release -p bob-core --example floor     # the floors (Rust)
    .venv/bin/python benchmarks/bench_vs_torch.py [--rounds N]
    .venv/bin/python benchmarks/bench_vs_torch.py --torch  # also PyTorch

PyTorch is optional and never a dependency of bob: with --torch the script
creates its own environment under work/bench-torch-venv (ignored by git),
pip-installs torch and NumPy there on first use, and runs the PyTorch side
in that interpreter. Nothing here runs in CI or in the test suite.

Every round times each contender once (one call of one invocation's updates from the
same start, µs per update), so machine load spreads over all of them; the
table gives medians and minima and each median's ratio to bob's. The NumPy
and PyTorch versions compute the same update (softmax rows, the gradient,
AdamW with bob's hyperparameters) in float32 the ordinary way: they are not
bit-exact to the contract (no pinned exp or sums), which only flatters them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _table import load_line, ratio_table

import numpy as np

from bob import _core
from bob.formats.constants import UPDATES_PER_INVOCATION

ROOT = Path(__file__).resolve().parent.parent
TORCH_VENV = ROOT / "work" / "bench-torch-venv"
FLOOR = ROOT / "target" / "release" / "examples" / "floor"
N, UPDATES = 256, UPDATES_PER_INVOCATION
LR, BETA1, BETA2, EPS, WD = 0.05, 0.9, 0.999, 1e-8, 0.01

# The contenders other than bob, as one self-contained script each: run in
# this interpreter (NumPy) or in the torch environment (PyTorch). Each prints
# the seconds per update of one call of UPDATES updates (written into it below).
NUMPY_SIDE = r"""
import sys, time, numpy as np
N, U, LR, B1, B2, EPS, WD = 256, UPDATES_PER_INVOCATION, 0.05, 0.9, 0.999, 1e-8, 0.01
ctx = np.arange(N); tgt = (ctx * 7 + 3) % N
rng = np.random.default_rng(0)
p = ((rng.random((N, N), dtype=np.float32) - 0.5) * 0.02).astype(np.float32)
m = np.zeros_like(p); v = np.zeros_like(p)
h = np.zeros_like(p); np.add.at(h, (ctx, tgt), 1.0)
c = h.sum(axis=1, keepdims=True); K = np.float32(len(ctx))
start = time.perf_counter()
for t in range(1, U + 1):
    e = np.exp(p - p.max(axis=1, keepdims=True))
    prob = e / e.sum(axis=1, keepdims=True)
    g = (c * prob - h) / K
    m = B1 * m + (1 - B1) * g
    v = B2 * v + (1 - B2) * g * g
    mhat = m / np.float32(1 - B1 ** t); vhat = v / np.float32(1 - B2 ** t)
    p = p * np.float32(1 - LR * WD) - LR * mhat / (np.sqrt(vhat) + EPS)
print((time.perf_counter() - start) / U)
""".replace("UPDATES_PER_INVOCATION", str(UPDATES))

TORCH_SIDE = r"""
import sys, time, torch
torch.set_num_threads(int(sys.argv[1]))
N, U = 256, UPDATES_PER_INVOCATION
ctx = torch.arange(N); tgt = (ctx * 7 + 3) % N
g = torch.Generator().manual_seed(0)
p = ((torch.rand((N, N), generator=g) - 0.5) * 0.02).requires_grad_()
opt = torch.optim.AdamW([p], lr=0.05, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01, foreach=False)
start = time.perf_counter()
for _ in range(U):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(p[ctx], tgt)
    loss.backward()
    opt.step()
print((time.perf_counter() - start) / U)
""".replace("UPDATES_PER_INVOCATION", str(UPDATES))


def bob_side(threads: int) -> float:
    p, _, _ = _core.initial_planes(b"bob-seed-v1", N)
    m = np.full(N * N, 0.0, dtype=np.float32)
    v = np.full(N * N, 0.0, dtype=np.float32)
    contexts = np.arange(N, dtype=np.uint32)
    targets = ((contexts * 7 + 3) % N).astype(np.uint32)
    start = time.perf_counter()
    _core.train((p, m, v), (contexts, targets), 0, UPDATES, threads=threads)
    return (time.perf_counter() - start) / UPDATES


def floors(threads: int) -> dict[str, float]:
    """One round of the Rust floor example: core, fused-loop floor, dividers (seconds per update)."""
    out = subprocess.run([str(FLOOR), str(N), str(threads), "1"], check=True, capture_output=True, text=True).stdout
    values = {}
    for line in out.splitlines():
        for key, name in (("core (train", "core (Rust, same process)"), ("floor: fused loop", "floor: fused loop"),
                          ("floor: dividers", "floor: dividers only")):
            if line.strip().startswith(key):
                values[name] = float(line.split()[-3]) * 1e-6
    return values


def torch_python() -> Path:
    python = TORCH_VENV / "bin" / "python"
    if not python.exists():
        print(f"creating {TORCH_VENV} and installing torch there (once; large download)", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(TORCH_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "torch", "numpy"], check=True)
    return python


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--torch", action="store_true", help="also PyTorch eager AdamW (installs torch under work/)")
    args = parser.parse_args()
    if not FLOOR.exists():
        sys.exit(f"build the floors first: cargo build --release -p bob-core --example floor ({FLOOR} missing)")
    torch = torch_python() if args.torch else None
    times: dict[str, list[float]] = {}
    exec(compile(NUMPY_SIDE.replace("print(", "_result = ("), "numpy_side", "exec"), {})  # warm NumPy
    for _ in range(args.rounds):
        for threads in (1, 2):
            times.setdefault(f"bob (bob._core.train), {threads} thread(s)", []).append(bob_side(threads))
            for name, value in floors(threads).items():
                times.setdefault(f"{name}, {threads} thread(s)", []).append(value)
        ns: dict = {}
        exec(compile(NUMPY_SIDE.replace("print(", "_result = ("), "numpy_side", "exec"), ns)
        times.setdefault("vectorised NumPy (float32, 1 thread)", []).append(ns["_result"])
        if torch is not None:
            for threads in (1, 2):
                out = subprocess.run([str(torch), "-c", TORCH_SIDE, str(threads)], check=True, capture_output=True,
                                     text=True).stdout
                times.setdefault(f"PyTorch eager AdamW, {threads} thread(s)", []).append(float(out.split()[-1]))
    print(f"vocabulary {N}, every row live, one call of {UPDATES} updates; {args.rounds} interleaved rounds; "
          f"{load_line()}")
    print(ratio_table(times, "bob (bob._core.train), 2 thread(s)", first_column="contender", unit="µs/update",
                      scale=1e6, ratio_to="bob 2 thr"))
    print(json.dumps({k: statistics.median(v) for k, v in times.items()}), file=sys.stderr)


if __name__ == "__main__":
    main()
