"""``bob-inspect``: bob's files, shown whole and readably, from the schemas (the commands, their
keys and the modules' parts: docs/bob-inspect.md)."""

from __future__ import annotations

from bob.inspect.cli import main

__all__ = ["main"]
