"""The ``diff`` report: two checkpoint files compared (:func:`bob.diff`, computed in :mod:`bob.analysis`);
here only the reading, with the command's refusal of a path that cannot be read."""

from __future__ import annotations

from typing import Any

from bob.analysis import Side, compare
from bob.inspect.common import file_size, read_checkpoint
from bob.text import show_path


def _side(path: str, name: str) -> Side:
    data, problems = read_checkpoint(path, name)  # a Refused naming the side for an unreadable path, as trace's
    return Side(show_path(path), data, problems, len(data) if data is not None else file_size(path))


def diff_report(path_a: str, path_b: str, *, ulp: int | None = None, atol: float | None = None) -> dict[str, Any]:
    """The ``diff`` report (a JSON-ready dict): bytes, header fields and planes of
    two checkpoints, and whether they are equal within ``ulp``/``atol``."""
    return compare(_side(path_a, "A"), _side(path_b, "B"), ulp=ulp, atol=atol)
