"""The ``schema`` report: layout tables printed from the construct schemas
(:func:`bob.formats.docs.layout_rows`, read over a valid sample file)."""

from __future__ import annotations

from typing import Any

from bob.formats.docs import layout_rows, sample
from bob.formats.kinds import ALIASES

SCHEMA_KINDS = {"input": "input", "checkpoint": "envelope", "predictions": "predictions"}  # -> bob.formats.docs' name
SCHEMA_ALIASES = ALIASES
FORMAT_NAMES = {"input": "bob-input", "checkpoint": "bob-envelope", "predictions": "bob-predictions"}
FORMAT_VERSIONS = {"input": 1, "checkpoint": 1, "predictions": None}


def schema_report(kinds: list[str]) -> dict[str, Any]:
    """The layout tables of ``kinds`` (``input``, ``checkpoint``, ``predictions``)."""
    formats = []
    for kind in kinds:
        name = SCHEMA_KINDS[kind]
        formats.append({
            "kind": kind,
            "format": FORMAT_NAMES[kind],
            "version": FORMAT_VERSIONS[kind],
            "size": len(sample(name)),
            "fields": [{"offset": r.offset, "size": r.size, "field": r.field, "meaning": r.meaning}
                       for r in layout_rows(name)],
        })
    return {"command": "schema", "formats": formats, "ok": True}
