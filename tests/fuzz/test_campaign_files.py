"""Everything a campaign writes goes through bob's file mechanism (issue 23 item 3).

The corpus, the seeds, the findings, the conformance corpus and the worker
logs are written with :func:`bob.fileio.write_atomic` and read with bob's
bounded reader; the only other file operation is removing the campaign's own
scratch directories. A worker's log replaces the last one whole, so an old
log survives a failed write.
"""

from __future__ import annotations

import errno
import importlib.util
from pathlib import Path

import pytest

import bob.fileio

HERE = Path(__file__).resolve().parent
FUZZ = HERE.parents[1] / "python" / "bob" / "fuzz"
CAMPAIGN_MODULES = ("campaign.py", "replay.py", "cli.py", "conformance.py", "common.py", "loop.py")
# (module, call): the campaign's own scratch directories (ARTIFACTS/.logs/scratch-<pid>-…) and the
# minimizer's workers' TMPDIR, removed whole.
ALLOWED = {("campaign.py", "shutil.rmtree(d, ignore_errors=True)"),
           ("replay.py", "shutil.rmtree(runner.tmp, ignore_errors=True)")}


def _file_access(monkeypatch: pytest.MonkeyPatch):
    """tests/house's finder of file access outside bob.fileio (one home for that rule's reading)."""
    monkeypatch.syspath_prepend(str(HERE.parent / "house"))  # its sources.py
    spec = importlib.util.spec_from_file_location("house_claims", HERE.parent / "house" / "test_claims.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.file_access


def test_the_campaign_modules_touch_files_only_through_fileio(monkeypatch: pytest.MonkeyPatch) -> None:
    file_access = _file_access(monkeypatch)
    found = [f"{name}:{line}: {src}" for name in CAMPAIGN_MODULES for line, src in file_access(FUZZ / name)
             if (name, src) not in ALLOWED]
    assert not found, "file access outside bob.fileio:\n" + "\n".join(found)


def test_an_old_worker_log_survives_a_failed_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("atheris", reason="atheris is the optional fuzz extra (scripts/bootstrap.sh test,fuzz)")
    from bob.fuzz.campaign import run_campaign

    artifacts = tmp_path / "artifacts"
    (artifacts / ".logs").mkdir(parents=True)
    log = artifacts / ".logs" / "predictions-worker0.log"
    log.write_bytes(b"the last campaign's log\n")
    real_stage = bob.fileio.stage

    def full_disk(target: str, data):
        if target.endswith("-worker0.log"):
            raise OSError(errno.ENOSPC, "No space left on device", target)
        return real_stage(target, data)

    monkeypatch.setattr(bob.fileio, "stage", full_disk)
    result = run_campaign("predictions", runs=300, corpus=str(tmp_path / "corpus"), artifacts=str(artifacts),
                          live=False, seed=1)
    assert result.executions >= 300
    assert log.read_bytes() == b"the last campaign's log\n"
    assert any("log not written: no space left on device" in note for note in result.notes), result.notes
    assert sorted(p.name for p in log.parent.iterdir()) == ["bob.dict", log.name]  # no temporary, no scratch
    monkeypatch.setattr(bob.fileio, "stage", real_stage)
    run_campaign("predictions", runs=300, corpus=str(tmp_path / "corpus"), artifacts=str(artifacts), live=False,
                 seed=2)
    assert b"stat::number_of_executed_units" in log.read_bytes()  # replaced whole by this campaign's log
