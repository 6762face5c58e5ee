"""A first run that explains itself: the README's prerequisites agree with
the project's own requirements, its set-up is exactly two commands, the
commands it shows work as written from the checkout, and the set-up script
says what it is doing."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BIN = Path(sys.executable).parent


def _section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start:end if end != -1 else None]


def _sh_block(section: str) -> list[str]:
    (block,) = re.findall(r"```sh\n(.*?)```", section, re.S)
    return [line for line in block.splitlines() if line.strip()]


def test_the_prerequisites_are_the_projects_own() -> None:
    with open(ROOT / "pyproject.toml", "rb") as f:
        python = tomllib.load(f)["project"]["requires-python"]
    with open(ROOT / "Cargo.toml", "rb") as f:
        rust = tomllib.load(f)["workspace"]["package"]["rust-version"]
    section = _section("The two set-up commands")
    (line,) = [p for p in section.split("\n\n") if p.startswith("Prerequisites:")]
    assert f"Rust ≥ {rust}" in line and f"CPython ≥ {python.removeprefix('>=')}" in line
    assert "network" in line and "PyPI" in line and "crates.io" in line


def test_every_locked_crate_builds_with_the_stated_rust() -> None:
    """No crate of Cargo.lock needs a newer Rust than the workspace's rust-version (README's prerequisite)."""
    with open(ROOT / "Cargo.toml", "rb") as f:
        rust = tomllib.load(f)["workspace"]["package"]["rust-version"]
    done = subprocess.run(["cargo", "metadata", "--format-version", "1", "--locked", "--offline"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    version = lambda text: tuple(int(part) for part in text.split("."))  # noqa: E731
    newer = [(p["name"], p["rust_version"]) for p in json.loads(done.stdout)["packages"]
             if p.get("rust_version") and version(p["rust_version"]) > version(rust)]
    assert newer == [], f"these need a newer Rust than {rust}"


def test_the_set_up_is_two_commands() -> None:
    assert [line.split()[0] for line in _sh_block(_section("The two set-up commands"))] == [
        "scripts/demo.sh", "scripts/test.sh"]


def test_the_commands_shown_work_as_written_from_the_checkout() -> None:
    """Each line names a program the set-up leaves in .venv/bin, and its --help runs."""
    lines = _sh_block(_section("Commands"))
    assert lines and all(line.startswith(".venv/bin/") for line in lines), lines
    for line in lines:
        program = line.split()[0]
        assert (ROOT / program).exists() and (BIN / Path(program).name).exists(), program
    for name in ("bob-run", "bob-fixture", "bob-inspect", "bob-qualify", "bob-fuzz"):
        done = subprocess.run([str(BIN / name), "--help"], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and "usage" in done.stdout.lower(), (name, done.stderr)


def _bare_checkout(tmp_path: Path) -> Path:
    """The set-up script and pyproject.toml alone, without a .venv (the script works on its own checkout)."""
    (tmp_path / "scripts").mkdir()
    for name in ("scripts/bootstrap.sh", "pyproject.toml"):
        (tmp_path / name).write_bytes((ROOT / name).read_bytes())
    (tmp_path / "scripts" / "bootstrap.sh").chmod(0o755)
    return tmp_path


def test_bootstrap_refuses_a_name_that_is_no_extra_or_group_before_making_anything(tmp_path: Path) -> None:
    """... on a PATH with no ``python`` (Debian's has only python3): the script names no bare ``python``;
    and no .venv is left (one was made first, and kept by every later run)."""
    checkout = _bare_checkout(tmp_path)
    done = subprocess.run([str(checkout / "scripts" / "bootstrap.sh"), "test,nope"], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PATH": "/usr/bin:/bin"})
    assert done.returncode == 1, done.stderr
    assert "'nope' is neither an extra (plot, fuzz, interop) nor a dependency group (test, mutants)" in done.stderr
    assert "building" not in done.stderr and not (checkout / ".venv").exists()


def test_bootstrap_refuses_a_python_older_than_3_11_before_making_anything(tmp_path: Path) -> None:
    """A .venv made by Python 3.10 failed later (no tomllib) and was kept by every later run."""
    checkout = _bare_checkout(tmp_path)
    old = tmp_path / "python3.10"
    old.write_text('#!/bin/sh\ncase "$2" in *print*) echo "Python 3.10.13"; exit 0;; esac\nexit 1\n', encoding="utf-8")
    old.chmod(0o755)
    done = subprocess.run([str(checkout / "scripts" / "bootstrap.sh"), "test"], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHON": str(old)})
    assert (done.returncode, done.stderr) == (1, f"bootstrap: bob needs Python >= 3.11; {old} is Python 3.10.13\n")
    assert not (checkout / ".venv").exists()


def test_bootstrap_refuses_a_checkout_path_with_a_space_before_making_anything(tmp_path: Path) -> None:
    """pip makes each command's first line ``#!<checkout>/.venv/bin/python``, which Linux cuts at a space: the
    set-up said "ready", then every command failed ("cannot execute: required file not found")."""
    (tmp_path / "my dir").mkdir()
    checkout = _bare_checkout(tmp_path / "my dir")
    done = subprocess.run([str(checkout / "scripts" / "bootstrap.sh"), "test"], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 1 and f"the checkout's path holds a space ({checkout})" in done.stderr, done.stderr
    assert "to a path without one" in done.stderr and not (checkout / ".venv").exists()


def test_bootstrap_refuses_a_venv_without_pip_and_says_to_remove_it(tmp_path: Path) -> None:
    """A first set-up stopped by Ctrl-C while venv installed pip left a .venv every later run failed on
    ("No module named pip"), saying nothing of the .venv."""
    checkout = _bare_checkout(tmp_path)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(checkout / ".venv")], check=True, timeout=300)
    done = subprocess.run([str(checkout / "scripts" / "bootstrap.sh"), "test"], capture_output=True, text=True,
                          timeout=300)
    assert (done.returncode, done.stderr) == (1, "bootstrap: .venv has no pip (its making was cut short?): remove it "
                                                 "(rm -rf .venv), then run this again\n")


def test_bootstrap_builds_into_its_venv_whatever_conda_environment_is_active() -> None:
    """With a conda environment active (CONDA_PREFIX set) maturin refused to choose between it and the
    VIRTUAL_ENV the script sets. Read, not run: a run is a whole first build."""
    bootstrap = (ROOT / "scripts" / "bootstrap.sh").read_text()
    assert bootstrap.index("\nunset CONDA_PREFIX") < bootstrap.index("maturin develop")


def test_bootstrap_and_demo_say_what_they_do() -> None:
    """The steps a first run waits on are announced (on stderr for the
    set-up, so demo.sh's silencing of its output keeps them)."""
    bootstrap = (ROOT / "scripts" / "bootstrap.sh").read_text()
    assert "say() { printf 'bootstrap: %s\\n' \"$*\" >&2; }" in bootstrap
    for step in ("creating .venv", "installing maturin", "the first build takes a minute or two", "ready: "):
        assert re.search(rf'say "[^"]*{re.escape(step)}', bootstrap), step
    demo = (ROOT / "scripts" / "demo.sh").read_text()
    assert 'echo "demo: setting up .venv and the native core' in demo and "a minute or two" in demo
