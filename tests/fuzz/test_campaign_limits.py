"""A campaign under the limits users run it with (issue 23 items 4 and 5).

``--jobs`` beyond what the machine can start, met for real: the campaign
runs under ``RLIMIT_NPROC`` (``prlimit --nproc``) and is refused by name
(exit 2, one line, ``--jobs``), with every worker it started ended and no
scratch directory left. The kernel does not apply ``RLIMIT_NPROC`` to root,
so as root the campaign runs as an unprivileged uid of its own (``setpriv``),
keeping only ``CAP_DAC_OVERRIDE`` to read the interpreter and the tree
(that capability does not lift the process limit).

Under ``PYTHONOPTIMIZE=1`` (``assert`` statements stripped) a campaign still
finds a planted bug: the properties raise ``PropertyFailed``.
"""

from __future__ import annotations

import contextlib
import json
import re
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from bob.fuzz.targets import TARGETS

HERE = Path(__file__).resolve().parent
needs_atheris = pytest.mark.skipif(__import__("importlib.util").util.find_spec("atheris") is None,
                                   reason="atheris is the optional fuzz extra (scripts/bootstrap.sh test,fuzz)")


def _tasks_of(uid: int) -> list[int]:
    """The live processes of ``uid`` (from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                st = os.stat(f"/proc/{entry}")
                with open(f"/proc/{entry}/stat") as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if st.st_uid == uid and state != "Z":
                found.append(int(entry))
    return found


def _threads_of(uid: int) -> int:
    """How many tasks (threads included: RLIMIT_NPROC counts them) ``uid`` has."""
    return sum(len(os.listdir(f"/proc/{pid}/task")) for pid in _tasks_of(uid) if os.path.isdir(f"/proc/{pid}/task"))


@needs_atheris
@pytest.mark.skipif(sys.platform != "linux" or shutil.which("prlimit") is None, reason="prlimit (util-linux), Linux")
def test_jobs_beyond_the_process_limit_are_refused_and_the_started_end() -> None:
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("as root RLIMIT_NPROC is not enforced, and setpriv is missing to run as another uid")
        uid = 61000 + os.getpid() % 1000  # a uid of its own: no other process counts against its limit
        become = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=+dac_override",
                  "--ambient-caps=+dac_override"]
    else:
        uid, become = os.getuid(), []
    limit = _threads_of(uid) + 4  # the campaign and its first worker start, not the fourth worker
    work = Path(tempfile.mkdtemp(prefix="bob-nproc-"))
    try:
        os.chown(work, uid, uid)
        env = dict(os.environ, TMPDIR=str(work / "tmp"), HOME=str(work))
        (work / "tmp").mkdir()
        os.chown(work / "tmp", uid, uid)
        run = subprocess.run(["prlimit", f"--nproc={limit}", *become, sys.executable, "-m", "bob", "fuzz", "run",
                              "predictions", "--jobs", "4", "--time", "60", "--corpus", str(work / "corpus"),
                              "--artifacts", str(work / "artifacts"), "--json"],
                             capture_output=True, text=True, env=env, timeout=180)
        assert run.returncode == 2, run.stdout + run.stderr
        assert "Traceback" not in run.stderr, run.stderr
        document = json.loads(run.stdout)
        assert document["ok"] is False and document["exit_code"] == 2
        assert document["error"]["option"] == "--jobs" and "cannot start worker" in document["error"]["message"]
        assert "ask fewer" in document["error"]["message"]
        if become:  # every process of the campaign's own uid is gone within five seconds
            deadline = time.monotonic() + 5
            while _tasks_of(uid) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert _tasks_of(uid) == [], "a worker outlived its refused campaign"
        assert sorted((work / "tmp").iterdir()) == []
        assert [p.name for p in (work / "artifacts" / ".logs").iterdir() if p.name.startswith("scratch-")] == []
    finally:
        shutil.rmtree(work, ignore_errors=True)


@needs_atheris
def test_jobs_beyond_the_descriptor_limit_are_refused_naming_jobs(tmp_path: Path) -> None:
    """Workers a descriptor limit leaves unstarted are --jobs's refusal (exit 2, "ask fewer" once one started), not
    the machine's shortage that the runner reports as unexpected (the OSError was behind the refusal)."""
    import resource

    run = subprocess.run([sys.executable, "-m", "bob", "fuzz", "run", "predictions", "--jobs", "4", "--runs", "50",
                          "--corpus", str(tmp_path / "c"), "--artifacts", str(tmp_path / "a"), "--json"],
                         capture_output=True, text=True, timeout=180,
                         preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (8, 8)))  # (3.13: 4 start in 10)
    error = json.loads(run.stdout)["error"]
    said = re.fullmatch(r"cannot start worker (\d) of 4: too many open files; (.*)", error["message"])
    assert run.returncode == 2 and error["option"] == "--jobs" and said, error
    assert said[2] == ("not even one can start here" if said[1] == "1" else "ask fewer")  # (3.11: not one here)


@needs_atheris
def test_a_campaign_short_of_descriptors_for_a_world_is_no_verdict_never_a_finding(tmp_path: Path) -> None:
    """The run target short of WORLD_DESCRIPTORS raises the machine's OSError; an atheris worker raised it as a
    crash, written and reported as a finding against bob (exit 1). Now the worker ends with no verdict and the
    campaign is the machine's (exit 70), no artifact written."""
    import resource

    run = subprocess.run([sys.executable, "-m", "bob", "fuzz", "run", "run", "--runs", "3", "--seed", "1",
                          "--corpus", str(tmp_path / "c"), "--artifacts", str(tmp_path / "a"), "--json"],
                         capture_output=True, text=True, timeout=300,
                         preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (60, 60)))
    error = json.loads(run.stdout)["error"]
    assert run.returncode == 70 and "fewer than 64 descriptors free for a world" in error["message"], run.stdout
    assert [name for name in os.listdir(tmp_path / "a") if not name.startswith(".")] == []  # (.logs: the workers')


def test_a_world_without_proc_is_run_not_failed(tmp_path: Path) -> None:
    """The world's count of free descriptors reads /proc/self/fd: without /proc (a mount namespace without it)
    every execution failed with FileNotFoundError. It is not counted there."""
    golden = Path(__file__).resolve().parents[2] / "python" / "bob" / "data" / "golden" / "input-abracadabra.bin"
    script = (f'mount -t tmpfs none /proc && exec "{sys.executable}" -m bob fuzz replay --target run "{golden}"')
    if subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode:
        pytest.skip("needs a user and mount namespace (unshare -rm)")
    run = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path, env=dict(os.environ, TMPDIR=str(tmp_path)))
    assert run.returncode == 0 and "1 passed" in run.stdout, (run.stdout, run.stderr[-500:])


def test_a_planted_bug_is_found_under_pythonoptimize(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONOPTIMIZE="1", PYTHONPATH=f"{HERE}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    stripped = subprocess.run([sys.executable, "-c", "assert False"], env=env)
    assert stripped.returncode == 0  # under this environment an assert would hold whatever it checks
    artifacts = tmp_path / "artifacts"
    run = subprocess.run(  # (seed 3 finds it within about 200 executions)
        [sys.executable, "-m", "bob", "fuzz", "run", "planted:target", "--format", "predictions", "--runs", "1000",
         "--seed", "3", "--corpus", str(tmp_path / "corpus"), "--artifacts", str(artifacts), "--json"],
        capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 1, run.stdout + run.stderr
    document = json.loads(run.stdout)
    (finding,) = document["findings"]
    assert finding["key"].startswith("PropertyFailed at ") and "the copy accepts" in finding["message"]
    data = Path(finding["path"]).read_bytes()
    assert len(data) == 24 and 2 in [int.from_bytes(data[8 * i + 4:8 * i + 8], "little") for i in range(3)]


def test_the_seeded_loop_finds_a_planted_bug_under_pythonoptimize(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONOPTIMIZE="1", PYTHONPATH=f"{HERE}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    run = subprocess.run(
        [sys.executable, "-m", "bob", "fuzz", "run", "planted:target", "--format", "predictions", "--engine", "loop",
         "--runs", "3000", "--seed", "3", "--artifacts", str(tmp_path / "artifacts"), "--json"],
        capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 1, run.stdout + run.stderr
    (finding,) = json.loads(run.stdout)["findings"]
    assert "the copy accepts" in finding["message"]


@needs_atheris
@pytest.mark.parametrize("where", ["no such directory", "a file for a directory"])
def test_an_unwritable_fast_path_stats_file_is_refused_before_the_campaign(where: str, tmp_path: Path) -> None:
    """``BOB_FUZZ_FAST_PATH_STATS`` naming a file bob cannot write is the environment's
    fault: a refusal naming the variable before any worker starts, not a finding against bob."""
    (tmp_path / "file").write_bytes(b"")
    stats = tmp_path / ("missing" if where == "no such directory" else "file") / "stats"
    artifacts = tmp_path / "artifacts"
    env = dict(os.environ, BOB_FUZZ_FAST_PATH_STATS=str(stats))
    done = subprocess.run([sys.executable, "-m", "bob", "fuzz", "run", "input", "--runs", "2000", "--corpus",
                           str(tmp_path / "corpus"), "--artifacts", str(artifacts), "--json"],
                          capture_output=True, text=True, env=env, timeout=300)
    document = json.loads(done.stdout)
    assert done.returncode == 2, done.stdout + done.stderr
    assert document["error"]["option"] == "BOB_FUZZ_FAST_PATH_STATS", document
    assert done.stderr.startswith("bob-fuzz: refused: BOB_FUZZ_FAST_PATH_STATS "), done.stderr
    assert not list(artifacts.glob("*.bin")) and not (tmp_path / "corpus").exists()


@needs_atheris
@pytest.mark.parametrize("target", sorted(TARGETS))
def test_a_worker_instruments_every_bob_module_its_target_runs(target: str) -> None:
    """A module imported after ``atheris.instrument_imports`` runs without coverage: the worker's prelude (up to
    the engine's set-up) must import, instrumented, every bob module the target's run then imports over its seeds
    and the empty input (bob-inspect's views were not), and the harness (mutators, campaign) not instrumented. Only those: every other module's
    instrumentation made a format target's worker start in 3.5 s instead of 1.5 s."""
    from bob.fuzz.campaign import WORKER

    prelude = WORKER[:WORKER.index("count = ")]
    probe = prelude + (
        "def ours(): return {n: m for n, m in sys.modules.items() if n.split('.')[0] == 'bob' and "
        "getattr(m, '__file__', '').endswith('.py')}\n"
        "prelude = ours()\n"
        "for data in [b'', *(path.read_bytes() for path in targets.seed_files(spec['target']))]:\n"
        "    failure(run, data)\n"
        "print(json.dumps({'late': sorted(set(ours()) - set(prelude)), 'instrumented': {n: type(m.__loader__)"
        ".__module__.split('.')[0] == 'atheris' for n, m in prelude.items()}}))\n")
    proc = subprocess.run([sys.executable, "-c", probe, json.dumps({"target": target})], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    said = json.loads(proc.stdout.splitlines()[-1])
    harness = {f"bob.fuzz.{m}" for m in ("mutator", "structural", "dictionary", "campaign", "common", "replay")}
    assert said["late"] == [] and harness <= set(said["instrumented"]), said["late"]
    assert {name for name, yes in said["instrumented"].items() if not yes} == harness, said["instrumented"]


def test_a_campaign_shorter_than_a_display_tick_reports_its_coverage(tmp_path: Path) -> None:
    """Coverage and features were taken only on the half-second display tick: a 20-run campaign said
    coverage 0 while its worker's log said cov: 142."""
    run = subprocess.run([sys.executable, "-m", "bob", "fuzz", "--json", "run", "predictions", "--runs", "20",
                          "--seed", "1", "--corpus", str(tmp_path / "c"), "--artifacts", str(tmp_path / "a")],
                         capture_output=True, text=True, timeout=180)
    result = json.loads(run.stdout)
    assert run.returncode == 0 and result["coverage"] > 0 and result["features"] > 0, run


@needs_atheris
def test_a_corpus_the_disk_could_not_hold_is_said(tmp_path: Path) -> None:
    """libFuzzer does not check its writes: on a full disk the corpus took empty files named by the SHA-1 of inputs
    they do not hold, counted as the corpus, exit 0 and nothing said. They are said now (and left: a file of that
    name may be one another process is writing)."""
    from conftest import tmpfs

    with tmpfs(tmp_path / "disk", "48k", full=True) as disk:
        run = subprocess.run([sys.executable, "-m", "bob", "fuzz", "run", "input", "--time", "2", "--seed", "1",
                              "--corpus", str(disk / "c"), "--artifacts", str(tmp_path / "a"), "--json"],
                             capture_output=True, text=True, timeout=180)
        result = json.loads(run.stdout)
        sizes = [os.path.getsize(disk / "c" / name) for name in os.listdir(disk / "c")]
    said = re.fullmatch(r"(\d+) entries added to --corpus do not hold the input their name says \(the engine's writes "
                        r"on a full disk\?\); left as they are, not counted in the corpus",
                        result["notes"][0] if result["notes"] else "")
    assert run.returncode == 0 and said and int(said[1]) == len(sizes) > 0 and result["corpus"] == 0, run.stdout
    assert set(sizes) == {0}  # (what the full disk left, under the names of inputs it does not hold)


@needs_atheris
@pytest.mark.parametrize("option", ["--corpus", "--artifacts"])
def test_a_directory_too_deep_for_the_engine_s_files_is_refused_first(tmp_path: Path, option: str) -> None:
    """Every corpus entry (a 40-byte name) or finding (crash-<40>) past the path limit was dropped by the engine
    unsaid: "corpus 0" and exit 0, or a crash with no finding."""
    size = {"--corpus": 4080, "--artifacts": 4030}[option]  # (room for the directory, and what bob makes in it)
    whole, rest = divmod(size - len(str(tmp_path)) - 1, 201)
    deep = tmp_path.joinpath(*["d" * 200] * whole, "e" * rest)
    assert len(str(deep)) == size
    paths = {"--corpus": str(tmp_path / "c"), "--artifacts": str(tmp_path / "a"), option: str(deep)}
    run = subprocess.run([sys.executable, "-m", "bob", "fuzz", "run", "input", "--runs", "10", "--json",
                          *(word for pair in paths.items() for word in pair)], capture_output=True, text=True,
                         timeout=180)
    error = json.loads(run.stdout)["error"]
    assert run.returncode == 2 and error["option"] == option, run.stdout
    assert error["message"].startswith("the engine could not write its files in it: file name too long (a path of ")
    assert os.listdir(tmp_path) == []  # (what it made, removed)


def test_a_failing_input_the_engine_could_not_write_whole_is_a_finding_without_an_input(tmp_path: Path) -> None:
    """A crash file written on a full disk is empty or cut: its bytes are not the input that failed (its name, the
    SHA-1, says so), so it is no finding's input; the failure the worker reported stands."""
    from bob.fuzz import campaign

    c = campaign._Campaign("input", 1, None, 1, str(tmp_path / "c"), str(tmp_path / "a"), None, None, None, 20)
    worker = campaign._Worker(0, last_error="ValueError: planted", last_key="ValueError at target.py:1")
    (tmp_path / "crash-86f7e437faa5a7fce15d1ddcb9eaeaea377667b8").write_bytes(b"")  # (the SHA-1 of b"a")
    c.collect(str(tmp_path / "crash-86f7e437faa5a7fce15d1ddcb9eaeaea377667b8"), worker)
    (finding,) = c.result.findings
    assert (finding.path, finding.message, finding.key) == ("", "ValueError: planted", "ValueError at target.py:1")
    assert c.result.notes == ["the engine could not write a failing input whole (crash-86f7e437faa5a7fce15d1ddcb9eaea"
                              "ea377667b8; a full disk?): its finding has no input"]
    assert [p.name for p in (tmp_path / "a").iterdir()] == [".logs"]  # (no artifact of bytes that never failed)


@needs_atheris
def test_a_worker_killed_by_a_signal_is_said_killed_by_it(tmp_path: Path) -> None:
    """The note said "worker 1 ended (exit -9)": Python's way of saying SIGKILL."""
    tests = Path(__file__).resolve().parent.parent / "commands"
    run = subprocess.run([sys.executable, "-m", "bob", "fuzz", "run", "convention_targets:killed", "--format", "input",
                          "--runs", "10", "--jobs", "1", "--corpus", str(tmp_path / "c"), "--artifacts",
                          str(tmp_path / "a"), "--json"], capture_output=True, text=True, timeout=180,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(tests), os.environ.get("PYTHONPATH",
                                                                                                     "")])))
    assert run.returncode == 70 and json.loads(run.stdout)["error"]["message"] == (
        "no verdict: every worker ended before its engine did (worker 1 ended (killed by SIGKILL) without a finding: "
        ".logs/convention_targets_killed-worker0.log says why)"), run.stdout


@needs_atheris
@pytest.mark.parametrize("target", ["terminates_itself", "exits_at_its_third_input"])
def test_a_campaign_whose_every_worker_the_target_ended_is_no_verdict(tmp_path: Path, target: str) -> None:
    """A target that sent itself SIGTERM was exit 0, "nothing found": the engine's handler printed its final stats,
    the interrupted input counted as executed. One that ended its process at its third input was "no input ran to its
    end", though two had. Neither engine ran to its own end: no verdict, whatever the count."""
    (tmp_path / "third.py").write_text("import os\ncalls = []\ndef exits_at_its_third_input(data):\n"
                                       "    calls.append(data)\n    if len(calls) == 3:\n        os._exit(0)\n")
    tests = Path(__file__).resolve().parent.parent / "commands"
    module = "convention_targets" if target == "terminates_itself" else "third"
    run = subprocess.run([sys.executable, "-m", "bob", "fuzz", "run", f"{module}:{target}", "--format", "input", "--runs", "100", "--jobs", "2", "--corpus",
                          str(tmp_path / "c"), "--artifacts", str(tmp_path / "a"), "--json"], capture_output=True,
                         text=True, timeout=180, env=dict(os.environ, PYTHONPATH=os.pathsep.join(
                             [str(tests), str(tmp_path), os.environ.get("PYTHONPATH", "")])))
    error = json.loads(run.stdout)["error"]
    assert run.returncode == 70 and error["message"].startswith("no verdict: every worker ended before its engine did "
                                                                "(worker "), run
    other = 2 if error["message"].startswith("no verdict: every worker ended before its engine did (worker 1") else 1
    assert f"bob-fuzz: worker {other} ended (" in run.stderr, run.stderr  # (the other worker's note, on stderr)


def test_a_worker_read_late_is_not_said_held(tmp_path: Path) -> None:
    """A worker whose pipe was read more than a second after it ended (the campaign busy replaying another's
    finding) was said to be held by a process it started outside its group, "left running": only a pipe still
    open, its end not read, is."""
    from types import SimpleNamespace

    from bob.fuzz import campaign

    c = campaign._Campaign("input", 1, None, 1, str(tmp_path / "c"), str(tmp_path / "a"), None, None, None, 20)
    c.launch = lambda w: None  # type: ignore[method-assign]
    for still_open in (False, True):
        read, write = os.pipe()
        os.write(write, b"#2\tINITED exec/s: 0 rss: 30Mb\nDone 2 runs\n")
        if not still_open:
            os.close(write)
        worker = c.workers[0]
        worker.proc = SimpleNamespace(stdout=open(read, "rb"), returncode=0, wait=lambda: 0)  # type: ignore[assignment]
        c.selector.register(worker.proc.stdout, campaign.selectors.EVENT_READ, worker)
        c.read(worker, held=True)
        assert worker.proc.stdout.closed and worker.inited
        assert any("outside its process group" in n for n in c.result.notes) == still_open, c.result.notes
        if still_open:
            os.close(write)


def test_a_generation_the_target_ended_is_not_started_again(tmp_path: Path) -> None:
    """A target that ended its worker with exit 0 (os._exit) after some executions had its worker started again,
    for as long as --time or --runs allowed; only one that did so before its first was noted and left. A generation
    the engine ended says its final stats; one without them is the target's end, whenever it came."""
    from types import SimpleNamespace

    from bob.fuzz import campaign

    c = campaign._Campaign("input", 1, None, 1, str(tmp_path / "c"), str(tmp_path / "a"), None, None, None, 20)
    launched: list = []
    c.launch = launched.append  # type: ignore[method-assign]
    worker = c.workers[0]
    worker.proc, worker.executions = SimpleNamespace(returncode=0), 2048  # type: ignore[assignment]
    c.relaunch(worker)
    assert launched == [] and c.result.notes == ["worker 1 ended (exit 0) without a finding: .logs/input-worker0.log "
                                                 "says why"] and worker.executions_done == 2048
    worker.finished = True  # (stat::number_of_executed_units read: the engine's own end)
    c.relaunch(worker)
    assert launched == [worker] and len(c.result.notes) == 1


def test_a_status_line_without_coverage_still_counts_executions() -> None:
    """libFuzzer prints cov:, ft: and corp: only once there is some: a target of no instrumented code (a
    module:function target calling no bob code) showed 0 executions, and a campaign stopped by a signal said so."""
    from bob.fuzz.campaign import STATUS

    assert STATUS.match("#1024\tpulse  exec/s: 512 rss: 41Mb").groups() == ("1024", "pulse", None, None)
    assert STATUS.match("#2\tINITED cov: 7 ft: 9 corp: 1/1b exec/s: 0 rss: 30Mb").groups() == ("2", "INITED", "7", "9")


@needs_atheris
def test_an_input_of_the_corpus_that_fails_as_the_engine_starts_ends_its_worker(tmp_path: Path) -> None:
    """An input in --corpus that fails stopped every new generation as it started: the worker was started again
    until 50 failing inputs (for a hang, 60 s each and 120 s replayed: hours). It is one finding and a note now."""
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "boom").write_bytes(b"boom")
    (tmp_path / "fails_on_boom.py").write_text("def target(data):\n    if data == b'boom':\n        raise ValueError"
                                              "('boom')\n")
    run = subprocess.run([sys.executable, "-m", "bob", "fuzz", "run", "fails_on_boom:target", "--format", "input",
                          "--runs", "100000", "--corpus", str(tmp_path / "corpus"), "--artifacts", str(tmp_path / "a"),
                          "--json"], capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path),
                                                                           os.environ.get("PYTHONPATH", "")])))
    report = json.loads(run.stdout)
    assert run.returncode == 1 and report["crashes"] == 1 and len(report["findings"]) == 1, report
    assert report["notes"] == ["worker 1 not restarted: an input its engine runs as it starts fails"], report


@needs_atheris
def test_one_job_the_descriptor_limit_cannot_start_is_not_told_to_ask_fewer(tmp_path: Path) -> None:
    """`ulimit -n 6` with --jobs 1: "cannot start worker 1 of 1: too many open files; ask fewer" (of one job)."""
    import resource

    run = subprocess.run([sys.executable, "-m", "bob", "fuzz", "run", "input", "--jobs", "1", "--runs", "50",
                          "--corpus", str(tmp_path / "c"), "--artifacts", str(tmp_path / "a"), "--json"],
                         capture_output=True, text=True, timeout=180,
                         preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (6, 6)))
    error = json.loads(run.stdout)["error"]
    assert run.returncode == 2 and error["option"] == "--jobs" and error["message"].startswith(
        "cannot start worker 1 of 1: ") and error["message"].endswith("; not even one can start here"), error


def test_a_corpus_inside_the_artifacts_logs_is_refused(tmp_path: Path) -> None:
    """The engine read bob-fuzz's own dictionary and worker logs as inputs, and the next campaign on those
    artifacts swept its scratch-* entries out of that corpus."""
    artifacts = tmp_path / "a"
    run = subprocess.run([sys.executable, "-m", "bob", "fuzz", "run", "input", "--runs", "5", "--artifacts",
                          str(artifacts), "--corpus", str(artifacts / ".logs" / "corpus"), "--json"],
                         capture_output=True, text=True, timeout=180)
    error = json.loads(run.stdout)["error"]
    assert run.returncode == 2 and (error["option"], error["message"]) == (
        "--corpus", "is inside --artifacts' .logs/, bob-fuzz's own files"), error


@needs_atheris
def test_a_target_s_forked_child_does_not_hold_the_campaign_past_its_time(tmp_path: Path) -> None:
    """A forked child kept the worker's pipe open: a 5 s campaign ran 91 s, until the child ended, and said its
    workers "still running 60 s past --time were ended". Each worker leads its process group, ended with it."""
    tests = Path(__file__).resolve().parent.parent / "commands"
    pids = tmp_path / "pids"
    started = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "bob", "fuzz", "run", "convention_targets:forks_a_sleeper", "--format",
                          "input", "--time", "3", "--jobs", "1", "--corpus", str(tmp_path / "c"), "--artifacts",
                          str(tmp_path / "a"), "--json"], capture_output=True, text=True, timeout=180,
                         env=dict(os.environ, BOB_TEST_PIDS=str(pids),
                                  PYTHONPATH=os.pathsep.join([str(tests), os.environ.get("PYTHONPATH", "")])))
    took = time.monotonic() - started
    report = json.loads(run.stdout)
    assert run.returncode == 0 and took < 40 and not any("past --time" in n for n in report["notes"]), (took, report)
    for pid in map(int, pids.read_text(encoding="ascii").split()):  # gone, or a zombie its new parent has not reaped
        with contextlib.suppress(FileNotFoundError):
            assert Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z", pid


@needs_atheris
def test_a_process_a_target_started_outside_its_group_does_not_hold_the_campaign(tmp_path: Path) -> None:
    """A child that left the worker's process group (setsid) and kept printing on its output held a 3 s campaign for
    as long as it printed (a minute here; for ever, for one that never ends). It is read no more a second after the
    worker ended, said in a note."""
    tests = Path(__file__).resolve().parent.parent / "commands"
    pids = tmp_path / "pids"
    started = time.monotonic()
    try:
        run = subprocess.run([sys.executable, "-m", "bob", "fuzz", "run",
                              "convention_targets:forks_a_printing_session_leader", "--format", "input", "--time", "3",
                              "--jobs", "1", "--corpus", str(tmp_path / "c"), "--artifacts", str(tmp_path / "a"),
                              "--json"], capture_output=True, text=True, timeout=180,
                             env=dict(os.environ, BOB_TEST_PIDS=str(pids),
                                      PYTHONPATH=os.pathsep.join([str(tests), os.environ.get("PYTHONPATH", "")])))
    finally:
        for pid in map(int, pids.read_text(encoding="ascii").split() if pids.exists() else ()):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    took = time.monotonic() - started
    report = json.loads(run.stdout)
    assert run.returncode == 0 and took < 40, (took, report)
    assert "worker 1 ended, its output held by a process it started outside its process group: no longer read, " \
        "that process left running" in report["notes"], report


def _campaign(tmp_path: Path, target: str, *more: str) -> "subprocess.CompletedProcess[str]":
    tests = Path(__file__).resolve().parent.parent / "commands"
    return subprocess.run([sys.executable, "-m", "bob", "fuzz", "run", f"convention_targets:{target}", "--format",
                           "input", "--jobs", "1", "--corpus", str(tmp_path / "c"), "--artifacts", str(tmp_path / "a"),
                           "--json", *more], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(tests), os.environ.get("PYTHONPATH",
                                                                                                      "")])))


@needs_atheris
def test_a_target_out_of_memory_in_a_campaign_is_the_machine_s_never_a_finding(tmp_path: Path) -> None:
    """A MemoryError escaped the worker as a crash: exit 1, a finding whose replay passed."""
    run = _campaign(tmp_path, "out_of_memory", "--runs", "20")
    report = json.loads(run.stdout)
    assert run.returncode == 70 and report["error"]["message"].startswith("out of memory as the target ran"), report
    assert not list((tmp_path / "a").glob("*.bin"))


@needs_atheris
def test_a_crash_of_the_engine_alone_is_not_counted(tmp_path: Path, monkeypatch) -> None:
    """A worker that aborted with no exception of the target's (atheris unable to map its counters) was a finding
    "the target crashed", whose replay passed: now it is replayed first, as a resource stop is, and not counted."""
    monkeypatch.setenv("BOB_TEST_MARKER", str(tmp_path / "aborted"))  # (once: the next generation runs to its end)
    run = _campaign(tmp_path, "aborts_in_the_engine", "--runs", "200")
    report = json.loads(run.stdout)
    assert run.returncode == 0 and report["findings"] == [], report
    assert report["discarded"] and {f["message"] for f in report["discarded"]} == {
        "crash in the engine only: the input passes when replayed in a fresh process"}, report
    assert {f["path"] for f in report["discarded"]} == {""}, report  # (it named a file in the scratch, then gone)


@needs_atheris
def test_a_hang_is_said_as_one_and_its_reproduce_line_ends(tmp_path: Path, monkeypatch, capsys) -> None:
    """An input the engine ended as a hang (its -timeout), whose replay outside ran past 120 s too, was a finding
    "the target crashed", and the reproduce line printed for it, a bare replay, never ended. An input not counted was
    named by its path in the campaign's scratch, removed as the campaign ends."""
    import hashlib
    import shlex

    from bob.fuzz import campaign
    from bob.fuzz.cli import main

    c = campaign._Campaign("input", 1.0, None, 1, str(tmp_path / "c"), str(tmp_path / "a"), None, None, None, 20)
    worker = campaign._Worker(0, crash_dir=str(tmp_path / "crash"))
    os.mkdir(worker.crash_dir)
    hung = tmp_path / "crash" / f"timeout-{hashlib.sha1(b'hangs').hexdigest()}"
    hung.write_bytes(b"hangs")
    monkeypatch.setattr(campaign, "passes_outside", lambda *args: False)  # (its replay outside ran 120 s)
    c.collect(str(hung), worker)
    [found] = c.result.findings
    assert found.key == "crash: timeout" and found.message == (
        "the target hung past the engine's -timeout of 60 s (see the worker log in .logs/)"), found
    passes = tmp_path / "crash" / f"oom-{hashlib.sha1(b'passes').hexdigest()}"
    passes.write_bytes(b"passes")
    monkeypatch.setattr(campaign, "passes_outside", lambda *args: True)
    c.collect(str(passes), worker)
    monkeypatch.setattr(campaign, "run_campaign", lambda *args, **kwargs: c.result)
    assert main(["run", "input", "--time", "1"]) == 1
    out = capsys.readouterr().out
    line = out.split("reproduce: ")[1].split("\n")[0]
    assert shlex.split(line) == ["timeout", "-k", "5", "120", "bob-fuzz", "replay", found.path, "--target", "input"], \
        line
    assert "  not counted: oom in the engine only: the input passes when replayed in a fresh process\n" in out, out


@needs_atheris
def test_the_mutator_out_of_memory_in_a_campaign_is_the_machine_s(tmp_path: Path) -> None:
    """A MemoryError in bob's custom mutator ended the worker with a note, and the campaign exited 0 (its workers
    all ended early, nothing found): it is the machine's, as the target's own MemoryError is (exit 70)."""
    (tmp_path / "no_memory_to_mutate.py").write_text(
        "import bob.fuzz.mutator\n"
        "def _out_of_memory(*args, **kwargs):\n"
        "    def mutate(data, max_size, seed):\n"
        "        raise MemoryError\n"
        "    return mutate\n"
        "bob.fuzz.mutator.custom_mutator = _out_of_memory  # (the worker makes its mutator once its target is loaded)\n"
        "def target(data):\n"
        "    pass\n")
    run = subprocess.run([sys.executable, "-m", "bob", "fuzz", "run", "no_memory_to_mutate:target", "--format",
                          "input", "--runs", "200", "--corpus", str(tmp_path / "c"), "--artifacts",
                          str(tmp_path / "a"), "--json"], capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path),
                                                                           os.environ.get("PYTHONPATH", "")])))
    report = json.loads(run.stdout)
    assert run.returncode == 70 and report["error"]["message"].startswith("out of memory as the mutator ran"), report
