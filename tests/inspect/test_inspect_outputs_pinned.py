"""Every ``bob-inspect`` output, byte for byte: each subcommand's text and ``--json``
over valid, damaged and refused files, with its exit code and stderr, held
against ``outputs_pinned.json`` (written by ``BOB_PIN_OUTPUTS=1 pytest THIS_FILE``
only when an output is meant to change).

The files are built here from the library (deterministic) and named relative
to the working directory, so no temporary path reaches an output.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

import bob
from bob.formats.checkpoint import Checkpoint
from bob.formats.constants import MAX_CHECKPOINT_BYTES, TRACE_UPDATES
from bob.formats.constants import LEARNER_PREFIX
from bob.formats.contract import Contract
from bob.formats.layout import CANONICAL_HEADER_BYTES
from bob.formats.trace import contract_sha256

from conftest import CHUNK, GOLDEN, Cli

PINNED = Path(__file__).with_name("outputs_pinned.json")
HB = CANONICAL_HEADER_BYTES
REFUSED = ("checkpoint-header-long-prefix", "checkpoint-header-wrong-learner", "input-bad-prompt-words",
           "input-truncated", "input-wrong-target", "predictions-bad")


def build(d: Path) -> None:
    """The files the command lines below name."""
    rec = bob.build_input(b"abracadabra", [b"abra", b"cad", b""])
    rec.write(d / "rec.bin")
    bob.build_input(bytes(range(0, 256, 3)), [b"\x00\xff", b"", b"z"]).write(d / "bin.bin")
    ck: bytes | Checkpoint = b""
    for k in (1, 2, 3):
        step = bob.invoke(rec, ck, trace=True)
        ck = step.checkpoint
        (d / f"ck{k}.bin").write_bytes(step.checkpoint_bytes())
        (d / f"run{k}.trace").write_bytes(step.trace_bytes())
    (d / "pred.bin").write_bytes(step.predictions_bytes())
    (d / "empty.bin").write_bytes(b"")
    raw = (d / "ck3.bin").read_bytes()
    learner = LEARNER_PREFIX + struct.pack("<5f", 0.5, 0.9, 0.999, 1e-8, 0.01)
    two = bytearray(Checkpoint(ck.step, ck.p, ck.m, ck.v, contract=Contract(learner=learner)).to_bytes(
        for_resume=False))
    two[HB + 2 * CHUNK + 400] ^= 0x01
    (d / "two.bin").write_bytes(two)
    evil = Contract(state=b"evil\x1b[2J\x07\r\nverdict: OK\x9b31m\xe2\x80\xae", seed=b"\x1b[31m$red$")
    (d / "evil.bin").write_bytes(Checkpoint(ck.step, ck.p, ck.m, ck.v, contract=evil, header_bytes=HB + 512)
                                 .to_bytes(for_resume=False))
    (d / "wide.bin").write_bytes(Checkpoint(ck.step, ck.p, ck.m, ck.v, header_bytes=HB + 64).to_bytes())
    one = ck.copy()
    one.p[97 * 256 + 98] = np.nextafter(np.nextafter(one.p[97 * 256 + 98], np.float32(9)), np.float32(9))
    one.m[3] = -one.m[3] - 1
    (d / "one.bin").write_bytes(one.to_bytes(for_resume=False))
    bad = ck.copy()
    bad.p[5] = np.nan
    bad.p[300] = np.inf
    bad.v[7] = -1.0
    (d / "state.bin").write_bytes(bad.to_bytes(for_resume=False))
    (d / "cut_header.bin").write_bytes(raw[:150])
    (d / "cut_plane.bin").write_bytes(raw[:HB + CHUNK + 1000])
    (d / "cut_tiny.bin").write_bytes(raw[:5])
    (d / "badmagic.bin").write_bytes(b"BOB-CKPX" + raw[8:])
    swapped = bytearray(raw)
    swapped[HB:HB + CHUNK], swapped[HB + CHUNK:HB + 2 * CHUNK] = raw[HB + CHUNK:HB + 2 * CHUNK], raw[HB:HB + CHUNK]
    (d / "swapped.bin").write_bytes(swapped)
    rotated = bytearray(raw)
    p, m, v = (raw[HB + i * CHUNK:HB + (i + 1) * CHUNK] for i in range(3))
    rotated[HB:] = m + v + p
    (d / "rotated.bin").write_bytes(rotated)
    digest = bytearray(raw)
    digest[HB - 40] ^= 0xFF
    (d / "digest.bin").write_bytes(digest)
    (d / "long.bin").write_bytes(raw + b"\0" * 10)
    with open(d / "big.bin", "wb") as f:
        f.truncate(MAX_CHECKPOINT_BYTES + 1)
    with open(d / "bigpred.bin", "wb") as f:
        f.write(b"BOB-INPT")
        f.truncate(MAX_CHECKPOINT_BYTES + 9)
    (d / "noise.bin").write_bytes(b"hello \x1b[31m world" * 3)
    (d / "pred_long.bin").write_bytes(step.predictions_bytes() + b"\1\0\0\0")
    (d / "pred_bad.bin").write_bytes(struct.pack("<6I", 300, 1, 7, 2, 0, 0))
    (d / "rec_cut.bin").write_bytes(rec.to_bytes()[:700])
    flipped = bytearray(rec.to_bytes())
    flipped[-4] ^= 0x40
    (d / "rec_flip.bin").write_bytes(flipped)
    for name in REFUSED:
        shutil.copy(GOLDEN / "refused" / f"{name}.bin", d / f"{name}.bin")
    hand = tuple((21 + i, 2.0 - i / 8, (bytes([i]) * 16, bytes([i + 1]) * 16, bytes([i + 2]) * 16))
                 for i in range(TRACE_UPDATES))
    trace = bob.Trace(contract_sha256(), b"\x22" * 32, 20, (b"\x33" * 16,) * 3, hand).to_bytes()
    (d / "hand.trace").write_bytes(trace)
    (d / "cut.trace").write_bytes(trace[:70])
    damaged = bytearray(trace)
    damaged[9] ^= 1
    (d / "bad.trace").write_bytes(damaged)
    a = bob.invoke(rec, trace=True)
    other = a.checkpoint.copy()
    other.p[1234] = np.nextafter(other.p[1234], np.float32(1))
    entries = list(a.trace.entries)
    entries[-1] = entries[-1]._replace(digests=(bob.core.xxh3_128_each([other.p])[0],) + entries[-1].digests[1:])
    bob.Trace(a.trace.contract_sha256, a.trace.input_sha256, 0, a.trace.start, tuple(entries)).write(d / "b.trace")
    other.write(d / "b.ck")
    (d / "sub").mkdir()


CKPTS = ("ck1.bin", "ck3.bin", "empty.bin", "two.bin", "evil.bin", "wide.bin", "one.bin", "state.bin",
         "cut_header.bin", "cut_plane.bin", "cut_tiny.bin", "badmagic.bin", "swapped.bin", "digest.bin", "long.bin",
         "big.bin", "checkpoint-header-long-prefix.bin", "checkpoint-header-wrong-learner.bin")
INPUTS = ("rec.bin", "bin.bin", "rec_cut.bin", "rec_flip.bin", "input-bad-prompt-words.bin", "input-truncated.bin",
          "input-wrong-target.bin", "ck1.bin", "big.bin")
PREDS = ("pred.bin", "pred_long.bin", "pred_bad.bin", "predictions-bad.bin", "rec.bin", "empty.bin", "bigpred.bin")
AUTO = ("ck3.bin", "empty.bin", "rec.bin", "pred.bin", "hand.trace", "bad.trace", "cut.trace", "noise.bin",
        "state.bin", "cut_tiny.bin", "missing.bin", "sub", "big.bin", "pred_bad.bin")
LINES: list[list[str]] = [
    *(["ckpt", f] for f in CKPTS), *(["input", f] for f in INPUTS), *(["pred", f] for f in PREDS),
    *([f] for f in AUTO),
    ["checkpoint", "ck3.bin", "--rows", "abc", "--rows-hex", "0x00,ff 61"], ["ck3.bin", "--rows", "ra"],
    ["state.bin", "--rows-hex", "00 01 02"], ["ckpt", "cut_plane.bin", "--rows", "a"],
    ["ckpt", "empty.bin", "--rows", "a"], ["ckpt", "ck3.bin", "--rows-hex", "zz"], ["rec.bin", "--rows", "a"],
    ["pred.bin", "--export", "x.npz"], ["noise.bin", "--rows", "a"],
    ["ckpt", "ck3.bin", "--export", "out.npz"], ["ckpt", "ck3.bin", "--export", "out.safetensors"],
    ["ckpt", "empty.bin", "--export", "fresh.npz"], ["ckpt", "two.bin", "--export", "no.npz"],
    ["ckpt", "ck3.bin", "--export", "out.txt"], ["ckpt", "ck3.bin", "--export", "ck3.bin"],
    ["ckpt", "ck3.bin", "--export", "sub/"], ["ckpt", "ck3.bin", "--export", "nodir/x.npz"],
    ["ckpt", "ck3.bin", "--heatmap", "heat.png"], ["state.bin", "--heatmap", "heat2.png"],
    ["ckpt", "cut_plane.bin", "--heatmap", "heat3.png"], ["ckpt", "ck3.bin", "--heatmap", "ck3.bin"],
    ["ckpt", "ck3.bin", "--heatmap", "heat.xyz"],
    ["diff", "ck1.bin", "ck2.bin"], ["diff", "ck3.bin", "one.bin"], ["diff", "ck3.bin", "one.bin", "--ulp", "3"],
    ["diff", "ck3.bin", "one.bin", "--atol", "1e-3"], ["diff", "ck3.bin", "one.bin", "--ulp", "2", "--atol", "1e-9"],
    ["diff", "ck3.bin", "two.bin"], ["diff", "empty.bin", "ck1.bin"], ["diff", "ck3.bin", "wide.bin"],
    ["diff", "ck3.bin", "ck3.bin"], ["diff", "ck3.bin", "evil.bin"], ["diff", "cut_header.bin", "ck1.bin"],
    ["diff", "ck3.bin", "state.bin"], ["diff", "cut_plane.bin", "ck3.bin"], ["diff", "ck3.bin", "missing.bin"],
    ["diff", "big.bin", "ck3.bin"], ["diff", "ck3.bin", "--ulp", "-1", "one.bin"],
    *(["diff", "--diffable", a, b] for a, b in (("ck1.bin", "ck2.bin"), ("ck3.bin", "one.bin"), ("ck3.bin", "wide.bin"),
                                               ("ck3.bin", "ck3.bin"), ("ck3.bin", "two.bin"), ("empty.bin", "ck1.bin"),
                                               ("cut_header.bin", "ck1.bin"), ("ck3.bin", "evil.bin"))),
    ["trace", "run1.trace", "run1.trace"], ["trace", "run1.trace", "b.trace"],
    ["trace", "run1.trace", "b.trace", "--checkpoints", "ck1.bin", "b.ck"],
    ["trace", "run1.trace", "run1.trace", "--checkpoints", "b.ck", "ck1.bin"], ["trace", "run1.trace", "run2.trace"],
    ["trace", "run1.trace", "cut.trace"], ["trace", "run1.trace", "ck1.bin"], ["trace", "missing.trace", "b.trace"],
    ["trace", "hand.trace"], ["trace", "bad.trace"], ["trace", "cut.trace", "--checkpoints", "a", "b"],
    ["verify", "ck1.bin"], ["verify", "ck1.bin", "swapped.bin", "rotated.bin", "cut_plane.bin", "cut_header.bin",
                            "digest.bin", "missing.bin", "sub", "empty.bin", "two.bin", "state.bin", "big.bin"],
    ["schema"], ["schema", "input"], ["schema", "ckpt"], ["schema", "checkpoint"], ["schema", "envelope"],
    ["schema", "pred"], ["schema", "predictions"], ["schema", "trace"], ["schema", "bogus\x1b"],
    [], ["--debug"], ["ckpt"], ["ckpt", "a", "b"], ["bogus", "x"], ["ckpt", "--", "ck1.bin"],
    ["--debug", "ckpt", "ck1.bin"], ["ckpt", "ck1.bin", "--debug", "--debug"],
]


def _outputs(cli: Cli, line: list[str]) -> list[dict]:
    out = []
    for argv in (line, [*line, "--json"]):
        ran = cli.run(*argv, code=None)
        out.append({"argv": argv, "code": ran.code, "stdout": ran.stdout.decode(), "stderr": ran.stderr.decode()})
    return out


def test_every_output_is_as_pinned(tmp_path: Path, capsysbinary, monkeypatch) -> None:
    pytest.importorskip("matplotlib")
    pytest.importorskip("safetensors")
    build(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "100")
    cli = Cli(capsysbinary)
    got = [o for line in LINES for o in _outputs(cli, line)]
    if os.environ.get("BOB_PIN_OUTPUTS") == "1":
        PINNED.write_text(json.dumps(got, indent=1, ensure_ascii=True) + "\n", encoding="ascii")
    want = json.loads(PINNED.read_text(encoding="ascii"))
    assert [o["argv"] for o in got] == [o["argv"] for o in want]
    for g, w in zip(got, want):
        assert g == w, g["argv"]
