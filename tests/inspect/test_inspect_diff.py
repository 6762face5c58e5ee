"""bob-inspect diff (in-process) and the ULP distance."""

from __future__ import annotations

import warnings

import numpy as np

from bob.analysis import beyond, ordered_keys, ulp_distance

AB = 97 * 256 + 98  # the parameter (context 'a', next 'b')
DIFF_KEYS = {"command", "a", "b", "identical", "first_differing_offset", "header", "planes", "ok", "verdict",
             "tolerance", "equal", "problems_found", "exit_code", "error"}


def test_diff_of_one_value_reports_its_index_and_ulp(cli, files):
    a, b = str(files / "ck3.bin"), str(files / "one.bin")
    r = cli.json("diff", a, b, code=1)  # different files: exit 1, as cmp, diff and h5diff
    assert set(r) == DIFF_KEYS
    assert r["identical"] is False and r["problems_found"] is False and r["ok"] is False and r["exit_code"] == 1
    p = r["planes"]["P"]
    assert p["differing"] == 1
    first = p["first"]
    assert (first["index"], first["context"], first["next"]) == (AB, 97, 98)
    assert (first["context_text"], first["next_text"], first["ulp"]) == ("'a'", "'b'", 3)
    assert int(first["b_hex"], 16) - int(first["a_hex"], 16) == 3
    assert p["max_ulp"]["value"] == 3 and p["max_ulp"]["index"] == AB
    assert p["max_abs_diff"]["index"] == AB
    va, vb = (np.uint32(int(first[k], 16)).view(np.float32) for k in ("a_hex", "b_hex"))
    assert (np.float32(first["a"]), np.float32(first["b"])) == (va, vb)
    assert p["max_abs_diff"]["value"] == float(vb) - float(va)
    assert r["planes"]["M"]["differing"] == r["planes"]["V"]["differing"] == 0
    assert [d["field"] for d in r["header"]["differences"]] == ["chunk_table[0].digest", "header_digest"]
    assert r["first_differing_offset"] == 279  # chunk_table[0].digest

    out = cli.text("diff", a, b, code=1)
    assert "  P: 1 value(s) differ" in out
    assert f"     first at index {AB} = (context 'a', next 'b'): " in out and ", 3 ulp" in out
    assert f"     largest ULP distance 3 at index {AB} = (context 'a', next 'b')" in out
    assert "  M: identical" in out and "  V: identical" in out
    assert "verdict: different: P differs in 1 value; 2 header fields differ" in out


def test_diff_within_a_tolerance_is_equal(cli, files):
    a, b = str(files / "ck3.bin"), str(files / "one.bin")  # one P value 3 ulp apart (and so the digests)
    r = cli.json("diff", a, b, "--ulp", "3")
    assert r["equal"] is True and r["identical"] is False and r["exit_code"] == 0
    assert r["tolerance"] == {"ulp": 3, "atol": None} and r["planes"]["P"]["beyond_tolerance"] == 0
    assert "verdict: equal within the tolerance: every plane value within 3 ulp" in cli.text("diff", a, b, "--ulp", "3")
    assert cli.json("diff", a, b, "--ulp", "2", code=1)["planes"]["P"]["beyond_tolerance"] == 1
    gap = cli.json("diff", a, b, code=1)["planes"]["P"]["max_abs_diff"]["value"]
    assert cli.json("diff", a, b, "--atol", repr(gap))["equal"] is True
    assert cli.json("diff", a, b, "--atol", repr(gap / 2), code=1)["equal"] is False
    # the verdict states the tolerance applied (it was %g: six digits, a bound the gap exceeds)
    assert f"every plane value within {gap!r} absolute" in cli.text("diff", a, b, "--atol", repr(gap))
    assert "every plane value within 0.5 absolute" in cli.text("diff", a, b, "--atol", "0.5")
    # a tolerance never hides a header field the planes do not determine
    assert cli.json("diff", str(files / "ck1.bin"), str(files / "ck2.bin"), "--atol", "1e30", code=1)["equal"] is False
    # nor a byte in no field: the padding differs, the fields and planes do not (no "only the digests differ")
    padded = bytearray((files / "ck3.bin").read_bytes())
    padded[447] = 1
    (files / "padded.bin").write_bytes(padded)
    r = cli.json("diff", a, str(files / "padded.bin"), "--ulp", "3", code=2)
    assert r["equal"] is False and r["header"]["differences"] == [] and r["first_differing_offset"] == 447
    assert "only the digests differ" not in cli.text("diff", a, str(files / "padded.bin"), "--ulp", "3", code=2)


def test_diff_of_two_invocations_and_of_identical_files(cli, files):
    r = cli.json("diff", str(files / "ck1.bin"), str(files / "ck2.bin"), code=1)
    diffs = {d["field"]: (d["a"], d["b"]) for d in r["header"]["differences"]}
    assert diffs["step"] == (10, 20) and "learner" not in diffs
    assert r["planes"]["P"]["differing"] == 65_536 and r["planes"]["P"]["first"]["index"] == 0
    r = cli.json("diff", str(files / "ck2.bin"), str(files / "ck2.bin"))
    assert r["identical"] is True and r["equal"] is True and r["ok"] is True and r["header"]["differences"] == []
    assert all(d["differing"] == 0 for d in r["planes"].values())
    assert "verdict: identical" in cli.text("diff", str(files / "ck2.bin"), str(files / "ck2.bin"))


def test_diff_names_header_fields_and_the_files_problems(cli, files):
    r = cli.json("diff", str(files / "ck3.bin"), str(files / "two.bin"), code=2)
    fields = [d["field"] for d in r["header"]["differences"]]
    assert "learner" in fields and "chunk_table[2].digest" not in fields  # stored digests equal; V differs
    learner = next(d for d in r["header"]["differences"] if d["field"] == "learner")
    assert "lr=0.05" in learner["a"] and "lr=0.5," in learner["b"]
    assert r["planes"]["V"]["differing"] == 1 and r["planes"]["V"]["first"]["index"] == 100
    assert r["a"]["problems"] == [] and [p["field"] for p in r["b"]["problems"]] == ["learner",
                                                                                    "chunk_table.digest"]


def test_a_file_one_byte_longer_says_its_header_is_equal(cli, files, tmp_path):
    """The size alone differs (a byte appended): the verdict read "0 header fields differ"."""
    (tmp_path / "longer.bin").write_bytes((files / "ck1.bin").read_bytes() + b"x")
    r = cli.json("diff", str(files / "ck1.bin"), str(tmp_path / "longer.bin"), code=2)
    assert r["verdict"] == ("different: the planes are identical; the header fields are equal (and B has 1 "
                            "problem)"), r["verdict"]


def test_diff_against_the_fresh_state(cli, files):
    r = cli.json("diff", str(files / "empty.bin"), str(files / "ck1.bin"), code=1)
    assert r["a"]["fresh"] is True and r["header"] == {"compared": False, "differences": None}
    assert r["planes"]["M"]["differing"] > 0 and r["problems_found"] is False
    assert "header: not compared (a zero-byte checkpoint has no header)" in cli.text(
        "diff", str(files / "empty.bin"), str(files / "ck1.bin"), code=1)


def test_a_sides_step_is_the_one_the_checkpoint_report_gives(cli, files, tmp_path):
    """A fresh file's step was null in diff where `checkpoint` says 0, and a file cut after its step null
    where `checkpoint` reads it from the partial header."""
    (tmp_path / "cut.bin").write_bytes((files / "ck1.bin").read_bytes()[:100])
    for name in ("empty.bin", "ck1.bin"):
        r = cli.json("diff", str(files / name), str(tmp_path / "cut.bin"), code=2)
        steps = [cli.json(path, code=code)["step"] for path, code in ((str(files / name), 0), (str(tmp_path / "cut.bin"), 2))]
        assert [r["a"]["step"], r["b"]["step"]] == steps and None not in steps


def test_atol_compares_the_exact_distance_and_never_warns():
    tiny = np.uint32(0x80000001).view(np.float32)  # -2**-149: 0.5 - tiny is 0.5 in float64, exactly 0.5 + 2**-149
    a, b = np.array([0.5, tiny, 0.5, 1.0], np.float32), np.array([tiny, 0.5, 0.0, 1.0], np.float32)
    assert list(beyond(a, b, atol=0.5)) == [True, True, False, False]  # either sign; a tie of 0.5 exactly is within
    assert not beyond(a, b, atol=float(np.nextafter(0.5, 1.0))).any()
    snan = np.array([np.uint32(0x7F800001).view(np.float32), 1.0], np.float32)  # a signalling NaN beside a value
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert list(beyond(snan, np.array([0.0, 1.5], np.float32), atol=1.0)) == [True, False]


def test_ulp_distance_is_on_a_monotonic_integer_line():
    xs = np.array([-np.inf, -3.0, -1e-38, -1e-45, -0.0, 0.0, 1e-45, 1e-38, 1.0, np.inf], dtype=np.float32)
    keys = ordered_keys(xs)
    assert list(keys) == sorted(keys) and keys[4] == keys[5] == 0
    one = np.float32(1.0)
    up = np.nextafter(one, np.float32(2))
    assert ulp_distance(np.array([one]), np.array([up]))[0] == 1
    tiny = np.nextafter(np.float32(0), np.float32(1))
    assert ulp_distance(np.array([-tiny]), np.array([tiny]))[0] == 2


def test_two_files_too_large_to_read_are_not_called_different(cli, files, tmp_path):
    """A file past any checkpoint's size, given twice: "identical": false and "different: the planes could
    not be compared", though its bytes were never read."""
    big = tmp_path / "big.bob"
    with open(big, "wb") as f:
        f.write(b"BOB-CKPT")
        f.truncate(1 << 30)
    r = cli.json("diff", str(big), str(big), code=2)
    assert r["identical"] is None and r["first_differing_offset"] is None and r["problems_found"]
    assert r["verdict"] == "not compared: a file could not be read whole (and A has 1 problem and B has 1 problem)"
    assert "bytes: not compared (a file could not be read whole)" in cli.text("diff", str(big), str(big), code=2)
    assert cli.text("diff", "--diffable", str(big), str(big), code=2).endswith("verdict: not compared\n")
    r = cli.json("diff", str(big), str(files / "ck1.bin"), code=2)  # not read, but not the same size: not identical
    assert r["identical"] is False and r["verdict"].startswith("different")
