"""Reading bob files from paths: size-checked before they are read whole."""

from __future__ import annotations

import os

from bob.errors import Truncated
from bob.formats.contract import PREDICTION_BYTES, RECORD_BYTES
from bob.formats.envelope import read_bounded, read_checkpoint_file
from bob.formats.input_record import INPUT_MAGIC, InputRecord, load_input
from bob.formats.predictions import Predictions, load_predictions

__all__ = ["read_input_file", "read_predictions_file", "read_checkpoint_file"]


def read_input_file(path: "str | os.PathLike[str]") -> InputRecord:
    """Read and check an input record; a file larger than 1,564 bytes is refused unread.

    A missing file raises ``FileNotFoundError``.
    """
    data = read_bounded(path, RECORD_BYTES, INPUT_MAGIC, "an input record (bob-input)")
    if data is None:
        raise FileNotFoundError(2, "No such file or directory", os.fspath(path))
    return load_input(data)


def read_predictions_file(path: "str | os.PathLike[str]") -> Predictions:
    """Read and check a predictions file (24 bytes). A missing file raises ``FileNotFoundError``."""
    try:
        data = read_bounded(path, PREDICTION_BYTES)
    except Truncated as exc:
        raise Truncated("file_size", "predictions are exactly 24 bytes", expected=PREDICTION_BYTES,
                        actual=exc.actual) from None
    if data is None:
        raise FileNotFoundError(2, "No such file or directory", os.fspath(path))
    return load_predictions(data)
