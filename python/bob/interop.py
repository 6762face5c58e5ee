"""A checkpoint in the files other tools read: safetensors and ``.npz`` (README's "Other tools' files").

The file holds the planes' tables ``P``, ``M``, ``V`` and, as metadata, everything else the envelope holds, so an
exported checkpoint imported again gives the very same envelope bytes. Exporting refuses what
:meth:`Checkpoint.to_bytes` refuses; importing refuses anything that is no valid bob state, each a
:class:`~bob.FormatError` naming the array or the metadata key, after :mod:`bob.interop_archive` has bounded the file's
parts. The checkpoint's methods call this module, which never imports the checkpoint back.

The metadata (safetensors' ``__metadata__``; in ``.npz`` the JSON text of the array ``bob``) is string to string::

    format          "bob-checkpoint"      version   "2"
    step            decimal u64           header_bytes  decimal
    contract.NAME   each §2 field: a string field as lowercase hex, a number as decimal
    contract.identity_sha256   the SHA-256 of the §2 fields as a checkpoint header stores them: a
                               trace's contract_sha256 and bob-qualify's identity_sha256 (hex)

exactly these keys, each once, every decimal as bob writes it (no sign, no leading zero). Version "1", which earlier
builds wrote, is read too: the same keys, its identity_sha256 the SHA-256 of the JSON of the contract.NAME keys and
values (sorted keys, ``json.dumps``'s separators).

safetensors is the optional extra ``interop`` (:class:`MissingExtra` without it); ``.npz`` needs only NumPy."""

from __future__ import annotations

import hashlib
import io
import json
import os
import zipfile
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import numpy as np

from bob import fileio  # (its write_atomic looked up at each write)
from bob.errors import BadValue, FormatError, NotABobFile, Truncated
from bob.formats.constants import PLANE_DTYPE, PLANE_NAMES, U64_MAX
from bob.formats.contract import CONTRACT_FIELDS, V1, Contract
from bob.formats.files import as_bytes, read_format_file
from bob.formats.trace import contract_sha256
from bob.interop_archive import METADATA_MEMBER, npz_parts, safetensors_parts
from bob.text import bounded

if TYPE_CHECKING:  # pragma: no cover
    from bob.formats.checkpoint import Checkpoint

__all__ = ["FORMAT", "MissingExtra", "metadata", "safetensors_bytes", "from_safetensors_bytes", "safetensors_library",
           "MAX_EXPORT_BYTES", "npz_bytes", "from_npz_bytes", "write_safetensors", "read_safetensors", "write_npz",
           "read_npz"]

FORMAT = "bob-checkpoint"
VERSION = "2"
READ_VERSIONS = ("1", VERSION)  # 1: its contract.identity_sha256 hashed the fields' JSON
# The largest file an import reads. A bob export is under 800 KB (three planes
# and their metadata); room for four times that lets a file with an extra or a
# wider array be refused naming the array rather than as too large.
MAX_EXPORT_BYTES = 4 * 1024 * 1024
# A fixed time for the .npz members, so that one checkpoint always gives the same bytes.
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)
_LOWER_HEX = frozenset("0123456789abcdef")


class MissingExtra(ImportError):
    """An optional dependency of bob is not installed; the message names the extra and how to install it."""


def safetensors_library() -> Any:
    try:
        import safetensors.numpy
    except ImportError:
        from bob.distribution import install_hint

        raise MissingExtra("safetensors files need the safetensors package, bob's optional extra interop: "
                           f"{install_hint('interop')}") from None
    return safetensors.numpy


def _contract_fields(contract: Contract) -> dict[str, str]:
    return {f"contract.{name}": v.hex() if isinstance(v, bytes) else str(v) for name, v in asdict(contract).items()}


METADATA_KEYS = ("format", "version", "step", "header_bytes", *(f"contract.{name}" for name in CONTRACT_FIELDS),
                 "contract.identity_sha256")


def metadata(checkpoint: "Checkpoint") -> dict[str, str]:
    return {
        "format": FORMAT,
        "version": VERSION,
        "step": str(checkpoint.step),
        "header_bytes": str(checkpoint.header_bytes),
        **_contract_fields(checkpoint.contract),
        "contract.identity_sha256": contract_sha256(checkpoint.contract).hex(),
    }


def _decimal(meta: dict[str, str], key: str) -> int:
    """A u64 decimal as bob writes it (no sign, no leading zero), its length checked before it is converted."""
    if (text := meta.get(key)) is None:
        raise BadValue(f"metadata.{key}", "a bob export names it", expected="a decimal integer")
    if not (text.isascii() and text.isdigit() and len(text) <= len(str(U64_MAX)) and (text == "0" or text[0] != "0")
            and int(text) <= U64_MAX):
        raise BadValue(f"metadata.{key}", f"a decimal integer from 0 to {U64_MAX}, as bob writes it",
                       actual=bounded(repr(text)))
    return int(text)


def _contract(meta: dict[str, str]) -> Contract:
    fields: dict[str, Any] = {}
    for name in CONTRACT_FIELDS:
        key = f"contract.{name}"
        if isinstance(getattr(V1, name), bytes):
            text = meta.get(key)  # (missing: refused as such, not read as "" that differs from the contract)
            if text is None or len(text) % 2 or not _LOWER_HEX.issuperset(text):
                raise BadValue(f"metadata.{key}", "a contract string, as lowercase hex", actual=bounded(repr(text)))
            fields[name] = bytes.fromhex(text)
        else:
            fields[name] = _decimal(meta, key)
    contract = Contract(**fields)
    for m in contract.mismatch_findings():  # named as the file names it: by its metadata key
        raise type(m)(f"metadata.contract.{m.field}", m.message, expected=m.expected, actual=m.actual) from None
    identity = contract_sha256(contract).hex() if meta["version"] == VERSION else hashlib.sha256(
        json.dumps(_contract_fields(contract), sort_keys=True).encode()).hexdigest()  # (version 1's)
    if meta.get("contract.identity_sha256") != identity:
        raise BadValue("metadata.contract.identity_sha256", f"the SHA-256 of the contract (version {meta['version']})",
                       expected=identity, actual=bounded(repr(meta.get("contract.identity_sha256"))))
    return contract


def _checkpoint(meta: dict[str, str], planes: "dict[str, Any]", what: str, for_resume: bool,
                make: "type[Checkpoint]") -> "Checkpoint":
    """The checkpoint an export's metadata and planes (checked by :mod:`bob.interop_archive`)
    describe, checked as an envelope would be; ``make`` is :class:`~bob.Checkpoint`."""
    if meta.get("format") != FORMAT:
        raise NotABobFile("metadata.format", f"this {what} is not a bob checkpoint export", expected=FORMAT,
                          actual=bounded(repr(meta.get("format"))))
    if meta.get("version") not in READ_VERSIONS:
        raise BadValue("metadata.version", "unsupported export version", expected=" or ".join(READ_VERSIONS),
                       actual=bounded(repr(meta.get("version"))))
    for key in meta:
        if key not in METADATA_KEYS:
            raise BadValue(f"metadata.{key}"[:120], "not a key of a bob export")
    contract = _contract(meta)
    step = _decimal(meta, "step")
    header_bytes = _decimal(meta, "header_bytes")
    # each plane copied into its own array, and its bytes let go at once (the peak: one plane's bytes more)
    tables = [np.frombuffer(planes.pop(name), dtype=PLANE_DTYPE).astype(np.float32) for name in PLANE_NAMES]
    try:
        checkpoint = make(step, tables[0], tables[1], tables[2], header_bytes, contract)
        checkpoint._refuse_unwritable(f"importing a {what}", for_resume)
        return checkpoint
    except FormatError as exc:  # a metadata value out of range: named as the file names it, by its key
        if exc.field not in ("step", "header_bytes"):
            raise
        renamed = type(exc)(f"metadata.{exc.field}", exc.message, expected=exc.expected, actual=exc.actual)
    raise renamed  # (outside the except: with no context, as every other refusal here)


def safetensors_bytes(checkpoint: "Checkpoint", *, for_resume: bool = True) -> bytes:
    """The checkpoint as a safetensors file's bytes, the same bytes every time: the header is
    written here, since the library keeps metadata in a hash map seeded per process (the
    library reads the file: ``tests/formats/test_interop.py``)."""
    safetensors_library()
    checkpoint = checkpoint.copy()  # one state, under the core's loans (a train meanwhile: BufferError)
    checkpoint._refuse_unwritable("Checkpoint.to_safetensors", for_resume)
    tables = {name: np.ascontiguousarray(t, dtype=PLANE_DTYPE) for name, t in checkpoint.tables.items()}
    header: dict[str, Any] = {"__metadata__": metadata(checkpoint)}
    offset = 0
    for name, table in tables.items():
        header[name] = {"dtype": "F32", "shape": list(table.shape), "data_offsets": [offset, offset + table.nbytes]}
        offset += table.nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return b"".join([len(text).to_bytes(8, "little"), text, *(t.tobytes() for t in tables.values())])


def from_safetensors_bytes(data: bytes, make: "type[Checkpoint]", *, for_resume: bool = True) -> "Checkpoint":
    safetensors_library()
    return _checkpoint(*safetensors_parts(as_bytes(data, "data")), "safetensors file", for_resume, make)


def write_safetensors(checkpoint: "Checkpoint", path: "str | os.PathLike[str]", *, for_resume: bool = True) -> None:
    fileio.write_atomic(path, safetensors_bytes(checkpoint, for_resume=for_resume))


def read_safetensors(path: "str | os.PathLike[str]", make: "type[Checkpoint]", *, for_resume: bool = True) -> "Checkpoint":
    safetensors_library()  # without the extra, say so before anything is read
    return from_safetensors_bytes(_read(path), make, for_resume=for_resume)


def npz_bytes(checkpoint: "Checkpoint", *, for_resume: bool = True) -> bytes:
    """The checkpoint as an ``.npz`` file's bytes: what ``numpy.savez`` writes, with fixed
    member times, so that the same checkpoint always gives the same bytes."""
    checkpoint = checkpoint.copy()  # one state, under the core's loans (a train meanwhile: BufferError)
    checkpoint._refuse_unwritable("Checkpoint.to_npz", for_resume)
    members = {name: np.ascontiguousarray(t, dtype=PLANE_DTYPE) for name, t in checkpoint.tables.items()}
    members[METADATA_MEMBER] = np.array(json.dumps(metadata(checkpoint), sort_keys=True))  # the JSON text
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as z:
        for name, array in members.items():
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, array, allow_pickle=False)
            z.writestr(zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_TIME), buffer.getvalue())
    return out.getvalue()


def from_npz_bytes(data: bytes, make: "type[Checkpoint]", *, for_resume: bool = True) -> "Checkpoint":
    return _checkpoint(*npz_parts(as_bytes(data, "data")), ".npz file", for_resume, make)


def write_npz(checkpoint: "Checkpoint", path: "str | os.PathLike[str]", *, for_resume: bool = True) -> None:
    fileio.write_atomic(path, npz_bytes(checkpoint, for_resume=for_resume))


def read_npz(path: "str | os.PathLike[str]", make: "type[Checkpoint]", *, for_resume: bool = True) -> "Checkpoint":
    return from_npz_bytes(_read(path), make, for_resume=for_resume)


def _read(path: "str | os.PathLike[str]") -> bytes:
    try:
        return read_format_file(path, MAX_EXPORT_BYTES, None)
    except Truncated as big:
        raise Truncated("file_size", f"a bob export is never larger than {MAX_EXPORT_BYTES} bytes; it was not read",
                        expected=big.expected, actual=big.actual) from None

