#!/usr/bin/env bash
# The whole test suite, from a clean clone: builds what it needs, then runs
# the Rust core's tests, the type check of the Python package, and the
# Python tests. Where a step leaves a CPU idle, the next one that needs
# nothing from it runs beside it (docs/testing.md, "The suite").
set -euo pipefail
cd "$(dirname "$0")/.."
rust_log="$(mktemp)"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -f "$rust_log"' EXIT
# The Rust core's tests need no Python: they run while the set-up downloads packages and links the release
# build, on one CPU. Cargo.toml's test profile (opt-level 3): no fat LTO to link each test binary with.
cargo test --locked -p bob-core > "$rust_log" 2>&1 &
pids+=($!)
scripts/bootstrap.sh test,plot,fuzz,interop   # test: a dependency group; fuzz: atheris, so the planted-bug campaign test runs; interop: safetensors
# Beside mypy (one CPU), one pass of pytest's collection leaves the test modules' rewritten bytecode for the
# workers, which would each rewrite them otherwise; its verdict is the run's below.
env -u PYTHONDONTWRITEBYTECODE .venv/bin/python -m pytest -q --collect-only -p no:cacheprovider >/dev/null 2>&1 &
pids+=($!)
.venv/bin/python -m mypy                       # python/bob, as configured in pyproject.toml
wait "${pids[1]}" || true
rust_status=0
wait "${pids[0]}" || rust_status=$?
cat "$rust_log"
if [ "$rust_status" -ne 0 ]; then
    echo "scripts/test.sh: cargo test failed (exit $rust_status)" >&2
    exit "$rust_status"
fi
.venv/bin/python -m pytest -q -n auto "$@"     # one worker per CPU: most tests wait on processes they start
