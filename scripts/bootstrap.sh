#!/usr/bin/env bash
# Make ./.venv with bob installed from this checkout: the native core built by
# maturin in release mode, plus the packages the given extras name.
# Usage: scripts/bootstrap.sh [extra,extra]
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$python" -m venv .venv
fi
# Byte-compile the package, as a regular install does, so start-up is not
# spent recompiling (some environments set PYTHONDONTWRITEBYTECODE).
python -m compileall -q python/bob >/dev/null
export VIRTUAL_ENV="$PWD/.venv"
export PATH="$VIRTUAL_ENV/bin:$PATH"
export PIP_DISABLE_PIP_VERSION_CHECK=1
pip install --quiet "maturin>=1.9,<2"
# The extension is built for the stable ABI (python/bob/_core.abi3.so); a
# per-version build left by an older checkout would shadow it on import.
rm -f python/bob/_core.cpython-*.so
if [ -n "$extras" ]; then
    maturin develop --release --locked --quiet --extras "$extras"
else
    maturin develop --release --locked --quiet
fi
# Byte-compile the package, as a regular install does, so start-up is not
# spent recompiling (some environments set PYTHONDONTWRITEBYTECODE).
python -m compileall -q python/bob >/dev/null
