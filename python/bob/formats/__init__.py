"""bob's binary formats: construct schemas, checkers and typed objects.

* :mod:`bob.formats.input_record` — ``bob-input`` v1: schema, ``examine``, ``InputRecord``, loader, reader;
* :mod:`bob.formats.checkpoint` — ``bob-envelope`` v1, the checkpoint, behind one door: its
  specification, schema (``ENVELOPE``), ``examine`` (the canonical file first, without construct),
  ``Checkpoint``, ``load_checkpoint``, ``read_checkpoint_file`` and the header builder;
* :mod:`bob.formats.predictions` — the 24-byte predictions: schema, ``examine``, ``Predictions``, loader, reader;
* :mod:`bob.formats.contract` — bob v1's contract strings as a typed object (``V1``);
* :mod:`bob.formats.constants` — bob v1's constants, magics and strings (standard library);
* :mod:`bob.formats.layout` — the one description of the layout: every field's offset, size and
  ``struct`` format, from which the schemas and packers are built (standard library);
* :mod:`bob.formats.rules` — the value rules as data: field, predicate, error class, message (standard library);
* :mod:`bob.formats.canonical` — an input record recognised and the predictions built without
  construct (bob-run's fast path);
* :mod:`bob.formats.files` — the one bounded read of a format's file (regular files only), and the
  first checks of any bytes (``as_bytes``, ``magic_finding``);
* :mod:`bob.formats.schema` — the custom constructs, ``parse`` and ``layout``;
* :mod:`bob.formats.docs` — layout and rule tables printed from the schemas and the rules.

Names are imported lazily (``from bob.formats import ENVELOPE`` imports only
what it needs). Imports run one way, from the schema up to the typed object
(``tests/house/test_import_graph.py``).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

_LAZY = {
    "INPUT_RECORD": "bob.formats.input_record",
    "ENVELOPE": "bob.formats.checkpoint",
    "ENVELOPE_HEADER": "bob.formats.checkpoint",
    "HEADER_BODY": "bob.formats.checkpoint",
    "CHUNK_ENTRY": "bob.formats.checkpoint",
    "PREDICTIONS": "bob.formats.predictions",
    "V1": "bob.formats.contract",
    "Contract": "bob.formats.contract",
    "FieldRow": "bob.formats.schema",
    "layout": "bob.formats.schema",
    "layout_rows": "bob.formats.docs",
    "markdown_table": "bob.formats.docs",
}

__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'bob.formats' has no attribute {name!r}")
    # __import__, not importlib (bob._import's reason); not bob._import itself,
    # as bob.errors imports this package while bob is still being imported.
    value = getattr(__import__(module, fromlist=["__name__"]), name)
    globals()[name] = value
    return value
