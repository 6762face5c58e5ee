"""``bob-fuzz``: coverage-guided, field-aware fuzzing of bob's formats, commands and core,
and a conformance corpus for other implementations (``docs/fuzzing.md``).

Its modules, each importing only those listed before it: ``properties`` (how a
target fails), ``dictionary``, ``structural`` and ``mutator`` (the mutations),
``oracle`` (the contract read independently), ``digests``, ``faults``, ``world``
and ``core_target`` (parts of targets), ``targets``, ``common`` (a campaign's
result and helpers), ``conformance``, ``loop`` (the seeded loop), ``replay``,
``campaign`` (atheris), ``oss``, ``cli``. ``import bob`` never imports this
package, and nothing here imports atheris except the campaign's workers.
"""

from __future__ import annotations

from bob.fuzz.mutator import format_of, mutate, mutate_canonical, mutate_field, refresh_digests, spots

__all__ = ["main", "format_of", "mutate", "mutate_canonical", "mutate_field", "refresh_digests", "spots"]


def main(argv: "list[str] | None" = None) -> int:
    from bob.fuzz.cli import main as cli_main

    return cli_main(argv)
