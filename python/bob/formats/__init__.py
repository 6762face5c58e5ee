"""bob's binary formats: construct schemas, checkers and typed objects.

Each format in one place (schema, ``examine``, typed object, loader, reader): :mod:`~bob.formats.input_record`,
:mod:`~bob.formats.predictions`, :mod:`~bob.formats.trace` and the checkpoint's package :mod:`~bob.formats.checkpoint`,
behind one door; below them the constants, the layout, the rules and the construct helpers. Imports run one way, from
the schema up to the typed object (``tests/house/test_import_graph.py``); names here are imported lazily.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any, Callable

# The names each module offers here.
_MODULES = {
    "bob.formats.input_record": ("INPUT_RECORD",),
    "bob.formats.checkpoint": ("ENVELOPE", "ENVELOPE_HEADER", "HEADER_BODY", "CHUNK_ENTRY"),
    "bob.formats.predictions": ("PREDICTIONS",),
    "bob.formats.contract": ("V1", "Contract"),
    "bob.formats.schema": ("FieldRow", "layout"),
    "bob.formats.docs": ("layout_rows", "markdown_table"),
}
_LAZY = {name: module for module, names in _MODULES.items() for name in names}

__all__ = [*_LAZY, "lazy_names"]


def lazy_names(module: str, names: "dict[str, str]", renamed: "dict[str, str] | None" = None) -> "Callable[[str], Any]":
    """The ``__getattr__`` of a door (``bob``, ``bob.formats``, ``bob.formats.checkpoint``): name ``n``
    is imported from module ``names[n]`` (as ``renamed[n]`` there) when first asked for, and kept."""
    namespace = sys.modules[module].__dict__

    def __getattr__(name: str) -> Any:
        if (source := names.get(name)) is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        # __import__ rather than importlib.import_module: importing importlib
        # (and the warnings module it pulls in) is a share of bob-run's start-up.
        value = getattr(__import__(source, fromlist=["__name__"]), (renamed or {}).get(name, name))
        namespace[name] = value
        return value

    return __getattr__


__getattr__: "Callable[[str], Any]" = lazy_names(__name__, _LAZY)
