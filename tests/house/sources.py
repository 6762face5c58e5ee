"""What the house tests read: the package's modules, their syntax trees and
the modules each one imports (at any depth, imports inside functions too)."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "python" / "bob"


def rel(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def modules(*globs: str) -> list[Path]:
    return sorted({p for g in globs for p in PACKAGE.glob(g)} if globs else set(PACKAGE.rglob("*.py")))


def tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


# --------------------------------------------------------------------------- #
# Which modules import what
# --------------------------------------------------------------------------- #

_DYNAMIC_IMPORTS = {"__import__", "import_module", "find_spec"}


def _runtime_nodes(tree: ast.AST):
    """ast.walk without the bodies of ``if TYPE_CHECKING:`` (imports no run makes)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))


def imported_names(tree: ast.AST, *, runtime_only: bool = False) -> set[str]:
    """Every module an import in ``tree`` names, at any depth: ``import a.b``,
    ``from a import b`` (as ``a`` and ``a.b``), and ``__import__("a")``,
    ``importlib.import_module("a")`` or ``find_spec("a")`` with a literal name.
    ``runtime_only``: leave out what only type checkers import."""
    out: set[str] = set()
    for node in (_runtime_nodes(tree) if runtime_only else ast.walk(tree)):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module)
            out |= {f"{node.module}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name in _DYNAMIC_IMPORTS and isinstance(node.args[0].value, str):
                out.add(node.args[0].value)
    return out


def importers(module: str, paths: list[Path]) -> set[str]:
    """The modules among ``paths`` that import ``module`` or anything inside it."""
    return {rel(p) for p in paths
            if any(n == module or n.startswith(module + ".") for n in imported_names(tree(p)))}


def module_name(path: Path, package: Path = PACKAGE) -> str:
    """``bob.formats.checkpoint.typed`` for ``python/bob/formats/checkpoint/typed.py``."""
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
