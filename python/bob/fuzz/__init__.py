"""``bob-fuzz``: coverage-guided, field-aware fuzzing of bob's formats, commands and core,
and a conformance corpus for other implementations (``docs/fuzzing.md``).

* :mod:`bob.fuzz.targets` — the targets (bytes in, ``PropertyFailed`` — an ``AssertionError`` — on a broken property);
* :mod:`bob.fuzz.mutator` — the field-aware mutator driven by :mod:`bob.formats.layout`;
* :mod:`bob.fuzz.dictionary` — magics, contract strings, sizes, interesting values, ``.dict`` files;
* :mod:`bob.fuzz.campaign` — the atheris/libFuzzer campaign and the seeded loop CI runs;
* :mod:`bob.fuzz.replay` — replaying and minimizing findings;
* :mod:`bob.fuzz.conformance` — the labelled corpus and ``bob-fuzz check``;
* :mod:`bob.fuzz.strategies` — Hypothesis strategies for the property tests.

``import bob`` never imports this package, and nothing here imports atheris
except the campaign's worker processes.
"""

from __future__ import annotations

from bob.fuzz.mutator import format_of, mutate, mutate_canonical, mutate_field, refresh_digests, spots

__all__ = ["main", "format_of", "mutate", "mutate_canonical", "mutate_field", "refresh_digests", "spots"]


def main(argv: "list[str] | None" = None) -> int:
    from bob.fuzz.cli import main as cli_main

    return cli_main(argv)
