"""The bounded reader of other tools' files: an ``.npz`` export's members and a safetensors export's header, checked
against what a bob export can be before anything is decompressed, allocated or converted (:mod:`bob.interop` checks what
they say). Each refusal is a :class:`~bob.FormatError` naming the member, the tensor or the metadata key:

* ``.npz``: the zip's end record (no zip64, bounded entries and directory, the file's last bytes) before the
  directory is parsed; from the directory alone, each member's name as stored (``P.npy``, ``M.npy``, ``V.npy``,
  ``bob.npy``, each once) and compression (stored or deflated); then each ``.npy`` header (version 1.0 or 2.0,
  bounded, a literal dict of exactly ``descr``, ``fortran_order`` and ``shape``: a float64 plane named as such), and
  the member's size in the directory against it, before data that must be exactly what it says; then, as
  formats/DECISIONS.md D28 gives them, the local headers against the directory (no second name) and no byte outside
  the members, the directory and the end record;
* safetensors: the header's length (bounded, inside the file), its UTF-8 JSON, then each
  tensor (``F32``, the table's shape, offsets that tile the data from its start to its end);
* the metadata: bounded, nesting checked before it is parsed, every key once, every value a
  string; a number in a safetensors header has at most :data:`MAX_DIGITS` digits.

No limit is near what a bob export needs (its metadata is about 1,400 characters): each is there so that any file,
whatever it declares, is read in memory and time proportional to a valid export."""

from __future__ import annotations

import ast
import io
import json
import re
import struct
import zipfile
import zlib
from itertools import accumulate
from typing import Any, Callable

from bob.errors import BadValue, FormatError, IntegrityError, NotABobFile, Truncated
from bob.formats.constants import CHUNK_BYTES, PLANE_DTYPE, PLANE_NAMES, VOCABULARY
from bob.formats.files import starts_like
from bob.text import bounded

__all__ = ["METADATA_MEMBER", "MAX_METADATA_CHARS", "MAX_NPY_HEADER", "MAX_ZIP_ENTRIES", "MAX_ZIP_DIRECTORY",
           "MAX_DIGITS", "npz_parts", "safetensors_parts", "parse_json"]

METADATA_MEMBER = "bob"  # the .npz member holding the metadata's JSON text
MAX_METADATA_CHARS = 16_384  # the metadata's JSON text; a safetensors header's bytes
MAX_NPY_HEADER = 1_024  # an .npy member's header dict (numpy writes 118 bytes for a plane)
MAX_ZIP_ENTRIES = 16
MAX_ZIP_DIRECTORY = 4_096  # the central directory's bytes (a bob export's: about 300)
MAX_DIGITS = 20  # U64_MAX has 20
_TABLE = (VOCABULARY, VOCABULARY)
_NPY_MAGIC = b"\x93NUMPY"
_MEMBERS = (*PLANE_NAMES, METADATA_MEMBER)
_END_RECORD = struct.Struct("<4s4H2LH")  # the zip's end of central directory
_LOCAL_HEADER = struct.Struct("<4s5H3L2H")  # a member's, before its name, extra field and data
# A string (to its closing quote or the text's end: a match never fails, so one pass) or a bracket
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', re.S)
_UNICODE_DESCR = re.compile(r"<U([1-9][0-9]{0,5})")
# Info-ZIP's Unicode Path block: a second name, which unzip and Python 3.12's zipfile read in place of the entry's own
_UNICODE_PATH = 0x7075
_SECOND_NAME = "a member has one name: no Info-ZIP Unicode Path block (0x7075) in its extra field"


# -- JSON, bounded


def _depth(text: str) -> int:
    """How deep ``text``'s arrays and objects nest (strings left out), without parsing it."""
    steps = ({"[": 1, "{": 1, "]": -1, "}": -1}.get(token.group()[0], 0) for token in _TOKEN.finditer(text))
    return max(accumulate(steps, initial=0))


def parse_json(text: str, field: str, depth: int, named: "Callable[[list[str]], str] | None" = None) -> Any:
    """``text`` as JSON nested at most ``depth`` deep, every object's keys once, integers of at most :data:`MAX_DIGITS`
    digits and no other number; else a :class:`~bob.BadValue` naming ``field``, or a key held twice by its keys'
    path (as ``named`` names it; else ``field.key...``) once all of it is parsed: any other fault is said first."""
    if _depth(text) > depth:
        raise BadValue(field, f"nested deeper than a bob export's {depth} level(s)")

    class Twice(list):  # the keys to a key held twice, passed up to the whole, whose place names it
        pass

    def pairs(items: list) -> Any:
        out: dict = {}
        for key, value in items:
            if key in out or isinstance(value, Twice):
                return Twice([key, *value] if isinstance(value, Twice) else [key])
            out[key] = value
        return out

    def integer(digits: str) -> int:
        if len(digits.lstrip("-")) > MAX_DIGITS:
            raise BadValue(field, f"an integer of at most {MAX_DIGITS} digits", actual=f"{len(digits)} characters")
        if digits == "-0":  # (JSON's -0 is a float to serde: the safetensors library refuses it)
            raise BadValue(field, "integers and strings only", actual=digits)
        return int(digits)

    def other_number(number: str) -> None:
        raise BadValue(field, "integers and strings only", actual=number[:40])

    try:
        parsed = json.loads(text, object_pairs_hook=pairs, parse_int=integer, parse_float=other_number,
                            parse_constant=other_number)
    except ValueError as exc:
        if isinstance(exc, BadValue):
            raise
        raise BadValue(field, f"not JSON ({exc})"[:200]) from None
    if isinstance(parsed, Twice):
        raise BadValue((named(parsed) if named else ".".join([field, *parsed]))[:120], "a key appears twice")
    return parsed


def _metadata(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        raise BadValue("metadata", "a JSON object of strings", actual=type(value).__name__)
    for key, text in value.items():
        if not isinstance(text, str):
            raise BadValue(f"metadata.{key}"[:120], "a string", actual=type(text).__name__)
    return value


# -- .npz


def _zip_directory(data: bytes) -> tuple[int, int]:
    """The end record, found as :mod:`zipfile` finds it (in a file that starts as a zip, anywhere: to name the bytes
    after it), its entries and directory size bounded, the file's last bytes; the directory's offset (-1 where the
    record's offset is not where its size puts the directory) and how many entries the record counts."""
    at = len(data) - _END_RECORD.size
    if at < 0 or data[at:at + 4] != b"PK\x05\x06" or data[-2:] != b"\0\0":  # not an end record without a comment
        at = data.rfind(b"PK\x05\x06", 0 if data[:4] == b"PK\x03\x04" else max(0, at - (1 << 16)))
    if at < 0 or len(data) - at < _END_RECORD.size:
        if data[:4] == b"PK\x03\x04":  # a zip's first member, without the record that ends every zip: cut short
            raise Truncated("npz", "the file ends before the zip's end of central directory record",
                            expected=at + _END_RECORD.size if at >= 0 else f"more than {len(data)}", actual=len(data))
        raise NotABobFile("npz", f"not a zip archive (no end of central directory){starts_like(data)}")
    on_disk, entries, size, start, comment = _END_RECORD.unpack_from(data, at)[3:]
    if at >= 20 and data[at - 20:at - 16] == b"PK\x06\x07":
        raise BadValue("npz", "a bob export is no zip64 archive")
    if on_disk != entries:  # (one archive, one disk: other readers count either)
        raise BadValue("npz.central_directory", "the end record counts the directory's entries once, as they are",
                       expected=entries, actual=on_disk, offset=at + 8)
    if entries > MAX_ZIP_ENTRIES or size > MAX_ZIP_DIRECTORY:
        raise Truncated("npz.central_directory", f"a bob export has 4 members in at most {MAX_ZIP_DIRECTORY} bytes",
                        actual=f"{entries} entries, {size} bytes")
    end = at + _END_RECORD.size + comment
    if end != len(data):  # (zipfile reads past bytes after it)
        raise Truncated("npz", "the zip's end of central directory record (and its comment) ends the file",
                        expected=end, actual=len(data), offset=min(end, len(data)))
    return (start if start == at - size else -1), entries  # (zipfile reads it at at - size; -1: where no member ends)


def _members(z: zipfile.ZipFile) -> dict[str, zipfile.ZipInfo]:
    """Every member by name, from the central directory alone."""
    found: dict[str, zipfile.ZipInfo] = {}
    for info in z.infolist():
        name = info.orig_filename.removesuffix(".npy")[:80]  # (as stored: filename is cut at a NUL, or Unicode Path's)
        if name not in _MEMBERS or info.orig_filename != f"{name}.npy":
            raise BadValue(name or "npz.members", "a bob export holds the members P.npy, M.npy, V.npy and bob.npy only",
                           actual=bounded(info.orig_filename))
        if _UNICODE_PATH in dict(_blocks(info.extra)):
            raise BadValue(name, _SECOND_NAME)
        if name in found:
            raise BadValue(name, f"the member {name}.npy appears twice")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED) or info.flag_bits & 1:
            raise BadValue(name, "a member is stored or deflated, not encrypted",
                           actual=f"compression {info.compress_type}, flags {info.flag_bits}")
        found[name] = info
    if METADATA_MEMBER not in found:
        raise NotABobFile("metadata.format", "this .npz file is not a bob checkpoint export",
                          expected="the member bob.npy", actual="no bob metadata")
    for name in PLANE_NAMES:
        if name not in found:
            raise BadValue(name, f"a bob export holds the arrays P, M and V; {name} is missing")
    return found


def _read(f: Any, n: int, name: str) -> bytes:
    got = f.read(n)
    if len(got) != n:
        raise Truncated(name, "the member ends before its .npy header says", expected=n, actual=len(got))
    return got


def _npy(f: Any, name: str, declared: int) -> bytes:
    """A member's data, after its ``.npy`` header is checked (see the module) against it and against ``declared``,
    the member's size in the directory (a zip bomb: only its header unpacked)."""
    magic = _read(f, len(_NPY_MAGIC) + 2, name)
    if magic[:len(_NPY_MAGIC)] != _NPY_MAGIC or magic[len(_NPY_MAGIC):] not in (b"\1\0", b"\2\0"):
        raise BadValue(name, "an .npy array of version 1.0 or 2.0", actual=magic)
    width = 2 if magic[-2] == 1 else 4
    length = int.from_bytes(_read(f, width, name), "little")
    if length > MAX_NPY_HEADER:
        raise Truncated(name, "the .npy header is longer than a bob export's", expected=MAX_NPY_HEADER, actual=length)
    try:
        header = ast.literal_eval(_read(f, length, name).decode("latin-1"))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        header = None
    if not (isinstance(header, dict) and set(header) == {"descr", "fortran_order", "shape"}):
        raise BadValue(name, "an .npy header is a dict of descr, fortran_order and shape")
    descr, shape = header["descr"], header["shape"]
    if name == METADATA_MEMBER:
        chars = _UNICODE_DESCR.fullmatch(descr) if isinstance(descr, str) else None
        want, size = "one unicode string ('<UN', shape ())", 4 * int(chars.group(1)) if chars else 0
        ok = 0 < size <= 4 * MAX_METADATA_CHARS and shape == ()  # (a literal equal to () is the tuple)
    else:
        want, size = f"float32 ({PLANE_DTYPE!r}), shape {_TABLE}, C order (np.ascontiguousarray(p, '<f4'))", CHUNK_BYTES
        ok = descr == PLANE_DTYPE and shape == _TABLE and all(type(n) is int for n in shape)  # (256.0 == 256)
    if not ok or header["fortran_order"] is not False:
        raise BadValue(name, "the array bob exports", expected=want, actual=bounded(
            f"descr {descr!r}, shape {shape!r}, fortran_order {header['fortran_order']!r}", 120))
    if (total := len(magic) + width + length + size) != declared:
        raise Truncated(name, f"the member {'holds more than' if declared > total else 'ends before'} its .npy header "
                        "says", expected=total, actual=declared)
    return _read(f, size, name)


def _layout(data: bytes, infos: list[zipfile.ZipInfo], directory: int) -> None:
    """The members one after another from offset 0, then the directory, no byte elsewhere (formats/DECISIONS.md D28)."""
    at = 0
    for info in sorted(infos, key=lambda i: i.header_offset):
        if info.header_offset != at:
            break
        local = _LOCAL_HEADER.unpack_from(data, at)
        begin = at + _LOCAL_HEADER.size + sum(local[-2:])
        if _UNICODE_PATH in dict(blocks := _blocks(data[begin - local[-1]:begin])):
            raise BadValue(info.filename[:-4], _SECOND_NAME, offset=at)
        if not _local_says(local, blocks, info):
            raise BadValue(info.filename[:-4], "the member's local header says what the directory says (its flags, "
                           "compression, CRC-32 and sizes): other readers read the one, zipfile the other", offset=at)
        at = begin + info.compress_size
        if _unread(data[begin:at], info):  # bytes in the member's span that zipfile never reads
            break
        if info.flag_bits & 8:  # a signature or none, the CRC, both sizes in 8 or 4 bytes (the longest form first)
            forms = (sign + struct.pack(f"<L2{w}", info.CRC, info.compress_size, info.file_size)
                     for w in "QL" for sign in (b"PK\x07\x08", b""))
            at += next((len(form) for form in forms if data.startswith(form, at)), 0)
    else:
        if at == directory:
            return
    raise Truncated("npz", "bytes that are none of the zip's members nor its directory start here", offset=at)


def _blocks(extra: bytes) -> list[tuple[int, bytes]]:
    """An extra field's (tag, data) blocks, one past the field's end as tag -1 (readers part ways, Info-ZIP
    refuses it)."""
    blocks = []
    while len(extra) >= 4:
        tag, size = struct.unpack_from("<2H", extra)
        blocks.append((tag if size <= len(extra) - 4 else -1, extra[4:4 + size]))
        extra = extra[4 + size:]
    return blocks


def _local_says(local: tuple, blocks: list[tuple[int, bytes]], info: zipfile.ZipInfo) -> bool:
    """Whether a member's local header (its fields, its extra field's ``blocks``) says what the directory says (D28)."""
    zip64 = [data for tag, data in blocks if tag == 1]
    crc, compressed, size = local[6:9]
    if len(zip64) > 1 or -1 in dict(blocks):  # (a block past the field; two zip64 blocks)
        return False
    if 0xFFFFFFFF in (compressed, size):  # both masked, one block: the size, then the compressed size
        if compressed != size or not zip64 or len(zip64[0]) < 16:
            return False
        size, compressed = struct.unpack_from("<2Q", zip64[0])
    return (local[2], local[3]) == (info.flag_bits, info.compress_type) and all(
        mine == whole or info.flag_bits & 8 and mine == 0
        for mine, whole in ((crc, info.CRC), (compressed, info.compress_size), (size, info.file_size)))


def _unread(raw: bytes, info: zipfile.ZipInfo) -> bool:
    """Whether the member's compressed bytes ``raw`` hold more than its data: a stored member's past its size, a
    deflated member's after the end of its stream."""
    if info.compress_type == zipfile.ZIP_STORED:
        return len(raw) != info.file_size
    inflate = zlib.decompressobj(-zlib.MAX_WBITS)
    inflate.decompress(raw, info.file_size + 1)
    return not inflate.eof or bool(inflate.unused_data)


def npz_parts(data: bytes) -> tuple[dict[str, str], dict[str, bytes]]:
    """(the metadata, each plane's little-endian float32 bytes) of an ``.npz`` bob export, bounded (see the module)."""
    (directory, entries), name = _zip_directory(data), None  # (name: the member read, whose damage zlib or CRC finds)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            members, raw = _members(z), {}
            if len(z.infolist()) != entries:  # (zipfile reads the directory to its end: Info-ZIP trusts the count)
                raise BadValue("npz.central_directory", "the end record counts the directory's entries",
                               expected=len(z.infolist()), actual=entries)
            overlapped = None
            for name, info in members.items():
                try:
                    with z.open(info) as f:
                        raw[name] = _npy(f, name, info.file_size)
                except zipfile.BadZipFile as exc:  # a newer zipfile's overlap check at open (gh-109858): the layout
                    if not str(exc).startswith("Overlapped entries"):  # says where, as on an older one (3.11.7)
                        raise
                    overlapped = exc
                    break
            name = None  # (every member read: what follows is no member's damage)
            _layout(data, list(members.values()), directory)
            if overlapped is not None:
                raise overlapped
    except FormatError:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, RuntimeError, NotImplementedError, struct.error,
            OverflowError, ValueError, OSError) as exc:  # zipfile's refusals (a negative seek: ValueError)
        if name is not None and (isinstance(exc, zlib.error) or str(exc).startswith("Bad CRC-32")):  # (zipfile's
            raise IntegrityError(name, "the member's bytes are damaged (their deflate stream or CRC-32 does not "
                                 "hold)") from None  # words at the end of the member ``name``, or zlib's within it)
        raise NotABobFile("npz", f"not an .npz archive bob reads ({type(exc).__name__}: {exc})"[:200]) from None
    try:
        text = raw.pop(METADATA_MEMBER).decode("utf-32-le").rstrip("\0")
    except UnicodeDecodeError:
        raise BadValue(METADATA_MEMBER, "the metadata is a unicode string (UTF-32)") from None
    return _metadata(parse_json(text, "metadata", 1)), raw


# -- safetensors


def _tensor(name: str, entry: Any) -> tuple[int, int]:
    if not (isinstance(entry, dict) and set(entry) == {"dtype", "shape", "data_offsets"}):
        raise BadValue(name, "a tensor is a dict of dtype, shape and data_offsets")
    if entry["dtype"] != "F32":
        raise BadValue(name, "a plane is float32", expected="F32", actual=bounded(f"dtype {entry['dtype']!r}"))
    shape = entry["shape"]
    if not (isinstance(shape, list) and all(type(n) is int for n in shape) and tuple(shape) == _TABLE):
        raise BadValue(name, f"a plane is exported as its {VOCABULARY} x {VOCABULARY} table",
                       expected=f"shape {list(_TABLE)}", actual=bounded(f"shape {shape!r}"))
    offsets = entry["data_offsets"]
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(type(n) is int for n in offsets)
            and 0 <= offsets[0] and offsets[1] - offsets[0] == CHUNK_BYTES):
        raise BadValue(name, "data_offsets are [begin, end] of the plane's bytes, inside the data",
                       actual=bounded(repr(offsets)))
    return offsets[0], offsets[1]


def safetensors_parts(data: bytes) -> tuple[dict[str, str], dict[str, memoryview]]:
    """(the metadata, each plane's little-endian float32 bytes) of a safetensors bob export, bounded."""
    if len(data) < 8:  # (no magic tells a file cut short from none: as any file not read as safetensors)
        raise NotABobFile("safetensors", "not a safetensors file bob reads (shorter than its 8-byte header length)",
                          expected="at least 8 bytes", actual=len(data))
    length = int.from_bytes(data[:8], "little")
    if length > min(MAX_METADATA_CHARS, len(data) - 8):
        if length <= MAX_METADATA_CHARS and data[8:9] in (b"", b"{"):
            raise Truncated("safetensors.header", "the file ends inside the header", expected=8 + length,
                            actual=len(data), offset=8)
        raise NotABobFile("safetensors", "not a safetensors file bob reads (its header length: "
                          f"at most {MAX_METADATA_CHARS} bytes, inside the file){starts_like(data)}", actual=length)
    try:
        text = data[8:8 + length].decode("utf-8")
    except UnicodeDecodeError:
        raise NotABobFile("safetensors", "not a safetensors file (its header is not UTF-8)") from None
    header = parse_json(text, "safetensors.header", 3, lambda path: ".".join(  # (a plane's key, or the metadata's)
        ["metadata" if path[0] == "__metadata__" else path[0], *path[1:]]))
    if not isinstance(header, dict):
        raise NotABobFile("safetensors", "not a safetensors file (its header is not a JSON object)")
    if "__metadata__" not in header:
        raise NotABobFile("metadata.format", "this safetensors file is not a bob checkpoint export",
                          expected="bob-checkpoint", actual="no bob metadata")
    meta = _metadata(header.pop("__metadata__"))
    for name in header:
        if name not in PLANE_NAMES:
            raise BadValue(name[:80] or "safetensors.header", "a bob export holds only the arrays P, M and V",
                           expected="P, M, V")
    for name in PLANE_NAMES:
        if name not in header:
            raise BadValue(name, f"a bob export holds the arrays P, M and V; {name} is missing")
    body = memoryview(data)[8 + length:]
    spans = {name: _tensor(name, header[name]) for name in PLANE_NAMES}
    end = 0
    for name, (begin, stop) in sorted(spans.items(), key=lambda item: item[1]):
        if begin != end:
            raise BadValue(name, "the tensors' bytes follow one another, from the data's start", expected=end,
                           actual=begin)
        end = stop
    for name, (begin, stop) in spans.items():
        if begin <= len(body) < stop:  # (the tensor the file ends inside)
            raise Truncated(name, "the file ends inside this tensor's bytes", expected=8 + length + end,
                            actual=len(data), offset=8 + length + begin)
    if end != len(body):
        raise Truncated("safetensors", "the file holds bytes past its tensors'", expected=end, actual=len(body),
                        offset=8 + length + end)
    return meta, {name: body[begin:stop] for name, (begin, stop) in spans.items()}
