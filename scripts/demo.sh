#!/usr/bin/env bash
# The main job on the embedded default: builds what it needs, then trains the
# bundled corpus for a few invocations and prints what the model learns.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh >/dev/null
exec .venv/bin/python - <<'PY'
import numpy as np
import bob.core as core
corpus = b"abracadabra"
n = len(corpus)
contexts = np.array([corpus[k % n] for k in range(256)], np.uint32)
targets = np.array([corpus[(k + 1) % n] for k in range(256)], np.uint32)
p, m, v = core.initial_planes()
for invocation in range(3):
    losses = core.train(p, m, v, contexts, targets, 10 * invocation)
    preds = core.predict(p, [ord("a"), ord("d"), core.EMPTY_PROMPT])
    shown = ", ".join(f"{chr(t)!r}" if ok else "-" for t, ok in preds)
    print(f"step {10 * invocation:>3} -> {10 * invocation + 10:>3}: loss {losses[0]:.6f} -> {losses[-1]:.6f}; predictions {shown}")
PY
