"""bob's public names stay: every name in the ``__all__`` of every ``bob`` module, with its
kind (class, function, module or value), is held against ``public_names.txt``. Removing a
name, or making a class a function, fails here; a new public name is added to the file by
hand, which is the moment to ask whether it should be public."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

import bob

PINNED = Path(__file__).with_name("public_names.txt")


def _kind(module: object, name: str) -> str:
    if not hasattr(module, name):
        return "missing"
    obj = getattr(module, name)
    return ("class" if inspect.isclass(obj) else "module" if inspect.ismodule(obj)
            else "function" if callable(obj) else "value")


def public_names() -> set[str]:
    """``module.name kind`` for every name every ``bob`` module's ``__all__`` lists."""
    out = set()
    for info in pkgutil.walk_packages(bob.__path__, "bob."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        out |= {f"{info.name}.{name} {_kind(module, name)}" for name in getattr(module, "__all__", ())}
    return out


def test_every_public_name_is_still_there_with_its_kind() -> None:
    pinned = set(PINNED.read_text(encoding="utf-8").split("\n")) - {""}
    now = public_names()
    assert sorted(pinned - now) == [], "public names removed or changed in kind"
    assert sorted(now - pinned) == [], f"new public names: add them to {PINNED.name}"
