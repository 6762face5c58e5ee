"""The ``schema`` report: layout tables printed from the construct schemas
(:func:`bob.formats.docs.layout_rows`, read over a valid sample file)."""

from __future__ import annotations

from typing import Any

from bob.formats.docs import layout_rows, sample

# kind: bob.formats.docs' name of its schema, the format's name and its version (the predictions have none)
SCHEMA_KINDS = {"input": ("input", "bob-input", 1), "checkpoint": ("envelope", "bob-envelope", 1),
                "predictions": ("predictions", "bob-predictions", None)}


def schema_report(kinds: list[str]) -> dict[str, Any]:
    """The layout tables of ``kinds`` (``input``, ``checkpoint``, ``predictions``)."""
    formats = []
    for kind in kinds:
        name, format_name, version = SCHEMA_KINDS[kind]
        formats.append({
            "kind": kind, "format": format_name, "version": version, "size": len(sample(name)),
            "fields": [{"offset": r.offset, "size": r.size, "field": r.field, "meaning": r.meaning}
                       for r in layout_rows(name)],
        })
    return {"command": "schema", "formats": formats, "ok": True}
