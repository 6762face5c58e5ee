"""Other tools' files as hostile input: every refusal of the bounded reader
(``bob.interop_archive``), one test each, from bytes made by hand — the
``.npy`` members written byte by byte, the zip around them by ``zipfile``
(edited where a zip tool would not write it), safetensors written as its
8-byte length and JSON."""

from __future__ import annotations

import io
import json
import shutil
import struct
import subprocess
import sys
import zipfile
import zlib

import numpy as np
import pytest

import bob
from bob import interop, interop_archive
from bob.formats.constants import CHUNK_BYTES

CORPUS = b"abracadabra"
U64_MAX = (1 << 64) - 1
TABLE = (256, 256)


@pytest.fixture(scope="module")
def trained() -> bob.Checkpoint:
    return bob.invoke(bob.build_input(CORPUS, [b"abra", b"cad", b""])).checkpoint


def npy(descr: object, shape: object, data: bytes, *, fortran: object = False, header: str | None = None,
        version: int = 1) -> bytes:
    """An .npy file by hand: magic, version, header length, the header dict padded with spaces, the data."""
    text = header if header is not None else f"{{'descr': {descr!r}, 'fortran_order': {fortran!r}, 'shape': {shape!r}, }}"
    text += " " * (-(12 + len(text) + 1) % 64) + "\n"
    size = struct.pack("<H" if version == 1 else "<I", len(text))
    return b"\x93NUMPY" + bytes([version, 0]) + size + text.encode("latin-1") + data


def meta_npy(meta: object) -> bytes:
    text = json.dumps(meta) if not isinstance(meta, str) else meta
    return npy(f"<U{len(text)}", (), text.encode("utf-32-le"))


def members(ck: bob.Checkpoint, meta: object = None) -> dict[str, bytes]:
    out = {"bob.npy": meta_npy(interop.metadata(ck) if meta is None else meta)}
    for name, plane in ck.planes.items():
        out[f"{name}.npy"] = npy("<f4", TABLE, plane.astype("<f4").tobytes())
    return out


def archive(entries, compression=zipfile.ZIP_STORED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=compression) as z:
        for name, data in (entries.items() if isinstance(entries, dict) else entries):
            z.writestr(name, data)
    return out.getvalue()


def with_meta(ck: bob.Checkpoint, **changes) -> dict:
    meta = interop.metadata(ck)
    meta.update(changes)
    return meta


def safetensors(tensors: dict, meta: object, *, header: bytes | None = None, tail: bytes = b"") -> bytes:
    """A safetensors file by hand: each tensor's entry and bytes in order, then the metadata."""
    entries: dict = {}
    body = b""
    for name, data in tensors.items():
        entries[name] = {"dtype": "F32", "shape": list(TABLE), "data_offsets": [len(body), len(body) + len(data)]}
        body += data
    if meta is not None:
        entries["__metadata__"] = meta
    text = header if header is not None else json.dumps(entries).encode()
    return struct.pack("<Q", len(text)) + text + body + tail


def planes(ck: bob.Checkpoint) -> dict[str, bytes]:
    return {name: p.astype("<f4").tobytes() for name, p in ck.planes.items()}


def refused(load, data: bytes, error: type, field: str) -> bob.FormatError:
    with pytest.raises(error) as info:
        load(data, bob.Checkpoint)
    assert info.value.field == field, info.value
    assert type(info.value) is error, info.value
    return info.value


def npz_refused(data: bytes, error: type, field: str) -> bob.FormatError:
    return refused(interop.from_npz_bytes, data, error, field)


def st_refused(data: bytes, error: type, field: str) -> bob.FormatError:
    return refused(interop.from_safetensors_bytes, data, error, field)


def test_the_hand_made_files_are_valid(trained) -> None:
    assert interop.from_npz_bytes(archive(members(trained)), bob.Checkpoint) == trained
    assert interop.from_npz_bytes(archive(members(trained), zipfile.ZIP_DEFLATED), bob.Checkpoint) == trained
    assert interop.from_safetensors_bytes(safetensors(planes(trained), interop.metadata(trained)),
                                          bob.Checkpoint) == trained


# --------------------------------------------------------------------------- #
# .npz: the zip, from its end record and its central directory
# --------------------------------------------------------------------------- #


def test_no_zip_is_not_an_npz() -> None:
    npz_refused(bytes(104), bob.NotABobFile, "npz")
    npz_refused(b"PK\x03", bob.NotABobFile, "npz")


@pytest.mark.parametrize("cut", [4, 104, 262_000, -40, -22, -21, -18, -1])
def test_an_npz_cut_short_is_truncated(trained, cut) -> None:
    """A zip's first member, with no end of central directory record after it: an archive cut short, named as such
    with the file's length (and the length its end record needs, when the file ends inside it)."""
    data = interop.npz_bytes(trained)
    err = npz_refused(data[:cut], bob.Truncated, "npz")
    assert err.actual == len(data[:cut])
    assert err.expected == (len(data) if -18 <= cut < 0 else f"more than {len(data[:cut])}")  # (its signature: 4 bytes)


def test_a_zip64_end_record_is_refused(trained) -> None:
    data = archive(members(trained))
    end = data.rindex(b"PK\x05\x06")
    locator = b"PK\x06\x07" + bytes(16)
    npz_refused(data[:end] + locator + data[end:], bob.BadValue, "npz")


@pytest.mark.parametrize("on_disk, total", [(0, 0), (3, 3), (5, 5), (4, 3), (3, 4)])
def test_an_end_record_that_miscounts_the_directory_is_refused(trained, on_disk: int, total: int) -> None:
    """zipfile reads the directory to its end whatever the record counts; Info-ZIP trusts the count (unzip -t:
    "expected central file header signature not found"): bob and zipfile accepted what other readers read otherwise."""
    from bob.fuzz import oracle_interop

    data = bytearray(archive(members(trained)))
    struct.pack_into("<2H", data, data.rindex(b"PK\x05\x06") + 8, on_disk, total)
    npz_refused(bytes(data), bob.BadValue, "npz.central_directory")
    assert oracle_interop.check_npz(bytes(data)) is not None


@pytest.mark.parametrize("field, at, value", [("method", 8, 8), ("crc", 14, 0), ("size", 22, 1), ("flags", 6, 8)])
def test_a_local_header_that_says_another_member_than_the_directory_is_refused(trained, field: str, at: int,
                                                                              value: int) -> None:
    """A member's local header said deflated while the directory said stored (unzip -t: bad CRC): accepted. The
    first member here is bob.npy."""
    from bob.fuzz import oracle_interop

    data = bytearray(archive(members(trained)))
    (struct.pack_into("<H", data, at, value) if at < 14 else struct.pack_into("<L", data, at, value))
    assert npz_refused(bytes(data), bob.BadValue, "bob").offset == 0
    assert oracle_interop.check_npz(bytes(data)) is not None


@pytest.mark.parametrize("change", ["no zip64 field", "zip64 sizes", "block past the field", "one size masked"])
def test_a_local_header_s_zip64_sizes_say_what_the_directory_says(trained, change: str) -> None:
    """A local size of 0xFFFFFFFF was taken on trust: with no zip64 extra field behind it, or one holding other sizes
    (np.savez writes 0xFFFFFFFF and the sizes there), other readers read other bytes (unzip -t: bad CRC)."""
    from bob.fuzz import oracle_interop

    out = io.BytesIO()
    np.savez(out, **{name[:-4]: np.load(io.BytesIO(data)) for name, data in members(trained).items()})
    data = bytearray(out.getvalue())
    assert interop.from_npz_bytes(bytes(data), bob.Checkpoint) == trained  # (as np.savez wrote it: read)
    at = zipfile.ZipFile(io.BytesIO(bytes(data))).infolist()[0].header_offset
    name, extra = struct.unpack_from("<2H", data, at + 26)
    assert struct.unpack_from("<2L", data, at + 18) == (0xFFFFFFFF, 0xFFFFFFFF) and extra >= 20
    if change == "no zip64 field":
        struct.pack_into("<H", data, at + 30 + name, 0x7075)  # (another block's tag: no zip64 field)
    elif change == "zip64 sizes":
        struct.pack_into("<2Q", data, at + 30 + name + 4, 16, 16)
    elif change == "block past the field":  # (Info-ZIP: "EF block length exceeds remaining EF data")
        struct.pack_into("<H", data, at + 30 + name + 2, 17)
    else:  # the compressed size masked alone: Info-ZIP reads it from the block's first slot, bob from its second
        size = struct.unpack_from("<Q", data, at + 30 + name + 4)[0]
        struct.pack_into("<L", data, at + 22, size)
        struct.pack_into("<Q", data, at + 30 + name + 4, size - 1000)
    npz_refused(bytes(data), bob.BadValue, zipfile.ZipFile(io.BytesIO(bytes(data))).infolist()[0].filename[:-4])
    assert oracle_interop.check_npz(bytes(data)) is not None


def test_a_local_header_with_two_zip64_fields_is_refused(trained) -> None:
    """The first of two zip64 blocks is Info-ZIP's (a wrong one here: bad CRC), the last was bob's and the oracle's."""
    from bob.fuzz import oracle_interop

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:  # zipfile adds its own zip64 block after the extra field given
        for name, data in members(trained).items():
            info = zipfile.ZipInfo(name)
            info.extra = struct.pack("<2H2Q", 1, 16, len(data) + 1, len(data) + 1) if name == "P.npy" else b""
            with z.open(info, "w", force_zip64=True) as f:
                f.write(data)
    npz_refused(out.getvalue(), bob.BadValue, "P")
    assert oracle_interop.check_npz(out.getvalue()) is not None


def _unicode_path(stored: str, shown: str) -> bytes:
    """Info-ZIP's Unicode Path block (0x7075): version 1, the CRC-32 of the name stored, the name to show instead."""
    body = struct.pack("<BL", 1, zlib.crc32(stored.encode())) + shown.encode()
    return struct.pack("<2H", 0x7075, len(body)) + body


def test_a_member_with_a_second_name_is_refused(trained) -> None:
    """P.npy and M.npy each carrying a Unicode Path block naming the other: Python 3.11's zipfile ignores the block,
    3.12's (and unzip) read it, so the same bytes imported as two checkpoints (P and M swapped), on the Python versions
    bob supports. Refused whether the block is in the directory or only in the local header."""
    from bob.fuzz import oracle_interop

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, data in members(trained).items():
            info = zipfile.ZipInfo(name)
            info.extra = {"P.npy": _unicode_path("P.npy", "M.npy"), "M.npy": _unicode_path("M.npy", "P.npy")}.get(
                name, b"")
            z.writestr(info, data)
    error = npz_refused(out.getvalue(), bob.BadValue, "P")
    assert "Unicode Path" in str(error) and oracle_interop.check_npz(out.getvalue()) is not None
    local_only = bytearray(out.getvalue())  # the directory's block made another tag: the local header's still there
    for stored, shown in (("P.npy", "M.npy"), ("M.npy", "P.npy")):
        at = local_only.rfind(_unicode_path(stored, shown))
        local_only[at:at + 2] = struct.pack("<H", 0x7076)
    error = npz_refused(bytes(local_only), bob.BadValue, "P")
    where = zipfile.ZipFile(io.BytesIO(bytes(local_only))).getinfo("P.npy").header_offset  # (its local header's)
    assert "Unicode Path" in str(error) and error.offset == where and oracle_interop.check_npz(bytes(local_only))


def test_a_member_name_with_a_nul_is_refused_as_stored(trained) -> None:
    """zipfile cuts a name at its first NUL: P.npy\\0hidden was read as P.npy (readers that keep the bytes see no P)."""
    from bob.fuzz import oracle_interop

    data = archive({("P.npyXhidden" if k == "P.npy" else k): v for k, v in members(trained).items()})
    data = data.replace(b"P.npyXhidden", b"P.npy\0hidden")
    error = npz_refused(data, bob.BadValue, "P.npy\\x00hidden")  # (escaped, as every field is)
    assert "(got P.npy\\x00hidden)" in str(error) and oracle_interop.check_npz(data) is not None


def test_too_many_entries_are_refused_from_the_end_record(trained) -> None:
    many = [(f"x{i}.npy", b"") for i in range(interop_archive.MAX_ZIP_ENTRIES + 1)]
    npz_refused(archive(many), bob.Truncated, "npz.central_directory")


def test_a_central_directory_too_large_is_refused_before_it_is_parsed(trained, monkeypatch) -> None:
    data = archive([("bob.npy" + "x" * interop_archive.MAX_ZIP_DIRECTORY, b"")])
    monkeypatch.setattr(zipfile, "ZipFile", None)  # never reached
    npz_refused(data, bob.Truncated, "npz.central_directory")


def test_an_unknown_member_is_refused_by_name(trained) -> None:
    npz_refused(archive({**members(trained), "README.txt": b"hi"}), bob.BadValue, "README.txt")


def test_a_duplicate_member_is_refused_by_name(trained) -> None:
    entries = list(members(trained).items())
    with pytest.warns(UserWarning, match="Duplicate name"):
        data = archive(entries + [("P.npy", npy("<f4", TABLE, bytes(256 * 256 * 4)))])
    npz_refused(data, bob.BadValue, "P")


def test_another_compression_is_refused_by_name(trained) -> None:
    npz_refused(archive(members(trained), zipfile.ZIP_BZIP2), bob.BadValue, "bob")


def test_a_member_declaring_more_than_a_plane_is_refused_before_its_data_is_unpacked(trained, monkeypatch) -> None:
    """Refused by its size in the directory once its .npy header is read: that header alone is unpacked (a float64
    plane was refused by its size, before its header, as no array of the wrong type)."""
    bomb = npy("<f4", TABLE, bytes(64 << 20))  # 64 MiB of zeros: about 64 KiB deflated
    data = archive({**members(trained), "V.npy": bomb}, zipfile.ZIP_DEFLATED)
    assert len(data) < 1 << 20
    unpacked, read = [], zipfile.ZipExtFile.read
    monkeypatch.setattr(zipfile.ZipExtFile, "read", lambda f, n=-1: unpacked.append((f.name, got := read(f, n))) or got)
    err = npz_refused(data, bob.Truncated, "V")
    assert err.actual == len(bomb) and err.expected == len(bomb) - (64 << 20) + CHUNK_BYTES
    assert 0 < sum(len(got) for name, got in unpacked if name == "V.npy") <= len(bomb) - (64 << 20)  # its header
    assert "the member holds more than its .npy header says" in str(err)


def test_a_missing_metadata_member_is_not_a_bob_export(trained) -> None:
    entries = members(trained)
    del entries["bob.npy"]
    npz_refused(archive(entries), bob.NotABobFile, "metadata.format")


def test_a_corrupt_member_is_refused(trained) -> None:
    data = bytearray(archive(members(trained)))
    data[data.index(b"\x93NUMPY", 100) + 200] ^= 1  # a byte of a plane: the CRC no longer holds
    npz_refused(bytes(data), bob.IntegrityError, "P")  # the member named, as zipfile's words do not
    deflated = archive(members(trained), zipfile.ZIP_DEFLATED)  # (np.savez_compressed's: zlib finds most damage)
    start = deflated.index(b"P.npy") + 5
    for at in (start + k for k in (0, 36, 72, 1434, 4026, 15300)):  # (zlib's errors before: NotABobFile, "npz")
        npz_refused(deflated[:at] + bytes([deflated[at] ^ 0x55]) + deflated[at + 1:], bob.IntegrityError, "P")


def test_every_byte_of_the_directory_damaged_is_a_format_error(trained) -> None:
    """A central directory zipfile cannot open raised UnboundLocalError (the member being read, unset yet)."""
    data, refused = interop.npz_bytes(trained), 0
    for at in range(data.index(b"PK\x01\x02"), len(data)):
        try:  # (a byte zipfile never reads, a time or an attribute: the same checkpoint)
            assert interop.from_npz_bytes(data[:at] + bytes([data[at] ^ 0x10]) + data[at + 1:], bob.Checkpoint) == trained
        except bob.FormatError:
            refused += 1
    assert refused > 100


class Pipe(io.RawIOBase):
    """A stream zipfile cannot seek: it writes each member's sizes after its data, in a data descriptor."""

    def __init__(self) -> None:
        self.data = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:
        self.data += b
        return len(b)


def piped(entries: dict, **open_options) -> bytes:
    with zipfile.ZipFile(pipe := Pipe(), "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, data in entries.items():
            with z.open(name, "w", **open_options) as f:
                f.write(data)
    return bytes(pipe.data)


def test_numpy_s_and_zip_tools_archives_are_read(trained, tmp_path) -> None:
    """np.savez and savez_compressed (zip64 extra fields), a writer that cannot seek (data descriptors with 4- and
    8-byte sizes), a comment, and Info-ZIP's zip (extra fields; data descriptors when it writes to a pipe)."""
    from bob.fuzz import oracle_interop

    arrays = {name: np.load(io.BytesIO(member)) for name, member in members(trained).items()}
    made = [piped(members(trained)), piped(members(trained), force_zip64=True)]
    for save in (np.savez, np.savez_compressed):
        save(out := io.BytesIO(), **{name[:-4]: array for name, array in arrays.items()})
        made.append(out.getvalue())
    with zipfile.ZipFile(out := io.BytesIO(), "w") as z:
        z.comment = b"a comment"
        for name, member in members(trained).items():
            z.writestr(name, member)
    made.append(out.getvalue())
    if shutil.which("zip"):
        for name, member in members(trained).items():
            (tmp_path / name).write_bytes(member)
        for how in (["zip", "-q", "out.zip"], ["sh", "-c", "zip -q -fd - *.npy | cat > out.zip"]):
            subprocess.run(how + (list(members(trained)) if how[0] == "zip" else []), cwd=tmp_path, check=True)
            made.append((tmp_path / "out.zip").read_bytes())
            (tmp_path / "out.zip").unlink()
    for data in made:
        assert interop.from_npz_bytes(data, bob.Checkpoint) == trained
        assert oracle_interop.check_npz(data) is None


def inserted(data: bytes, at: int, junk: bytes) -> bytes:
    """``junk`` put at offset ``at`` of a zip without a comment, the offsets its directory and end record give moved
    past it: zipfile reads the members as before."""
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        infos = z.infolist()
    out = bytearray(data[:at] + junk + data[at:])
    (entry,) = struct.unpack_from("<L", out, len(out) - 6)
    entry += len(junk) if entry >= at else 0
    struct.pack_into("<L", out, len(out) - 6, entry)
    for info in infos:
        struct.pack_into("<L", out, entry + 42, info.header_offset + (len(junk) if info.header_offset >= at else 0))
        entry += 46 + len(info.filename) + len(info.extra) + len(info.comment)
    return bytes(out)


def test_bytes_outside_the_archive_s_parts_are_refused_naming_their_offset(trained) -> None:
    """A bob export is its members from offset 0, one after another, then the directory and the end record; zipfile
    skips other bytes (before, between, after), and a file with any is no export."""
    from bob.fuzz import oracle_interop

    data = interop.npz_bytes(trained)
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        second, directory = z.infolist()[1].header_offset, z.start_dir
    assert interop.from_npz_bytes(inserted(data, 0, b""), bob.Checkpoint) == trained
    descriptor = bytearray(piped(members(trained)))
    descriptor_at = descriptor.index(b"PK\x07\x08")
    descriptor[descriptor_at + 4] ^= 1  # its CRC: no data descriptor of the member, but 16 bytes more
    for bad, offset in [(data + b"\0", len(data)), (data + bytes(60_000), len(data)),
                        (data + bytes(100_000), len(data)), (data[:-2] + b"\0\1", len(data)),
                        (trained.to_bytes() + data, 0), (inserted(data, 0, b"junk"), 0),
                        (inserted(data, second, b"junk"), second), (inserted(data, directory, b"x"), directory),
                        (bytes(descriptor), descriptor_at)]:
        err = npz_refused(bad, bob.Truncated, "npz")
        assert err.offset == offset, err
        assert oracle_interop.check_npz(bad) is not None


LOCAL, CENTRAL = struct.Struct("<4s5H3L2H"), struct.Struct("<4s6H3L5HLL")  # (the zip's headers, no signature check)


def by_hand(entries: dict, *, method: int = 0, tails: dict | None = None, shift: int = 0) -> tuple[bytes, bytes, int]:
    """(the members, their directory, its offset) of a zip made by hand: each member stored (``method`` 0) or
    deflated (8), ``tails[name]`` bytes after its data counted in its compressed size, the directory's member
    offsets ``shift`` bytes past where they are."""
    body = directory = b""
    for name, data in entries.items():
        deflate = zlib.compressobj(wbits=-15)
        raw = (data if method == 0 else deflate.compress(data) + deflate.flush()) + (tails or {}).get(name, b"")
        crc, n = zlib.crc32(data), name.encode()
        directory += CENTRAL.pack(b"PK\1\2", 20, 20, 0, method, 0, 0x21, crc, len(raw), len(data), len(n), 0, 0, 0, 0,
                                  0, len(body) + shift) + n
        body += LOCAL.pack(b"PK\3\4", 20, 0, method, 0, 0x21, crc, len(raw), len(data), len(n), 0) + n + raw
    return body, directory, len(body)


def end_record(count: int, size: int, start: int) -> bytes:
    return struct.pack("<4s4H2LH", b"PK\5\6", 0, 0, count, count, size, start, 0)


@pytest.mark.parametrize("method", [0, 8])
def test_bytes_in_a_member_s_span_past_its_data_are_refused(trained, method: int) -> None:
    """A member whose compressed size counts bytes after its data (a stored one's size, a deflated stream's end),
    which zipfile never reads: a place to hide bytes inside an export, accepted."""
    from bob.fuzz import oracle_interop

    entries = members(trained)
    body, directory, start = by_hand(entries, method=method)
    assert interop.from_npz_bytes(body + directory + end_record(4, len(directory), start), bob.Checkpoint) == trained
    body, directory, start = by_hand(entries, method=method, tails={"P.npy": b"HIDDEN PAYLOAD " * 20})
    bad = body + directory + end_record(4, len(directory), start)
    with zipfile.ZipFile(io.BytesIO(bad)) as z:
        assert z.read("P.npy") == entries["P.npy"]  # (zipfile reads it as if the bytes were not there)
        offsets = [i.header_offset for i in z.infolist()]
        after_p = offsets[z.namelist().index("P.npy") + 1]  # (the refusal names where P's span ends)
    assert npz_refused(bad, bob.Truncated, "npz").offset == after_p
    assert oracle_interop.check_npz(bad) is not None


def test_a_directory_the_end_record_places_inside_a_member_is_refused(trained) -> None:
    """zipfile reads the directory at the end record's offset minus its size: a size too large puts it inside the
    last member's data, where a directory entry can hide, the other entries' offsets moved to match."""
    from bob.fuzz import oracle_interop

    entries, hidden = members(trained), CENTRAL.size + len("P.npy")
    entries = {name: entries[name] for name in ("P.npy", "M.npy", "bob.npy", "V.npy")}
    p_entry = by_hand(entries, shift=hidden)[1][:hidden]
    entries["V.npy"] = entries["V.npy"][:-hidden] + p_entry  # P's directory entry as V's last bytes
    body, directory, start = by_hand(entries, shift=hidden)
    rest = directory[hidden:]
    bad = body + rest + end_record(4, len(rest) + hidden, start)
    with zipfile.ZipFile(io.BytesIO(bad)) as z:
        assert sorted(z.namelist()) == sorted(entries) and z.read("M.npy") == entries["M.npy"]
    assert npz_refused(bad, bob.Truncated, "npz").offset == start
    assert oracle_interop.check_npz(bad) is not None


def test_a_member_a_newer_zipfile_refuses_as_overlapped_is_refused_where_the_layout_says(trained,
                                                                                          monkeypatch) -> None:
    """zipfile from 3.11.8 and 3.12.2 on (gh-109858) refuses an overlapped member at its open, in its own words:
    the hidden directory entry above was NotABobFile ("Overlapped entries ... (possible zip bomb)") there, and
    Truncated at its offset on 3.11.7. The layout, checked then, says where on either."""
    real = zipfile.ZipFile.open

    def newer(self, name, *args, **kwargs):
        if getattr(name, "filename", name) == "V.npy":
            raise zipfile.BadZipFile("Overlapped entries: 'V.npy' (possible zip bomb)")
        return real(self, name, *args, **kwargs)

    entries, hidden = members(trained), CENTRAL.size + len("P.npy")
    entries = {name: entries[name] for name in ("P.npy", "M.npy", "bob.npy", "V.npy")}
    entries["V.npy"] = entries["V.npy"][:-hidden] + by_hand(entries, shift=hidden)[1][:hidden]
    body, directory, start = by_hand(entries, shift=hidden)
    bad = body + directory[hidden:] + end_record(4, len(directory), start)
    good = archive(members(trained))  # (one whose layout holds: zipfile's words, as before)
    monkeypatch.setattr(zipfile.ZipFile, "open", newer)
    assert npz_refused(bad, bob.Truncated, "npz").offset == start
    with pytest.raises(bob.NotABobFile, match="Overlapped entries"):
        interop.from_npz_bytes(good, bob.Checkpoint)


# --------------------------------------------------------------------------- #
# .npz: each member's .npy header, before its data
# --------------------------------------------------------------------------- #


def _member(trained, name: str, data: bytes) -> bytes:
    return archive({**members(trained), name: data})


def test_raw_bytes_where_an_array_is_expected(trained) -> None:
    npz_refused(_member(trained, "P.npy", b"raw bytes, no .npy"), bob.BadValue, "P")


def test_an_npy_of_version_3_is_refused(trained) -> None:
    npz_refused(_member(trained, "M.npy", npy("<f4", TABLE, bytes(4), version=3)), bob.BadValue, "M")


def test_an_npy_header_longer_than_the_bound(trained) -> None:
    long = "{'descr': '<f4', 'fortran_order': False, 'shape': (256, 256)}" + " " * interop_archive.MAX_NPY_HEADER
    npz_refused(_member(trained, "P.npy", npy(None, None, b"", header=long)), bob.Truncated, "P")


@pytest.mark.parametrize("header", ["not a literal (", "[1, 2]", "{'descr': '<f4', 'shape': (256, 256)}",
                                    "{'descr': '<f4', 'fortran_order': False, 'shape': (256, 256), 'x': 1}",
                                    "{'descr': '<f4', 'fortran_order': False, 'shape': (" + "9" * 900 + ",)}"])
def test_an_npy_header_that_is_no_header_dict(trained, header) -> None:
    npz_refused(_member(trained, "P.npy", npy(None, None, b"", header=header)), bob.BadValue, "P")


@pytest.mark.parametrize(("descr", "shape", "fortran"), [(">f4", TABLE, False), ("f4", TABLE, False),
                                                        ("<f4", TABLE, True), ("<f4", TABLE, 0),
                                                        ("<f4", (256.0, 256), False), ("<f4", [256, 256], False)])
def test_an_npy_array_that_is_no_plane(trained, descr, shape, fortran) -> None:
    data = npy(descr, shape, bytes(256 * 256 * 4), fortran=fortran)
    refusal = npz_refused(_member(trained, "V.npy", data), bob.BadValue, "V")
    assert "np.ascontiguousarray(p, '<f4')" in str(refusal)  # (how a NumPy user writes one: it did not say)


def test_a_member_shorter_than_its_header_says(trained) -> None:
    npz_refused(_member(trained, "P.npy", npy("<f4", TABLE, bytes(100))), bob.Truncated, "P")


def test_a_member_longer_than_its_header_says(trained) -> None:
    npz_refused(_member(trained, "P.npy", npy("<f4", TABLE, bytes(256 * 256 * 4 + 4))), bob.Truncated, "P")


@pytest.mark.parametrize("member", [npy("<f4", (), bytes(4)), npy("<U99999", (), b""), npy("<U2", (1,), bytes(8)),
                                    npy("<U1", (), b"\xff\xff\xff\xff")])
def test_a_metadata_member_that_is_no_string(trained, member) -> None:
    npz_refused(_member(trained, "bob.npy", member), bob.BadValue, "bob")


# --------------------------------------------------------------------------- #
# The metadata: bounded depth and size, strings only, each key once, numbers in range
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize(("text", "field"), [
    ("[" * 4000 + "]" * 4000, "metadata"),  # nested deep: no RecursionError
    ('{"format": {"a": "b"}}', "metadata"),
    ('["bob-checkpoint"]', "metadata"),
    ('{"format": "bob-checkpoint", "step": 20}', "metadata.step"),
    ('{"format": "bob-checkpoint", "step": 2e1}', "metadata"),
    ('{"format": "bob-checkpoint", "step": NaN}', "metadata"),
    ('{"format": "bob-checkpoint", "step": ' + "9" * 5000 + "}", "metadata"),  # no int() of 5,000 digits
    ('{"format": "bob-checkpoint", "format": "bob-checkpoint"}', "metadata.format"),
    ('{"format": "bob-checkpoint"', "metadata"),
])
def test_metadata_that_is_no_flat_object_of_strings(trained, text, field) -> None:
    npz_refused(archive(members(trained, meta=text)), bob.BadValue, field)


@pytest.mark.parametrize(("key", "value"), [("step", "9" * 5000), ("step", "020"), ("step", "+20"),
                                            ("header_bytes", "9" * 5000), ("header_bytes", str(U64_MAX + 1))])
def test_a_number_out_of_range_is_refused_before_it_is_converted(trained, key, value) -> None:
    npz_refused(archive(members(trained, meta=with_meta(trained, **{key: value}))), bob.BadValue, f"metadata.{key}")


def test_an_unknown_metadata_key_is_refused_by_name(trained) -> None:
    npz_refused(archive(members(trained, meta=with_meta(trained, comment="hi"))), bob.BadValue, "metadata.comment")


def test_a_contract_string_in_another_spelling_is_refused(trained) -> None:
    meta = with_meta(trained, **{"contract.seed": bob.Contract().seed.hex().upper()})
    npz_refused(archive(members(trained, meta=meta)), bob.BadValue, "metadata.contract.seed")


# --------------------------------------------------------------------------- #
# safetensors: the header's length and JSON, each tensor, the data
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("head", [b"", b"\x05\0\0", struct.pack("<Q", 1 << 40) + b"{}",
                                  struct.pack("<Q", interop_archive.MAX_METADATA_CHARS + 1)
                                  + b" " * (interop_archive.MAX_METADATA_CHARS + 1),
                                  struct.pack("<Q", 100) + b"[1]"])  # (no header's start: no file bob reads)
def test_a_header_length_out_of_bounds(head) -> None:
    st_refused(head, bob.NotABobFile, "safetensors")


def test_a_file_shorter_than_the_header_length_shows_no_length(trained) -> None:
    err = st_refused(interop.safetensors_bytes(trained)[:7], bob.NotABobFile, "safetensors")
    assert (err.expected, err.actual) == ("at least 8 bytes", 7), err


def test_a_bob_checkpoint_given_to_an_import_is_named(trained) -> None:
    envelope = trained.to_bytes()
    for err in (st_refused(envelope, bob.NotABobFile, "safetensors"), npz_refused(envelope, bob.NotABobFile, "npz")):
        assert "this file starts like a bob checkpoint (bob-envelope)" in str(err), err


def test_a_safetensors_file_cut_short_is_truncated(trained) -> None:
    """Cut inside its header or inside a tensor's bytes: named with the length the header says and the file's."""
    data = interop.safetensors_bytes(trained)
    start = 8 + int.from_bytes(data[:8], "little")  # where the tensors' bytes start
    plane = 256 * 256 * 4
    for at, field, expected in [(8, "safetensors.header", start), (9, "safetensors.header", start),
                                (start - 1, "safetensors.header", start), (start, "P", len(data)),
                                (start + plane, "M", len(data)), (start + plane + 1, "M", len(data)),
                                (len(data) - 1, "V", len(data))]:
        err = st_refused(data[:at], bob.Truncated, field)
        assert (err.expected, err.actual) == (expected, at), err


@pytest.mark.parametrize("header", [b"\xff{}", b"[]", b'"P"'])
def test_a_header_that_is_no_utf8_json_object(trained, header) -> None:
    st_refused(safetensors(planes(trained), None, header=header), bob.NotABobFile, "safetensors")


@pytest.mark.parametrize(("header", "field"), [
    (b"{" + b'"a": [' * 2000 + b"]" * 2000 + b"}", "safetensors.header"),
    (b'{"P": 1, "P": 2}', "P"),  # a key twice: named by its keys' path, as the other refusals name a plane's
    (b'{"V": {"dtype": "F32", "dtype": "F32"}}', "V.dtype"),
    (b'{"P": {}, "__metadata__": {"step": "1", "step": "2"}}', "metadata.step"),
    (b'{"__metadata__": {}, "__metadata__": {}}', "metadata"),
    (b'{"P": {"data_offsets": [0, ' + b"9" * 5000 + b"]}}", "safetensors.header"),
    (b'{"P": {"shape": [256.0, 256]}}', "safetensors.header"),
])
def test_a_header_too_deep_with_a_key_twice_or_a_number_too_long(trained, header, field) -> None:
    st_refused(safetensors({}, None, header=header), bob.BadValue, field)


@pytest.mark.parametrize(("meta", "field"), [("bob", "metadata"), ({"step": 20}, "metadata.step")])
def test_metadata_that_is_no_object_of_strings(trained, meta, field) -> None:
    st_refused(safetensors(planes(trained), meta), bob.BadValue, field)


def test_a_metadata_number_out_of_range(trained) -> None:
    st_refused(safetensors(planes(trained), with_meta(trained, step="9" * 5000)), bob.BadValue, "metadata.step")


def _entries(trained, change) -> bytes:
    header = json.loads(safetensors(planes(trained), interop.metadata(trained))[8:].split(b"}}", 1)[0] + b"}}")
    change(header)
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + b"".join(planes(trained).values())


@pytest.mark.parametrize(("change", "field"), [
    (lambda h: h.update(P=[1]), "P"),
    (lambda h: h["M"].update(extra=1), "M"),
    (lambda h: h["V"].update(data_offsets=[0]), "V"),
    (lambda h: h["V"].update(data_offsets=[-4, 262140]), "V"),
    (lambda h: h["V"].update(data_offsets=[786432, 786432 + 262144]), "V"),  # past the data
    (lambda h: h["V"].update(data_offsets=[0, True]), "V"),
])
def test_a_tensor_entry_that_is_no_plane(trained, change, field) -> None:
    st_refused(_entries(trained, change), bob.BadValue, field)


def test_long_data_offsets_are_shown_cut_and_said_so(trained) -> None:
    """A hundred offsets were shown as their first 80 characters, ending "..., 20, 21, 2" as if whole."""
    err = st_refused(_entries(trained, lambda h: h["V"].update(data_offsets=list(range(100)))), bob.BadValue, "V")
    assert len(err.actual) == 80 and err.actual.endswith("...")


def test_tensors_that_overlap_or_leave_a_gap(trained) -> None:
    def overlap(h):
        h["M"]["data_offsets"] = h["P"]["data_offsets"]
    err = st_refused(_entries(trained, overlap), bob.BadValue, "M")
    assert "follow one another" in err.message


def test_bytes_past_the_tensors_are_refused_at_their_offset(trained) -> None:
    """The refusal named no offset, where the one of a file ending inside a tensor names it."""
    whole = safetensors(planes(trained), interop.metadata(trained))
    assert st_refused(whole + b"\0", bob.Truncated, "safetensors").offset == len(whole)


def test_every_refusal_reads_in_bounded_memory_and_the_limits_allow_a_valid_export(trained) -> None:
    """The limits are far from what a bob export needs."""
    text = json.dumps(interop.metadata(trained))
    assert len(text) * 8 < interop_archive.MAX_METADATA_CHARS
    data = interop.npz_bytes(trained)
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        assert len(z.infolist()) * 4 <= interop_archive.MAX_ZIP_ENTRIES
    assert np.array_equal(interop.from_npz_bytes(data, bob.Checkpoint).p, trained.p)


def test_a_member_without_a_name_is_refused_naming_the_members(trained) -> None:
    npz_refused(archive([*members(trained).items(), (zipfile.ZipInfo(""), b"x")]), bob.BadValue, "npz.members")


def test_a_tensor_without_a_name_is_refused_naming_the_header(trained) -> None:
    header = json.dumps({"": {}, "__metadata__": interop.metadata(trained)}).encode()
    st_refused(safetensors({}, None, header=header), bob.BadValue, "safetensors.header")


@pytest.mark.parametrize(("text", "depth"), [('{"a": "[[{"}', 1), ('[{"a\\"]": ["\\\\", "}"]}]', 3),
                                             ('"[', 0), ('{"a": "\\', 1), ("", 0)])
def test_the_depth_leaves_strings_out(text: str, depth: int) -> None:
    assert interop_archive._depth(text) == depth


def test_the_depth_of_a_text_of_escaped_quotes_is_one_pass() -> None:
    """``\\"`` a thousand times over: a string pattern that fails at each quote scans to the text's end
    from each one (16 KiB took 0.8 s; 1 MiB, by the square, about an hour); one that never fails passes over it once. The time
    limit only tells a pass from a hang."""
    script = "from bob.interop_archive import _depth; print(_depth('\\\\\"' * 500_000))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.stdout == "0\n", out.stderr
