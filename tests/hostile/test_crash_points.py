"""SIGKILL at every point of a commit, deterministically (issue 13).

A child process (:func:`bob.fuzz.faults.before_os_call`, the mechanism the
``run`` fuzz target uses in process) wraps the ``os`` calls a commit makes (open, write, fsync,
fchmod, replace, rename, link, unlink, close) and kills itself with SIGKILL
just before the k-th one; the test runs k = 1, 2, … until a run completes.
After every kill the files must be the old ones or the new ones, whole:
a writer that replaced files in place would leave a truncated file at the
kill before its first write, and one that wrote the checkpoint before the
predictions would leave a new checkpoint beside old predictions.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

import bob
import bob.run
from bob.fuzz.faults import COMMIT_CALLS, before_os_call  # noqa: F401 - test_signals.py imports them from here
from conftest import CORPUS, PROMPTS

KILLER = before_os_call("signal.SIGKILL")

RUN = KILLER + """
from bob.run import main
sys.exit(main(sys.argv[2:]))
"""

WRITE = KILLER + """
import bob
bob.write_atomic(sys.argv[2], bytes.fromhex(sys.argv[3]))
"""

MAX_POINTS = 200  # far more os calls than one commit makes; a loop that never completes fails


def kill_at_every_point(script: str, args: list[str], check) -> int:
    """Run ``script`` killed before its k-th os call for k = 1, 2, … until it
    exits by itself; call ``check(k)`` after each kill. Returns the number of kills."""
    for k in range(1, MAX_POINTS):
        proc = subprocess.run([sys.executable, "-c", script, str(k), *args], capture_output=True)
        if proc.returncode != -signal.SIGKILL:
            assert proc.returncode == 0, proc.stderr.decode()
            return k - 1
        check(k)
    pytest.fail(f"the child was still being killed after {MAX_POINTS} os calls")


def temporaries(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir() if ".bob-tmp-" in p.name]


@pytest.mark.parametrize("resumed", [False, True], ids=["fresh", "resumed"])
def test_bob_run_killed_at_every_os_call_loses_nothing(tmp_path: Path, resumed: bool) -> None:
    record = bob.build_input(CORPUS, PROMPTS)
    record.write(tmp_path / "rec.bin")
    ck, pred = tmp_path / "ck.bin", tmp_path / "pred.bin"
    old_ck = bob.invoke(record.to_bytes()).checkpoint_bytes() if resumed else None
    old_pred = b"old predictions, to be replaced whole" if resumed else None
    after = bob.invoke(record.to_bytes(), old_ck or b"")
    new_ck, new_pred = after.checkpoint_bytes(), after.predictions_bytes()
    seen = set()

    def reset() -> None:
        for path, data in ((ck, old_ck), (pred, old_pred)):
            if data is None:
                path.unlink(missing_ok=True)
            else:
                path.write_bytes(data)

    def check(k: int) -> None:
        ck_now = ck.read_bytes() if ck.exists() else None
        pred_now = pred.read_bytes() if pred.exists() else None
        assert ck_now in (old_ck, new_ck), f"kill {k}: the checkpoint is neither the old nor the new one"
        assert pred_now in (old_pred, new_pred), f"kill {k}: the predictions are neither the old nor the new ones"
        ck_was_new, pred_is_new = ck_now == new_ck, pred_now == new_pred
        # The predictions are committed first: a new checkpoint never sits
        # beside old predictions.
        assert pred_is_new or not ck_was_new, f"kill {k}: a new checkpoint beside the old predictions"
        seen.add((ck_was_new, pred_is_new))
        # The next run (in this process, as test_signals.py's) cleans up after the killed one and commits as if
        # nothing happened.
        assert bob.run.main(argv) == 0, f"kill {k}: the next run failed"
        if not ck_was_new:
            assert ck.read_bytes() == new_ck and pred.read_bytes() == new_pred
        assert temporaries(tmp_path) == [], f"kill {k}"
        reset()

    argv = ["--input", str(tmp_path / "rec.bin"), "--checkpoint", str(ck), "--predictions", str(pred)]
    reset()
    kills = kill_at_every_point(RUN, argv, check)
    assert ck.read_bytes() == new_ck and pred.read_bytes() == new_pred
    # The schedule reached every stage of the commit: nothing written yet,
    # predictions written but not the checkpoint, both written.
    assert seen == {(False, False), (False, True), (True, True)}, (kills, seen)


@pytest.mark.parametrize("existed", [False, True], ids=["new-file", "replaced-file"])
def test_write_atomic_killed_at_every_os_call_leaves_old_or_new(tmp_path: Path, existed: bool) -> None:
    path = tmp_path / "target"
    old, new = (b"old " * 1000 if existed else None), b"new " * 1000

    def check(k: int) -> None:
        now = path.read_bytes() if path.exists() else None
        what = "gone" if now is None else f"{len(now)} bytes, neither the old nor the new ones"
        assert now in (old, new), f"kill {k}: the file is {what}"
        if old is not None:
            path.write_bytes(old)
        else:
            path.unlink(missing_ok=True)
        bob.clean_stale_temporaries(path)
        assert temporaries(tmp_path) == []

    if old is not None:
        path.write_bytes(old)
    kills = kill_at_every_point(WRITE, [str(path), new.hex()], check)
    assert kills >= 4  # create, write, fsync, replace at least
    assert path.read_bytes() == new
