"""``bob-fuzz``: coverage-guided, field-aware fuzzing of bob's formats, commands and core, and a conformance
corpus for other implementations; its modules, each importing only those before it: docs/fuzzing.md's "The
package". ``import bob`` never imports this package, and nothing here imports atheris but the campaign's workers."""

from __future__ import annotations

from bob.fuzz.mutator import format_of, mutate, mutate_canonical, mutate_field, refresh_digests, spots

__all__ = ["main", "format_of", "mutate", "mutate_canonical", "mutate_field", "refresh_digests", "spots"]


def main(argv: "list[str] | None" = None) -> int:
    from bob.fuzz.cli import main as cli_main

    return cli_main(argv)
