"""The contract oracle's view of an interop export (``.npz``, safetensors): None for a file bob must accept, else
a few words saying why not; from ``bob.interop``'s documented rules, none of its readers (docs/fuzzing.md, interop)."""

from __future__ import annotations

import ast
import hashlib
import io
import json
import struct
import zipfile
import zlib
from typing import Optional

from bob.fuzz.oracle import CHUNK, PLANES, SIZES, STRINGS, U64_MAX, VOCABULARY, header_bytes_ok, state_verdict

__all__ = ["check_npz", "check_safetensors", "check_export"]

# bob.interop's read limits, restated.
METADATA_CHARS = 1 << 14
NPY_HEADER = 1 << 10
ZIP_ENTRIES = 16
ZIP_DIRECTORY = 1 << 12
DIGITS = 20
END = b"PK\x05\x06"
CONTRACT = {f"contract.{name}": text.hex() for name, text in STRINGS}
CONTRACT.update({f"contract.{name}": str(size) for name, size in SIZES})
KEYS = {"format", "version", "step", "header_bytes", "contract.identity_sha256", *CONTRACT}
IDENTITY = {"2": hashlib.sha256(b"".join(struct.pack("<I", len(text)) + text for _, text in STRINGS)  # §2 as a header
                               + b"".join(struct.pack("<Q", size) for _, size in SIZES)).hexdigest(),  # holds it
            "1": hashlib.sha256(json.dumps(CONTRACT, sort_keys=True).encode()).hexdigest()}  # (earlier builds')
# §5: the header's own length (magic, version, header_bytes, step, the strings, the sizes, the chunk table,
# the digest): header_bytes is at least this.
HEADER_END = 32 + sum(4 + len(text) for _, text in STRINGS) + 8 * len(SIZES) + 4 + len(PLANES) * 52 + 32


class Bad(Exception):
    pass


def _unique(pairs: list) -> dict:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise Bad("a key twice")
    return dict(pairs)


def _decimal(text: str, top: int) -> int:
    if not (text.isascii() and text.isdigit() and str(int(text)) == text and int(text) <= top):
        raise Bad(f"not a decimal as bob writes it: {text[:20]!r}")
    return int(text)


def _state(meta: object, planes: list, for_resume: bool) -> None:
    """The metadata (string to string) and the planes' bytes: a state bob accepts."""
    if not isinstance(meta, dict) or set(meta) != KEYS or not all(isinstance(v, str) for v in meta.values()):
        raise Bad("metadata keys or values")
    if meta["format"] != "bob-checkpoint" or meta["version"] not in ("1", "2"):
        raise Bad("format or version")
    if any(meta[key] != text for key, text in CONTRACT.items()):
        raise Bad("contract")
    if meta["contract.identity_sha256"] != IDENTITY[meta["version"]]:
        raise Bad("identity")
    step = _decimal(meta["step"], U64_MAX)
    hb = _decimal(meta["header_bytes"], U64_MAX)
    if not header_bytes_ok(hb) or hb < HEADER_END:
        raise Bad("header_bytes")
    if for_resume and state_verdict(step, [(p, 0) for p in planes]) is not None:
        raise Bad("state")


def _end_record(data: bytes) -> tuple[int, int]:
    at = len(data) - 22
    if not (at >= 0 and data[at:at + 4] == END and data[-2:] == b"\0\0"):
        at = data.rfind(END, max(0, len(data) - 22 - (1 << 16)))
    if at < 0 or len(data) - at < 22 or (at >= 20 and data[at - 20:at - 16] == b"PK\x06\x07"):
        raise Bad("end record")
    on_disk, entries, size, start, comment = struct.unpack_from("<HHIIH", data, at + 8)
    if on_disk != entries or entries > ZIP_ENTRIES or size > ZIP_DIRECTORY:
        raise Bad("directory too large")
    if at + 22 + comment != len(data) or start + size != at:
        raise Bad("bytes after the end record or before the directory")
    return start, entries


def _tiled(data: bytes, infos: list, directory: int) -> None:
    """From offset 0 to the directory nothing but the members, each its local header and data (no byte past what it
    holds), then, if its flag bit 3 says so, a data descriptor (PK 7 8 or not, the CRC, both sizes in 4 or 8 bytes
    each)."""
    infos = sorted(infos, key=lambda i: i.header_offset)
    if infos[0].header_offset != 0:
        raise Bad("bytes before the first member")
    for i, end in zip(infos, [i.header_offset for i in infos[1:]] + [directory]):
        flags, method, crc, csize, usize, n, m = struct.unpack_from("<HH4x3L2H", data, i.header_offset + 6)
        blocks = _zip64(data[i.header_offset + 30 + n:i.header_offset + 30 + n + m], i)
        masked = (csize == 2**32 - 1, usize == 2**32 - 1)
        if len(blocks) > 1 or any(masked) and not (all(masked) and blocks and len(blocks[0]) >= 16):
            raise Bad(f"the zip64 sizes of {i.filename}'s local header")
        stated = (crc, *struct.unpack_from("<QQ", blocks[0])[::-1]) if all(masked) else (crc, csize, usize)
        if (flags, method) != (i.flag_bits, i.compress_type) or any(
                s != want and not (flags & 8 and s == 0) for s, want in zip(stated, (i.CRC, i.compress_size, i.file_size))):
            raise Bad(f"the local header of {i.filename} says another member")
        start = i.header_offset + 30 + n + m + i.compress_size
        inflate, stored = zlib.decompressobj(-15), data[start - i.compress_size:start]
        whole = stored if i.compress_type == 0 else inflate.decompress(stored, i.file_size + 1)
        if len(whole) != i.file_size or (i.compress_type and (not inflate.eof or inflate.unused_data)):
            raise Bad(f"bytes in the member {i.filename} past its data")
        gap = data[start:end] if start <= end else b"overlap"
        bodies = (gap, gap[4:] if gap[:4] == b"PK\x07\x08" else b"")
        if gap and not (i.flag_bits & 8 and any(len(b) in (12, 20) and struct.unpack(
                "<L2Q" if len(b) == 20 else "<3L", b) == (i.CRC, i.compress_size, i.file_size) for b in bodies)):
            raise Bad(f"bytes after the member {i.filename}")


def _zip64(extra: bytes, i: zipfile.ZipInfo) -> list:
    """An extra field's zip64 blocks (tag 1: in a local header the size, then the compressed size); no block past the
    field, none a second name (Info-ZIP's Unicode Path, 0x7075)."""
    blocks = []
    while len(extra) >= 4:
        tag, size = struct.unpack_from("<HH", extra)
        if size > len(extra) - 4 or tag == 0x7075:
            raise Bad(f"an extra field block of {i.filename} runs past the field or names it again")
        blocks += [extra[4:4 + size]] if tag == 1 else []
        extra = extra[4 + size:]
    return blocks


def _npy(member: bytes, metadata: bool) -> bytes:
    if member[:6] != b"\x93NUMPY" or member[6:8] not in (b"\1\0", b"\2\0"):
        raise Bad("npy magic")
    width = 2 if member[6] == 1 else 4
    length = int.from_bytes(member[8:8 + width], "little")
    if len(member) < 8 + width or length > NPY_HEADER:
        raise Bad("npy header length")
    header = ast.literal_eval(member[8 + width:8 + width + length].decode("latin-1"))
    if len(member) < 8 + width + length or type(header) is not dict \
            or set(header) != {"descr", "fortran_order", "shape"} or header["fortran_order"] is not False:
        raise Bad("npy header")
    descr, shape, data = header["descr"], header["shape"], member[8 + width + length:]
    if metadata:
        n = descr[2:] if type(descr) is str and descr[:2] == "<U" else ""
        ok = n.isascii() and n.isdigit() and n[0] != "0" and int(n) <= METADATA_CHARS and shape == () \
            and type(shape) is tuple and len(data) == 4 * int(n)
    else:
        ok = descr == "<f4" and type(shape) is tuple and [type(k) for k in shape] == [int, int] \
            and shape == (VOCABULARY, VOCABULARY) and len(data) == CHUNK
    if not ok:
        raise Bad("npy array")
    return data


def check_npz(data: bytes, for_resume: bool = True) -> Optional[str]:
    """None when bob accepts ``data`` as an ``.npz`` export, else why not."""
    limits = {**dict.fromkeys(PLANES, 12 + NPY_HEADER + CHUNK), "bob": 12 + NPY_HEADER + 4 * METADATA_CHARS}
    try:
        directory, entries = _end_record(data)
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            infos = z.infolist()
            if len(infos) != entries:
                raise Bad("the end record's count of entries")
            names = [i.orig_filename for i in infos]  # (as stored: filename is cut at a NUL)
            if sorted(names) != ["M.npy", "P.npy", "V.npy", "bob.npy"]:
                raise Bad(f"members {names[:6]}")
            for i in infos:
                _zip64(i.extra, i)
                if i.compress_type not in (0, 8) or i.flag_bits & 1 or i.file_size > limits[i.filename[:-4]]:
                    raise Bad(f"member {i.filename}")
            members = {i.filename[:-4]: _npy(z.read(i), i.filename == "bob.npy") for i in infos}
            _tiled(data, infos, directory)
        meta = json.loads(members["bob"].decode("utf-32-le").rstrip("\0"), object_pairs_hook=_unique)
        _state(meta, [members[name] for name in PLANES], for_resume)
    except Exception as exc:  # noqa: BLE001 - any refusal on the way: the file is invalid
        return f"{type(exc).__name__}: {str(exc)[:80]}"
    return None


def _integer(text: str) -> int:
    if len(text.lstrip("-")) > DIGITS or text == "-0":  # (-0: a float -0.0 to serde, the library's JSON)
        raise Bad("a long number, or -0")
    return int(text)


def _no_float(text: str) -> None:
    raise Bad("a float")


def check_safetensors(data: bytes, for_resume: bool = True) -> Optional[str]:
    """None when bob accepts ``data`` as a safetensors export, else why not."""
    try:
        n = int.from_bytes(data[:8], "little")
        if len(data) < 8 or n > METADATA_CHARS or n > len(data) - 8:
            raise Bad("header length")
        header = json.loads(data[8:8 + n].decode("utf-8"), object_pairs_hook=_unique, parse_int=_integer,
                            parse_float=_no_float, parse_constant=_no_float)
        if type(header) is not dict or set(header) != {*PLANES, "__metadata__"}:
            raise Bad("header keys")
        body = len(data) - 8 - n
        begins = []
        for name in PLANES:
            entry = header[name]
            if type(entry) is not dict or set(entry) != {"dtype", "shape", "data_offsets"} or entry["dtype"] != "F32":
                raise Bad(f"tensor {name}")
            shape, span = entry["shape"], entry["data_offsets"]
            if type(shape) is not list or [type(k) for k in shape] != [int, int] or shape != [VOCABULARY] * 2:
                raise Bad(f"shape of {name}")
            if type(span) is not list or [type(k) for k in span] != [int, int] or span[1] - span[0] != CHUNK \
                    or span[0] < 0 or span[1] > body:
                raise Bad(f"offsets of {name}")
            begins.append(span[0])
        if sorted(begins) != [k * CHUNK for k in range(len(PLANES))] or body != len(PLANES) * CHUNK:
            raise Bad("the tensors do not tile the data")
        planes = [data[8 + n + b:8 + n + b + CHUNK] for b in begins]
        _state(header["__metadata__"], planes, for_resume)
    except Exception as exc:  # noqa: BLE001
        return f"{type(exc).__name__}: {str(exc)[:80]}"
    return None


def check_export(fmt: str, data: bytes, for_resume: bool = True) -> Optional[str]:
    return (check_npz if fmt == "npz" else check_safetensors)(data, for_resume)
