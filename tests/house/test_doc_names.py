"""The documents name only what exists: every ``bob.…`` name and every
project path written in backticks in README, BENCHMARKS, docs/ and formats/
resolves (a module, an attribute of one, a file or a directory), so a module
that moves cannot leave a document pointing at its old home. The same holds
for what the benchmarks and scripts import from ``bob``: they never run in
CI, so a name removed under them would otherwise go unseen."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from conftest import ROOT

DOCUMENTS = sorted([ROOT / "README.md", ROOT / "BENCHMARKS.md",
                    *(ROOT / "docs").glob("*.md"), *(ROOT / "formats").glob("*.md")])
_NAME = re.compile(r"`(bob(?:\.[A-Za-z_]\w*)+)")
_PATH = re.compile(r"`((?:python/bob|rust|tests|benchmarks|scripts|formats|docs|fuzz)/[\w./{},-]*)")


def _resolves(dotted: str) -> bool:
    """A module, or attributes of the longest importable prefix (a ``.pyi``-only name counts)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(obj, attribute):
                return False
            obj = getattr(obj, attribute)
        return True
    return False


def _paths(text: str) -> list[str]:
    """The project paths in ``text``; ``a/{b,c}.py`` stands for ``a/b.py`` and ``a/c.py``."""
    found = []
    for raw in _PATH.findall(text):
        raw = raw.rstrip(".,")
        brace = re.search(r"\{([^}]*)\}", raw)
        options = brace.group(1).split(",") if brace else [""]
        found += [raw[:brace.start()] + o + raw[brace.end():] if brace else raw for o in options]
    return [p for p in found if "*" not in p and "NN" not in p]


def missing_names(text: str) -> list[str]:
    return sorted({n.rstrip(".") for n in _NAME.findall(text) if not _resolves(n.rstrip("."))})


def missing_paths(text: str) -> list[str]:
    """Paths that do not exist, and ``tests/….py::test_name`` ids whose test is not in that file."""
    tests = {(f, t) for f, t in re.findall(r"`(tests/[\w/]+\.py)::(\w+)", text)}
    return sorted({p for p in _paths(text) if not (ROOT / p).exists()} | {
        f"{f}::{t}" for f, t in tests if (ROOT / f).exists() and f"def {t}(" not in (ROOT / f).read_text("utf-8")})


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_name_and_path_a_document_gives_exists(document: Path) -> None:
    text = document.read_text(encoding="utf-8")
    assert missing_names(text) == [], "names that do not exist"
    assert missing_paths(text) == [], "paths that do not exist"


def test_a_moved_module_is_caught() -> None:
    planted = "see `bob.formats.envelope.ENVELOPE`, `bob.formats.checks` and `python/bob/formats/checks.py`"
    assert missing_names(planted) == ["bob.formats.checks", "bob.formats.envelope.ENVELOPE"]
    assert missing_paths(planted) == ["python/bob/formats/checks.py"]
    assert missing_names("`bob.formats.checkpoint.ENVELOPE`, `bob.invoke`") == []
    assert missing_paths("`rust/bob-core/src/kernel/{plan,rows}.rs`") == []
    assert missing_paths("`rust/bob-core/src/kernel/{plan,gone}.rs`") == ["rust/bob-core/src/kernel/gone.rs"]
    assert missing_paths("`tests/house/test_doc_names.py::test_a_moved_module_is_caught`") == []
    assert missing_paths("`tests/house/test_doc_names.py::test_gone`") == ["tests/house/test_doc_names.py::test_gone"]


TOOLS = sorted([*(ROOT / "benchmarks").glob("*.py"), *(ROOT / "scripts").glob("*.py")])


def missing_imports(source: str) -> list[str]:
    """The ``bob`` names ``source`` imports (``import bob.x``, ``from bob.x import y``) that do not exist."""
    names = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "bob":
            names += [f"{node.module}.{a.name}" for a in node.names if a.name != "*"]
        elif isinstance(node, ast.Import):
            names += [a.name for a in node.names if a.name.split(".")[0] == "bob"]
    return sorted({n for n in names if not _resolves(n)})


@pytest.mark.parametrize("tool", TOOLS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_bob_name_a_benchmark_or_script_imports_exists(tool: Path) -> None:
    assert missing_imports(tool.read_text(encoding="utf-8")) == []


def test_a_removed_name_under_a_benchmark_is_caught() -> None:
    planted = "from bob.fuzz.loop import _accepts, seeded_loop\nimport bob.fuzz.gone\n"
    assert missing_imports(planted) == ["bob.fuzz.gone", "bob.fuzz.loop._accepts"]
