"""``--export OUT.safetensors|OUT.npz``: the inspected checkpoint in the bytes :meth:`bob.Checkpoint.to_safetensors`
/ ``to_npz`` write (the format from the suffix); as every bob writer, it refuses what ``bob-run`` would."""

from __future__ import annotations

import hashlib
import os
from typing import Any

from bob.fileio import same_file
from bob.inspect.common import Refused, add_note
from bob.text import escape_bytes, show_path


def export_format(out: str) -> str:
    ext = os.path.splitext(out)[1].lower()
    if ext not in (".safetensors", ".npz"):
        shown = f'"{escape_bytes(os.fsencode(ext))}"' if ext else "files without a suffix"  # (quoted: ".npz " shows)
        raise Refused(f"cannot write {shown}; "
                      "the format comes from the suffix: .safetensors or .npz", option="--export", path=out)
    return ext[1:]


def check_export(out: str, inspected: str) -> None:
    """Refuse, before anything is read, an export that cannot be made: an unknown suffix, safetensors without the
    ``interop`` extra, the inspected file itself as the output."""
    if export_format(out) == "safetensors":
        from bob.interop import MissingExtra, safetensors_library

        try:
            safetensors_library()
        except MissingExtra as exc:
            raise Refused(str(exc), option="--export", path=out) from None
    if same_file(out, inspected):
        raise Refused("that is the checkpoint being inspected; bob-inspect never replaces what it reads",
                      option="--export", path=out)


def export_checkpoint(report: dict[str, Any], data: bytes | None, out: str) -> "tuple[bytes, dict[str, Any]] | None":
    """The export's bytes and ``{path, format, size, sha256}``, or None (and a note) for a checkpoint with problems."""
    import bob
    from bob import interop

    if not report["ok"] or data is None:
        add_note(report, "no export: bob-run refuses this checkpoint (the problems are listed), so none was written")
        return None
    fmt = export_format(out)
    if not data:
        add_note(report, "zero bytes are a fresh start: the export holds the fresh state, step 0, which imports as a "
                         "whole step-0 checkpoint, not as zero bytes")
    checkpoint = bob.load_checkpoint(data)  # zero bytes: the fresh state
    written = (interop.safetensors_bytes if fmt == "safetensors" else interop.npz_bytes)(checkpoint)
    return written, {"path": show_path(out), "format": fmt, "size": len(written),
                     "sha256": hashlib.sha256(written).hexdigest()}
