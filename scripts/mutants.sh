#!/usr/bin/env bash
# Mutation testing (docs/testing.md): how many plausible bugs the test suite
# catches. Not part of CI: on 2 cores the Rust run takes ~30 min, the whole
# Python scope many hours (hence the sample globs below; docs/testing.md).
#
#   scripts/mutants.sh rust     cargo-mutants over rust/bob-core (config: .cargo/mutants.toml)
#   scripts/mutants.sh binding  rust/bob-py's mutants against the Python tests (scripts/mutants_binding.py)
#   scripts/mutants.sh python   mutmut over python/bob (config: [tool.mutmut] in pyproject.toml)
#   scripts/mutants.sh          all three
#   scripts/mutants.sh python 'bob.fileio*' …   only the mutants these mutmut globs name
#
# Results: target/mutants-rust/mutants.out/, target/mutants-binding/outcomes.json
# and target/mutmut/ (`mutmut results` there); scripts/mutants_summary.py prints the per-module table of docs/testing.md.
set -euo pipefail
cd "$(dirname "$0")/.."
what="${1:-all}"
shift || true
CARGO_MUTANTS_VERSION=27.1.0
if [ "$what" != python ] && ! cargo mutants --version 2>/dev/null | grep -q "$CARGO_MUTANTS_VERSION"; then
    cargo install --locked "cargo-mutants@$CARGO_MUTANTS_VERSION"
fi

if [ "$what" = rust ] || [ "$what" = all ]; then
    # The Rust tests run in the test profile (opt-level 3); a mutant whose
    # tests take 15 s (ten times the whole suite) has made something loop.
    cargo mutants -p bob-core --output target/mutants-rust --timeout 20 || true  # exit 2/3: mutants missed/timed out
fi

if [ "$what" = binding ] || [ "$what" = all ]; then
    # About 5 s a mutant the tests that call the binding catch (a build and
    # those tests), a minute for one they miss (the whole suite); ~20 min in
    # all, in a worktree of HEAD.
    scripts/bootstrap.sh test,plot,fuzz
    .venv/bin/python scripts/mutants_binding.py --fresh
fi

if [ "$what" = python ] || [ "$what" = all ]; then
    scripts/bootstrap.sh test,plot,mutants
    # mutmut imports the package it mutates from src/ (or the current
    # directory); bob's lives in python/. So it runs in a staging copy:
    # src/bob is the package (with the built native core), tests/ the tests,
    # and BOB_CHECKOUT points the tests at this checkout's documents.
    # A fresh stage unless BOB_MUTANTS_KEEP=1 (mutmut then reuses the
    # results it has, and re-runs what the changed code or tests touch).
    stage=target/mutmut
    if [ "${BOB_MUTANTS_KEEP:-0}" != 1 ]; then rm -rf "$stage"; fi
    mkdir -p "$stage/src"
    rm -rf "$stage/src/bob" "$stage/tests"
    cp -r python/bob "$stage/src/bob"
    find "$stage/src" -name __pycache__ -prune -exec rm -rf {} +
    cp -r tests "$stage/tests"
    cp pyproject.toml "$stage/"
    # mutmut rewrites the .py files of a kept stage's mutants/src, not the
    # rest: the native core (and its stub, the data) there would stay those
    # of the stage's first run (a core without the floating-point switch
    # failed the D17 test in mutmut's stats pass). Copy today's over them.
    if [ -d "$stage/mutants/src" ]; then
        (cd "$stage/src" && find . -type f ! -name '*.py' -exec cp --parents {} ../mutants/src/ \;)
    fi
    (cd "$stage" && BOB_CHECKOUT="$PWD/../.." ../../.venv/bin/mutmut run "$@") || true
fi
.venv/bin/python scripts/mutants_summary.py
