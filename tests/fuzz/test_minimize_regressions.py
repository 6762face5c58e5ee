"""``bob-fuzz minimize`` shrinks the 786,880-byte regressions (issue 23 item 6).

fuzz/regressions/inspect holds the checkpoint with which the inspect target
found that ``f32_text`` overflowed near FLT_MAX. With that bug put back
(``convention_targets:inspect_before_the_fix``) the file fails again, and
minimize must reduce it, in a bounded number of out-of-process tries, to a
file with the same failure: the same key and the same message, and one the
fixed code passes (the regression is still that bug and no other). A
checkpoint's size is fixed by its header, so what shrinks is the content:
from 786,880 bytes of trained state to the few bytes the failure needs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bob.fuzz.cli import main
from bob.fuzz.replay import failure_of, read_input
from bob.fuzz.targets import inspect_target

HERE = Path(__file__).resolve().parent
TARGETS_DIR = HERE.parent / "commands"  # convention_targets.py
REGRESSION = HERE.parents[1] / "fuzz" / "regressions" / "inspect" / "inspect-443ddb58a0611de9.bin"
PLANTED = "convention_targets:inspect_before_the_fix"
MAX_TRIES = 80


@pytest.fixture
def targets_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(TARGETS_DIR))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TARGETS_DIR), os.environ.get("PYTHONPATH", "")]))


def test_minimize_shrinks_the_786_kb_checkpoint_regression(tmp_path: Path, targets_on_path, capsys) -> None:
    import convention_targets

    original = read_input(REGRESSION)
    assert len(original) == 786_880 and len(original) - original.count(0) > 250_000  # a trained state
    planted_failure = failure_of(convention_targets.inspect_before_the_fix, original)
    assert planted_failure is not None and "OverflowError" in planted_failure
    out = tmp_path / "small.bin"
    code = main(["minimize", str(REGRESSION), "--target", PLANTED, "--max-tries", str(MAX_TRIES),
                 "--output", str(out), "--json"])
    document = json.loads(capsys.readouterr().out)
    assert code == 0 and document["ok"] is True
    small = out.read_bytes()
    assert document["tries"] <= MAX_TRIES + 2  # the input run alone, the candidates, the result run alone
    assert document["input_nonzero_bytes"] == len(original) - original.count(0)
    # of 786,880 bytes: 64 and the four digests (4 x 32), made its own where a candidate needs them to fail so
    assert document["output_nonzero_bytes"] == len(small) - small.count(0) <= 64 + 4 * 32
    # the same finding: the same key (what minimize keeps), the same message, and gone with the fix
    assert document["failure"].startswith("PropertyFailed at ")
    assert failure_of(convention_targets.inspect_before_the_fix, small) == planted_failure
    assert failure_of(inspect_target, small) is None
