#!/usr/bin/env bash
# The whole test suite, from a clean clone: builds what it needs, then runs
# the Rust core's tests, the type check of the Python package, and the
# Python tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh test,plot,fuzz,interop   # test: a dependency group; fuzz: atheris, so the planted-bug campaign test runs; interop: safetensors
cargo test --locked -p bob-core                # Cargo.toml's test profile (opt-level 3): no fat LTO to link each test binary with
.venv/bin/python -m mypy                       # python/bob, as configured in pyproject.toml
.venv/bin/python -m pytest -q -n auto "$@"     # one worker per CPU: most tests wait on processes they start
