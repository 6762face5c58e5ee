"""``bob-inspect verify``: a checkpoint fsck over many files, each judged on its own,
from hand-made bytes: a flipped bit in each chunk, two chunks swapped (every pair,
and a rotation), a file cut inside each chunk and inside its header, a chunk table
that no longer matches the header's digest."""

from __future__ import annotations

import hashlib
import itertools
from pathlib import Path

import numpy as np
import pytest

import bob
from bob.formats.constants import CHUNK_BYTES, PLANE_NAMES
from bob.formats.layout import CANONICAL, CANONICAL_HEADER_BYTES as HB
from bob.formats.contract import V1

RECORD = bob.build_input(b"abracadabra", [b"abra", b"cad", b""])
GOOD = bob.invoke(RECORD, bob.invoke(RECORD).checkpoint).checkpoint_bytes()  # step 20: P, M, V all differ


def chunk(i: int) -> slice:
    return slice(HB + i * CHUNK_BYTES, HB + (i + 1) * CHUNK_BYTES)


def write(tmp_path: Path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def verify(cli, *paths: str, code: int) -> list[dict]:
    doc = cli.json("verify", *paths, code=code)
    assert doc["command"] == "bob-inspect verify" and doc["exit_code"] == code and doc["ok"] == (code == 0)
    assert [r["file"] for r in doc["checkpoints"]] == list(paths)
    return doc["checkpoints"]


def test_good_files_pass_and_a_fresh_one_is_named(cli, tmp_path: Path) -> None:
    [good, fresh] = verify(cli, write(tmp_path, "good.bob", GOOD), write(tmp_path, "fresh.bob", b""), code=0)
    assert good["ok"] and good["problems"] == [] and good["diagnosis"] == [] and not good["fresh"]
    assert fresh["ok"] and fresh["fresh"]
    text = cli.text("verify", str(tmp_path / "good.bob"), str(tmp_path / "fresh.bob"))
    assert "verify: 2 of 2 checkpoints good" in text and "good.bob: OK\n" in text
    assert "fresh.bob: OK (empty: bob-run starts fresh from it)\n" in text


@pytest.mark.parametrize("i", range(len(PLANE_NAMES)))
def test_a_flipped_bit_names_its_chunk(cli, tmp_path: Path, i: int) -> None:
    raw = bytearray(GOOD)
    raw[chunk(i).start + 12345] ^= 0x10
    [r] = verify(cli, write(tmp_path, "flip.bob", bytes(raw)), code=2)
    assert [(p["field"], p["chunk"]) for p in r["problems"]] == [("chunk_table.digest", PLANE_NAMES[i])]
    assert r["diagnosis"] == []


@pytest.mark.parametrize("i,j", list(itertools.combinations(range(len(PLANE_NAMES)), 2)))
def test_two_swapped_chunks_are_always_found_and_named(cli, tmp_path: Path, i: int, j: int) -> None:
    raw = bytearray(GOOD)
    raw[chunk(i)], raw[chunk(j)] = GOOD[chunk(j)], GOOD[chunk(i)]
    [r] = verify(cli, write(tmp_path, "swap.bob", bytes(raw)), code=2)
    digests = [p["chunk"] for p in r["problems"] if p["field"] == "chunk_table.digest"]
    assert digests == [PLANE_NAMES[i], PLANE_NAMES[j]]
    assert all(p["chunk"] in PLANE_NAMES for p in r["problems"])  # and what the moved values break, by plane
    assert r["diagnosis"] == [f"chunks {PLANE_NAMES[i]} and {PLANE_NAMES[j]} are swapped "
                              "(each holds the bytes the chunk table gives the other)"]


def test_a_rotation_of_the_chunks_is_named_chunk_by_chunk(cli, tmp_path: Path) -> None:
    raw = bytearray(GOOD)
    raw[chunk(0)], raw[chunk(1)], raw[chunk(2)] = GOOD[chunk(1)], GOOD[chunk(2)], GOOD[chunk(0)]
    [r] = verify(cli, write(tmp_path, "rot.bob", bytes(raw)), code=2)
    assert r["diagnosis"] == ["chunk P holds the bytes of chunk M (the chunks were moved)",
                              "chunk M holds the bytes of chunk V (the chunks were moved)",
                              "chunk V holds the bytes of chunk P (the chunks were moved)"]


def test_identical_chunks_swapped_leave_the_very_same_file() -> None:
    """Why a swap is always found (formats/envelope.md, "Integrity"): a swap either changes the
    bytes at a chunk the table binds to its SHA-256, or swaps two equal chunks, which leaves
    the file as it was; there is nothing else."""
    ck = bob.Checkpoint(0, np.ones(65536, np.float32), np.zeros(65536, np.float32), np.zeros(65536, np.float32))
    raw = ck.to_bytes(for_resume=False)
    swapped = bytearray(raw)
    swapped[chunk(1)], swapped[chunk(2)] = raw[chunk(2)], raw[chunk(1)]
    assert bytes(swapped) == raw


@pytest.mark.parametrize("i", range(len(PLANE_NAMES)))
def test_a_cut_file_names_the_chunk_it_ends_in(cli, tmp_path: Path, i: int) -> None:
    [r] = verify(cli, write(tmp_path, "cut.bob", GOOD[:chunk(i).start + 100]), code=2)
    assert [p["field"] for p in r["problems"]] == ["file_size"]
    missing = CHUNK_BYTES - 100
    assert r["diagnosis"] == [f"the file ends inside chunk {PLANE_NAMES[i]}, {missing} bytes before that chunk's end "
                              f"(bytes {chunk(i).start}..{chunk(i).stop - 1})"]


@pytest.mark.parametrize("damaged", range(len(PLANE_NAMES) - 1))
def test_a_cut_file_still_names_a_damaged_chunk_it_holds_whole(cli, tmp_path: Path, damaged: int) -> None:
    raw = bytearray(GOOD)
    raw[chunk(damaged).start + 1000] ^= 0x04
    [r] = verify(cli, write(tmp_path, "cut.bob", bytes(raw[:chunk(2).start + 100])), code=2)
    assert [(p["field"], p["chunk"]) for p in r["problems"]] == [("file_size", None),
                                                                  ("chunk_table.digest", PLANE_NAMES[damaged])]
    shown = cli.json("checkpoint", str(tmp_path / "cut.bob"), code=2)["chunks"]
    assert [c["digest_ok"] for c in shown] == [i != damaged for i in range(2)] + [None]


def test_a_header_bytes_damaged_upward_blames_no_chunk_digest(cli, tmp_path: Path) -> None:
    """header_bytes 448 -> 512 makes the file look short; the chunks it holds whole are not where that
    header_bytes places them, so their digests are not checked there (they were called mismatches)."""
    raw = bytearray(GOOD)
    raw[16:24] = (512).to_bytes(8, "little")
    [r] = verify(cli, write(tmp_path, "hb.bob", bytes(raw)), code=2)
    assert "chunk_table.digest" not in [p["field"] for p in r["problems"]] and "file_size" in [
        p["field"] for p in r["problems"]]


@pytest.mark.parametrize("i", range(len(PLANE_NAMES)))
def test_a_file_cut_at_a_chunks_start_is_not_said_to_end_inside_it(cli, tmp_path: Path, i: int) -> None:
    [r] = verify(cli, write(tmp_path, "cut.bob", GOOD[:chunk(i).start]), code=2)
    assert r["diagnosis"] == [f"the file ends where chunk {PLANE_NAMES[i]} begins (byte {chunk(i).start}): "
                              "none of its bytes are there"]


@pytest.mark.parametrize("size", [1, 5, 7, 20, 300, 420, 447])
def test_a_file_cut_inside_its_header_is_said_so_never_a_digest_mismatch(cli, tmp_path: Path, size: int) -> None:
    """A cut inside a header field (420: inside the header's digest, which was never compared) is a cut
    in the diagnosis, as docs/bob-inspect.md says; before, 20 and 300 got none, 420 a digest mismatch."""
    [r] = verify(cli, write(tmp_path, "cut.bob", GOOD[:size]), code=2)
    [found] = r["problems"]
    assert found["error"] == "Truncated"
    where = " (448 bytes)" if size == 447 else ", in its magic" if size < 8 else \
        f", in {found['text'].split(' at offset ')[0]} (at offset {found['offset']})"  # (as its problem spells it)
    assert r["diagnosis"] == [f"the file ends inside its header{where}"]


@pytest.mark.parametrize("size, length", [(len(GOOD), 2 << 20), (60_000, 2 << 20), (len(GOOD), 100_000)])
@pytest.mark.parametrize("state_too", [False, True])
def test_a_damaged_length_is_not_called_a_cut(cli, tmp_path: Path, size: int, length: int, state_too: bool) -> None:
    """A file whose seed length says 2 MiB was diagnosed "the file ends inside its header": no header
    holds a string that long, so it is a damaged length, not a file cut short (whatever the file's size);
    one of 100,000 bytes, inside the file, was said to run past its end. Where v1's length put back makes the
    strings v1's, that length is named; with a byte of state changed too, only that it is too long."""
    at = CANONICAL.fields["seed.length"].offset
    raw = bytearray(GOOD[:size])
    raw[at:at + 4] = length.to_bytes(4, "little")
    raw[CANONICAL.fields["state"].offset] ^= 0x20 if state_too else 0
    [r] = verify(cli, write(tmp_path, "length.bob", bytes(raw)), code=2)
    assert r["diagnosis"] == [f"a length in the header, in seed (at offset {at}), is {length} bytes, more than any "
                              "string the contract holds: damaged, not a file cut short" if state_too else
                              f"the length of seed (at offset {at}) is damaged: {length} bytes where the contract's "
                              "string is 11, so what follows it is read from the wrong offsets"]


def test_a_damaged_string_length_is_named_not_the_field_read_after_it(cli, tmp_path: Path) -> None:
    """state's length 65 made 70: learner's prefix is then read from inside its string, and the diagnosis
    named learner's length as the damaged one."""
    at = CANONICAL.fields["state.length"].offset
    raw = bytearray(GOOD)
    raw[at:at + 4] = (70).to_bytes(4, "little")
    [r] = verify(cli, write(tmp_path, "state.bob", bytes(raw)), code=2)
    assert r["diagnosis"] == ["the length of state (at offset 32) is damaged: 70 bytes where the contract's string "
                              "is 65, so what follows it is read from the wrong offsets"]


@pytest.mark.parametrize("string, length, read_as", [("seed", 15, ["header_bytes"]), ("seed", 100, ["header_bytes"]),
                                                     ("data", 53, ["header_bytes"]),
                                                     ("seed", 10, ["header_digest", "seed", "payload_bytes",
                                                                   "chunk_bytes", "updates_per_invocation"])])
def test_a_damaged_length_whose_header_still_parses_is_named(cli, tmp_path: Path, string: str, length: int,
                                                             read_as: list[str]) -> None:
    """A length one bit or a few bytes off, in a header that still parses: what it shifts is read as a short
    header_bytes (no diagnosis at all, the field to mend never named) or as contract mismatches (only "does not
    match the header's digest"). The findings stay the reader's; the diagnosis names the length."""
    at = CANONICAL.fields[f"{string}.length"].offset
    raw = bytearray(GOOD)
    raw[at:at + 4] = length.to_bytes(4, "little")
    [r] = verify(cli, write(tmp_path, "length.bob", bytes(raw)), code=2)
    assert [p["field"] for p in r["problems"]] == read_as
    assert r["diagnosis"] == [f"the length of {string} (at offset {at}) is damaged: {length} bytes where the "
                              f"contract's string is {len(getattr(V1, string))}, so what follows it is read from the "
                              "wrong offsets"]


def test_a_damaged_header_bytes_is_not_called_a_cut(cli, tmp_path: Path) -> None:
    """header_bytes 448 made 512 in a whole file: "the file ends inside chunk V, 64 bytes before that
    chunk's end", where the chunk table's offsets and the file's size agree on 448."""
    raw = bytearray(GOOD)
    at = CANONICAL.fields["header_bytes"].offset
    raw[at:at + 8] = (HB + 64).to_bytes(8, "little")
    [r] = verify(cli, write(tmp_path, "hb.bob", bytes(raw)), code=2)
    assert r["diagnosis"] == [f"header_bytes ({HB + 64}) is damaged: the chunk table and the file's size put chunk P "
                              f"at {HB}", "the header (a field, its chunk table or the digest itself) does not match "
                              "the header's digest"]


def test_what_the_digests_cannot_tell_apart_is_said_both_ways(cli, tmp_path: Path) -> None:
    """(A review of the digests' diagnosis.) Digests P and M exchanged in the table and chunk V damaged: the
    exchanged ones alone put back seal the header (it put V's back too, and said "chunks P and M are swapped").
    Digests exchanged and the step changed: the header's digest cannot tell which moved, and says so."""
    digests = [CANONICAL.chunk_field(k, "digest").slice for k in range(3)]
    raw = bytearray(GOOD)
    raw[digests[0]], raw[digests[1]] = GOOD[digests[1]], GOOD[digests[0]]
    raw[chunk(2).start + 5] ^= 1
    step = bytearray(GOOD)
    step[digests[0]], step[digests[1]] = GOOD[digests[1]], GOOD[digests[0]]
    step[CANONICAL.fields["step"].offset] ^= 1
    [damaged, stepped] = verify(cli, write(tmp_path, "v.bob", bytes(raw)), write(tmp_path, "s.bob", bytes(step)), code=2)
    assert damaged["diagnosis"] == ["the digests of entries P and M of the chunk table are swapped (the chunks are in "
                                    "their places; the header's digest is that of the table before)"]
    assert stepped["diagnosis"] == ["chunks P and M are swapped, or the digests of entries P and M of the chunk table "
                                    "are (the header does not match its digest: either may have moved)",
                                    "the header (a field, its chunk table or the digest itself) does not match the "
                                    "header's digest"]


def test_a_cut_file_of_another_contract_is_a_cut_not_a_damaged_length(cli, tmp_path: Path) -> None:
    """A seed one byte longer than v1's, the file cut inside its header: "the length of seed is damaged"."""
    from bob.formats.contract import V1, Contract

    ck = bob.load_checkpoint(GOOD)
    other = bob.Checkpoint(ck.step, ck.p, ck.m, ck.v, 512, Contract(**{**vars(V1), "seed": V1.seed + b"0"}))
    [r] = verify(cli, write(tmp_path, "other.bob", other.to_bytes(for_resume=False)[:300]), code=2)
    assert r["diagnosis"] == ["the file ends inside its header, in chunk_table[0].digest (at offset 280)"]


@pytest.mark.parametrize("cut", [0, 1000, 2 * CHUNK_BYTES + 64])
def test_a_header_bytes_the_table_contradicts_tells_no_cut_against_it(cli, tmp_path: Path, cut: int) -> None:
    """header_bytes made 512 and the file cut too: "ends inside chunk V, 1064 bytes before that chunk's end"
    (its range from the damaged header_bytes); with two damages nothing is sure but the header's mismatch."""
    raw = bytearray(GOOD)
    at = CANONICAL.fields["header_bytes"].offset
    raw[at:at + 8] = (HB + 64).to_bytes(8, "little")
    [r] = verify(cli, write(tmp_path, "hb.bob", bytes(raw[:len(raw) - cut])), code=2)
    assert r["diagnosis"] == ([f"header_bytes ({HB + 64}) is damaged: the chunk table and the file's size put chunk P "
                               f"at {HB}"] if cut == 0 else []) + ["the header (a field, its chunk table or the "
                                                                   "digest itself) does not match the header's digest"]


def test_a_header_bytes_lowered_in_a_wider_file_is_named(cli, tmp_path: Path) -> None:
    """A file bob wrote with header_bytes 512, the field made 448: only the header's mismatch was said."""
    raw = bytearray(bob.load_checkpoint(GOOD).to_bytes(header_bytes=HB + 64))
    at = CANONICAL.fields["header_bytes"].offset
    raw[at:at + 8] = HB.to_bytes(8, "little")
    [r] = verify(cli, write(tmp_path, "hb.bob", bytes(raw)), code=2)
    assert r["diagnosis"][0] == f"header_bytes ({HB}) is damaged: the chunk table and the file's size put chunk P at " \
                                f"{HB + 64}"


@pytest.mark.parametrize("order", [(1, 0, 2), (0, 2, 1), (2, 1, 0), (1, 2, 0)])
def test_digests_exchanged_in_the_chunk_table_are_not_called_moved_chunks(cli, tmp_path: Path, order) -> None:
    """Only the table's digests exchanged (the header not resealed): "chunks P and M are swapped" and "the
    header does not match its digest", where the digests put back give the very header that was sealed."""
    digests = [CANONICAL.chunk_field(k, "digest").slice for k in range(3)]
    raw = bytearray(GOOD)
    for k, source in enumerate(order):
        raw[digests[k]] = GOOD[digests[source]]
    [r] = verify(cli, write(tmp_path, "digests.bob", bytes(raw)), code=2)
    moved = [k for k in range(3) if order[k] != k]
    if len(moved) == 2:
        a, b = (PLANE_NAMES[k] for k in moved)
        assert r["diagnosis"] == [f"the digests of entries {a} and {b} of the chunk table are swapped (the chunks "
                                  "are in their places; the header's digest is that of the table before)"]
    else:
        assert r["diagnosis"] == [f"entry {PLANE_NAMES[k]} of the chunk table holds chunk {PLANE_NAMES[order[k]]}'s "
                                  "digest (the chunks are in their places; the header's digest is that of the table "
                                  "before)" for k in sorted(range(3), key=lambda k: order[k])]


@pytest.mark.parametrize("i,j", list(itertools.combinations(range(len(PLANE_NAMES)), 2)))
def test_two_swapped_chunk_table_entries_are_not_called_swapped_chunks(cli, tmp_path: Path, i: int, j: int) -> None:
    """Entries i and j of the chunk table exchanged whole (tags too), the header resealed, the chunks in their
    places: it was diagnosed "chunks ... are swapped"."""
    table = CANONICAL
    a, b = (slice(table.chunk_field(k, "tag").offset, table.chunk_field(k, "digest").end) for k in (i, j))
    raw = bytearray(GOOD)
    raw[a], raw[b] = GOOD[b], GOOD[a]
    raw[table.header_digest:table.header_length] = hashlib.sha256(raw[:table.header_digest]).digest()
    [r] = verify(cli, write(tmp_path, "table.bob", bytes(raw)), code=2)
    assert r["diagnosis"] == [f"entries {PLANE_NAMES[i]} and {PLANE_NAMES[j]} of the chunk table are swapped "
                              "(the chunks are in their places)"]


@pytest.mark.parametrize("sealed", [True, False])
def test_entries_swapped_but_for_their_tags_are_not_called_swapped_chunks(cli, tmp_path: Path, sealed: bool) -> None:
    """Entries P and V exchanged but for their tags (offset, length and digest): the offsets it found wrong rule out
    moved chunks, which keep their entries' offsets, yet it said "chunks P and V are swapped, or the digests ..."."""
    a, b = (slice(CANONICAL.chunk_field(k, "offset").offset, CANONICAL.chunk_field(k, "digest").end) for k in (0, 2))
    raw = bytearray(GOOD)
    raw[a], raw[b] = GOOD[b], GOOD[a]
    if sealed:
        raw[CANONICAL.header_digest:CANONICAL.header_length] = hashlib.sha256(raw[:CANONICAL.header_digest]).digest()
    [r] = verify(cli, write(tmp_path, "table.bob", bytes(raw)), code=2)
    assert r["diagnosis"] == ["entries P and V of the chunk table are swapped (the chunks are in their places)"] + [
        "the header (a field, its chunk table or the digest itself) does not match the header's digest"] * (not sealed)


def test_a_rotation_of_the_chunk_table_entries_is_named_entry_by_entry(cli, tmp_path: Path) -> None:
    """The entries rotated whole, the chunks in their places: it was diagnosed as chunks moved."""
    entries = [slice(CANONICAL.chunk_field(k, "tag").offset, CANONICAL.chunk_field(k, "digest").end) for k in range(3)]
    raw = bytearray(GOOD)
    raw[entries[0]], raw[entries[1]], raw[entries[2]] = GOOD[entries[2]], GOOD[entries[0]], GOOD[entries[1]]
    raw[CANONICAL.header_digest:CANONICAL.header_length] = hashlib.sha256(raw[:CANONICAL.header_digest]).digest()
    [r] = verify(cli, write(tmp_path, "rot.bob", bytes(raw)), code=2)
    assert r["diagnosis"] == ["entry M of the chunk table is chunk P's (the chunks are in their places)",
                              "entry V of the chunk table is chunk M's (the chunks are in their places)",
                              "entry P of the chunk table is chunk V's (the chunks are in their places)"]


def test_a_chunk_table_that_does_not_match_its_header(cli, tmp_path: Path) -> None:
    raw = bytearray(GOOD)
    raw[GOOD.index(hashlib.sha256(GOOD[chunk(1)]).digest())] ^= 0x01  # M's digest in the chunk table
    [r] = verify(cli, write(tmp_path, "table.bob", bytes(raw)), code=2)
    assert "header_digest" in [p["field"] for p in r["problems"]]
    assert "the header (a field, its chunk table or the digest itself) does not match the header's digest" in \
        r["diagnosis"]


def test_each_file_is_judged_on_its_own(cli, tmp_path: Path) -> None:
    raw = bytearray(GOOD)
    raw[chunk(2).start] ^= 1
    paths = [write(tmp_path, "a.bob", GOOD), str(tmp_path / "missing.bob"), write(tmp_path, "b.bob", bytes(raw)),
             str(tmp_path)]
    a, missing, b, directory = verify(cli, *paths, code=2)
    assert a["ok"] and not b["ok"] and [p["chunk"] for p in b["problems"]] == ["V"]
    assert missing["problems"][0]["field"] == "path" and missing["problems"][0]["message"] == "no such file"
    assert directory["problems"][0]["field"] == "path" and "directory" in directory["problems"][0]["message"]
    # an unreadable path's problem has every key a finding's has (docs/bob-inspect.md: always present)
    assert all(set(p) == set(b["problems"][0]) for r in (missing, directory) for p in r["problems"])
    assert missing["size"] is directory["size"] is missing["sha256"] is directory["sha256"] is None  # not read
    text = cli.text("verify", *paths, code=2)
    assert "verify: 1 of 4 checkpoints good" in text and "= " not in text.split("b.bob")[0]


def test_verify_needs_a_file(cli) -> None:
    doc = cli.json("verify", code=2)
    assert doc["error"]["message"].startswith("usage:")


def test_verify_of_many_files_says_where_it_is_on_stderr(cli, tmp_path: Path, monkeypatch) -> None:
    """2,500 files took seconds with nothing on a terminal: verify shows the progress every long command
    shows (README, "progress"), and the output stays one JSON object."""
    import io

    import bob.progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    shown = Terminal()

    class AtOnce(bob.progress.Progress):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **{**kwargs, "after": 0.0, "stream": shown})

    monkeypatch.setattr(bob.progress, "Progress", AtOnce)
    path = write(tmp_path, "ck.bin", GOOD)
    verify(cli, path, path, path, code=0)
    assert shown.getvalue().startswith("\rbob-inspect verify: 1/3") and shown.getvalue().endswith("\n")


def test_running_out_of_descriptors_is_unexpected_never_a_bad_file(tmp_path: Path, monkeypatch, capsys) -> None:
    """Out of descriptors, verify called the file unreadable (exit 2, "0 of 1 checkpoint good", error null), where
    README says running out is never a failed check: the unexpected exit (70), naming the file."""
    import errno
    import json

    from bob.inspect import main
    from bob.inspect import common

    def out_of_descriptors(path, *args):
        raise OSError(errno.EMFILE, "Too many open files", path)

    monkeypatch.setattr(common, "read_format_file", out_of_descriptors)
    path = write(tmp_path, "good.bob", GOOD)
    assert main(["verify", "--json", path]) == 70
    error = json.loads(capsys.readouterr().out)["error"]
    assert (error["exit_code"], error["path"], error["message"]) == (70, path, "too many open files")
