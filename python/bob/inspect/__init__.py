"""``bob-inspect``: bob's files, shown whole and readably, from the schemas.

A reader library and a dumper, as gguf-py: the report modules build the
JSON-ready dicts from the formats layer and the command line
(:mod:`bob.inspect.cli`) only formats them. The commands, their keys and
the modules' parts: docs/bob-inspect.md.
"""

from __future__ import annotations

from bob.inspect.cli import main

__all__ = ["main"]
