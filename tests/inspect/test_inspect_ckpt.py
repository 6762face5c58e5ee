"""bob-inspect ckpt (in-process): human and --json, --rows, damaged and hostile
checkpoints, the fresh state, --heatmap."""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import struct
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

import bob

HB = 448
CHUNK = 262_144
from conftest import CKPT_10_SHA256 as CKPT_SHA_10  # noqa: E402
from conftest import GOLDEN  # noqa: E402

# The documented, stable --json keys (docs/bob-inspect.md).
CKPT_KEYS = {
    "command", "file", "auto", "kind", "size", "sha256", "fresh", "magic", "version", "header_bytes",
    "header_length", "partial_header", "step", "invocations", "contract", "header_digest", "chunk_count", "chunks",
    "planes", "note", "rows", "heatmap", "export", "problems", "problem_count", "ok", "verdict", "exit_code", "error",
}
PLANE_KEYS = {"count", "min", "max", "mean", "l2_norm", "non_finite", "nan", "inf", "negative", "zeros"}
CHUNK_KEYS = {"index", "plane", "tag", "offset", "length", "sha256", "computed_sha256", "tag_ok", "offset_ok",
              "length_ok", "digest_ok"}
PROBLEM_KEYS = {"error", "kind", "field", "index", "offset", "message", "expected", "actual", "text"}


def test_a_valid_checkpoint_bob_run_will_not_replace_is_not_said_resumable(cli, files, tmp_path: Path) -> None:
    """"bob-run can resume it" was said of a read-only or hard-linked checkpoint, which bob-run refuses (exit 2):
    the state resumes, the file is not replaced, and the verdict says which, in bob-run's words."""
    (tmp_path / "ro.bin").write_bytes((files / "ck1.bin").read_bytes())
    (tmp_path / "ro.bin").chmod(0o444)
    (tmp_path / "linked.bin").write_bytes((files / "ck1.bin").read_bytes())
    os.link(tmp_path / "linked.bin", tmp_path / "second-name.bin")
    for name, why in (("ro.bin", "it is read-only (mode 0444)"), ("linked.bin", "it has 2 hard links")):
        verdict = cli.json("checkpoint", str(tmp_path / name))["verdict"]
        said = f"; its state resumes, but bob-run (as this user) will not replace this file: {why}"
        assert said in verdict and "can resume it" not in verdict, verdict


def test_an_empty_checkpoint_bob_run_will_not_replace_is_not_said_a_fresh_start(cli, tmp_path: Path) -> None:
    """A zero-byte checkpoint got "a fresh run's checkpoint" (and verify "bob-run starts fresh from it") where
    bob-run refuses it (read-only, another hard link); verify said nothing of a valid file bob-run refuses either."""
    (tmp_path / "ro.bob").write_bytes(b"")
    (tmp_path / "ro.bob").chmod(0o444)
    (tmp_path / "linked.bob").write_bytes(b"")
    os.link(tmp_path / "linked.bob", tmp_path / "second-name.bob")
    (tmp_path / "valid-ro.bob").write_bytes((GOLDEN / "checkpoint-abracadabra-step10.bin").read_bytes())
    (tmp_path / "valid-ro.bob").chmod(0o444)
    for name, why in (("ro.bob", "it is read-only (mode 0444)"), ("linked.bob", "it has 2 hard links")):
        said = f"bob-run (as this user) will not replace this file: {why}"
        verdict = cli.json("checkpoint", str(tmp_path / name))["verdict"]
        assert verdict.startswith("OK: zero bytes, a fresh run's checkpoint") and f"; but {said}" in verdict
        diagnosis = cli.json("verify", str(tmp_path / name))["checkpoints"][0]["diagnosis"]
        assert len(diagnosis) == 1 and diagnosis[0].startswith(said), diagnosis
        assert cli.text("verify", str(tmp_path / name)).splitlines()[:2] == [f"{tmp_path / name}: OK (empty)",
                                                                           f"  = {diagnosis[0]}"]
    diagnosis = cli.json("verify", str(tmp_path / "valid-ro.bob"))["checkpoints"][0]["diagnosis"]
    assert len(diagnosis) == 1 and diagnosis[0].startswith("bob-run (as this user) will not replace this file: it is "
                                                           "read-only (mode 0444)"), diagnosis


def test_a_checkpoint_in_a_directory_this_user_cannot_write_is_not_said_resumable(request) -> None:
    """bob-run makes the replacement in the file's directory: in one this user cannot write, it refuses."""
    from bob.inspect.checkpoint import checkpoint_report
    from bob.inspect.verify import verify_file

    home = Path(tempfile.mkdtemp())  # (0700 under pytest's root-only directory: here root's 0755, nobody's to read)
    request.addfinalizer(lambda: shutil.rmtree(home))
    home.chmod(0o755)
    files = {"valid.bob": (GOLDEN / "checkpoint-abracadabra-step10.bin").read_bytes(), "empty.bob": b""}
    for name, data in files.items():
        (home / name).write_bytes(data)
        os.chown(home / name, 65534, 65534)  # (theirs to replace, but for the directory)
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # user nobody, in a forked child
        code = 99
        try:
            os.setgid(65534)
            os.setuid(65534)
            said = [checkpoint_report(data, [], path=str(home / name))[0]["verdict"] for name, data in files.items()]
            os.write(write, json.dumps([*said, verify_file(str(home / "valid.bob"))["diagnosis"]]).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        valid, empty, diagnosis = json.loads(pipe.read())
    assert os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]) == 0
    said = f"bob-run (as this user) will not replace this file: its directory {home} cannot be written"
    assert valid.endswith(f"; its state resumes, but {said}") and empty.endswith(f"; but {said}")
    assert diagnosis == [said]


def test_ckpt_human_on_a_clean_checkpoint(cli, files):
    out = cli.text("ckpt", str(files / "ck3.bin"))
    assert '  magic         "BOB-CKPT"  ok' in out
    assert "  version       1  ok" in out
    assert "  step          30 (3 invocations)" in out
    assert "contract  (matches bob v1)" in out
    for name in ("state", "learner", "data", "seed", "payload_bytes", "chunk_bytes", "updates_per_invocation"):
        assert any(line.split()[:2] == [name, "ok"] for line in out.splitlines()), name
    assert "f32[lr=0.05, beta1=0.9, beta2=0.999, eps=1e-08, weight_decay=0.01]" in out
    assert out.count("verified") == 4  # the header digest and the three chunks
    assert "MISMATCH" not in out
    for plane in "PMV":
        assert any(line.startswith(f"  {plane} ") for line in out.splitlines())
    assert out.rstrip().endswith("verdict: OK: a valid bob v1 checkpoint at step 30 (3 invocations); "
                                 "bob-run can resume it")


def test_ckpt_json_on_the_section8_checkpoint(cli, files):
    path = files / "ck1.bin"
    r = cli.json("ckpt", str(path))
    assert set(r) == CKPT_KEYS
    assert r["command"] == "bob-inspect checkpoint" and r["kind"] == "checkpoint" and r["auto"] is False
    assert r["sha256"] == CKPT_SHA_10 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert (r["size"], r["header_bytes"], r["header_length"]) == (786_880, 448, 447)
    assert (r["step"], r["invocations"], r["version"]) == (10, 1, 1)
    assert r["magic"] == {"text": "BOB-CKPT", "hex": b"BOB-CKPT".hex(), "ok": True}
    fields = r["contract"]["fields"]
    assert r["contract"]["matches_v1"] and all(f["matches"] for f in fields.values())
    assert fields["learner"]["hyperparameters"] == {"lr": 0.05, "beta1": 0.9, "beta2": 0.999, "eps": 1e-08,
                                                    "weight_decay": 0.01}
    assert fields["learner"]["hyperparameter_mismatches"] == []
    assert fields["seed"]["value"] == "bob-seed-v1" and fields["payload_bytes"]["value"] == 786_432
    assert r["header_digest"]["ok"] and r["header_digest"]["stored"] == r["header_digest"]["computed"]
    ck = bob.load_checkpoint(path.read_bytes())
    for i, (c, plane) in enumerate(zip(r["chunks"], (ck.p, ck.m, ck.v))):
        assert set(c) == CHUNK_KEYS
        assert c["offset"] == HB + i * CHUNK and c["length"] == CHUNK and c["plane"] == "PMV"[i]
        assert c["sha256"] == c["computed_sha256"] == hashlib.sha256(plane.tobytes()).hexdigest()
        assert c["digest_ok"] and c["tag_ok"] and c["offset_ok"] and c["length_ok"]
    for name, plane in zip("PMV", (ck.p, ck.m, ck.v)):
        s = r["planes"][name]
        assert set(s) == PLANE_KEYS
        assert np.float32(s["min"]) == plane.min() and np.float32(s["max"]) == plane.max()
        assert s["mean"] == pytest.approx(float(plane.astype(np.float64).mean()), rel=1e-12, abs=1e-300)
        assert s["l2_norm"] == pytest.approx(float(np.linalg.norm(plane.astype(np.float64))), rel=1e-12)
        assert s["negative"] == int((plane < 0).sum()) and s["non_finite"] == 0
    assert r["planes"]["V"]["negative"] == 0 and r["planes"]["V"]["min"] == 0.0
    assert r["problems"] == [] and r["ok"] is True and r["rows"] is None and r["heatmap"] is None


def test_ckpt_rows_show_the_top5_next_bytes(cli, files):
    path = files / "ck3.bin"
    r = cli.json("ckpt", str(path), "--rows", "abra", "--rows-hex", "63,0x64")
    assert [row["context"] for row in r["rows"]] == [0x61, 0x62, 0x72, 0x63, 0x64]  # once each, in order
    p = bob.load_checkpoint(path.read_bytes()).p.reshape(256, 256).astype(np.float64)
    for row in r["rows"]:
        x = p[row["context"]]
        prob = np.exp(x - x.max()) / np.exp(x - x.max()).sum()
        top = row["top"]
        assert len(top) == 5 and row["finite"]
        assert [t["next"] for t in top] == list(np.argsort(-x, kind="stable")[:5])
        for t in top:
            assert t["probability"] == pytest.approx(prob[t["next"]], rel=1e-12)
    learned = {row["text"]: row["top"][0]["text"] for row in r["rows"]}
    assert learned == {"'b'": "'r'", "'r'": "'a'", "'c'": "'a'", "'d'": "'a'", "'a'": "'b'"}
    out = cli.text("ckpt", str(path), "--rows", "b")
    assert "rows: top 5 next bytes (softmax of the P row, float64)" in out
    line = next(line for line in out.splitlines() if line.strip().startswith("'b' (0x62) ->"))
    assert line.split("->")[1].split()[:2] == ["'r'", f"{r['rows'][1]['top'][0]['probability']:.4f}"]


def test_rows_asked_of_unreadable_planes_are_said_in_json_too(cli, files, tmp_path):
    """Only the text said so: the JSON's rows were null, as when none are asked for, and its note said nothing."""
    (tmp_path / "cut.bin").write_bytes((files / "ck3.bin").read_bytes()[:600_000])
    r = cli.json("ckpt", str(tmp_path / "cut.bin"), "--rows", "a", code=2)
    assert r["rows"] is None and r["note"] == "--rows: not available (the planes could not be read)"
    assert cli.json("ckpt", str(tmp_path / "cut.bin"), code=2)["note"] is None


@pytest.mark.parametrize("header_bytes", [0, 384])
def test_a_header_bytes_less_than_the_header_is_said_so_never_a_negative_padding(cli, files, tmp_path, header_bytes):
    """(It was "header_bytes  0 (header 447 bytes, padding -447)".)"""
    raw = bytearray((files / "ck3.bin").read_bytes())
    struct.pack_into("<Q", raw, 16, header_bytes)
    (tmp_path / "hb.bin").write_bytes(raw)
    line = next(line for line in cli.text("ckpt", str(tmp_path / "hb.bin"), code=2).splitlines()
                if line.startswith("  header_bytes"))
    assert line == f"  header_bytes  {header_bytes} (header 447 bytes, {447 - header_bytes} more than header_bytes)"
    refused = cli.json("trace", str(tmp_path / "hb.bin"), "--checkpoints", "a", "b", code=2)["error"]  # (no option)
    assert (refused["option"], refused["text"]) == ("--checkpoints", "--checkpoints: usage: trace: compares two "
                                                    "traces; give A and B")


def test_a_checkpoint_with_two_problems_gets_both_named(cli, files):
    path = files / "two.bin"
    out = cli.text("ckpt", str(path), code=2)
    lines = out.splitlines()
    assert any(line.split()[:2] == ["learner", "MISMATCH"] for line in lines)
    assert "differs in lr 0.5 (bob v1: 0.05)" in out
    assert "problems (2)" in out
    assert any(line.startswith("  1. learner at offset 101:") for line in lines)
    assert any(line.startswith("  2. chunk_table[2].digest at offset 383: plane V") for line in lines)
    assert "verdict: 2 problems: bob-run refuses this checkpoint" in out
    assert "header digest   " in out and "header digest" in out and "MISMATCH (" not in out

    r = cli.json("ckpt", str(path), code=2)
    assert [(p["field"], p["index"], p["kind"]) for p in r["problems"]] == [
        ("learner", None, "contract-mismatch"), ("chunk_table.digest", 2, "integrity")]
    assert all(set(p) == PROBLEM_KEYS for p in r["problems"])
    assert r["problem_count"] == 2 and r["ok"] is False
    assert r["header_digest"]["ok"] is True  # the damage is only the contract...
    assert [c["digest_ok"] for c in r["chunks"]] == [True, True, False]  # ...and plane V
    learner = r["contract"]["fields"]["learner"]
    assert learner["matches"] is False and learner["hyperparameters"]["lr"] == 0.5
    assert learner["hyperparameter_mismatches"] == ["lr"]
    assert all(f["matches"] for n, f in r["contract"]["fields"].items() if n != "learner")


def test_state_problems_are_reported_with_their_counts(cli, files):
    r = cli.json("ckpt", str(files / "state.bin"), code=2)
    assert [(p["field"], p["index"]) for p in r["problems"]] == [("P", 5), ("V", 7)]
    assert r["problems"][0]["actual"] == "nan"  # JSON-safe, not NaN
    assert (r["planes"]["P"]["non_finite"], r["planes"]["P"]["nan"]) == (1, 1)
    assert r["planes"]["V"]["negative"] == 1 and r["planes"]["V"]["min"] == -1.0
    out = cli.text("ckpt", str(files / "state.bin"), code=2)
    assert "1 non-finite value(s) in plane P" in out and "negative value(s) in plane V" in out


def test_control_characters_from_the_file_are_escaped(cli, files, tmp_path):
    hostile = tmp_path / "ck\x1b[31m\x07.bin"
    shutil.copy(files / "evil.bin", hostile)
    for args in (("ckpt", str(hostile)), (str(hostile),), ("diff", str(hostile), str(files / "ck3.bin"))):
        raw = cli.run(*args, code=2).stdout
        assert raw.isascii()
        assert not any(b < 0x20 and b != 0x0A or b == 0x7F for b in raw), raw
        out = raw.decode()
        assert "ck\\x1b[31m\\x07.bin" in out
    out = cli.text("ckpt", str(hostile), code=2)
    assert '"evil\\x1b[2J\\x1b]0;pwned\\x07\\x0d\\x0averdict: OK\\x9b31m\\xe2\\x80\\xae"' in out
    assert '"\\x1b[31mred"' in out
    r = cli.json("ckpt", str(hostile), code=2)
    assert r["contract"]["fields"]["seed"]["value"] == "\\x1b[31mred"
    assert r["contract"]["fields"]["seed"]["hex"] == b"\x1b[31mred".hex()
    assert [p["field"] for p in r["problems"]] == ["state", "seed"]


def test_an_unparsable_header_still_shows_the_fields_read_before_the_problem(cli, files, tmp_path):
    raw = bytearray((files / "ck3.bin").read_bytes())
    raw[158:162] = struct.pack("<I", 5000)  # the data string's length prefix
    path = tmp_path / "long.bin"
    path.write_bytes(raw)
    r = cli.json("ckpt", str(path), code=2)
    assert [f["field"] for f in r["partial_header"]] == ["magic", "version", "header_bytes", "step", "state",
                                                         "learner"]
    assert (r["version"], r["header_bytes"], r["step"], r["invocations"]) == (1, 448, 30, 3)
    assert r["contract"] is None and r["planes"] is None
    assert [(p["field"], p["offset"], p["kind"]) for p in r["problems"]] == [("data", 158, "truncated")]
    out = cli.text("ckpt", str(path), code=2)
    assert "header: unreadable after 'learner' (see the problems); the fields read before it:" in out
    assert "f32[lr=0.05, beta1=0.9, beta2=0.999, eps=1e-08, weight_decay=0.01]" in out
    cut = tmp_path / "cut.bin"  # read no further than the magic: no list of fields read before (it was empty)
    cut.write_bytes(raw[:12])
    assert "header: unreadable after 'magic' (see the problems)\n" in cli.text("ckpt", str(cut), code=2)


def test_a_step_past_whole_invocations_is_said_alike_in_the_step_line_and_the_verdict(cli, tmp_path):
    ck = bob.Checkpoint.fresh()
    ck.step = 33
    ck.write(tmp_path / "s33.bob")
    out = cli.text(str(tmp_path / "s33.bob"))
    assert "  step          33 (3 invocations + 3 updates)\n" in out
    assert "verdict: OK: a valid bob v1 checkpoint at step 33 (3 invocations + 3 updates); " in out


def test_a_heatmap_s_title_gives_the_step_as_the_report_does(cli, tmp_path, monkeypatch):
    import bob.inspect.heatmap

    pytest.importorskip("matplotlib")
    titles = []
    monkeypatch.setattr(bob.inspect.heatmap, "draw_heatmap", lambda plane, path, title: titles.append(title) or
                        (b"png", {"path": str(path)}))
    ck = bob.Checkpoint.fresh()
    ck.step = 33
    ck.write(tmp_path / "s33.bob")
    cli.json(str(tmp_path / "s33.bob"), "--heatmap", str(tmp_path / "h.png"))
    assert titles == ["s33.bob: P at step 33 (3 invocations + 3 updates)"]


def test_verify_s_diagnosis_spells_the_field_as_its_problem_does(cli, tmp_path):
    (tmp_path / "cut.bin").write_bytes((GOLDEN / "checkpoint-abracadabra-step10.bin").read_bytes()[:380])
    out = cli.text("verify", str(tmp_path / "cut.bin"), code=2)
    assert "  - chunk_table[2].length at offset 375: the file ends inside this field" in out
    assert "  = the file ends inside its header, in chunk_table[2].length (at offset 375)\n" in out


def test_a_file_cut_inside_the_magic_reads_as_cut_not_wrong(cli, tmp_path):
    (tmp_path / "cut.bin").write_bytes(b"BOB-C")
    out = cli.text(str(tmp_path / "cut.bin"), code=2)
    assert '  magic         "BOB-C"  cut short (expected "BOB-CKPT")\n' in out and "WRONG" not in out


def test_an_empty_file_is_a_fresh_checkpoint(cli, files):
    r = cli.json(str(files / "empty.bin"))
    assert r["command"] == "bob-inspect checkpoint" and r["auto"] is True and r["fresh"] is True and r["ok"] is True
    assert r["step"] == 0 and r["contract"] is None and r["chunks"] is None
    assert -0.01 <= r["planes"]["P"]["min"] and r["planes"]["P"]["max"] < 0.01
    assert r["planes"]["M"]["zeros"] == r["planes"]["V"]["zeros"] == 65_536
    assert "a fresh run's checkpoint" in cli.text("ckpt", str(files / "empty.bin"))
    # told from no magic: said, since an empty trace, record or predictions file is one too (their commands say so)
    assert r["note"] == ("every empty file is read as a checkpoint; bob-inspect input|predictions|trace FILE reads "
                         "it as one of those")
    assert cli.json("ckpt", str(files / "empty.bin"))["note"] is None


# --------------------------------------------------------------------------- #
# --heatmap
# --------------------------------------------------------------------------- #


def test_heatmap_without_matplotlib_says_how_to_install(cli, files, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    out_png = tmp_path / "h.png"
    out = cli.run("ckpt", str(files / "ck3.bin"), "--heatmap", str(out_png), code=2)
    # In a checkout, the hint is the checkout's bootstrap command (an installed
    # wheel's, pip and bob-fp32: tests/test_wheel.py).
    assert "scripts/bootstrap.sh plot" in out.stderr.decode() and out.stdout == b""
    assert not out_png.exists()


def test_heatmap_of_the_section8_checkpoint_after_3_invocations(cli, files, tmp_path):
    pytest.importorskip("matplotlib")
    out_png = tmp_path / "p-step30.png"
    r = cli.json("ckpt", str(files / "ck3.bin"), "--heatmap", str(out_png))
    data = out_png.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 20_000
    assert r["heatmap"]["format"] == "png"
    assert r["heatmap"]["rows_shown"] == [ord(c) for c in "abcdr"]  # the rows the corpus trains
    assert [p.name for p in tmp_path.iterdir()] == [out_png.name]  # written atomically: no temporary left
    keep = os.environ.get("BOB_INSPECT_HEATMAP_DIR")  # to look at it: set this and run the test
    if keep:
        shutil.copy(out_png, Path(keep) / out_png.name)


def test_a_heatmap_is_drawn_in_matplotlib_s_own_style_whatever_the_user_s_matplotlibrc(cli, files, tmp_path,
                                                                                       monkeypatch):
    """A matplotlibrc with ``text.usetex: True`` where no LaTeX is installed (an ordinary one for a LaTeX user)
    made every heatmap "cannot write .png files here" (exit 2); any rc changed the picture. The same bytes
    now, and the caller's settings as they were."""
    matplotlib = pytest.importorskip("matplotlib")
    plain, styled = tmp_path / "plain.png", tmp_path / "styled.png"
    cli.json("ckpt", str(files / "ck3.bin"), "--heatmap", str(plain))
    monkeypatch.setitem(matplotlib.rcParams, "text.usetex", True)  # (as read from the user's matplotlibrc)
    monkeypatch.setitem(matplotlib.rcParams, "image.cmap", "viridis")
    cli.json("ckpt", str(files / "ck3.bin"), "--heatmap", str(styled))
    assert styled.read_bytes() == plain.read_bytes()
    assert matplotlib.rcParams["text.usetex"] is True and matplotlib.rcParams["image.cmap"] == "viridis"


def test_heatmap_draws_context_bytes_as_rows_and_next_bytes_as_columns(cli, tmp_path, monkeypatch):
    """What the user sees: in the PNG bob-inspect wrote, the whole-table panel
    shows P[context, next] at row ``context`` from the top and column
    ``next`` from the left (a transposed or flipped table fails), positive
    logits red, negative blue, zero white."""
    pytest.importorskip("matplotlib")
    from matplotlib.image import imread

    import bob.inspect.heatmap as heatmap

    table = np.zeros((256, 256), np.float32)
    table[0x00:0x10, 0xE0:0xF0] = 1.0  # contexts 0x00-0x0f favour next bytes 0xe0-0xef
    table[0xE0:0xF0, 0x00:0x10] = -1.0  # and the mirror block is negative
    zeros = np.zeros(table.size, np.float32)
    bob.Checkpoint(10, table.ravel(), zeros, zeros).write(tmp_path / "ck.bin")
    figures = []
    real = heatmap.heatmap_figure

    def keep(*args, **kwargs):
        fig, shown = real(*args, **kwargs)
        figures.append(fig)  # the very figure bob-inspect saves
        return fig, shown

    monkeypatch.setattr(heatmap, "heatmap_figure", keep)
    out_png = tmp_path / "h.png"
    cli.json("ckpt", str(tmp_path / "ck.bin"), "--heatmap", str(out_png))
    (fig,) = figures
    full = fig.axes[0]
    assert np.array_equal(np.asarray(full.images[0].get_array()), table)  # the array behind the picture

    image = imread(out_png)  # (height, width, RGBA), first row at the top
    height = image.shape[0]
    box = full.get_window_extent()  # pixels of the saved figure, origin at the bottom left

    def colour(context: int, next_byte: int):
        x = box.x0 + (next_byte + 0.5) * box.width / 256
        y = box.y1 - (context + 0.5) * box.height / 256
        return image[int(height - y), int(x), :3]

    red, blue, white = colour(0x08, 0xE8), colour(0xE8, 0x08), colour(0x80, 0x80)
    assert red[0] > 0.4 and red[2] < 0.2, red
    assert blue[2] > 0.3 and blue[0] < 0.1, blue
    assert white.min() > 0.9, white


def test_a_heatmap_of_values_at_flt_max_draws_without_a_word_on_stderr(tmp_path):
    """A row at FLT_MAX (a valid checkpoint) put numpy and matplotlib overflow warnings on stderr, four
    lines naming their files, and under PYTHONWARNINGS=error ended the command with exit 70."""
    pytest.importorskip("matplotlib")
    import subprocess

    table = np.zeros((256, 256), np.float32)
    table[0x63] = np.finfo(np.float32).max
    zeros = np.zeros(table.size, np.float32)
    bob.Checkpoint(10, table.ravel(), zeros, zeros).write(tmp_path / "ck.bin")
    for warnings in ("default", "error"):
        run = subprocess.run([sys.executable, "-m", "bob", "inspect", "--json", "checkpoint", str(tmp_path / "ck.bin"),
                              "--heatmap", str(tmp_path / "h.png")], capture_output=True, timeout=120,
                             env={**os.environ, "PYTHONWARNINGS": warnings})
        assert (run.returncode, run.stderr) == (0, b""), run.stderr[-500:]
        assert (tmp_path / "h.png").read_bytes().startswith(b"\x89PNG")


def test_a_home_matplotlib_cannot_write_puts_no_word_of_it_on_stderr(files, tmp_path):
    """With HOME where nothing can be made, matplotlib's two lines about its configuration directory came
    before bob-inspect's one refusal line (and on a heatmap drawn, on an empty stderr); its temporary
    directory in their place is still removed as the command ends."""
    pytest.importorskip("matplotlib")
    import subprocess

    (tmp_path / "tmp").mkdir()
    (tmp_path / "adir").mkdir()
    env = {key: value for key, value in os.environ.items() if key not in ("MPLCONFIGDIR", "XDG_CONFIG_HOME",
                                                                          "XDG_CACHE_HOME")}
    env.update(HOME="/proc/no-such-home", TMPDIR=str(tmp_path / "tmp"))
    for target, code, err in (("adir", 2, f"bob-inspect: refused: --heatmap {tmp_path / 'adir'}: a directory, "
                                          "not a regular file\n"), ("h.png", 0, "")):
        run = subprocess.run([sys.executable, "-m", "bob", "inspect", "checkpoint", str(files / "ck3.bin"),
                              "--heatmap", str(tmp_path / target)], capture_output=True, text=True, timeout=120,
                             env=env)
        assert (run.returncode, run.stderr) == (code, err)
    assert (tmp_path / "h.png").read_bytes().startswith(b"\x89PNG") and list((tmp_path / "tmp").iterdir()) == []


def test_heatmap_cell_labels_are_short_at_flt_max_and_show_a_subnormal():
    """The zoom labels each cell with its logit: FLT_MAX was 43 characters of digits across its
    neighbours, and a subnormal read 0.00, like a zero."""
    pytest.importorskip("matplotlib")
    from bob.inspect.heatmap import heatmap_figure

    table = np.zeros((256, 256), np.float32)
    table[0x63, 0x61], table[0x63, 0x62] = np.finfo(np.float32).max, 1e-45  # rows c and d favour a and b
    table[0x64, 0x61], table[0x64, 0x62] = -0.5, 2.0
    fig, shown = heatmap_figure(table, "t")
    labels = {t.get_text().split("\n")[0] for ax in fig.axes[1:] for t in ax.texts}
    assert shown["rows_shown"] == [0x63, 0x64] and labels == {"3.4e+38", "1.4e-45", "-0.5", "2"}, labels
    assert max(map(len, labels)) <= 9, labels


def test_a_heatmap_format_whose_program_is_missing_is_refused_naming_the_option(cli, files, tmp_path, monkeypatch):
    """.pgf is among the formats the refusal of an unknown one lists, and needs LaTeX: without it,
    matplotlib's RuntimeError was "unexpected", exit 70, the report lost."""
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("PATH", str(tmp_path))  # no xelatex to be found
    out = cli.run("ckpt", str(files / "ck3.bin"), "--heatmap", str(tmp_path / "h.pgf"), code=2)
    err = out.stderr.decode()
    assert err.startswith(f"bob-inspect: refused: --heatmap {tmp_path / 'h.pgf'}: cannot write .pgf files here: ")
    assert "xelatex" in err and err.count("\n") == 1 and out.stdout == b"" and list(tmp_path.iterdir()) == []


def test_heatmap_into_a_directory_is_refused(cli, files, tmp_path):
    pytest.importorskip("matplotlib")
    target = tmp_path / "adir.png"
    target.mkdir()
    out = cli.run("ckpt", str(files / "ck3.bin"), "--heatmap", str(target), code=2)
    err = out.stderr.decode()
    assert err.count("\n") == 1 and "--heatmap" in err and str(target) in err and out.stdout == b""
    assert target.is_dir() and not any(target.iterdir())


def test_plane_means_and_norms_are_summed_exactly_so_every_machine_prints_the_same():
    """The mean and L2 norm equal exact rational arithmetic rounded once (the sum) and once
    more (the division, the square root): no summation order of NumPy's or the BLAS's shows."""
    from fractions import Fraction

    from bob.formats.constants import VOCABULARY
    from bob.formats.layout import CANONICAL_HEADER_BYTES
    from bob.inspect.checkpoint import plane_stats

    big = np.float32(1e30)
    planes = [np.array([big, 1.0, -big], dtype=np.float32),  # summed in order: 0, not 1/3
              np.array([np.finfo(np.float32).max, np.float32(1e-45), np.nan, -np.inf, -0.0], dtype=np.float32),
              np.frombuffer((GOLDEN / "checkpoint-abracadabra-step10.bin").read_bytes(), "<f4",
                            count=VOCABULARY * VOCABULARY, offset=CANONICAL_HEADER_BYTES)]
    for plane in planes:
        finite = [Fraction(float(x)) for x in plane[np.isfinite(plane)]]
        stats = plane_stats(plane)
        assert stats["mean"] == float(sum(finite)) / len(finite)
        assert stats["l2_norm"] == math.sqrt(float(sum(x * x for x in finite)))
    assert plane_stats(planes[0])["mean"] == 1 / 3


@pytest.mark.parametrize("even, odd, low, high", [("+", "-", "-", "+"), ("-", "+", "-", "+"), ("+", "+", "+", "+"),
                                                   ("-", "-", "-", "-")])
def test_a_zero_min_or_max_has_the_sign_a_zero_of_the_plane_has(even, odd, low, high):
    """NumPy's min and max give whichever tied zero they meet last: a P of +0.0 and -0.0 alternating was said
    to have max -0 (bob-inspect checkpoint, Checkpoint.as_dict) or min 0, by the order of its values."""
    from bob.inspect.checkpoint import plane_stats

    plane = np.zeros(65536, np.float32)
    plane[0::2], plane[1::2] = float(even + "0"), float(odd + "0")
    summary = bob.Checkpoint(10, plane, np.zeros_like(plane), np.zeros_like(plane)).as_dict()["planes"]["P"]
    for said in (plane_stats(plane), summary):
        assert [math.copysign(1, said[k]) for k in ("min", "max")] == [float(low + "1"), float(high + "1")]


def test_a_checkpoint_without_rows_does_not_import_decimal():
    """decimal (about a millisecond) is the --rows softmax's alone: the probabilities are
    computed in it, and a checkpoint shown without --rows shows none."""
    import subprocess

    script = ("import sys\nfrom bob.inspect.cli import main\n"
              f"rc = main(['checkpoint', {str(GOLDEN / 'checkpoint-abracadabra-step10.bin')!r}, '--json'])\n"
              "print('decimal' in sys.modules, file=sys.stderr)\nsys.exit(rc)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0 and out.stderr.splitlines()[-1] == "False", out.stderr


@pytest.mark.parametrize("value, said", [(0.0, "no row has left the initialization (|P| <= 0.01)"),
                                         (np.nan, "no row has a finite value past the initialization (|P| > 0.01)")])
def test_an_empty_zoom_says_why(value: float, said: str) -> None:
    """A table of NaN was said to be one whose rows never left the initialization."""
    pytest.importorskip("matplotlib")
    from bob.inspect.heatmap import heatmap_figure

    fig, shown = heatmap_figure(np.full(256 * 256, value, np.float32), "P")
    assert [t.get_text() for t in fig.axes[1].texts] == [said] and shown["rows_shown"] == []


def test_the_heatmap_zoom_keeps_a_row_near_flt_max() -> None:
    """A row of FLT_MAX values (one cell 3e38) favoured no column: its float32 median overflowed to inf, and the
    midpoint was NaN; the same row scaled to 1.0 and 0.9 favoured 32."""
    from bob.inspect.heatmap import MAX_ZOOM_COLUMNS, favoured_columns

    table = np.zeros((256, 256), np.float32)
    table[0x7A] = np.finfo(np.float32).max
    table[0x7A, 5] = 3e38
    assert favoured_columns(table, np.array([0x7A])).size == MAX_ZOOM_COLUMNS
    assert 5 not in favoured_columns(table, np.array([0x7A]))
