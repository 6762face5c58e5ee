"""The layout and rule tables of ``formats/*.md`` (between their ``<!-- layout: KIND -->`` and ``<!-- rules: KIND -->``
markers; ``tests/formats/test_formats_docs.py`` holds them to these), printed from the schemas and the rules
themselves; ``bob-inspect schema`` prints the same layout rows."""

from __future__ import annotations

import numpy as np

from bob.formats.constants import PARAMETER_COUNT, PREDICTION_BYTES, TRACE_UPDATES
from bob.formats.layout import TRACE_DIGEST_BYTES
from bob.formats.rules import RULES
from bob.formats.schema import FieldRow, layout

__all__ = ["KINDS", "layout_rows", "markdown_table", "rules_table", "sample"]

_SCHEMAS = {"input": ("bob.formats.input_record", "INPUT_RECORD"), "envelope": ("bob.formats.checkpoint", "ENVELOPE"),
            "predictions": ("bob.formats.predictions", "PREDICTIONS"), "trace": ("bob.formats.trace", "TRACE")}
KINDS = tuple(_SCHEMAS)


def sample(kind: str) -> bytes:
    """A valid file of ``kind`` (no native core needed): the layout is read over it.

    The envelope sample has the canonical header (bob v1's contract strings),
    so its table shows the offsets every canonical file has.
    """
    if kind == "input":
        from bob.formats.input_record import build_input

        return build_input(b"abracadabra", [b"abra", b"cad", b""]).to_bytes()
    if kind == "envelope":
        from bob.formats.checkpoint import Checkpoint

        zeros = np.zeros(PARAMETER_COUNT, dtype=np.float32)
        return Checkpoint(0, zeros, zeros, zeros).to_bytes()
    if kind == "predictions":
        return bytes(PREDICTION_BYTES)
    if kind == "trace":
        from bob.formats.canonical import trace_bytes
        from bob.formats.checkpoint import hashlib_sha256
        from bob.formats.trace import contract_sha256

        zero = bytes(TRACE_DIGEST_BYTES)  # (any digests: the sample is for its layout)
        return trace_bytes(contract_sha256(), hashlib_sha256(b""), 0, [0.0] * TRACE_UPDATES,
                           [(zero, zero, zero)] * (TRACE_UPDATES + 1), hashlib_sha256)
    raise ValueError(f"unknown format kind {kind!r}; one of {', '.join(KINDS)}")


def layout_rows(kind: str) -> list[FieldRow]:
    """The layout table of ``kind`` (``input``, ``envelope``, ``predictions``, ``trace``), over :func:`sample`."""
    data = sample(kind)  # (an unknown kind: its ValueError)
    module, name = _SCHEMAS[kind]
    return layout(getattr(__import__(module, fromlist=[name]), name), data)


def markdown_table(rows: list[FieldRow]) -> str:
    """Rows as the Markdown table used in ``formats/*.md``."""
    lines = ["| offset | size | field | meaning |", "|---:|---:|---|---|"]
    for r in rows:
        meaning = r.meaning.replace("|", "\\|")
        lines.append(f"| {r.offset} | {r.size} | `{r.field}` | {meaning} |")
    return "\n".join(lines) + "\n"


def rules_table(kind: str) -> str:
    """The value rules of ``kind`` as the Markdown table in ``formats/*.md``: each rule's field, what a reader says of a
    value that breaks it, the expected value it shows and its error class, in the order they are checked."""
    lines = ["| `.field` | a value is refused with | expected | error |", "|---|---|---|---|"]
    return "\n".join(lines + [f"| `{rule.field}` | {rule.message} | {rule.expected} | `{rule.error.__name__}` |"
                              for rule in RULES[kind]]) + "\n"
