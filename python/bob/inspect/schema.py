"""The ``schema`` report: layout tables printed from the construct schemas
(:func:`bob.formats.docs.layout_rows`, read over a valid sample file)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from bob.formats.constants import ENVELOPE_FORMAT_VERSION, INPUT_FORMAT_VERSION, TRACE_VERSION
from bob.formats.docs import layout_rows

# kind: bob.formats.docs' name of its schema, the format's name and its version (the predictions have none)
SCHEMA_KINDS = {"input": ("input", "bob-input", INPUT_FORMAT_VERSION),
                "checkpoint": ("envelope", "bob-envelope", ENVELOPE_FORMAT_VERSION),
                "predictions": ("predictions", "bob-predictions", None), "trace": ("trace", "bob-trace", TRACE_VERSION)}


def schema_report(kinds: list[str]) -> dict[str, Any]:
    formats = []
    for kind in kinds:
        name, format_name, version = SCHEMA_KINDS[kind]
        rows = layout_rows(name)  # the last field ends the file: every format ends at a fixed-size field
        formats.append({"kind": kind, "format": format_name, "version": version,
                        "size": rows[-1].offset + rows[-1].size, "fields": [asdict(r) for r in rows]})
    return {"command": "schema", "formats": formats, "ok": True}
