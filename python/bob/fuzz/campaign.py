"""A coverage-guided campaign: ``jobs`` atheris workers on one corpus directory (docs/fuzzing.md).

The parent reads libFuzzer's status lines from each worker and shows the
totals (:class:`bob.fuzz.common.CampaignDisplay`); a finding is written as
``<target>-<sha256 prefix>.bin`` once per failure (:func:`bob.fuzz.properties.failure_key`)
and the worker is restarted for what remains. The campaign owns its
processes and files: workers die with the parent and are ended on every exit
path, ``--jobs`` workers that cannot all start are a refusal, and scratch
directories live under ``ARTIFACTS/.logs/`` and are removed. Only the worker
imports atheris.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from pathlib import Path

from bob.fuzz.common import DEFAULT_MAX_LEN, MAX_LEN, CampaignDisplay, CampaignResult, Finding, fast_path_stats, \
    read_input, regression_dir
from bob.fuzz.targets import TARGETS, seed_files
from bob.text import one_line

__all__ = ["run_campaign"]

# Under atheris a worker's memory grows with the 786,880-byte inputs: workers on the big-input targets
# run in generations of this many executions, restarted on the same corpus, below -rss_limit_mb.
GENERATION = {"checkpoint": 20_000, "inspect": 20_000, "run": 20_000}
RSS_LIMIT_MB = 6144
LOG_LINES = 20_000  # a worker's log keeps its last lines, over every generation of this campaign
OVERTIME = 60  # seconds past --time (the engine's -max_total_time, plus its start-up) before workers are ended
MAX_CRASHES = 50  # workers are relaunched after a failing input until this many, then the campaign ends
SCRATCH = "scratch-"  # ARTIFACTS/.logs/scratch-<pid>-…: a campaign's seeds and the engine's crash files
STATUS = re.compile(r"^#(\d+)\s+(\w+)\s+cov: (\d+) ft: (\d+) corp: (\d+)/\S+.*?exec/s: (\d+)")
WRITTEN = re.compile(r"Test unit written to (\S+)")
EXECUTED = re.compile(r"stat::number_of_executed_units:\s*(\d+)")
KEY_LINE = "bob-fuzz failure key: "  # a worker's line naming the failure it is about to raise
WORKER = r"""
import json, os, sys
spec = json.loads(sys.argv[1])
from bob.fuzz.campaign import KEY_LINE
from bob.fuzz.common import die_with_parent, load_target
from bob.fuzz.properties import exception_key
from bob.signals import Interrupted
die_with_parent(spec["parent"])
import atheris
harness = ["bob.fuzz." + m for m in ("mutator", "structural", "dictionary", "campaign", "common", "cli", "replay",
                                     "loop")]
with atheris.instrument_imports(include=["bob"], exclude=harness):  # bob's code, the targets' own branches too
    from bob.fuzz import mutator, targets
    targets.preload()
    run, fmt = load_target(spec["target"], spec.get("format"))
count = {"executions": 0, "recognized": 0}
stats_path = spec.get("fast_path_stats")
def one(data):
    if stats_path and fmt in ("input", "checkpoint"):  # measuring how often the differential is reached
        count["executions"] += 1
        count["recognized"] += mutator.recognized(bytes(data), fmt)
        if count["executions"] % 1000 == 0:
            from bob.fileio import write_atomic
            write_atomic(stats_path, json.dumps(count).encode())
    try:
        run(bytes(data))
    except Interrupted as exc:  # a signal the target's command took: the campaign ends this worker
        os._exit(exc.exit_code)
    except BaseException as exc:
        print(KEY_LINE + exception_key(exc), flush=True)
        raise
# atheris.Mutate is looked up at each call: Setup replaces it with the engine's own
mutate = mutator.custom_mutator(fmt, lambda d, n: atheris.Mutate(d, n), targets.accepted_seeds(fmt))
atheris.Setup(spec["argv"], one, custom_mutator=mutate)
atheris.Fuzz()
"""


class _Worker:
    def __init__(self, index: int) -> None:
        self.index = index
        self.executions_done = 0  # by earlier (finished) runs of this worker
        self.executions = 0
        self.coverage = self.features = self.exec_per_s = 0
        self.proc: subprocess.Popen | None = None
        self.thread: threading.Thread | None = None
        self.last_error: str | None = None
        self.last_key: str | None = None
        self.found = False  # this generation wrote an artifact
        self.generation = 0
        self.stopped = False
        self.log: deque[str] = deque(maxlen=LOG_LINES)


class _Stopped(Exception):
    """SIGTERM or SIGHUP reached the campaign."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _passes_outside(target: str, path: str, env: "dict[str, str]") -> bool:
    """Whether ``path`` passes its target when replayed in a fresh process (within 120 s)."""
    try:
        done = subprocess.run([sys.executable, "-m", "bob.fuzz.cli", "replay", path, "--target", target],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120, env=env)
    except subprocess.TimeoutExpired:
        return False
    return done.returncode == 0


def _remove_stale_scratch(logs: Path) -> None:
    """Scratch directories a campaign killed by SIGKILL left (its pid is gone)."""
    for d in logs.glob(f"{SCRATCH}*"):
        try:
            os.kill(int(d.name[len(SCRATCH):].split("-")[0]), 0)
        except ProcessLookupError:
            shutil.rmtree(d, ignore_errors=True)
        except (ValueError, PermissionError):
            continue


def _start_failure(exc: BaseException) -> str:
    """Why a worker or its reader thread did not start, in a few words."""
    from bob.commands import os_reason

    if isinstance(exc, OSError):
        return os_reason(exc)
    return f"{one_line(str(exc))} (the limit on processes and threads, ulimit -u, is reached)"


def _end_workers(workers: "list[_Worker]", grace: float = 3.0) -> None:
    """SIGTERM to every running worker, SIGKILL to any still there after ``grace`` seconds."""
    running = [w.proc for w in workers if w.proc is not None and w.proc.poll() is None]
    for proc in running:
        with contextlib.suppress(OSError):
            proc.terminate()
    deadline = time.monotonic() + grace
    for proc in running:
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class _Campaign:
    def __init__(self, target: str, seconds: float | None, runs: int | None, jobs: int, corpus: str | None,
                 artifacts: str, seed: int | None, fmt: str | None, max_len: int | None, max_findings: int) -> None:
        from bob.fileio import make_directory
        from bob.fuzz.dictionary import write_dict

        self.stats = fast_path_stats(target, fmt)  # refused before anything is made
        self.target, self.name, self.seconds, self.runs = target, target.replace(":", "_"), seconds, runs
        self.seed, self.fmt, self.max_findings = seed, fmt, max_findings
        self.max_len = max_len or MAX_LEN.get(target, DEFAULT_MAX_LEN)
        self.artifacts = Path(artifacts).resolve()
        self.logs = self.artifacts / ".logs"
        make_directory(self.logs)
        _remove_stale_scratch(self.logs)
        self.corpus = Path(corpus or f".bob-fuzz/{self.name}/corpus").resolve()
        make_directory(self.corpus)
        self.dict_path = self.logs / "bob.dict"
        write_dict(self.dict_path)
        self.result = CampaignResult(target)
        self.workers = [_Worker(i) for i in range(max(1, jobs))]
        self.start = time.monotonic()
        self.lock = threading.Lock()
        self.scratch_dirs: list[str] = []
        self.overdue = False
        self.seeds = self.crash_dir = ""  # scratch directories, made when the workers start
        self.env = dict(os.environ)  # the workers': their TMPDIR in scratch, for what they leave when ended

    def remaining_time(self) -> float | None:
        return None if self.seconds is None else self.seconds - (time.monotonic() - self.start)

    def total_runs(self) -> int:
        return sum(w.executions_done + w.executions for w in self.workers)

    def seed_dir(self) -> str:
        """The seeds (bob's files for the target or its format, and its regressions), in scratch."""
        from bob.fileio import write_atomic

        d = tempfile.mkdtemp(prefix=f"{SCRATCH}{os.getpid()}-seeds-", dir=self.logs)
        self.scratch_dirs.append(d)
        kind = self.name if self.name in TARGETS else self.fmt  # a module:function target: its format's files
        files = seed_files(kind) if kind in TARGETS else []
        reg = regression_dir(self.name)
        if reg is not None:
            files += sorted(p for p in reg.iterdir() if p.is_file())
        for i, f in enumerate(files):
            write_atomic(os.path.join(d, f"{i:03d}-{f.name}"), read_input(f))
        return d

    def launch(self, w: _Worker) -> bool:
        """Start worker ``w``'s next generation and its reader thread; False when nothing is left to run."""
        left = self.remaining_time()
        if left is not None and left < 1:
            return False
        argv = ["bob-fuzz", str(self.corpus), self.seeds, f"-artifact_prefix={self.crash_dir}/",
                f"-dict={self.dict_path}", f"-max_len={self.max_len}", "-timeout=60", f"-rss_limit_mb={RSS_LIMIT_MB}",
                "-reload=1", "-print_final_stats=1", "-len_control=0"]
        if left is not None:
            argv.append(f"-max_total_time={max(1, int(left))}")
        share = GENERATION.get(self.target, 0)
        if self.runs is not None:
            runs_left = (self.runs - self.total_runs()) // len(self.workers)
            if runs_left <= 0:
                return False
            share = min(share, runs_left) if share else runs_left
        if share:
            argv.append(f"-runs={share}")
        w.found = False
        w.generation += 1
        seed = self.seed
        argv.append(f"-seed={(seed * 1000 + 100 * w.generation + w.index + 1) % 2**32 if seed is not None else 0}")
        spec = json.dumps({"target": self.target, "format": self.fmt, "argv": argv, "parent": os.getpid(),
                           "fast_path_stats": f"{self.stats}.{w.index}.{w.generation}" if self.stats else None})
        # atheris prints an uncaught exception on stdout, libFuzzer its status on stderr: read both
        w.proc = subprocess.Popen([sys.executable, "-c", WORKER, spec], stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, errors="backslashreplace",
                                  env=dict(self.env, PYTHONUNBUFFERED="1"))
        w.thread = threading.Thread(target=self.follow, args=(w,), daemon=True)
        w.thread.start()
        return True

    def follow(self, w: _Worker) -> None:
        """Read a worker's output: its status lines, its failure's key and message, its artifacts."""
        assert w.proc is not None and w.proc.stdout is not None
        try:
            for line in w.proc.stdout:
                w.log.append(line)
                m = STATUS.match(line)
                with self.lock:
                    if m:
                        w.executions, w.coverage, w.features = int(m[1]), int(m[3]), int(m[4])
                        w.exec_per_s = int(m[6])
                    elif line.startswith(KEY_LINE):
                        w.last_key = line[len(KEY_LINE):].strip()
                    elif "Uncaught Python exception" in line:
                        w.last_error = ""  # the next line is the exception, then its traceback
                    elif w.last_error == "" and line.strip():
                        w.last_error = line.strip()
                    elif executed := EXECUTED.search(line):
                        w.executions = max(w.executions, int(executed[1]))
                    elif written := WRITTEN.search(line):
                        self.collect(written[1], w)
        finally:
            self.save_log(w)
        w.proc.wait()

    def save_log(self, w: _Worker) -> None:
        """The worker's log so far, replacing the last one whole (an old log survives a failed write)."""
        from bob.commands import os_reason
        from bob.fileio import write_atomic

        with self.lock:
            text = "".join(w.log)
        try:
            write_atomic(self.logs / f"{self.name}-worker{w.index}.log", text.encode("utf-8", "backslashreplace"))
        except OSError as exc:
            self.result.notes.append(f"worker {w.index + 1}'s log not written: {os_reason(exc)}")

    def collect(self, path: str, w: _Worker) -> None:
        """An input the engine wrote: a finding (one artifact per failure), or a resource stop not counted."""
        from bob.fileio import write_atomic

        try:
            data = read_input(path)
        except OSError:
            return
        w.found = True
        kind = Path(path).name.split("-")[0]
        if Path(path).name.startswith(("oom-", "timeout-", "slow-unit-")) and _passes_outside(self.target, path, self.env):
            self.result.discarded.append(Finding(path, f"{kind} in the engine only: the input passes when "
                                                 "replayed in a fresh process"))
            return
        message = w.last_error or "the target crashed (see the worker log in .logs/)"
        key = w.last_key or ("crash: " + kind)
        w.last_error = w.last_key = None
        name = f"{self.name.replace('.', '_')}-{hashlib.sha256(data).hexdigest()[:16]}.bin"
        finding = Finding(str(self.artifacts / name), message, key)
        if self.result.add(finding):  # the same failure again gets no second artifact
            write_atomic(self.artifacts / name, data)
            write_atomic(self.artifacts / (name + ".txt"), f"{message}\n{key}\n".encode("utf-8", "backslashreplace"))

    def relaunch(self, w: _Worker) -> None:
        """A worker that ended: a finding, or the end of a generation; start its next one if it may."""
        assert w.proc is not None
        w.executions_done, w.executions = w.executions_done + w.executions, 0
        result = self.result
        crashed_unseen = w.proc.returncode != 0 and not w.found
        if crashed_unseen and not self.overdue:
            result.notes.append(f"worker {w.index + 1} ended (exit {w.proc.returncode}) without a finding: "
                                f".logs/{self.name}-worker{w.index}.log says why")
        try:  # (a crash without an artifact would only repeat itself)
            w.stopped = crashed_unseen or len(result.findings) >= self.max_findings \
                or result.crashes >= MAX_CRASHES or not self.launch(w)
        except (OSError, RuntimeError) as exc:
            result.notes.append(f"worker {w.index + 1} could not be restarted: {_start_failure(exc)}")
            w.stopped = True

    def watch(self, display: CampaignDisplay) -> None:
        """Start the workers, then follow them every half second until none is left."""
        from bob.commands import Refused

        self.seeds = self.seed_dir()
        self.crash_dir = tempfile.mkdtemp(prefix=f"{SCRATCH}{os.getpid()}-crash-", dir=self.logs)
        self.env["TMPDIR"] = tempfile.mkdtemp(prefix=f"{SCRATCH}{os.getpid()}-tmp-", dir=self.logs)
        self.scratch_dirs += [self.crash_dir, self.env["TMPDIR"]]
        for w in self.workers:
            try:
                self.launch(w)
            except (OSError, RuntimeError) as exc:  # a process limit, no memory: refused, the started ended
                raise Refused(f"cannot start worker {w.index + 1} of {len(self.workers)}: {_start_failure(exc)}; "
                              "ask fewer", option="--jobs") from None
        result = self.result
        while True:
            time.sleep(0.5)
            with self.lock:
                result.executions = self.total_runs()
                result.coverage = max(w.coverage for w in self.workers)
                result.features = max(w.features for w in self.workers)
            result.corpus = sum(1 for _ in self.corpus.iterdir())
            result.seconds = time.monotonic() - self.start
            display.update(result, sum(w.exec_per_s for w in self.workers))
            for w in self.workers:
                if not (w.stopped or w.proc is None or w.proc.poll() is None or self.alive(w)):
                    self.relaunch(w)
            if not any(self.alive(w) for w in self.workers) and all(w.stopped or w.proc is None
                                                                    for w in self.workers):
                break
            left = self.remaining_time()
            if left is not None and left < -OVERTIME and not self.overdue:  # a worker that hangs (a thread it
                self.overdue = True  # could not start, under a process limit) does not hold the campaign
                result.notes.append(f"workers still running {OVERTIME} s past --time were ended")
                _end_workers(self.workers)

    @staticmethod
    def alive(w: _Worker) -> bool:
        return w.thread is not None and w.thread.is_alive()


def run_campaign(target: str, *, seconds: float | None = None, runs: int | None = None, jobs: int = 1,
                 corpus: str | None = None, artifacts: str = "fuzz-artifacts", seed: int | None = None,
                 fmt: str | None = None, max_len: int | None = None, live: bool | None = None,
                 max_findings: int = 20) -> CampaignResult:
    """A coverage-guided campaign of ``target`` for ``seconds`` or ``runs`` executions (over all jobs)."""
    import signal

    from bob.commands import Refused

    if seconds is None and runs is None:
        seconds = 60
    c = _Campaign(target, seconds, runs, jobs, corpus, artifacts, seed, fmt, max_len, max_findings)

    def stop(signum: int, frame: object) -> None:
        raise _Stopped(signum)

    handlers = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGHUP):
            handlers[signum] = signal.signal(signum, stop)
    display = CampaignDisplay(target, live)
    stopped: BaseException | None = None
    try:
        c.watch(display)
    except (KeyboardInterrupt, _Stopped) as exc:
        stopped = exc
    finally:
        for signum, previous in handlers.items():
            signal.signal(signum, previous)
        try:
            _end_workers(c.workers)
            display.close()
        finally:
            for d in c.scratch_dirs:
                shutil.rmtree(d, ignore_errors=True)
    with c.lock:
        for w in c.workers:  # a generation still running when the campaign ended
            if w.proc is not None and not w.stopped:
                w.executions_done, w.executions = w.executions_done + w.executions, 0
    result = c.result
    result.executions = c.total_runs()
    result.corpus = sum(1 for _ in c.corpus.iterdir())
    result.seconds = time.monotonic() - c.start
    if isinstance(stopped, _Stopped):
        raise Refused(f"stopped by {signal.Signals(stopped.signum).name} after {result.executions} executions; "
                      "every worker ended", code=128 + stopped.signum)
    if stopped is not None:
        raise KeyboardInterrupt
    return result
