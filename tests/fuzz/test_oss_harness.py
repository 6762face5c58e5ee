"""The OSS-Fuzz harnesses ``python -m bob.fuzz.oss`` writes are the campaign's worker with its
spec written in: each is valid Python naming its target, and one runs under libFuzzer (atheris)
for a few hundred inputs, its dictionary given, exiting 0."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bob.fuzz.oss import write
from bob.fuzz.targets import TARGETS

from conftest import ROOT

needs_atheris = pytest.mark.skipif(__import__("importlib.util").util.find_spec("atheris") is None,
                                   reason="atheris is the optional fuzz extra (scripts/bootstrap.sh test,fuzz)")


def test_a_harness_per_target_with_its_spec_written_in(tmp_path: Path) -> None:
    fuzzers = write(tmp_path / "harnesses", tmp_path / "out", ROOT)
    assert fuzzers == [f"fuzz_{name}" for name in TARGETS]
    for name in TARGETS:
        text = (tmp_path / "harnesses" / f"fuzz_{name}.py").read_text()
        compile(text, f"fuzz_{name}.py", "exec")
        assert f"spec = {{'target': {name!r}, 'argv': sys.argv}}" in text
        assert "json.loads(sys.argv[1])" not in text  # the campaign's spec, replaced
        assert (tmp_path / "out" / f"fuzz_{name}.dict").is_file()


@needs_atheris
def test_a_harness_fuzzes_its_target(tmp_path: Path) -> None:
    write(tmp_path / "harnesses", tmp_path / "out", ROOT)
    env = {**os.environ, "PYTHONPATH": str(Path(__import__("bob").__file__).resolve().parent.parent)}
    done = subprocess.run([sys.executable, str(tmp_path / "harnesses" / "fuzz_input.py"), "-runs=300",
                           f"-dict={tmp_path / 'out' / 'fuzz_input.dict'}"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Done 300 runs" in done.stderr
