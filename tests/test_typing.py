"""Typed for strict users: a user's script over the whole public API
(tests/typing/strict_user.py) checked by ``mypy --strict`` and by pyright in
strict mode (basedpyright, from PyPI with its own node), each of which must
report exactly the script's one deliberate error; ``bob``'s explicit
exports; ``stubtest`` clean for ``bob._core`` and ``bob.core``; ``pyright
--verifytypes bob`` leaving only the symbols listed with their reasons in
tests/typing/verifytypes_remaining.txt.

The checkers run from an empty directory, as a user's would: no bob
configuration applies, and ``bob`` is found where it is installed."""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import bob

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tests" / "typing" / "strict_user.py"
BIN = Path(sys.executable).parent
MARK = "# the one error mypy --strict must report"


def _deliberate_line() -> int:
    (line,) = [i for i, text in enumerate(SCRIPT.read_text().splitlines(), 1) if MARK in text]
    return line


@pytest.mark.slow
def test_mypy_strict_reports_exactly_the_deliberate_error(tmp_path) -> None:
    cache = ROOT / "target" / "mypy-strict-user"
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(cache), str(SCRIPT)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert errors == [f"{SCRIPT}:{_deliberate_line()}: error: Incompatible types in assignment "
                      '(expression has type "str", variable has type "int")  [assignment]'], done.stdout
    assert done.returncode == 1 and done.stdout.rstrip().endswith("Found 1 error in 1 file (checked 1 source file)")


@pytest.mark.slow
@pytest.mark.skipif(not (BIN / "basedpyright").exists(), reason="basedpyright (the test group) is not installed")
def test_pyright_strict_reports_exactly_the_deliberate_error(tmp_path) -> None:
    (tmp_path / "pyrightconfig.json").write_text(json.dumps({"typeCheckingMode": "strict", "pythonVersion": "3.11"}))
    done = subprocess.run([str(BIN / "basedpyright"), "--pythonpath", sys.executable, "--outputjson", str(SCRIPT)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    report = json.loads(done.stdout)
    found = [(d["file"], d["range"]["start"]["line"] + 1, d["rule"]) for d in report["generalDiagnostics"]
             if d["severity"] == "error"]
    assert found == [(str(SCRIPT), _deliberate_line(), "reportAttributeAccessIssue")], report["generalDiagnostics"]
    assert report["summary"]["errorCount"] == 1


@pytest.mark.slow
def test_the_typed_script_runs(tmp_path) -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout == "ok\n", done.stderr


def test_bob_exports_explicitly_what_it_serves_lazily() -> None:
    """``__all__`` (a literal list, for type checkers), the lazy table and the
    imports type checkers see name the same things; every name resolves."""
    tree = ast.parse((ROOT / "python" / "bob" / "__init__.py").read_text())
    typed = set()
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for sub in node.body:
                if isinstance(sub, ast.ImportFrom) and sub.module != "typing":
                    for alias in sub.names:
                        assert alias.asname is not None, f"{alias.name}: a re-export is spelt `X as X`"
                        typed.add(alias.asname)
    errors = {"FormatError", "NotABobFile", "Truncated", "IntegrityError", "ContractMismatch", "BadValue",
              "StateRefused"}
    assert len(bob.__all__) == len(set(bob.__all__))
    assert set(bob.__all__) == set(bob._LAZY) | errors  # type: ignore[attr-defined]
    assert typed == set(bob._LAZY)  # type: ignore[attr-defined]
    for name in bob.__all__:
        assert getattr(bob, name) is not None


def test_import_bob_stays_lazy() -> None:
    # bob.errors takes the learner contract's shape from bob.formats.constants (standard library only);
    # nothing that parses, builds or computes is imported until it is used
    code = ("import sys, bob; print(sorted(m for m in ('numpy', 'construct', 'bob.formats.checkpoint', 'bob.formats.schema', "
            "'bob.core') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.slow
def test_stubtest_is_clean_for_the_native_core_and_its_door(tmp_path) -> None:
    done = subprocess.run([sys.executable, "-m", "mypy.stubtest", "bob._core", "bob.core",
                           "--mypy-config-file", str(tmp_path / "none.ini")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"Success: no issues found in 2 modules", done.stdout)


REMAINING = ROOT / "tests" / "typing" / "verifytypes_remaining.txt"


@pytest.mark.slow
@pytest.mark.skipif(not (BIN / "basedpyright").exists(), reason="basedpyright (the test group) is not installed")
def test_verifytypes_leaves_only_the_listed_symbols(tmp_path) -> None:
    """``pyright --verifytypes bob``: every public symbol typed, or listed in
    tests/typing/verifytypes_remaining.txt with its reason (and only those)."""
    (tmp_path / "pyrightconfig.json").write_text("{}")
    done = subprocess.run([str(BIN / "basedpyright"), "--pythonpath", sys.executable, "--verifytypes", "bob",
                           "--ignoreexternal", "--outputjson"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=600)
    report = json.loads(done.stdout)["typeCompleteness"]
    assert report["pyTypedPath"].endswith("py.typed")
    untyped = {s["name"] for s in report["symbols"] if not s["isTypeKnown"] or s["isTypeAmbiguous"]}
    listed = {}
    for line in REMAINING.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            name, _, reason = line.partition(" | ")
            assert reason.strip(), f"{name}: listed without a reason"
            listed[name] = reason
    assert sorted(untyped - set(listed)) == [], "untyped and not listed (type them, or list them with a reason)"
    assert sorted(set(listed) - untyped) == [], f"typed now: remove them from {REMAINING.name}"


def test_the_checkers_are_in_the_test_group() -> None:
    import tomllib

    with open(ROOT / "pyproject.toml", "rb") as f:
        group = tomllib.load(f)["dependency-groups"]["test"]
    assert any(r.startswith("mypy") for r in group) and any(r.startswith("basedpyright") for r in group)
    assert shutil.which("basedpyright", path=str(BIN)) is not None
