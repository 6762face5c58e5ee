"""SIGINT, SIGTERM and SIGHUP at every point of bob-run's commit (one a point, in turn), and at random (issue 21).

The crash-point mechanism of test_crash_points.py, with a signal instead of
SIGKILL: a child wraps the ``os`` calls a run makes and sends itself the
signal just before the k-th one, for k = 1, 2, … until a run makes fewer
calls than k. After every run the promise is checked whole:

* the predictions and the checkpoint belong to one invocation (both old, or
  both new);
* the exit status and the message say which: 0 and the new files (a signal
  that came during the commit is named on stderr), or 128 + the signal,
  "nothing was changed", and the old files;
* no temporary file and no lock file is left, and the next run succeeds.
"""

from __future__ import annotations

import io
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import bob
import bob.run
from bob.formats.constants import RECORD_BYTES
from bob.formats.constants import UPDATES_PER_INVOCATION as U
from conftest import CORPUS, PROMPTS
from test_crash_points import COMMIT_CALLS, before_os_call

BIN = Path(sys.executable).parent  # the installed bob-run of the bob under test

SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]

# every os call a run makes, the lock's and the reads' too; the signal is argv[2]
SIGNAL_BEFORE = before_os_call("int(sys.argv[2])", COMMIT_CALLS + (
    "stat", "fstat", "ftruncate", "pwrite", "listdir", "readv")) + """
from bob.run import main
sys.exit(main(sys.argv[3:], until_exit=True))
"""


BOB_CODE = (os.path.dirname(os.path.abspath(bob.__file__)) + os.sep, str(BIN / "bob-run"))


def bob_frames(stderr: str) -> list[tuple[str, str]]:
    """The traceback frames in bob's own code: the package and the installed
    script (not merely a path with "bob" in it, a checkout's .venv included).
    Line 0 of the script is the interpreter, before its first statement ran."""
    return [(path, line) for path, line in re.findall(r'File "([^"]+)", line (\d+)', stderr)
            if os.path.abspath(path).startswith(BOB_CODE[0]) or (path == BOB_CODE[1] and line != "0")]


class Files:
    """A work directory resumed once, with the old and new bytes of both files."""

    def __init__(self, tmp_path: Path) -> None:
        self.dir = tmp_path
        record = bob.build_input(CORPUS, PROMPTS)
        record.write(tmp_path / "rec.bin")
        self.ck, self.pred = tmp_path / "ck.bin", tmp_path / "pred.bin"
        first = bob.invoke(record)
        self.old = (first.checkpoint_bytes(), first.predictions_bytes())
        second = bob.invoke(record, first.checkpoint)
        self.new = (second.checkpoint_bytes(), second.predictions_bytes())
        self.argv = ["--input", str(tmp_path / "rec.bin"), "--checkpoint", str(self.ck),
                     "--predictions", str(self.pred)]
        self.reset()

    def reset(self) -> None:
        self.ck.write_bytes(self.old[0])
        self.pred.write_bytes(self.old[1])

    def now(self) -> tuple[bytes, bytes]:
        return self.ck.read_bytes(), self.pred.read_bytes()

    def leftovers(self) -> list[str]:
        return sorted(p.name for p in self.dir.iterdir() if p.name.startswith("."))

    def check(self, returncode: int, stderr: str, signum: int, where: str) -> bool:
        """The promise after one run; True when it committed."""
        state = self.now()
        assert state in (self.old, self.new), f"{where}: the two files belong to different invocations"
        assert not bob_frames(stderr), f"{where}: {stderr}"
        assert self.leftovers() == [], f"{where}: left behind: {self.leftovers()}"
        name = signal.Signals(signum).name
        if returncode == 0:
            assert state == self.new, f"{where}: exit 0, but the files are the old ones"
            if "bob-run:" in stderr:  # the signal came during the commit: said, and the run counts as done
                assert f"{name} arrived during the commit; the invocation committed step {2 * U}" in stderr, stderr
            # (anything else is CPython's own start-up, which reports a Ctrl-C it survived in its words)
            return True
        assert state == self.old, f"{where}: exit {returncode}, but the files are the new ones"
        if returncode == 128 + signum:
            said = {f"bob-run: interrupted by {name}; nothing was changed\n",
                    "bob-run: interrupted; nothing was changed\n"}  # the latter: while bob was being imported
            assert stderr in said, f"{where}: {stderr}"
        else:  # ended before any of bob's code ran: the signal's default action, or Ctrl-C in the
            # interpreter's own start-up, which CPython reports in its own words (a fatal error)
            assert returncode in (-signum, 1), f"{where}: exit {returncode}: {stderr}"
        return False


def test_a_signal_at_every_os_call_of_a_run_tells_the_truth(tmp_path: Path) -> None:
    """SIGINT, SIGTERM and SIGHUP in turn, one just before each os call of a run (bob.signals handles the
    three alike, so each meets a third of the calls; the random runs below send each at any moment)."""
    files = Files(tmp_path)
    outcomes: dict[int, set[tuple[bool, bool]]] = {signum: set() for signum in SIGNALS}
    for k in range(1, 400):
        signum = SIGNALS[k % len(SIGNALS)]
        proc = subprocess.run([sys.executable, "-c", SIGNAL_BEFORE, str(k), str(signum), *files.argv],
                              capture_output=True, text=True, timeout=60)
        committed = files.check(proc.returncode, proc.stderr, signum, f"signal before os call {k}")
        outcomes[signum].add((committed, "bob-run:" in proc.stderr))
        if committed and "bob-run:" not in proc.stderr:  # the run made fewer than k calls: every point was tried
            break
        files.reset()
        # the next run succeeds and commits as if nothing had happened
        assert bob.run.main(files.argv) == 0
        assert files.now() == files.new and files.leftovers() == []
        files.reset()
    else:
        pytest.fail("the run was still making os calls after 400")
    # every side of the commit was reached by each signal: rolled back, and committed with the signal named
    # (held through the commit); and committed without one, the run having made fewer calls than k
    assert all(seen - {(True, False)} == {(False, True), (True, True)} for seen in outcomes.values()), outcomes
    assert (True, False) in outcomes[signum], outcomes


def _random_runs(tmp_path: Path, runs: int, batch: int = 8) -> dict[int, dict[str, int]]:
    """``runs`` bob-run processes, each sent a signal after a random delay within
    its own lifetime (SIGINT, SIGTERM and SIGHUP a batch each in turn); ``batch`` at a
    time, each in its own directory.
    The delays are drawn up to the lifetime of a whole batch, measured first
    unsignalled, then a staircase: the range grows by a quarter after a batch
    in which every run rolled back, shrinks after one in which every run
    committed. The machine's load (another test worker's) changes how long a
    run takes, and delays cut to another moment's never reach a commit. The
    outcomes are counted for each signal."""
    rng = random.Random(0)
    fixtures = [Files(tmp_path / f"w{i}") for i in range(batch) if not (tmp_path / f"w{i}").mkdir()]
    lifetime = 0.0
    for files, returncode, err, _, ended in _batch(fixtures, [None] * batch, signal.SIGINT):
        assert returncode == 0 and files.check(returncode, err, signal.SIGINT, "unsignalled"), err
        lifetime = max(lifetime, ended)
        files.reset()
    counts = {signum: {"committed": 0, "committed, signal named": 0, "rolled back": 0} for signum in SIGNALS}
    for first in range(0, runs, batch):
        signum = SIGNALS[first // batch % len(SIGNALS)]
        delays: "list[float | None]" = [rng.uniform(0, lifetime) for _ in fixtures[:min(batch, runs - first)]]
        committed = 0
        for files, returncode, err, delay, _ in _batch(fixtures, delays, signum):
            if files.check(returncode, err, signum, f"random delay {delay:.4f} s of {lifetime:.4f} s"):
                counts[signum]["committed, signal named" if "bob-run:" in err else "committed"] += 1
                committed += 1
            else:
                counts[signum]["rolled back"] += 1
            files.reset()
        lifetime *= 1.25 if committed == 0 else 0.8 if committed == len(delays) else 1.0
    return counts


def _batch(fixtures: "list[Files]", delays: "list[float | None]", signum: int):
    """One bob-run in each of the first ``len(delays)`` fixtures, started together (SIGINT, SIGTERM and SIGHUP
    as a shell's foreground job has them, whatever this process ignores), each sent ``signum`` after its delay
    (None: never); yields (files, exit code, stderr, delay, seconds until it was seen ended) in their order."""
    def default_signals() -> None:
        for each in SIGNALS:
            signal.signal(each, signal.SIG_DFL)

    procs = [(files, subprocess.Popen([str(BIN / "bob-run"), *files.argv], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, text=True, preexec_fn=default_signals), delay)
             for files, delay in zip(fixtures, delays)]
    begun, ended = time.monotonic(), {}

    def see_end(proc: "subprocess.Popen[str]") -> None:  # as it comes, not once the signals are all sent
        proc.wait()
        ended[proc] = time.monotonic()

    waiters = [threading.Thread(target=see_end, args=(proc,)) for _, proc, _ in procs]
    for waiter in waiters:
        waiter.start()
    for files, proc, delay in sorted((p for p in procs if p[2] is not None), key=lambda p: p[2]):
        time.sleep(max(0.0, begun + delay - time.monotonic()))
        try:
            proc.send_signal(signum)
        except ProcessLookupError:
            pass
    for (files, proc, delay), waiter in zip(procs, waiters):
        _, err = proc.communicate(timeout=60)
        waiter.join()
        yield files, proc.returncode, err, delay, ended[proc] - begun


def test_two_hundred_runs_signalled_at_random_tell_the_truth(tmp_path: Path) -> None:
    counts = _random_runs(tmp_path, 200)
    assert sum(sum(each.values()) for each in counts.values()) == 200
    for each in counts.values():  # each signal, a third of the runs: rolled back and committed both
        assert each["rolled back"] > 0 and each["committed"] + each["committed, signal named"] > 0, counts


def test_a_signal_the_parent_ignored_stays_ignored(tmp_path: Path) -> None:
    """nohup: SIGHUP ignored by the parent is not turned into an interruption."""
    files = Files(tmp_path)
    proc = subprocess.run([sys.executable, "-c", SIGNAL_BEFORE, "3", str(signal.SIGHUP), *files.argv],
                          capture_output=True, text=True, preexec_fn=lambda: signal.signal(signal.SIGHUP,
                                                                                            signal.SIG_IGN))
    assert proc.returncode == 0 and proc.stderr == "" and files.now() == files.new


def _before_bob_ran(returncode: int, stderr: str, signum: int) -> bool:
    """The signal came before the script's first statement: its default action, or Ctrl-C in the
    interpreter's own start-up (CPython's fatal error, or its traceback at the script's line 0; or its
    notice that it cut the check of argv[0], or an import lock's clean-up, after which CPython runs the
    script all the same)."""
    return (returncode in (-signum, 128 + signum, 1) and ("bob" not in stderr or ", line 0, in <module>" in stderr)) \
        or stderr.startswith(("Failed checking if argv[0] is an import path entry",
                              "Exception ignored in: <function _get_module_lock.<locals>.cb"))


@pytest.mark.parametrize("command", ["bob-inspect", "bob-fixture", "bob-fuzz", "bob-run"])
def test_every_command_signalled_at_random_prints_what_its_exit_status_says(tmp_path: Path, command: str) -> None:
    """SIGINT at any moment, bob being imported included: no traceback, and under --json one
    envelope whose exit_code is the process's (never ok with 130, never nothing with 130)."""
    files = Files(tmp_path)
    argv = {"bob-inspect": ["checkpoint", str(files.ck)], "bob-fuzz": ["replay", "--target", "checkpoint", str(files.ck)],
            "bob-fixture": ["--text", "abc", "--prompt", "a", "--prompt", "b", "--prompt", "", "--output",
                            str(tmp_path / "fixture.bin")], "bob-run": files.argv}[command]
    def start() -> list[subprocess.Popen[str]]:
        return [subprocess.Popen([str(BIN / command), "--json", *argv], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for _ in range(8)]

    # The signals fall across a life as long as eight such runs take together on this machine:
    # a fixed horizon missed every run's life on a faster machine, or fell before any had begun on
    # a slower one.
    begun, lives = time.monotonic(), start()
    for proc in lives:
        proc.communicate(timeout=60)
    horizon = time.monotonic() - begun
    files.reset()
    rng = random.Random(command)
    interrupted_with_envelope = rounds = 0
    while rounds < 6 or (not interrupted_with_envelope and rounds < 24):
        rounds += 1
        procs = [(proc, rng.uniform(0.0, horizon)) for proc in start()]
        begun = time.monotonic()
        for proc, delay in sorted(procs, key=lambda item: item[1]):
            time.sleep(max(0.0, begun + delay - time.monotonic()))
            proc.send_signal(signal.SIGINT)
        for proc, delay in procs:
            out, err = proc.communicate(timeout=60)
            if _before_bob_ran(proc.returncode, err, signal.SIGINT):
                continue
            where = f"{command}, SIGINT after {delay:.3f} s of {horizon:.3f} s: exit {proc.returncode}"
            assert "Traceback" not in err, f"{where}: {err}"
            document = json.loads(out.splitlines()[-1]) if out.strip() else None
            assert document is not None and document["exit_code"] == proc.returncode, f"{where}: {out} {err}"
            interrupted_with_envelope += proc.returncode == 130
        files.reset()
    assert interrupted_with_envelope, f"no run of {rounds * 8} was interrupted after bob's first statement"


# CPython runs a handler a signal left pending in the next call that changes the signal mask, after the
# change: a Ctrl-C delivered just before the scripts' hold was raised by the hold's own call. Here the
# first call of the hold raises it, as CPython's check would (the script itself run unchanged).
CTRL_C_AS_THE_HOLD_GOES_ON = """
import runpy, sys, types, _signal
real, calls = _signal, []
class Module(types.ModuleType):
    def __getattr__(self, name):
        return getattr(real, name)
def pthread_sigmask(how, mask):
    previous = real.pthread_sigmask(how, mask)
    calls.append(how)
    if len(calls) == 1:
        raise KeyboardInterrupt
    return previous
sys.modules["_signal"] = fake = Module("_signal")
fake.pthread_sigmask = pthread_sigmask
del sys.argv[0]
if sys.argv[0] == "-m":
    runpy.run_module("bob", run_name="__main__", alter_sys=True)
else:
    runpy.run_path(sys.argv[0], run_name="__main__")
"""


@pytest.mark.parametrize("command", ["bob-run", "bob-inspect", "bob-fixture", "bob-fuzz", "bob-qualify",
                                     "python -m bob"])
def test_a_ctrl_c_raised_by_the_scripts_hold_itself_is_reported_by_the_runner(tmp_path: Path, command: str) -> None:
    """bob-run --json printed "interrupted; nothing was changed" and no --json object (its script's last
    resort, once in a few thousand random Ctrl-Cs), the other scripts a traceback: the Ctrl-C is sent again
    under the hold, and the runner reports it as any other that arrived while bob was imported."""
    files = Files(tmp_path)
    script = ["-m", "run"] if command == "python -m bob" else [str(BIN / command)]
    argv = files.argv if command in ("bob-run", "python -m bob") else ["--version"]  # (answered, uninterrupted)
    proc = subprocess.run([sys.executable, "-c", CTRL_C_AS_THE_HOLD_GOES_ON, *script, "--json", *argv],
                          capture_output=True, text=True, timeout=120)
    prog = "bob-run" if command == "python -m bob" else command  # (python -m bob run is bob-run)
    assert proc.returncode == 130 and json.loads(proc.stdout)["exit_code"] == 130, (proc.stdout, proc.stderr)
    assert proc.stderr.startswith(f"{prog}: interrupted by SIGINT") and proc.stderr.count("\n") == 1, proc.stderr
    assert files.now() == files.old


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["--bogus"], ["--input"]])
def test_a_signal_held_since_bob_run_started_is_not_lost_to_an_answer_or_a_usage_refusal(argv: list[str]) -> None:
    """bob-run defers signals from its start and looked at them only once it worked on files: one held
    since it started gave way to --version's answer (exit 0) or a usage refusal (exit 2)."""
    proc = subprocess.run([sys.executable, "-c", CTRL_C_AS_THE_HOLD_GOES_ON, str(BIN / "bob-run"), "--json", *argv],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 130 and json.loads(proc.stdout)["exit_code"] == 130, (proc.stdout, proc.stderr)
    assert proc.stderr == "bob-run: interrupted by SIGINT; nothing was changed\n"


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["bogus"], []])
def test_a_signal_held_since_python_m_bob_started_is_not_lost_to_its_own_answer(argv: list[str]) -> None:
    """python -m bob's own answers (its version, its help, a usage error) ran outside the runner: a signal
    held since it started was never reported, and the answer's exit code stood."""
    proc = subprocess.run([sys.executable, "-c", CTRL_C_AS_THE_HOLD_GOES_ON, "-m", "--json", *argv],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 130 and json.loads(proc.stdout)["exit_code"] == 130, (proc.stdout, proc.stderr)
    assert proc.stderr == "python -m bob: interrupted by SIGINT\n"


def test_every_installed_script_holds_the_ending_signals_first() -> None:
    """Each command's script blocks exactly bob.signals.ENDING before it imports anything of bob's
    (pyproject.toml: the commands are these scripts, and only these), and so does python -m bob."""
    import ast

    from bob.signals import ENDING

    scripts = Path(bob.__file__).resolve().parents[1] / "bob.data" / "scripts"
    names = sorted(p.name for p in scripts.iterdir())
    assert names == ["bob-fixture", "bob-fuzz", "bob-inspect", "bob-qualify", "bob-run"]
    for name in names:
        source = (scripts / name).read_text(encoding="utf-8")
        calls = sorted((node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call)
                        and ast.unparse(node.func) == "_signal.pthread_sigmask"), key=lambda node: node.lineno)
        assert len(calls) == 2, name  # the hold, and the mask read again when the hold's own call raised a Ctrl-C
        blocked = {getattr(signal, ast.unparse(e).split(".")[1]) for e in calls[0].args[1].elts}  # type: ignore
        assert ast.unparse(calls[0].args[0]) == "_signal.SIG_BLOCK" and blocked == set(ENDING), name
        assert source.index("pthread_sigmask") < source.index("from bob"), name
    # python -m bob: the same hold, first in its __main__ block (the package itself is imported before it)
    source = (Path(bob.__file__).parent / "__main__.py").read_text(encoding="utf-8")
    block = source[source.index('if __name__ == "__main__":'):]
    calls = sorted((node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call)
                    and ast.unparse(node.func) == "_signal.pthread_sigmask"), key=lambda node: node.lineno)
    assert len(calls) == 2 and ast.unparse(calls[0].args[0]) == "_signal.SIG_BLOCK"
    assert {getattr(signal, ast.unparse(e).split(".")[1]) for e in calls[0].args[1].elts} == set(ENDING)  # type: ignore
    assert block.index("pthread_sigmask") < block.index("from bob")
    with open(Path(bob.__file__).resolve().parents[2] / "pyproject.toml", "rb") as f:
        import tomllib

        assert "scripts" not in tomllib.load(f)["project"]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: signal.Signals(s).name)
@pytest.mark.parametrize("command", ["bob-inspect", "bob-run", "bob-fixture"])
def test_a_command_stuck_printing_to_a_reader_that_stopped_still_ends_on_a_signal(tmp_path: Path, command: str,
                                                                                   signum: int) -> None:
    """Its outcome decided, it does not wait for the reader: bob-inspect ends with the signal's status
    (128 + N, as the exit table says: not killed by it); bob-run, whose invocation committed, and
    bob-fixture, whose record is written, with 0 (the files are the new ones)."""
    import fcntl

    files = Files(tmp_path)
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, 1031, 4096)  # F_SETPIPE_SZ
    os.set_blocking(write_end, False)
    try:
        while True:
            os.write(write_end, b"x" * 4096)  # full before the command writes a byte
    except BlockingIOError:
        os.set_blocking(write_end, True)
    fixture = tmp_path / "fixture.bin"
    argv = {"bob-inspect": ["schema", "--json"], "bob-run": ["--json", *files.argv],
            "bob-fixture": ["--json", "--text", "abc", "--prompt", "a", "--prompt", "b", "--prompt", "",
                            "--output", str(fixture)]}[command]
    proc = subprocess.Popen([str(BIN / command), *argv], stdout=write_end, stderr=subprocess.PIPE)
    os.close(write_end)
    try:
        time.sleep(2.0)  # done, and blocked in its write
        proc.send_signal(signum)
        code = proc.wait(timeout=10)
    finally:
        proc.kill()
        proc.wait()
        os.close(read_end)
        if proc.stderr is not None:
            proc.stderr.close()
    if command == "bob-run":
        assert code == 0 and files.now() == files.new
    elif command == "bob-fixture":
        assert code == 0 and fixture.stat().st_size == RECORD_BYTES
    else:
        assert code == 128 + signum


def test_the_signals_a_parent_blocked_stay_blocked(tmp_path: Path) -> None:
    """The script releases only what it blocked itself: a SIGTERM the parent keeps blocked does not
    end a bob-run waiting for a held lock (it gives up: busy, 75)."""
    import fcntl

    files = Files(tmp_path)
    lock = os.open(tmp_path / ".ck.bin.bob-lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        with subprocess.Popen([str(BIN / "bob-run"), *files.argv, "--wait", "2"], stderr=subprocess.PIPE,
                              preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)) as proc:
            time.sleep(0.8)
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=30) == 75, proc.stderr.read() if proc.stderr else ""
    finally:
        os.close(lock)
    assert files.now() == files.old


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=lambda s: signal.Signals(s).name)
def test_bob_qualify_ended_by_a_signal_says_so_and_leaves_no_temporary_directory(tmp_path: Path, signum: int) -> None:
    """Sent while its bob-run processes work in a temporary directory: 128 + N with the --json envelope
    (as for Ctrl-C), the directory removed, and no phase called done."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    proc = subprocess.Popen([str(BIN / "bob-qualify"), "--json", "--seed", "1"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ, TMPDIR=str(scratch)))
    try:
        deadline = time.monotonic() + 60
        while not any(scratch.glob("bob-qualify-*")) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert any(scratch.glob("bob-qualify-*")), "no temporary directory was made"
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    document = json.loads(out)
    assert proc.returncode == document["exit_code"] == 128 + signum, err
    assert f"interrupted by {signal.Signals(signum).name}" in document["error"]["message"]
    assert list(scratch.iterdir()) == [] and "(done)" not in err and "Traceback" not in err


def _command(outcome_code: int, committed: "str | None" = None) -> int:
    from bob.commands import Outcome, argument_parser, run_command

    return run_command("bob-x", argument_parser, lambda args: Outcome(outcome_code, {}, "said", committed=committed),
                       [], numpy=False)


@pytest.mark.parametrize("code", [0, 1])
def test_a_signal_after_the_outcome_is_printed_does_not_change_the_status(code: int, monkeypatch, capsys) -> None:
    """SIGTERM in the last steps of the runner, after the outcome was printed whole: recorded, not raised."""
    from bob import signals

    original = signals.restore

    def late(replaced: "dict[int, object]") -> None:
        os.kill(os.getpid(), signal.SIGTERM)  # bob's handler is still the one in place
        original(replaced)

    monkeypatch.setattr(signals, "restore", late)
    before = len(signals.taken())
    assert _command(code) == code and capsys.readouterr().out == "said\n"
    assert signals.taken()[before:] == (signal.SIGTERM,)
    monkeypatch.setattr(signals, "restore", original)
    replaced = signals.install()  # the hold ended with the command: bob's handler raises again
    try:
        with pytest.raises(signals.Interrupted):
            os.kill(os.getpid(), signal.SIGTERM)
    finally:
        signals.restore(replaced)


def test_the_outermost_command_brings_back_the_scripts_hold_before_its_handlers_go(monkeypatch, capsys) -> None:
    """Leaving bob's handlers, the signals the script blocked are blocked again first: one that comes
    after the runner is done waits, pending, and never meets the default action (which would kill)."""
    from bob import signals

    monkeypatch.setattr(signals, "script_held", frozenset({signal.SIGHUP}))
    old = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    try:
        assert _command(0) == 0
        assert signal.SIGHUP in signal.pthread_sigmask(signal.SIG_BLOCK, [])
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads the threads' masks in Linux's /proc")
def test_the_cores_pool_threads_take_no_signal_sent_to_the_process() -> None:
    """The kernel gives a process's signal to any thread that does not block it: a pool thread that took
    one would meet the default action (the process ends) while the caller's thread holds it blocked
    (a command ending after it printed its status: bob.signals.restore)."""
    bob.invoke(bob.build_input(CORPUS, PROMPTS), threads=0)  # parallel: the pool has started
    masks = {}
    for task in Path("/proc/self/task").iterdir():
        if (task / "comm").read_text().startswith("bob-core-"):
            status = (task / "status").read_text()
            masks[task.name] = int(re.search(r"^SigBlk:\s*([0-9a-f]+)$", status, re.M)[1], 16)
    assert masks, "no pool thread was started"
    for signum in SIGNALS:
        assert all(mask >> (signum - 1) & 1 for mask in masks.values()), (signal.Signals(signum).name, masks)


@pytest.mark.parametrize("argv", [["bob-inspect", "checkpoint", "CK", "--json"], ["bob-fixture", "--help"],
                                  ["python", "-m", "bob", "inspect", "checkpoint", "CK", "--json"]],
                         ids=["bob-inspect", "help", "python -m bob"])
def test_a_signal_sent_as_soon_as_the_outcome_is_read_leaves_its_status(tmp_path: Path, argv: "list[str]") -> None:
    """A supervisor that ends the command when it has read its output: the status is still the one printed
    (it was 143 in most such runs while the last write's return and the runner's end were not covered)."""
    files = Files(tmp_path)
    argv = [str(BIN / argv[0]), *(str(files.ck) if a == "CK" else a for a in argv[1:])]
    last = b"print bob's version" if "--help" in argv else b""  # the help's last line; the JSON's only one
    for signum in SIGNALS * 5:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert proc.stdout is not None
        while last not in (first := proc.stdout.readline()) and first:
            pass
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0 and err == b"", (signal.Signals(signum).name, first[:80], proc.returncode, err)


def test_a_library_caller_of_python_m_bob_keeps_its_own_signals(tmp_path: Path, capsys) -> None:
    """``bob.__main__.main(["run", …])`` returns like any command: Ctrl-C raises in the caller afterwards."""
    import bob.__main__

    files = Files(tmp_path)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # (the suite's may be a background job's)
    try:
        assert bob.__main__.main(["run", *files.argv]) == 0 and files.now() == files.new
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_signal_while_the_outcome_is_written_to_a_reader_that_reads_is_only_recorded(monkeypatch) -> None:
    """SIGTERM just as the last byte went out (stdout can take more: nothing waits for a reader)."""
    from bob import signals

    class Stdout(io.StringIO):
        def write(self, text: str) -> int:
            written = super().write(text)
            if text:
                os.kill(os.getpid(), signal.SIGTERM)  # bob's handler runs as this call returns
            return written

    stdout = Stdout()
    monkeypatch.setattr(sys, "stdout", stdout)
    before = len(signals.taken())
    assert _command(0) == 0 and stdout.getvalue() == "said\n" and signals.taken()[before:] == (signal.SIGTERM,)


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_a_command_interrupted_while_its_reader_has_stopped_ends_and_does_not_wait(tmp_path: Path,
                                                                                   stream: str) -> None:
    """SIGTERM while bob-qualify works, its stdout or stderr a full pipe nobody reads: the report of the
    interruption cannot be printed, and the command ends with 143 instead of waiting for the reader."""
    import fcntl

    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, 1031, 4096)  # F_SETPIPE_SZ
    os.set_blocking(write_end, False)
    try:
        while True:
            os.write(write_end, b"x" * 4096)
    except BlockingIOError:
        os.set_blocking(write_end, True)
    streams = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, stream: write_end}
    proc = subprocess.Popen([str(BIN / "bob-qualify"), "--json", "--seed", "1"], **streams)
    os.close(write_end)
    try:
        time.sleep(2.0)  # working
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=10)
    finally:
        proc.kill()
        proc.wait()
        os.close(read_end)
    assert code == 128 + signal.SIGTERM


def test_a_closed_stderr_is_not_a_stalled_reader(tmp_path: Path) -> None:
    """The outcome was written whole to stdout; stderr closed: a signal then is only recorded."""
    files = Files(tmp_path)
    for _ in range(10):
        proc = subprocess.Popen([str(BIN / "bob-inspect"), "checkpoint", str(files.ck), "--json"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, pass_fds=(),
                                preexec_fn=lambda: os.close(2))
        with proc, proc.stdout:  # (its pipe closed each round)
            json.loads(proc.stdout.readline())
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=60) == 0



def test_a_signal_while_printing_to_a_slow_reader_that_reads_on_is_only_recorded(tmp_path: Path) -> None:
    """The reader takes 1 KiB each 0.1 s from a one-page pipe: bob's write is blocked when the SIGTERM
    comes, yet the pipe takes more within the second, so the report goes out whole, and the command
    ends as it decided (0). (A rule of "full right now" cut it short and exited 143.)"""
    import fcntl

    files = Files(tmp_path)
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, 1031, 4096)  # F_SETPIPE_SZ: one page
    proc = subprocess.Popen([str(BIN / "bob-inspect"), "checkpoint", str(files.ck), "--rows-hex",
                             bytes(range(256)).hex()], stdout=write_end, stderr=subprocess.DEVNULL)
    os.close(write_end)
    received, signalled = bytearray(), False
    try:
        while chunk := os.read(read_end, 1024):
            received += chunk
            if not signalled and len(received) >= 8192:  # in the middle of the report, its write blocked
                proc.send_signal(signal.SIGTERM)
                signalled = True
            time.sleep(0.1)
        code = proc.wait(timeout=10)
    finally:
        proc.kill()
        proc.wait()
        os.close(read_end)
    text = received.decode()
    assert signalled and code == 0 and text.endswith("bob-run can resume it\n"), (code, text[-200:])


def test_a_second_signal_while_a_command_cleans_up_does_not_cut_it_short(tmp_path: Path) -> None:
    """bob-fuzz conformance ended by SIGTERM removes what it made (its directories, any file staged); a second
    SIGTERM 5 ms later (a supervisor that insists, Ctrl-C twice) is only recorded, so the removal finishes:
    exit 143, and no partial corpus without a manifest (it used to keep about fifty files)."""
    out = tmp_path / "corpus"
    cut = 0
    for _ in range(12):  # three cut short: on a loaded machine the corpus (97 files) may be done before the signal
        proc = subprocess.Popen([str(BIN / "bob-fuzz"), "conformance", "--json", str(out)], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (out / "checkpoint").is_dir():  # the last format's files begun
            time.sleep(0.01)
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.005)
        proc.send_signal(signal.SIGTERM)
        stdout, _ = proc.communicate(timeout=60)
        if proc.returncode == 0 and (out / "manifest.json").is_file():  # finished first: the signal came too late
            shutil.rmtree(out)
            continue
        assert proc.returncode == 128 + signal.SIGTERM and json.loads(stdout)["exit_code"] == 143
        assert not out.exists(), sorted(str(p) for p in out.rglob("*"))[:5]
        cut += 1
        if cut == 3:
            break
    assert cut == 3


def test_after_the_signal_that_ends_a_command_another_is_only_recorded() -> None:
    from bob import signals

    replaced = signals.install()
    before = len(signals.taken())
    try:
        inner = signals.install()  # a command's own (bob-fuzz run's campaign), given back before it cleans up
        try:
            with pytest.raises(signals.Interrupted):
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(1)
        finally:
            signals.restore(inner)
        os.kill(os.getpid(), signal.SIGHUP)  # while cleaning up
        time.sleep(0.05)
    finally:
        signals.restore(replaced)
    assert signals.taken()[before:] == (signal.SIGTERM, signal.SIGHUP)


SLOW_TARGETS = '''
import os, signal, time
fired = []
class Finalized:
    def __del__(self):  # a finalizer running when the signal lands: CPython cannot raise there
        os.kill(os.getpid(), signal.SIGTERM)
def dropped_then_slow(data):
    if not fired:
        fired.append(1)
        Finalized()
    time.sleep(0.5)
def slow(data):
    time.sleep(0.5)
'''


def _slow_replay(tmp_path: Path, target: str, **streams: object) -> "subprocess.Popen[bytes]":
    (tmp_path / "slow_targets.py").write_text(SLOW_TARGETS)
    files = tmp_path / "files"
    files.mkdir()
    for k in range(20):
        (files / f"f{k:02d}.bin").write_bytes(b"x")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    return subprocess.Popen([sys.executable, "-m", "bob", "fuzz", "replay", str(files), "--target",
                             f"slow_targets:{target}", "--json"], env=env, stdin=subprocess.DEVNULL, **streams)


def test_a_signal_a_finalizer_swallowed_does_not_hold_the_next_one(tmp_path: Path) -> None:
    """The first SIGTERM lands in a __del__ and is dropped (the command goes on); the next one, at 2 s,
    ends it with 143 as the exit table says: not held as if the command were already ending."""
    proc = _slow_replay(tmp_path, "dropped_then_slow", stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    time.sleep(2)
    proc.send_signal(signal.SIGTERM)
    stdout, _ = proc.communicate(timeout=60)
    assert proc.returncode == 143 and json.loads(stdout)["error"]["message"] == "interrupted by SIGTERM", stdout


def test_a_command_ended_by_a_signal_does_not_wait_on_a_stopped_terminal(tmp_path: Path) -> None:
    """stderr a terminal whose output is stopped (Ctrl-S, a stalled ssh session): the SIGTERM ends the
    command, whose last progress line cannot be written; it exits 143 instead of waiting for ever."""
    import pty
    import termios

    master, slave = pty.openpty()
    termios.tcflow(slave, termios.TCOOFF)
    try:
        proc = _slow_replay(tmp_path, "slow", stdout=subprocess.DEVNULL, stderr=slave, start_new_session=True)
        time.sleep(3)  # its progress line (after 2 s) waits on the stopped terminal
        proc.send_signal(signal.SIGTERM)
        time.sleep(2)
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=20)
        finally:
            proc.kill()
            proc.wait()
    finally:
        os.close(master)
        os.close(slave)
    assert code == 143


@pytest.mark.parametrize("block_fails", [False, True])
def test_a_signal_while_a_scratch_directory_is_removed_waits_until_it_is_gone(monkeypatch, block_fails) -> None:
    """A SIGTERM in the middle of removing a check's directory ended the removal, leaving its files in
    $TMPDIR (tempfile.TemporaryDirectory); it is raised once the directory is gone, also after an error
    in the block (which a check catches: the signal was lost, and the qualification went on)."""
    from bob import scratch, signals
    from bob.qualify.processes import ProcessFailed

    real = shutil.rmtree

    def interrupted_rmtree(path, ignore_errors=False):
        os.kill(os.getpid(), signal.SIGTERM)  # bob's handler runs at the next bytecode: mid-removal
        real(path, ignore_errors=ignore_errors)

    replaced = signals.install()
    try:
        with pytest.raises(signals.Interrupted) as info:
            with scratch.scratch_directory("bob-qualify-") as directory:
                Path(directory, "model.bob").write_bytes(bytes(1000))
                monkeypatch.setattr(shutil, "rmtree", interrupted_rmtree)
                if block_fails:
                    raise ProcessFailed("bob-run exited 3")
    finally:
        signals.restore(replaced)
        monkeypatch.undo()
    assert info.value.signum == signal.SIGTERM and not Path(directory).exists()
    assert isinstance(info.value.__context__, ProcessFailed) == block_fails

def test_a_scratch_directory_out_of_descriptors_is_still_removed_whole(tmp_path: Path) -> None:
    """``shutil.rmtree`` holds a descriptor for each level of the tree: under a tight ``ulimit -n`` it
    left bob-fuzz check's temporary corpus behind (and ``TemporaryDirectory`` turned the finished check
    into exit 70). Two descriptors to spare here, a tree seven levels deep: it is removed all the same."""
    child = """
import os, resource, sys
from bob.scratch import scratch_directory
with scratch_directory(sys.argv[1]) as directory:
    deep = os.path.join(directory, *"abcdef")
    os.makedirs(deep)
    os.symlink("/", os.path.join(deep, "root"))  # (a link is removed, never followed)
    open(os.path.join(deep, "f"), "wb").close()
    free = os.open(os.devnull, os.O_RDONLY)
    os.close(free)
    resource.setrlimit(resource.RLIMIT_NOFILE, (free + 2, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
print(directory, os.path.lexists(directory))
"""
    out = subprocess.run([sys.executable, "-c", child, "bob-scratch-"], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "TMPDIR": str(tmp_path)})
    assert out.returncode == 0 and out.stderr == "", out.stderr
    directory, left = out.stdout.split()
    assert Path(directory).parent == tmp_path and left == "False" and list(tmp_path.iterdir()) == []


def _fixture(out: Path, text: str) -> int:
    from bob.fixture import fixture_main

    return fixture_main(["--text", text, "--prompt", "a", "--prompt", "b", "--prompt", "c", "--output", str(out)])


def test_a_signal_once_bob_fixture_replaced_its_output_only_is_recorded(tmp_path: Path, monkeypatch, capsys) -> None:
    """A SIGTERM after the rename (here during the directory's fsync) ended bob-fixture with 143,
    "interrupted", while its new record was in place: the outcome was decided, and it is exit 0."""
    import bob.commit

    out = tmp_path / "r.bin"
    assert _fixture(out, "old old old") == 0
    real = bob.commit.fsync_directory

    def signalled(directory: str, *args: object) -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        real(directory, *args)

    monkeypatch.setattr(bob.commit, "fsync_directory", signalled)
    capsys.readouterr()
    assert _fixture(out, "new new new") == 0
    assert out.read_bytes() == bob.build_input(b"new new new", [b"a", b"b", b"c"]).to_bytes()
    assert "wrote" in capsys.readouterr().out


def test_a_signal_as_bob_fixture_makes_its_temporary_leaves_none(tmp_path: Path, monkeypatch, capsys) -> None:
    """A SIGTERM between the temporary's creation and its name reaching the code that removes it left
    a .NAME.bob-tmp-PID-RAND file for good: the name is held before the file exists."""
    import bob.fileio

    out = tmp_path / "r.bin"
    assert _fixture(out, "old old old") == 0
    old, real = out.read_bytes(), os.open

    def signalled(path, *args):
        fd = real(path, *args)
        if ".bob-tmp-" in os.fsdecode(path):
            os.kill(os.getpid(), signal.SIGTERM)  # raised at the next bytecode: before the caller has the fd
        return fd

    monkeypatch.setattr(bob.fileio.os, "open", signalled)
    try:
        code = _fixture(out, "new new new")
    finally:
        monkeypatch.undo()
    assert code == 143 and "interrupted by SIGTERM" in capsys.readouterr().err
    assert out.read_bytes() == old and sorted(p.name for p in tmp_path.iterdir()) == ["r.bin"]


def test_a_signal_as_a_scratch_directory_is_made_leaves_none(tmp_path: Path, monkeypatch) -> None:
    """A SIGTERM as mkdtemp's directory was made, before its name was bound, left it in TMPDIR for good."""
    import tempfile

    from bob import scratch, signals

    real = tempfile.mkdtemp

    def signalled(*args: object, **kwargs: object) -> str:
        made = real(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGTERM)  # raised at the next bytecode: before the caller has the name
        return made

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # (TMPDIR read again)
    monkeypatch.setattr(tempfile, "mkdtemp", signalled)
    replaced = signals.install()
    try:
        with pytest.raises(signals.Interrupted):
            with scratch.scratch_directory("bob-scratch-"):
                pytest.fail("the block ran")
    finally:
        signals.restore(replaced)
    assert list(tmp_path.iterdir()) == []


def test_what_rmtree_leaves_of_a_scratch_directory_is_removed_but_never_through_a_link(tmp_path: Path,
                                                                                      monkeypatch) -> None:
    """What shutil.rmtree left (here: all of it) is removed bottom up: a directory a reader made read-only is made
    writable first (TemporaryDirectory did; its corpus was left behind), and a directory swapped for a link
    to elsewhere once listed is not followed: nothing outside the scratch directory is removed."""
    import shutil
    import tempfile

    from bob import scratch

    victim = tmp_path / "victim"
    (victim / "sub").mkdir(parents=True)
    (victim / "precious.txt").write_bytes(b"keep")
    (victim / "sub" / "also.txt").write_bytes(b"keep")  # (one level down: the walk went on through the link)
    real_unlink, real_scandir, unwritable, swapped = os.unlink, os.scandir, set(), []

    def unlink(path, *args, **kwargs):  # as a read-only directory would (root writes into it all the same)
        if os.path.dirname(path) in unwritable:
            raise PermissionError(13, "Permission denied", path)
        return real_unlink(path, *args, **kwargs)

    def chmod(path, mode, *args, **kwargs):
        unwritable.discard(os.fspath(path))

    def scandir(path="."):  # the first look into "swap" finds a link to the victim in its place
        if os.path.basename(path) == "swap" and not swapped:
            swapped.append(path)
            os.rmdir(path)
            os.symlink(victim, path)
        return real_scandir(path)

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # (TMPDIR read again: what a failure leaves is pytest's)
    monkeypatch.setattr(shutil, "rmtree", lambda *args, **kwargs: None)
    with scratch.scratch_directory("bob-scratch-") as directory:
        (Path(directory) / "ro" / "deep").mkdir(parents=True)
        (Path(directory) / "ro" / "file").write_bytes(b"x")
        (Path(directory) / "swap").mkdir()
        unwritable.add(os.path.join(directory, "ro"))
        monkeypatch.setattr(os, "unlink", unlink)
        monkeypatch.setattr(os, "chmod", chmod)
        monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.undo()
    assert swapped and not os.path.lexists(directory)
    assert (victim / "precious.txt").read_bytes() == (victim / "sub" / "also.txt").read_bytes() == b"keep"


@pytest.mark.parametrize("when", ["before", "during"])
def test_a_scratch_directory_swapped_for_a_link_removes_the_link_never_what_it_leads_to(tmp_path: Path, monkeypatch,
                                                                                      when: str) -> None:
    """A reader (or another user, in a TMPDIR without the sticky bit) that moved bob-fuzz check's temporary corpus
    away and put a link to a directory of theirs in its place had every file under that directory removed: rmtree
    refuses a link, and the walk after it started through it. Swapped before the removal, or as its walk began."""
    import shutil
    import tempfile

    from bob import scratch

    victim = tmp_path / "victim"
    (victim / "sub").mkdir(parents=True)
    (victim / "precious.txt").write_bytes(b"keep")
    (victim / "sub" / "also.txt").write_bytes(b"keep")
    real_walk = os.walk

    def swap(directory: str) -> None:
        os.rename(directory, directory + ".moved")
        os.symlink(victim, directory)

    def walk(top, *args, **kwargs):  # the swap as the walk begins (rmtree: left nothing of it, as under ulimit -n)
        swap(top)
        return real_walk(top, *args, **kwargs)

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # (TMPDIR read again)
    with scratch.scratch_directory("bob-scratch-") as directory:
        (Path(directory) / "corpus").mkdir()
        (Path(directory) / "corpus" / "a.bin").write_bytes(b"x")
        if when == "before":
            swap(directory)
        else:
            monkeypatch.setattr(shutil, "rmtree", lambda *args, **kwargs: None)
            monkeypatch.setattr(os, "walk", walk)
    monkeypatch.undo()
    assert not os.path.lexists(directory) and os.path.isdir(directory + ".moved")
    assert (victim / "precious.txt").read_bytes() == (victim / "sub" / "also.txt").read_bytes() == b"keep"


@pytest.mark.parametrize("module", ["bob.run", "bob.fixture"])
def test_python_m_a_command_module_keeps_its_printed_status_through_the_teardown(tmp_path: Path, module: str) -> None:
    """``python -m bob.run`` ended 143 after printing an ok JSON and committing, when a SIGTERM came in the
    interpreter's teardown (here: an atexit hook sends it); it now holds the signals after main, as the
    installed scripts and ``python -m bob`` do."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text("import atexit, os, signal\n"
                                           "atexit.register(lambda: os.kill(os.getpid(), signal.SIGTERM))\n")
    bob.build_input(b"abracadabra", [b"a", b"b", b""]).write(tmp_path / "r.bin")
    args = (["--input", "r.bin", "--checkpoint", "c.bob", "--predictions", "p.bin"] if module == "bob.run" else
            ["--text", "abc", "--prompt", "a", "--prompt", "b", "--prompt", "", "--output", "f.bin"])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hook), str(Path(bob.__file__).parent.parent)])}
    done = subprocess.run([sys.executable, "-m", module, "--json", *args], cwd=tmp_path, env=env,
                          capture_output=True, timeout=120)
    assert json.loads(done.stdout)["ok"] is True and done.returncode == 0, (done.returncode, done.stderr)
