"""bob-fuzz owns what it starts (issue 23): a campaign's workers end with it on
SIGTERM, SIGHUP and SIGINT and when it is SIGKILLed, leaving no scratch
directory; one bug with a varying message is one finding and one artifact;
replay finds the target in the layouts bob writes; minimize survives a
native crash; check accepts a reader that names another real problem of
the same file."""

from __future__ import annotations

import json
import os
import re
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bob.fuzz.cli import main
from conftest import GOLDEN

HERE = Path(__file__).resolve().parent
TARGETS_DIR = HERE.parent / "commands"  # convention_targets.py


def children(pid: int) -> list[int]:
    """The live processes whose parent is ``pid`` (from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(entry))
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("how", ["SIGTERM", "SIGHUP", "SIGINT", "parent SIGKILL"])
def test_no_worker_outlives_its_campaign(how: str, tmp_path: Path) -> None:
    pytest.importorskip("atheris", reason="atheris is the optional fuzz extra (scripts/bootstrap.sh test,fuzz)")
    scratch = tmp_path / "TMPDIR"
    scratch.mkdir()
    artifacts = tmp_path / "artifacts"
    env = dict(os.environ, TMPDIR=str(scratch))
    proc = subprocess.Popen([sys.executable, "-m", "bob", "fuzz", "run", "predictions", "--jobs", "2", "--time", "120",
                             "--corpus", str(tmp_path / "corpus"), "--artifacts", str(artifacts)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        deadline = time.monotonic() + 60
        while len(workers := children(proc.pid)) < 2:
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.1)
        time.sleep(1.0)  # the workers are running their engines
        if how == "parent SIGKILL":
            proc.kill()
        else:
            proc.send_signal(getattr(signal, how))
        proc.wait(timeout=30)
        gone = time.monotonic() + 5
        while any(alive(w) for w in workers) and time.monotonic() < gone:
            time.sleep(0.05)
        assert not any(alive(w) for w in workers), f"a worker survived {how} by five seconds"
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for w in children(proc.pid):
            os.kill(w, signal.SIGKILL)
    out, err = proc.communicate()
    assert sorted(scratch.iterdir()) == []  # nothing in TMPDIR, whatever the ending
    if how == "parent SIGKILL":
        return
    code = {"SIGTERM": 128 + 15, "SIGHUP": 128 + 1, "SIGINT": 130}[how]
    assert proc.returncode == code and b"Traceback" not in err, err
    assert err.decode().strip().splitlines()[-1].startswith("bob-fuzz: ")
    assert re.search(rf"bob-fuzz: (refused: )?stopped by {how} after [0-9]+ executions; every worker ended\n",
                     err.decode()), err  # (a Ctrl-C said no count: the last line, "interrupted", alone)
    assert [p.name for p in (artifacts / ".logs").iterdir() if p.name.startswith("scratch-")] == []


def test_jobs_beyond_the_machine_are_refused_before_anything_starts(tmp_path: Path, capsys) -> None:
    assert main(["run", "predictions", "--jobs", "1000", "--artifacts", str(tmp_path / "a")]) == 2
    assert "--jobs: must be a whole number from 1 to" in capsys.readouterr().err
    assert not (tmp_path / "a").exists()


@pytest.fixture
def targets_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(TARGETS_DIR))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TARGETS_DIR), os.environ.get("PYTHONPATH", "")]))


def test_one_bug_with_a_varying_message_is_one_finding(tmp_path: Path, targets_on_path, capsys) -> None:
    artifacts = tmp_path / "artifacts"
    code = main(["run", "convention_targets:varying", "--engine", "loop", "--runs", "300", "--format", "predictions",
                 "--artifacts", str(artifacts), "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 1 and result["executions"] == 300
    (finding,) = result["findings"]
    assert finding["count"] == result["crashes"] > 5  # many failing inputs, many messages, one bug
    assert finding["key"] == "ValueError at convention_targets.py:10 in varying"
    assert sorted(p.suffix for p in artifacts.iterdir()) == [".bin", ".txt"]


def test_a_campaign_counts_its_executions_and_dedupes_across_relaunches(tmp_path: Path) -> None:
    pytest.importorskip("atheris", reason="atheris is the optional fuzz extra (scripts/bootstrap.sh test,fuzz)")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TARGETS_DIR), os.environ.get("PYTHONPATH", "")]))
    artifacts = tmp_path / "arti facts\n"  # the engine's line naming an artifact was read up to a space
    done = subprocess.run([sys.executable, "-m", "bob", "fuzz", "run", "convention_targets:varying", "--format",
                           "predictions", "--time", "12", "--corpus", str(tmp_path / "corpus"), "--artifacts",
                           str(artifacts), "--json"], capture_output=True, text=True, env=env, timeout=300)
    result = json.loads(done.stdout)
    assert done.returncode == 1, done.stderr
    assert len(result["findings"]) == 1 and result["crashes"] >= 2, result  # relaunched, found again, one finding
    assert result["executions"] >= result["crashes"]
    assert len(list(artifacts.glob("*.bin"))) == 1


def test_a_path_the_engine_cannot_take_is_refused_before_anything_is_made(tmp_path: Path, capsys) -> None:
    """atheris takes the engine's arguments as str: a path of other bytes failed every worker, and the
    campaign said it found nothing (exit 0)."""
    pytest.importorskip("atheris", reason="atheris is the optional fuzz extra (scripts/bootstrap.sh test,fuzz)")
    for option in ("--corpus", "--artifacts"):
        other = {"--corpus": "--artifacts", "--artifacts": "--corpus"}[option]
        assert main(["run", "predictions", "--time", "5", option, str(tmp_path / "latin-1 \udce9"),
                     other, str(tmp_path / "fine")]) == 2
        assert f"{option} " in capsys.readouterr().err
        assert sorted(tmp_path.iterdir()) == []
    (tmp_path / "latin-1 \udce9").mkdir()  # and through a link, which the engine is given resolved
    (tmp_path / "link").symlink_to("latin-1 \udce9")
    assert main(["run", "predictions", "--time", "5", "--artifacts", str(tmp_path / "link" / "a")]) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latin-1 \udce9", "link"]


def test_replay_finds_the_target_in_bobs_own_layouts(tmp_path: Path, capsys) -> None:
    corpus = tmp_path / ".bob-fuzz" / "checkpoint" / "corpus"
    corpus.mkdir(parents=True)
    for name in ("0123abcd", "feedbeef"):  # libFuzzer names corpus files by their sha1
        (corpus / name).write_bytes((GOLDEN / "checkpoint-abracadabra-step10.bin").read_bytes())
    assert main(["replay", str(corpus), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["passed"] == 2 and {f["target"] for f in document["files"]} == {"checkpoint"}
    (tmp_path / "stray.bin").write_bytes(b"")
    assert main(["replay", str(tmp_path / "stray.bin")]) == 2  # no target: a usage error, not 1 failure
    assert "no target for this file" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["replay", "two.bin", "--target", "convention_targets:prints_then_exits"],
                                  ["run", "convention_targets:prints_then_exits", "--engine", "loop", "--runs", "20",
                                   "--format", "predictions", "--artifacts", "artifacts"]])
def test_a_target_that_prints_on_fd_1_or_raises_system_exit_is_a_failure_and_stdout_stays_one_object(
        tmp_path: Path, targets_on_path, argv) -> None:
    """The seeded loop let SystemExit end the command (exit 0, no report: replay called the same input a
    failure), and what a target wrote to fd 1 came before the --json object."""
    (tmp_path / "two.bin").write_bytes(b"ab")
    done = subprocess.run([sys.executable, "-m", "bob", "fuzz", *argv, "--json"], cwd=tmp_path, capture_output=True,
                          timeout=120)
    assert done.returncode == 1 and len(done.stdout.splitlines()) == 1, (done.stdout, done.stderr[-800:])
    result = json.loads(done.stdout)
    messages = [f["message"] for f in result.get("files", result.get("findings", []))]
    assert messages and set(messages) == {"SystemExit: 0"}, result
    assert b"the target's own line" in done.stderr


def test_fd_1_is_given_back_however_the_block_of_targets_ends() -> None:
    """fd 1 was swapped and restored around each call of a target, where a signal between two steps left it
    on stderr (the --json object went there: 3 runs in 30)."""
    probe = ("import os, sys\nfrom bob.fuzz.common import stdout_on_stderr\ntry:\n    with stdout_on_stderr():\n"
             "        os.write(1, b'child\\n')\n        print('object inside', flush=True)\n"
             "        raise KeyboardInterrupt\nexcept KeyboardInterrupt:\n    print('object after', flush=True)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, timeout=60)
    assert (done.stdout, done.stderr) == (b"object inside\nobject after\n", b"child\n"), done


def test_minimize_runs_candidates_out_of_process(tmp_path: Path, targets_on_path, capsys) -> None:
    crashing = tmp_path / "crash.bin"
    crashing.write_bytes(b"X" + bytes(range(200)))
    out = tmp_path / "small.bin"
    code = main(["minimize", str(crashing), "--target", "convention_targets:crashes", "--output", str(out), "--json"])
    document = json.loads(capsys.readouterr().out)
    assert code == 0 and document["failure"] == "crash: signal 11"  # each candidate's SIGSEGV ended a worker only
    assert out.read_bytes() == b"X"


def test_minimize_times_the_target_not_the_worker_s_start_up(tmp_path: Path, capsys) -> None:
    """--timeout 0.1, shorter than a worker takes to start Python and import bob: a file that passes
    is still a file that passes (it used to come out as a "timeout" finding, minimized to nothing)."""
    passing = GOLDEN / "input-abracadabra.bin"
    code = main(["minimize", str(passing), "--target", "input", "--output", str(tmp_path / "t.bin"), "--timeout",
                 "0.1", "--json"])
    document = json.loads(capsys.readouterr().out)
    assert code == 2 and "does not fail its target" in document["error"]["message"], document
    assert not (tmp_path / "t.bin").exists()


def test_minimize_says_its_worker_could_not_start_rather_than_report_a_crash(tmp_path: Path, monkeypatch,
                                                                             capsys) -> None:
    """A worker that never started (under PYTHONWARNINGS=error, an EncodingWarning in its own code) is no
    failure of the candidate: minimize ended exit 0 with "crash: exit 1", the input shrunk to nothing."""
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\necho 'Traceback: EncodingWarning' >&2\nexit 3\n", encoding="utf-8")
    python.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(python))
    crashing = tmp_path / "crash.bin"
    crashing.write_bytes(b"X" + bytes(range(20)))
    code = main(["minimize", str(crashing), "--target", "checkpoint", "--output", str(tmp_path / "small.bin"),
                 "--json"])
    document = json.loads(capsys.readouterr().out)
    assert code == 70 and not (tmp_path / "small.bin").exists(), document
    assert document["error"]["message"].endswith(
        "the minimizer's worker could not start (exit 3): Traceback: EncodingWarning"), document


def test_minimize_keeps_no_stderr_of_a_started_worker(tmp_path: Path, targets_on_path, monkeypatch, capsys) -> None:
    """Its worker's stderr is kept only until it is ready (it is the reason of a worker that cannot start):
    a chatty target's 10 KB a candidate piled up in TMPDIR for the whole minimization."""
    import bob.fuzz.replay

    kept = []

    def named(dir=None):
        kept.append(tmp_path / f"stderr{len(kept)}")
        return open(kept[-1], "wb+")

    monkeypatch.setattr(bob.fuzz.replay.tempfile, "TemporaryFile", named)
    failing = tmp_path / "fails.bin"
    failing.write_bytes(b"X" + bytes(range(40)))
    assert main(["minimize", str(failing), "--target", "convention_targets:complains_then_fails", "--output",
                 str(tmp_path / "small.bin"), "--max-tries", "20"]) == 0, capsys.readouterr().err
    assert kept and [path.stat().st_size for path in kept] == [0] * len(kept)


def test_minimize_refuses_a_link_to_its_input_planted_at_the_output_while_it_ran(tmp_path: Path, targets_on_path,
                                                                                 monkeypatch, capsys) -> None:
    """The output was checked against the input once, before minutes of minimizing: a link to the input
    planted at the output since was followed, and the finding was replaced by its minimized copy."""
    import bob.fuzz.replay

    failing = tmp_path / "finding.bin"
    failing.write_bytes(b"X" + bytes(range(40)))
    real = bob.fuzz.replay.minimize_out_of_process

    def planting(*args, **kwargs):
        (tmp_path / "finding.bin.min").symlink_to("finding.bin")
        return real(*args, **kwargs)

    monkeypatch.setattr(bob.fuzz.replay, "minimize_out_of_process", planting)
    assert main(["minimize", str(failing), "--target", "convention_targets:always_fails", "--max-tries", "5"]) == 2
    assert capsys.readouterr().err.endswith(f"--output {failing}.min: that is a file this command read; bob never "
                                            "replaces what it reads\n")
    assert failing.read_bytes() == b"X" + bytes(range(40))


def test_minimize_leaves_nothing_in_tmpdir(tmp_path: Path, targets_on_path, monkeypatch, capsys) -> None:
    """Each candidate's worker makes the inspect target's scratch directory, then dies by SIGSEGV."""
    scratch = tmp_path / "TMPDIR"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    crashing = tmp_path / "crash.bin"
    crashing.write_bytes(b"X" + bytes(range(20)))
    assert main(["minimize", str(crashing), "--target", "convention_targets:inspects_then_crashes", "--output",
                 str(tmp_path / "small.bin"), "--max-tries", "5"]) == 0, capsys.readouterr().err
    assert sorted(scratch.iterdir()) == []


def test_check_accepts_another_real_problem_of_the_same_file(tmp_path: Path, capsys) -> None:
    from bob.fuzz.conformance import judge

    data = struct.pack("<6I", 300, 1, 0, 5, 0, 0)  # a bad token in record 0, a bad validity in record 1
    verdict = judge("predictions", data)
    assert verdict["field"] == "token" and verdict["fields"] == ["token", "validity"]
    (tmp_path / "predictions" / "refused" / "token").mkdir(parents=True)
    (tmp_path / "predictions" / "refused" / "token" / "two.bin").write_bytes(data)
    entry = {"file": "predictions/refused/token/two.bin", "format": "predictions", **verdict}
    (tmp_path / "manifest.json").write_text(json.dumps({"format": "bob-conformance-1", "files": [entry]}))
    for field, code in (("validity", 0), ("token", 0), ("magic", 1)):
        reader = f"import json; print(json.dumps({{'field': {field!r}}})); raise SystemExit(2)"
        assert main(["check", "--format", "predictions", "--corpus", str(tmp_path), "--", sys.executable, "-c",
                     reader]) == code, field
    capsys.readouterr()


def test_check_over_a_manifest_without_a_file_of_the_format_is_refused(tmp_path: Path, capsys) -> None:
    """A reader that met no file agreed with nothing: refused naming the corpus (it was exit 0, "0 of 0
    files agree"), as bob-fuzz replay refuses an empty directory."""
    (tmp_path / "manifest.json").write_text(json.dumps({"format": "bob-conformance-1", "files": []}))
    assert main(["check", "--format", "input", "--corpus", str(tmp_path), "--", "true"]) == 2
    assert capsys.readouterr().err == (f"bob-fuzz: refused: --corpus {tmp_path}: its manifest lists no input file: "
                                       "nothing to check\n")


def test_workers_that_cannot_all_start_are_a_refusal_and_the_started_end(tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("atheris", reason="atheris is the optional fuzz extra (scripts/bootstrap.sh test,fuzz)")
    import errno

    from bob.commands import Refused
    from bob.fuzz import campaign

    started: list[subprocess.Popen] = []
    real = subprocess.Popen

    def popen(*args, **kwargs):  # the second worker meets the process limit
        if started:
            raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")
        started.append(real(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(campaign.subprocess, "Popen", popen)
    artifacts = tmp_path / "artifacts"
    with pytest.raises(Refused) as refused:
        campaign.run_campaign("predictions", seconds=60, jobs=2, corpus=str(tmp_path / "corpus"),
                              artifacts=str(artifacts), live=False)
    assert refused.value.option == "--jobs" and "cannot start worker 2 of 2" in refused.value.message
    assert started and started[0].poll() is not None  # the one started was ended
    assert [p.name for p in (artifacts / ".logs").iterdir() if p.name.startswith("scratch-")] == []


def test_two_properties_of_one_target_are_two_findings() -> None:
    """A finding's key is the property that failed (the frame calling ``require``), so two
    properties of one target are two findings, whatever their messages."""
    from bob.fuzz.properties import exception_key
    from bob.fuzz.properties import PropertyFailed, require

    def first_property() -> None:
        require(False, "first")

    def second_property() -> None:
        require(False, "second")

    keys = []
    for prop in (first_property, second_property, first_property):
        try:
            prop()
        except PropertyFailed as exc:
            keys.append(exception_key(exc))
    assert keys[0] == keys[2] != keys[1]
    assert "require" not in keys[0] and "first_property" in keys[0]


def _scratch_made(*roots: Path) -> bool:
    """A target has made its ``bob-fuzz-*`` scratch directory somewhere under ``roots``."""
    return any(next(root.rglob("bob-fuzz-*"), None) is not None for root in roots if root.exists())


@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("engine", ["atheris", "loop"])
@pytest.mark.parametrize("target", ["inspect", "run"])
def test_an_interrupted_campaign_leaves_nothing_in_tmpdir(target: str, engine: str, how: str, tmp_path: Path) -> None:
    """The command targets write their files in a scratch directory: an interrupted
    ``bob-fuzz run`` (its workers ended by the campaign) leaves none of them in TMPDIR."""
    if engine == "atheris":
        pytest.importorskip("atheris", reason="atheris is the optional fuzz extra (scripts/bootstrap.sh test,fuzz)")
    scratch = tmp_path / "TMPDIR"
    scratch.mkdir()
    artifacts = tmp_path / "artifacts"
    when = ["--time", "120", "--corpus", str(tmp_path / "corpus")] if engine == "atheris" else ["--runs", "100000"]
    proc = subprocess.Popen([sys.executable, "-m", "bob", "fuzz", "run", target, "--engine", engine, *when,
                             "--artifacts", str(artifacts)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ, TMPDIR=str(scratch)))
    try:
        deadline = time.monotonic() + 120
        while not _scratch_made(scratch, artifacts):  # the target has run at least once
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.1)
        time.sleep(0.5)
        proc.send_signal(getattr(signal, how))
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    out, err = proc.communicate()
    assert proc.returncode == 128 + getattr(signal, how), err
    assert sorted(scratch.iterdir()) == []
    assert not _scratch_made(artifacts)


def test_a_signal_a_command_deferred_ends_the_harness_even_when_the_world_crashes_it() -> None:
    """A SIGTERM that bob-run deferred, then a crash the world injected: ``quietly`` raises the
    signal, not the crash, so the harness ends (a loop once carried on after such a SIGTERM)."""
    from bob import signals
    from bob.fuzz.faults import Crash
    from bob.fuzz.properties import quietly

    def deferred_then_crashed(argv: list[str]) -> int:
        deferral = signals.Deferral()
        deferral.begin()
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            raise Crash("a crash at an os call")
        finally:
            deferral.end()

    replaced = signals.install()
    try:
        with pytest.raises(signals.Interrupted) as info:
            quietly(deferred_then_crashed, [])
        assert info.value.signum == signal.SIGTERM
        with pytest.raises(Crash):  # no signal: the crash is the world's to handle
            quietly(lambda argv: (_ for _ in ()).throw(Crash("x")), [])
    finally:
        signals.restore(replaced)


@pytest.mark.parametrize("name, why", [("../../../../etc/passwd", "not a bob-conformance-1 manifest"),
                                       ("/etc/passwd", "not a bob-conformance-1 manifest"),
                                       ("predictions/missing.bin", "no such file"),
                                       ("predictions/fifo.bin", "not a regular file"),
                                       ("predictions/link.bin", "link.bin: leads out of the corpus"),
                                       ("predictions/a\0b", "not a bob-conformance-1 manifest"),
                                       ("deep", "not a bob-conformance-1 manifest")])
def test_check_refuses_a_manifest_naming_a_file_outside_the_corpus_or_none(tmp_path: Path, capsys, name: str,
                                                                             why: str) -> None:
    """Before the reader runs once: never a file elsewhere, never a missing one counted as a disagreement."""
    (tmp_path / "predictions").mkdir()
    os.mkfifo(tmp_path / "predictions" / "fifo.bin")
    (tmp_path / "predictions" / "link.bin").symlink_to("/etc/passwd")  # inside by its name, not by what it is
    entry = {"file": name, "format": "predictions", "verdict": "accept", "field": None}
    (tmp_path / "manifest.json").write_text(json.dumps({"format": "bob-conformance-1", "files": [entry]})
                                            if name != "deep" else '{"files": ' * 20000)  # past Python's stack
    ran = tmp_path / "ran"
    reader = f"open({str(ran)!r}, 'w').close()"
    assert main(["check", "--format", "predictions", "--corpus", str(tmp_path), "--", sys.executable, "-c",
                 reader]) == 2
    assert why in capsys.readouterr().err and not ran.exists()


@pytest.mark.parametrize("key, value", [("field", "missing"), ("field", ["x"]), ("field", 3), ("fields", 3)])
def test_check_refuses_a_manifest_entry_whose_field_is_missing_or_not_text(tmp_path: Path, capsys, key, value) -> None:
    """It was an unexpected KeyError or TypeError (exit 70) once the reader had run (``fields``: once the
    reader named a field)."""
    (tmp_path / "predictions").mkdir()
    (tmp_path / "predictions" / "p.bin").write_bytes(bytes(24))
    entry = {"file": "predictions/p.bin", "format": "predictions", "verdict": "refuse", "field": "token", key: value}
    if value == "missing":
        del entry[key]
    (tmp_path / "manifest.json").write_text(json.dumps({"format": "bob-conformance-1", "files": [entry]}))
    reader = [sys.executable, "-c", "print('{\"field\": \"x\"}'); raise SystemExit(2)"]
    assert main(["check", "--format", "predictions", "--corpus", str(tmp_path), "--", *reader]) == 2
    assert "not a bob-conformance-1 manifest" in capsys.readouterr().err
