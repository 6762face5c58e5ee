"""``bob-qualify``: prove, on the user's own machine, that this build's native
path gives the contract's bytes (see docs/qualify.md).

Modules: :mod:`~bob.qualify.checks` (§8, golden files),
:mod:`~bob.qualify.kernels` (kernels × threads against the scalar
transcription), :mod:`~bob.qualify.resume` (fresh-process resume),
:mod:`~bob.qualify.kill` (SIGKILL during a commit, ``--thorough``),
:mod:`~bob.qualify.machine` (fingerprint), :mod:`~bob.qualify.perf`
(performance snapshot), :mod:`~bob.qualify.runner` (one qualification),
:mod:`~bob.qualify.report` (rich tables, JSON, plots), :mod:`~bob.qualify.cli`.
``bob-run`` never imports any of it.
"""

from __future__ import annotations


def main(argv: list[str] | None = None) -> int:
    from bob.qualify.cli import main as run

    return run(argv)
