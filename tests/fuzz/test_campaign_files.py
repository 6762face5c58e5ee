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
import os
from pathlib import Path

import pytest

import bob.fileio

HERE = Path(__file__).resolve().parent
FUZZ = HERE.parents[1] / "python" / "bob" / "fuzz"
CAMPAIGN_MODULES = ("campaign.py", "replay.py", "cli.py", "conformance.py", "common.py", "loop.py")
# (module, call): the campaign's own scratch directories (ARTIFACTS/.logs/scratch-<pid>-…), removed whole
# (the minimizer's workers' TMPDIR and check's corpus: bob.scratch.scratch_directory).
ALLOWED = {("campaign.py", "shutil.rmtree(d, ignore_errors=True)"),
           ("campaign.py", "shutil.rmtree(c.scratch_home, ignore_errors=True)"),
           ("common.py", "os.open(directory, os.O_RDONLY | os.O_CLOEXEC)"),  # a directory, for its flock (holding_flock)
           ("cli.py", 'os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)')}  # replay's way back (os.fchdir)


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

    def full_disk(target: str, data, *args, **kwargs):
        if target.endswith("-worker0.log"):
            raise OSError(errno.ENOSPC, "No space left on device", target)
        return real_stage(target, data, *args, **kwargs)

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


def test_a_scratch_directory_is_swept_only_when_no_campaign_holds_it(tmp_path: Path) -> None:
    """The sweep removed a directory whose pid it could not see (another PID namespace: a live campaign's,
    whose findings were then lost), and a name with a pid too large for kill() ended the campaign (exit 70).
    A pid that runs proves nothing either: in a container a killed campaign's pid (1) is the next one's."""
    pytest.importorskip("atheris", reason="atheris is the optional fuzz extra (scripts/bootstrap.sh test,fuzz)")
    import fcntl
    import os

    from bob.fuzz.campaign import run_campaign

    logs = tmp_path / "artifacts" / ".logs"
    held, left, pid_1 = logs / "scratch-4194305-abc", logs / "scratch-99999999999999999999-def", logs / "scratch-1-gh"
    for d in (held, left, pid_1):
        d.mkdir(parents=True)
        (d / "seed").write_bytes(b"x")
    fd = os.open(held, os.O_RDONLY)  # another campaign, running: it holds its directory's flock
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        run_campaign("predictions", runs=50, corpus=str(tmp_path / "corpus"), artifacts=str(logs.parent), live=False)
        assert (held / "seed").read_bytes() == b"x" and not left.exists() and not pid_1.exists()
    finally:
        os.close(fd)


def test_a_signal_as_the_campaigns_scratch_directory_is_made_leaves_nothing(tmp_path: Path, monkeypatch) -> None:
    """A SIGTERM between mkdtemp's return and the campaign's record of its scratch directory left
    ARTIFACTS/.logs/scratch-PID-* behind (for the next campaign to sweep)."""
    pytest.importorskip("atheris", reason="atheris is the optional fuzz extra (scripts/bootstrap.sh test,fuzz)")
    import os
    import signal

    import bob.fuzz.campaign
    from bob import signals
    from bob.commands import Refused

    def mkdtemp(real=bob.fuzz.campaign.tempfile.mkdtemp, **kw):
        made = real(**kw)
        os.kill(os.getpid(), signal.SIGTERM)  # bob's handler runs as this call returns
        return made

    monkeypatch.setattr(bob.fuzz.campaign.tempfile, "mkdtemp", mkdtemp)
    replaced = signals.install()
    try:
        with pytest.raises(Refused, match="stopped by SIGTERM after 0 executions"):
            bob.fuzz.campaign.run_campaign("predictions", runs=50, corpus=str(tmp_path / "corpus"),
                                           artifacts=str(tmp_path / "artifacts"), live=False)
    finally:
        signals.restore(replaced)
        signals._phase = None
    assert not [p for p in (tmp_path / "artifacts").rglob("scratch-*")]


@pytest.mark.parametrize("runs, seconds", [(1, None), (None, 0.5)])
def test_fewer_runs_than_jobs_or_less_than_a_second_still_run(tmp_path: Path, runs, seconds) -> None:
    """--runs 1 --jobs 2 gave each worker 1 // 2 = 0 runs, and --time 0.5 left less than the engine's
    second: no worker started, and the campaign said it found nothing (exit 0)."""
    pytest.importorskip("atheris", reason="atheris is the optional fuzz extra (scripts/bootstrap.sh test,fuzz)")
    from bob.fuzz.campaign import run_campaign

    result = run_campaign("predictions", runs=runs, seconds=seconds, jobs=2, corpus=str(tmp_path / "corpus"),
                          artifacts=str(tmp_path / "artifacts"), live=False)
    assert result.executions > 0 and not result.notes, (result.executions, result.notes)


def test_runs_shared_among_jobs_are_run_once(tmp_path: Path) -> None:
    """A worker done with its share took the runs the others had not reported yet as left: --runs 101
    --jobs 2 ran 126 (a third generation of 25), --runs 1000 --jobs 4 about 1,350."""
    pytest.importorskip("atheris", reason="atheris is the optional fuzz extra (scripts/bootstrap.sh test,fuzz)")
    from bob.fuzz.campaign import run_campaign

    result = run_campaign("predictions", runs=101, jobs=2, seed=1, corpus=str(tmp_path / "corpus"),
                          artifacts=str(tmp_path / "artifacts"), live=False)
    logs = [log.read_text() for log in sorted((tmp_path / "artifacts" / ".logs").glob("*.log"))]
    assert result.executions == 101 and [log.count("Done ") for log in logs] == [1, 1], result.executions
    assert ["Done 51 runs" in logs[0], "Done 50 runs" in logs[1]] == [True, True]


def test_a_corpus_removed_while_the_campaign_runs_is_a_note_not_an_unexpected_error(tmp_path: Path,
                                                                                     monkeypatch) -> None:
    """`rm -rf CORPUS` mid-campaign: counting its files raised FileNotFoundError, exit 70, the result lost."""
    pytest.importorskip("atheris", reason="atheris is the optional fuzz extra (scripts/bootstrap.sh test,fuzz)")
    import shutil

    from bob.fuzz import campaign

    corpus, real_update = tmp_path / "corpus", campaign.CampaignDisplay.update

    def removing(self, result) -> None:
        if result.executions:  # (once inputs ran: past the engine's start, or the campaign is rightly no verdict)
            shutil.rmtree(corpus, ignore_errors=True)
        real_update(self, result)

    monkeypatch.setattr(campaign.CampaignDisplay, "update", removing)
    result = campaign.run_campaign("predictions", runs=20_000, corpus=str(corpus), artifacts=str(tmp_path / "a"),
                                   live=False, seed=1)
    assert not corpus.exists()  # (the workers may find it gone: their notes say so)
    assert [n for n in result.notes if n.startswith("--corpus")] == [
        f"--corpus {corpus}: no such file or directory (its last count kept)"], result.notes


@pytest.mark.parametrize("ignored, flags", [((), []), (("SIGINT",), ["-handle_int=0"]), (("SIGTERM",), [])])
def test_a_sigint_the_campaign_ignores_by_inheritance_its_workers_engine_ignores_too(tmp_path: Path, monkeypatch,
                                                                                     ignored, flags) -> None:
    """Under `trap '' INT` (or `cmd &` in a script) a group SIGINT left bob-fuzz running but ended every
    worker (libFuzzer's own handler, exit 72): the campaign ended early as "nothing found", exit 0. SIGTERM
    stays the engine's, ignored or not: it is how the campaign ends its workers at once."""
    pytest.importorskip("atheris", reason="atheris is the optional fuzz extra (scripts/bootstrap.sh test,fuzz)")
    import json
    import signal

    from bob.commands import Refused
    from bob.fuzz import campaign

    started = []

    def popen(argv, **kwargs):
        started.append(json.loads(argv[-1])["argv"])
        raise OSError(errno.EAGAIN, "no more processes")

    real, ignoring = signal.getsignal, {getattr(signal, name) for name in ignored}
    monkeypatch.setattr(signal, "getsignal", lambda signum: signal.SIG_IGN if signum in ignoring else real(signum))
    monkeypatch.setattr(campaign.subprocess, "Popen", popen)
    with pytest.raises(Refused, match="cannot start worker"):
        campaign.run_campaign("predictions", runs=10, corpus=str(tmp_path / "c"), artifacts=str(tmp_path / "a"),
                              live=False)
    assert [a for a in started[0] if a.startswith("-handle_")] == flags


@pytest.mark.parametrize("failing", ["write_atomic", "make_directory"])
def test_a_full_disk_as_the_scratch_is_made_is_the_artifacts_refusal(tmp_path: Path, monkeypatch,
                                                                     failing: str) -> None:
    """The scratch directories and the seeds' copies live in --artifacts: a full disk (or ulimit -f) there was
    "unexpected error: OSError" (exit 70) naming no option, where writing bob.dict beside them is refused."""
    from bob.commands import Refused
    from bob.fuzz import campaign

    def full(path, *args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), os.fspath(path))

    monkeypatch.setattr(campaign, failing, full)
    with pytest.raises(Refused) as refused:
        campaign.run_campaign("predictions", runs=10, corpus=str(tmp_path / "c"), artifacts=str(tmp_path / "a"),
                              live=False)
    assert refused.value.option == "--artifacts" and refused.value.message == "no space left on device"
    assert str(refused.value.path).startswith(str(tmp_path / "a" / ".logs"))


def test_a_campaign_stopped_by_a_signal_keeps_its_workers_logs(tmp_path: Path, monkeypatch) -> None:
    """Ctrl-C (or SIGTERM) ended the workers before their output ended, and no .logs/TARGET-workerN.log was
    written: what each had said is saved, as a campaign that runs out its time saves it."""
    pytest.importorskip("atheris", reason="atheris is the optional fuzz extra (scripts/bootstrap.sh test,fuzz)")
    from bob.fuzz import campaign

    real_update = campaign.CampaignDisplay.update

    def stopping(self, result) -> None:
        real_update(self, result)
        if result.executions:  # (the workers have said something)
            raise KeyboardInterrupt

    monkeypatch.setattr(campaign.CampaignDisplay, "update", stopping)
    with pytest.raises(KeyboardInterrupt):
        campaign.run_campaign("predictions", seconds=60, corpus=str(tmp_path / "c"), artifacts=str(tmp_path / "a"),
                              live=False, seed=1)
    log = tmp_path / "a" / ".logs" / "predictions-worker0.log"
    assert log.is_file() and b"cov: " in log.read_bytes()


def test_a_log_a_stopped_campaign_cannot_save_is_said_and_a_shortage_stays_unexpected(tmp_path: Path, monkeypatch,
                                                                                      capsys) -> None:
    """On a full disk the log of a stopped campaign was dropped without a word (its note never printed); and
    counting the corpus out of descriptors is the machine's shortage, never a "removed corpus" note."""
    pytest.importorskip("atheris", reason="atheris is the optional fuzz extra (scripts/bootstrap.sh test,fuzz)")
    from bob.fuzz import campaign

    real_update, real_write = campaign.CampaignDisplay.update, campaign.write_atomic

    def stopping(self, result) -> None:
        real_update(self, result)
        if result.executions:
            raise KeyboardInterrupt

    def full_for_logs(path, data):
        if str(path).endswith(".log"):
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real_write(path, data)

    monkeypatch.setattr(campaign.CampaignDisplay, "update", stopping)
    monkeypatch.setattr(campaign, "write_atomic", full_for_logs)
    with pytest.raises(KeyboardInterrupt):
        campaign.run_campaign("predictions", seconds=60, corpus=str(tmp_path / "c"), artifacts=str(tmp_path / "a"),
                              live=False, seed=1)
    assert "bob-fuzz: worker 1's log not written: no space left on device\n" in capsys.readouterr().err
    monkeypatch.undo()

    def out_of_descriptors(path):
        raise OSError(errno.EMFILE, "Too many open files", str(path))

    monkeypatch.setattr(campaign.os, "listdir", out_of_descriptors)
    with pytest.raises(OSError, match="Too many open files"):
        campaign.run_campaign("predictions", runs=50, corpus=str(tmp_path / "c"), artifacts=str(tmp_path / "a"),
                              live=False, seed=1)


@pytest.mark.parametrize("artifacts", ["same", "same/art", "same/./deep/art"])
def test_artifacts_inside_the_corpus_are_refused_before_anything_is_made(tmp_path: Path, monkeypatch, capsys,
                                                                         artifacts) -> None:
    """libFuzzer reads every file under the corpus as an input: with --artifacts there, its findings (a crash at
    the next start), worker logs and dictionary became inputs, and the corpus count took .logs for one."""
    pytest.importorskip("atheris", reason="atheris is the optional fuzz extra (scripts/bootstrap.sh test,fuzz)")
    from bob.fuzz import main

    monkeypatch.chdir(tmp_path)
    assert main(["run", "predictions", "--runs", "10", "--corpus", "same", "--artifacts", artifacts]) == 2
    assert capsys.readouterr().err == (f"bob-fuzz: refused: --artifacts {artifacts}: is the --corpus directory or "
                                       "inside it, where the engine reads every file as an input (findings and logs "
                                       "too)\n")
    assert list(tmp_path.iterdir()) == []
    assert main(["run", "predictions", "--runs", "10", "--corpus", "same/c", "--artifacts", "same"]) == 0  # (beside)
