#!/usr/bin/env bash
# Make ./.venv with bob installed from this checkout: the native core built by
# maturin in release mode, plus what the given names ask for: an extra of the
# distribution (plot, fuzz, interop: [project.optional-dependencies]) or a
# dependency group of the checkout (test, mutants: [dependency-groups]).
# Usage: scripts/bootstrap.sh [name,name]
# It says what it is doing on stderr, one line a step (a first build is
# quiet for a minute or two otherwise).
set -euo pipefail
cd "$(dirname "$0")/.."
names="${1:-}"
python="${PYTHON:-python3}"
say() { printf 'bootstrap: %s\n' "$*" >&2; }
# The Python the checkout's .venv has, or the one that will make it: bob needs
# Python >= 3.11, checked before anything is made (a .venv made by an older one
# would be kept by every later run).
if [ -x .venv/bin/python ]; then python=.venv/bin/python; fi
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    hint=""
    if [ "$python" = .venv/bin/python ]; then hint=" (remove .venv, then set PYTHON to a newer one)"; fi
    version="$("$python" -c 'import sys; print("Python " + sys.version.split()[0])' 2>/dev/null || echo 'not there')"
    say "bob needs Python >= 3.11; $python is $version$hint"
    exit 1
fi
# Each name is an extra or a group, read from pyproject.toml (tomllib: Python
# >= 3.11); an unknown name is refused before anything is made. Prints the
# extras as one comma-separated line, then each group's requirements, one a line.
plan="$("$python" - "$names" <<'PY'
import sys, tomllib
with open("pyproject.toml", "rb") as f:
    project = tomllib.load(f)
extras = project["project"].get("optional-dependencies", {})
groups = project.get("dependency-groups", {})
chosen_extras, requirements = [], []
for name in filter(None, sys.argv[1].split(",")):
    if name in extras:
        chosen_extras.append(name)
    elif name in groups:
        requirements += groups[name]
    else:
        sys.exit(f"scripts/bootstrap.sh: {name!r} is neither an extra ({', '.join(extras)}) "
                 f"nor a dependency group ({', '.join(groups)}) of pyproject.toml")
print(",".join(chosen_extras))
print("\n".join(requirements))
PY
)"
# The commands are scripts whose first line pip makes `#!<checkout>/.venv/bin/python`, which Linux cuts at
# the first space: in such a path they would not start, though everything else here would.
case "$PWD" in *[[:space:]]*)
    say "the checkout's path holds a space ($PWD): the commands' first line (#!$PWD/.venv/bin/python)"
    say "cannot, so .venv/bin/bob-run would not start; move or clone the checkout to a path without one"
    exit 1;;
esac
if [ ! -x .venv/bin/python ]; then
    say "creating .venv with $("$python" --version 2>&1)"
    "$python" -m venv .venv
elif ! .venv/bin/python -c 'import pip' >/dev/null 2>&1; then  # (its making cut short, as by Ctrl-C)
    say ".venv has no pip (its making was cut short?): remove it (rm -rf .venv), then run this again"
    exit 1
fi
# Byte-compile the package, as a regular install does, so start-up is not
# spent recompiling (some environments set PYTHONDONTWRITEBYTECODE).
.venv/bin/python -m compileall -q python/bob >/dev/null
export VIRTUAL_ENV="$PWD/.venv"
unset CONDA_PREFIX  # (an active conda environment: maturin refuses to choose between the two; .venv is the one)
export PATH="$VIRTUAL_ENV/bin:$PATH"
export PIP_DISABLE_PIP_VERSION_CHECK=1
extras="$(printf '%s\n' "$plan" | sed -n 1p)"
mapfile -t requirements < <(printf '%s\n' "$plan" | sed -n '2,$p' | sed '/^$/d')
say "installing maturin${names:+ and what \"$names\" asks for} from PyPI (the first time needs the network)"
pip() { .venv/bin/python -m pip "$@"; }  # the .venv's own (a .venv made without pip must not reach another)
pip install --quiet "maturin>=1.9,<2"
# A .venv made when the distribution was still called `bob` holds an editable
# install of this checkout under that name too; `bob` is another project's
# name on PyPI, so it goes.
if pip show bob 2>/dev/null | grep -x "Editable project location: $PWD" >/dev/null; then
    pip uninstall --quiet --yes bob
fi
if [ "${#requirements[@]}" -gt 0 ]; then
    pip install --quiet "${requirements[@]}"
fi
# The extension is built for the stable ABI (python/bob/_core.abi3.so); a
# per-version build left by an older checkout would shadow it on import.
rm -f python/bob/_core.cpython-*.so
if [ -e "${CARGO_TARGET_DIR:-target}/release" ]; then
    say "building bob's native core (Rust, release mode) with maturin; cargo rebuilds only what changed"
else
    say "building bob's native core (Rust, release mode) with maturin: the first build takes a minute or two"
fi
if [ -n "$extras" ]; then
    maturin develop --release --locked --quiet --extras "$extras"
else
    maturin develop --release --locked --quiet
fi
# Byte-compile the package, as a regular install does, so start-up is not
# spent recompiling (some environments set PYTHONDONTWRITEBYTECODE).
.venv/bin/python -m compileall -q python/bob >/dev/null
say "ready: .venv/bin/python, and the commands .venv/bin/bob-run, bob-fixture, bob-inspect, bob-qualify, bob-fuzz"
