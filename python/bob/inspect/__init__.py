"""``bob-inspect``: bob's files, shown whole and readably, from the schemas.

A reader library and a dumper, in the spirit of gguf-py: the report modules
build JSON-ready dicts from the formats layer (every field from a construct
schema's parse, every problem from the findings lists :func:`bob.examine_checkpoint`,
:func:`bob.input_findings`, :func:`bob.predictions_findings`, every layout
table from :func:`bob.formats.docs.layout_rows`); the command line only
formats them.

* :mod:`bob.inspect.cli` — parsing, routing, exit codes, JSON or text (:func:`main`);
* :mod:`bob.inspect.common` — reading through the formats layer, the refusal, JSON-safe values;
* :mod:`bob.inspect.checkpoint` — the ``ckpt`` report (plane statistics, ``--rows``);
* :mod:`bob.inspect.record` — the ``input`` report;
* :mod:`bob.inspect.predictions` — the ``pred`` report;
* :mod:`bob.inspect.diff` — the ``diff`` report (ULP distances);
* :mod:`bob.inspect.schema` — the ``schema`` report;
* :mod:`bob.inspect.render` — the human renderers;
* :mod:`bob.inspect.heatmap` — ``--heatmap`` (the only module of ``bob-inspect`` that imports matplotlib).

A file's kind comes from :func:`bob.formats.kinds.detect_kind`; all escaping
from :mod:`bob.text`. Commands::

    bob-inspect ckpt FILE [--rows BYTES] [--rows-hex HEX] [--heatmap OUT.png]
    bob-inspect input FILE
    bob-inspect pred FILE
    bob-inspect diff A B
    bob-inspect schema [input|envelope|pred]
    bob-inspect FILE            # the kind detected from the magic (24 bytes: predictions)

Every command takes ``--json``; see ``docs/bob-inspect.md``.
"""

from __future__ import annotations

from bob.inspect.cli import main

__all__ = ["main"]
