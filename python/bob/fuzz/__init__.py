"""``bob-fuzz``: coverage-guided, field-aware fuzzing of bob's formats, commands and core, and a conformance
corpus for other implementations; its modules, each importing only those before it: docs/fuzzing.md's "The
package". ``import bob`` never imports this package, and nothing here imports atheris but the campaign's workers."""

from __future__ import annotations

__all__ = ["main", "format_of", "mutate", "mutate_canonical", "mutate_field", "refresh_digests", "spots"]

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from bob.fuzz.mutator import format_of, mutate, mutate_canonical, mutate_field, refresh_digests, spots
else:  # the mutator's names when asked: the command starts without it (hashlib, typing: 8 MiB)
    from bob.formats import lazy_names

    __getattr__ = lazy_names(__name__, dict.fromkeys(__all__[1:], "bob.fuzz.mutator"))


def main(argv: "list[str] | None" = None) -> int:
    from bob.fuzz.cli import main as cli_main

    return cli_main(argv)
