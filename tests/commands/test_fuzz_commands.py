"""Format fuzzing through the commands, in process: mutated records and
checkpoints (with and without their digests made to agree again) given to
bob-run and bob-inspect. bob-run either refuses with exit 2, leaving the
checkpoint byte-identical and no predictions, or runs and writes exactly what
the library computes; bob-inspect only ever exits 0 or 2, with no traceback
and no raw control character in what it prints."""

from __future__ import annotations

import contextlib
import io
import random
from pathlib import Path

import bob
from conftest import GOLDEN
import bob.core
from bob.fuzz import mutate, refresh_digests
from bob.inspect import main as inspect_main
from bob.run import main as run_main



def quietly(fn, argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = fn(argv)
        except SystemExit as exc:  # argparse
            rc = exc.code
    return rc, out.getvalue(), err.getvalue()


def test_bob_run_on_mutated_files(tmp_path: Path) -> None:
    checkpoint = (GOLDEN / "checkpoint-abracadabra-step10.bin").read_bytes()
    record = (GOLDEN / "input-abracadabra.bin").read_bytes()
    ck, rec, pred = tmp_path / "ck.bin", tmp_path / "rec.bin", tmp_path / "pred.bin"
    rnd = random.Random(20261129)
    outcomes = {0: 0, 2: 0}
    for _ in range(150):
        c, r = checkpoint, record
        if rnd.random() < 0.6:
            c = mutate(checkpoint, rnd)
            if rnd.random() < 0.5:
                c = refresh_digests(c)
        else:
            r = mutate(record, rnd)
        ck.write_bytes(c)
        rec.write_bytes(r)
        pred.unlink(missing_ok=True)
        rc, _, err = quietly(run_main, ["--input", str(rec), "--checkpoint", str(ck), "--predictions", str(pred)])
        assert rc in (0, 2), err
        assert "Traceback" not in err
        outcomes[rc] += 1
        if rc == 2:
            assert ck.read_bytes() == c and not pred.exists()
        else:
            assert ck.read_bytes() == bob.invoke(r, c).checkpoint_bytes()
    assert outcomes[2] > 100


def test_bob_inspect_on_mutated_files(tmp_path: Path) -> None:
    seeds = [p.read_bytes() for p in sorted(GOLDEN.glob("*.bin"))]
    path = tmp_path / "f.bin"
    rnd = random.Random(7)
    for _ in range(120):
        seed = rnd.choice(seeds)
        data = mutate(seed, rnd)
        path.write_bytes(data)
        for argv in ([str(path)], [str(path), "--json"], ["ckpt", str(path)], ["input", str(path)], ["pred", str(path)]):
            rc, out, err = quietly(inspect_main, argv)
            assert rc in (0, 2), (argv, err)
            assert "Traceback" not in err
            assert not any(ord(ch) < 32 and ch != "\n" for ch in out), argv
