"""``bob-inspect diff --diffable``: text for review whose ``diff -u`` shows only what changed
in meaning: no path, offset, size or layout digest in it (gguf-tools #15 asked for this)."""

from __future__ import annotations

import difflib
from pathlib import Path

import numpy as np

import bob

RECORD = bob.build_input(b"abracadabra", [b"abra", b"cad", b""])
STEP10 = bob.invoke(RECORD).checkpoint
STEP20 = bob.invoke(RECORD, STEP10).checkpoint


def write(tmp_path: Path, name: str, ck: bob.Checkpoint, header_bytes: int | None = None) -> str:
    path = tmp_path / name
    path.write_bytes(ck.to_bytes(header_bytes=header_bytes) if header_bytes else ck.to_bytes())
    return str(path)


def test_the_same_meaning_in_another_layout_reads_the_same(cli, tmp_path: Path) -> None:
    canonical = [write(tmp_path, "a.bob", STEP10), write(tmp_path, "b.bob", STEP20)]
    wide = [write(tmp_path, "wide-a.bob", STEP10, 512), write(tmp_path, "wide-b.bob", STEP20, 576)]
    text = cli.text("diff", "--diffable", *canonical, code=1)
    assert text == cli.text("diff", "--diffable", *wide, code=1)
    assert cli.text("diff", *canonical, code=1) != cli.text("diff", *wide, code=1)  # the plain text has offsets
    for moving in ("a.bob", "bytes", "offset", "sha256", "digest", "786880"):
        assert moving not in text
    assert "header step: A 10 | B 20" in text.splitlines()
    layout_only = cli.text("diff", "--diffable", canonical[0], wide[0], code=1)
    assert layout_only.splitlines()[-1] == "verdict: the same step, contract and planes in another layout"


def test_a_fresh_file_against_its_planes_at_another_step_is_different(cli, tmp_path: Path) -> None:
    """An empty file (the fresh state) against a checkpoint of the fresh planes at step 20: the verdict read
    "the same step, contract and planes in another layout" (a fresh side's header is not compared)."""
    (tmp_path / "fresh.bob").write_bytes(b"")
    fresh = bob.Checkpoint.fresh()
    later = write(tmp_path, "fresh20.bob", bob.Checkpoint(20, fresh.p, fresh.m, fresh.v))
    at_0 = write(tmp_path, "fresh0.bob", fresh)
    assert cli.text("diff", "--diffable", str(tmp_path / "fresh.bob"), later, code=1).splitlines()[-1] == \
        "verdict: different"
    assert cli.text("diff", "--diffable", str(tmp_path / "fresh.bob"), at_0, code=1).splitlines()[-1] == \
        "verdict: the same step, contract and planes in another layout"


def test_diff_u_of_two_outputs_shows_only_what_changed(cli, tmp_path: Path) -> None:
    touched = STEP20.copy()
    touched.v[0] = np.float32(0.5)  # one more V value differs; P and M as before
    before = cli.text("diff", "--diffable", write(tmp_path, "a.bob", STEP10), write(tmp_path, "b.bob", STEP20), code=1)
    after = cli.text("diff", "--diffable", str(tmp_path / "a.bob"), write(tmp_path, "c.bob", touched), code=1)
    changed = [line for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
               if line[:1] in "+-" and not line.startswith(("---", "+++"))]
    assert changed and all(line[1:].startswith("plane V") for line in changed), changed
    assert "+plane V: 1281 values differ" in changed


def test_diffable_leaves_json_and_exit_codes_as_they_are(cli, tmp_path: Path) -> None:
    a = write(tmp_path, "a.bob", STEP10)
    assert cli.json("diff", "--diffable", a, a) == cli.json("diff", a, a)
    assert cli.text("diff", "--diffable", a, a).splitlines()[-1] == "verdict: equal"


def test_the_largest_ulp_distance_is_the_integer_json_gives(cli, tmp_path: Path) -> None:
    """Two distances that differ past the 9th digit read differently (it was rounded to 9 digits:
    the fresh state against step 10 is 2,065,553,142 ulp in P)."""
    (tmp_path / "fresh.bob").write_bytes(b"")
    a, b = str(tmp_path / "fresh.bob"), write(tmp_path, "b.bob", STEP10)
    planes = cli.json("diff", a, b, code=1)["planes"]
    text = cli.text("diff", "--diffable", a, b, code=1)
    assert planes["P"]["max_ulp"]["value"] >= 10 ** 9
    for name, d in planes.items():
        assert f"plane {name} largest ULP distance {d['max_ulp']['value']}: " in text


def test_two_nans_that_differ_only_in_their_payload_read_differently(cli, tmp_path: Path) -> None:
    """A plane value or a learner hyper-parameter that is a NaN in both files, with other payloads: each
    side shows its bits (both read "nan", so the diff said they differed and showed them the same)."""
    import dataclasses
    import struct

    from bob.formats.constants import LEARNER_PREFIX

    def with_nans(plane_bits: int, lr_bits: int) -> bob.Checkpoint:
        ck = STEP10.copy()
        ck.p.view(np.uint32)[5] = plane_bits
        learner = bytearray(ck.contract.learner)
        learner[len(LEARNER_PREFIX):len(LEARNER_PREFIX) + 4] = struct.pack("<I", lr_bits)
        ck.contract = dataclasses.replace(ck.contract, learner=bytes(learner))
        return ck

    paths = []
    for name, bits in (("a.bob", 0x7FC0DEAD), ("b.bob", 0x7FC00000)):
        (tmp_path / name).write_bytes(with_nans(bits, bits).to_bytes(for_resume=False))
        paths.append(str(tmp_path / name))
    lines = cli.text("diff", "--diffable", *paths, code=2).splitlines()
    assert "plane P first: context '\\x00', next '\\x05': A nan (0x7fc0dead) | B nan (0x7fc00000)" in lines, lines
    learner = next(line for line in lines if line.startswith("header learner: "))
    assert "f32[lr=nan(0x7fc0dead), beta1=0.9," in learner and "f32[lr=nan(0x7fc00000), beta1=0.9," in learner
    header = cli.json("diff", *paths, code=2)["header"]["differences"]
    assert [d["a"].count("nan(0x7fc0dead)") + d["b"].count("nan(0x7fc00000)") for d in header
            if d["field"] == "learner"] == [2]
