"""A deliberately broken target for tests/fuzz/test_fuzz_cli.py: a copy of the
predictions loader with a planted bug (it accepts validity 2), held to the
real loader. ``bob-fuzz run`` must find the difference."""

from __future__ import annotations

import struct

import bob
from bob.errors import FormatError
from bob.fuzz.properties import require


def lax_load_predictions(data: bytes):
    if len(data) != 24:
        raise FormatError("file_size", "predictions are 24 bytes")
    records = [struct.unpack_from("<II", data, 8 * i) for i in range(3)]
    for token, validity in records:
        if validity not in (0, 1, 2):  # the planted bug: 2 is let through
            raise FormatError("validity", "validity is 0 or 1")
        if token >= 256 or (validity == 0 and token):
            raise FormatError("token", "bad token")
    return records


def target(data: bytes) -> None:
    try:
        lax_load_predictions(data)
        lax = True
    except FormatError:
        lax = False
    try:
        bob.load_predictions(data)
        real = True
    except FormatError:
        real = False
    require(lax == real, f"the copy {'accepts' if lax else 'refuses'} what bob.load_predictions does not")
