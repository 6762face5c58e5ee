#!/usr/bin/env bash
# The whole test suite, from a clean clone: builds what it needs, then runs
# the Rust core's tests, the type check of the Python package, and the
# Python tests. Where a step leaves a CPU idle, the next one that needs
# nothing from it runs beside it (docs/testing.md, "The suite").
set -euo pipefail
cd "$(dirname "$0")/.."
rust_log="$(mktemp)"
rust="" warm=""  # the steps running beside another, each the leader of its own process group until joined
on_exit() {
    local status=$?
    if [ -n "$rust" ]; then  # the script ends before the Rust tests were joined: they end, and what they said is shown
        cat "$rust_log"
        if kill -TERM -- "-$rust" 2>/dev/null; then
            echo "scripts/test.sh: cargo test stopped unfinished" >&2
        elif ! wait "$rust"; then
            echo "scripts/test.sh: cargo test failed too" >&2
        fi
    fi
    if [ -n "$warm" ]; then
        kill -TERM -- "-$warm" 2>/dev/null || true
    fi
    rm -f "$rust_log"
    exit "$status"
}
trap on_exit EXIT
trap 'exit 130' INT; trap 'exit 143' TERM; trap 'exit 129' HUP  # (so that on_exit runs)
beside() {  # "$@" as a job that leads its own process group: ended whole, whatever it started (rustc, a test binary)
    set -m
    "$@" &
    set +m
}
# The Rust core's tests need no Python: they run while the set-up downloads packages and links the release
# build, on one CPU. Cargo.toml's test profile (opt-level 3): no fat LTO to link each test binary with.
beside cargo test --locked -p bob-core > "$rust_log" 2>&1
rust=$!
scripts/bootstrap.sh test,plot,fuzz,interop   # test: a dependency group; fuzz: atheris, so the planted-bug campaign test runs; interop: safetensors
# Beside mypy (one CPU), one pass of pytest's collection leaves the test modules' rewritten bytecode for the
# workers, which would each rewrite them otherwise; what it meets, the run below reports.
beside env -u PYTHONDONTWRITEBYTECODE .venv/bin/python -m pytest -q --collect-only -p no:cacheprovider >/dev/null 2>&1
warm=$!
.venv/bin/python -m mypy                       # python/bob, as configured in pyproject.toml
wait "$warm" || true
warm=""
rust_status=0
wait "$rust" || rust_status=$?
rust=""
cat "$rust_log"
if [ "$rust_status" -ne 0 ]; then
    echo "scripts/test.sh: cargo test failed (exit $rust_status)" >&2
    exit "$rust_status"
fi
.venv/bin/python -m pytest -q -n auto "$@"     # one worker per CPU: most tests wait on processes they start
