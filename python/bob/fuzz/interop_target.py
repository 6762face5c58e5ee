"""The ``interop`` fuzz target: ``.npz`` and safetensors imports against the oracle's view.

Every input is read as both formats, for resuming and for reading: each
import raises only a well-formed :class:`~bob.FormatError`, accepts exactly
what :mod:`bob.fuzz.oracle_interop` says a bob export is, and an accepted
file exported and imported again is the same checkpoint.
"""

from __future__ import annotations

from typing import Callable

from bob.fuzz.properties import require

__all__ = ["interop_target"]


def interop_target(data: bytes, check_error: Callable[..., None]) -> None:
    import bob
    from bob import interop
    from bob.errors import FormatError
    from bob.fuzz.oracle_interop import check_export

    formats = (("npz", interop.from_npz_bytes, interop.npz_bytes),
               ("safetensors", interop.from_safetensors_bytes, interop.safetensors_bytes))
    for fmt, load, export in formats:
        for for_resume in (True, False):
            try:
                checkpoint = load(data, bob.Checkpoint, for_resume=for_resume)
            except FormatError as err:
                check_error(err, data)
                checkpoint = None
            why = check_export(fmt, data, for_resume)
            require((checkpoint is None) == (why is not None),
                    f"{fmt} (for_resume={for_resume}): bob {'refuses' if checkpoint is None else 'accepts'} where "
                    f"the oracle {'accepts' if why is None else f'refuses ({why})'}")
            if checkpoint is not None:
                again = load(export(checkpoint, for_resume=for_resume), bob.Checkpoint, for_resume=for_resume)
                require(again == checkpoint, f"{fmt}: an accepted export does not round-trip")
