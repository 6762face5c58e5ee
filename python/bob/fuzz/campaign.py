"""Running a target: a coverage-guided campaign (atheris on libFuzzer).

:func:`run_campaign` starts ``jobs`` worker processes, each running atheris
on the same corpus directory (libFuzzer reloads it every second, so what one
finds the others use), with bob's dictionary and field-aware mutator. The
parent reads libFuzzer's status lines (``#N NEW cov: … corp: … exec/s: …``)
from each worker's stderr and shows the totals live with ``rich`` on a
terminal (one plain line every ten seconds elsewhere: :mod:`bob.fuzz.display`). A finding is renamed
to ``<target>-<sha256 prefix>.bin`` in the artifacts directory with a
one-line command that reproduces it, and the worker is restarted for the
time that remains. Only the worker imports atheris. The seeded loop is
:mod:`bob.fuzz.loop`; a failure's identity, :mod:`bob.fuzz.keys`.

A campaign owns its processes and files: the workers stay in the
campaign's process group, die with the parent (``PR_SET_PDEATHSIG``), and
are ended (SIGTERM, then SIGKILL) when the campaign ends for any reason —
SIGINT, SIGTERM, SIGHUP, an error; ``--jobs`` workers that cannot all be
started are a refusal, with those started ended. Scratch directories live
under ``ARTIFACTS/.logs/`` (never in TMPDIR), are removed on every exit
path, and the next campaign removes any a SIGKILL left. Findings are one
per failure — its exception type and the innermost frame of bob's code
(:func:`exception_key`), not its message — and are written with
:func:`bob.fileio.write_atomic`.
"""

from __future__ import annotations

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from bob.formats.constants import MAX_CHECKPOINT_BYTES, PREDICTION_BYTES
from bob.fuzz.display import CampaignDisplay
from bob.fuzz.keys import exception_key, failure_key
from bob.text import one_line
from bob.fuzz.targets import TARGETS, seed_files

__all__ = ["MAX_LEN", "DEFAULT_MAX_LEN", "Finding", "CampaignResult", "run_campaign", "seeded_loop", "load_target", "regression_dir",
           "exception_key", "failure_key", "die_with_parent"]

MAX_LEN = {"input": 4096, "predictions": 4 * PREDICTION_BYTES, "core": 4096}
DEFAULT_MAX_LEN = MAX_CHECKPOINT_BYTES + 64  # a little past the largest checkpoint a reader accepts
# Under atheris a worker's memory grows with the 786,880-byte inputs (27 to 115 kB an execution on
# the checkpoint target, depending on how many inputs are full checkpoints; not in plain Python, not
# from the custom mutator): workers on the big-input targets run in generations of this many
# executions and are restarted on the same corpus, to stay below -rss_limit_mb.
GENERATION = {"checkpoint": 20_000, "inspect": 20_000, "run": 20_000}
RSS_LIMIT_MB = 6144
LOG_LINES = 20_000  # a worker's log keeps its last lines, over every generation of this campaign
OVERTIME = 60  # seconds past --time (the engine's own -max_total_time, plus its start-up) before workers are ended
MAX_CRASHES = 50  # workers are relaunched after a failing input until this many, then the campaign ends
STATUS = re.compile(r"^#(\d+)\s+(\w+)\s+cov: (\d+) ft: (\d+) corp: (\d+)/\S+.*?exec/s: (\d+)")
WRITTEN = re.compile(r"Test unit written to (\S+)")
EXECUTED = re.compile(r"stat::number_of_executed_units:\s*(\d+)")
KEY_LINE = "bob-fuzz failure key: "  # a worker's line naming the failure it is about to raise
WORKER = r"""
import json, sys
spec = json.loads(sys.argv[1])
from bob.fuzz.campaign import KEY_LINE, die_with_parent, exception_key
die_with_parent(spec["parent"])
import atheris
harness = ["bob.fuzz." + m for m in ("mutator", "structural", "dictionary", "campaign", "cli", "replay", "strategies", "keys",
                                     "loop")]
with atheris.instrument_imports(include=["bob"], exclude=harness):  # bob's code, the targets' own branches too
    from bob.fuzz import mutator, targets
    targets.preload()
    from bob.fuzz.campaign import load_target
    run, fmt = load_target(spec["target"], spec.get("format"))
count = {"executions": 0, "recognized": 0}
stats_path = spec.get("fast_path_stats")
def one(data):
    if stats_path and fmt in ("input", "checkpoint"):  # measuring how often the differential is reached
        count["executions"] += 1
        count["recognized"] += mutator._recognized(bytes(data), fmt)
        if count["executions"] % 1000 == 0:
            from bob.fileio import write_atomic
            write_atomic(stats_path, json.dumps(count).encode())
    try:
        run(bytes(data))
    except BaseException as exc:
        print(KEY_LINE + exception_key(exc), flush=True)
        raise
# atheris.Mutate is looked up at each call: Setup replaces it with the engine's own
mutate = mutator.custom_mutator(fmt, lambda d, n: atheris.Mutate(d, n), targets.accepted_seeds(fmt))
atheris.Setup(spec["argv"], one, custom_mutator=mutate)
atheris.Fuzz()
"""


def load_target(spec: str, fmt: str | None = None) -> "tuple[Callable[[bytes], None], str | None]":
    """(function, format) for a registered target name or a ``package.module:function`` spec."""
    if spec in TARGETS:
        t = TARGETS[spec]
        return t.run, t.format if fmt is None else fmt
    if ":" not in spec:
        raise ValueError(f"unknown target {spec!r}; one of {', '.join(TARGETS)} or package.module:function")
    import importlib

    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name), fmt


def die_with_parent(parent: int | None = None) -> None:
    """End this process (SIGKILL) when its parent dies: ``PR_SET_PDEATHSIG`` on
    Linux; if the parent is already gone (``parent`` is not our parent any
    more), end now. Elsewhere only the second check is made."""
    import signal

    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass
    if parent is not None and os.getppid() != parent:
        os._exit(1)


def regression_dir(name: str) -> Path | None:
    """``fuzz/regressions/<target>`` of the source checkout, when running from one."""
    root = Path(__file__).resolve().parents[3] / "fuzz" / "regressions" / name
    return root if root.is_dir() else None


@dataclass
class Finding:
    path: str
    message: str
    key: str = ""
    """What makes two failures one: :func:`failure_key` (type and innermost frame of bob's code)."""
    count: int = 1
    """How many failing inputs had this key."""

    @property
    def where(self) -> str:
        return self.key.split(" at ", 1)[1] if " at " in self.key else "(no Python frame: a native crash?)"

    def repro(self, target: str) -> str:
        return f"bob-fuzz replay {self.path} --target {target}"


@dataclass
class CampaignResult:
    """What a campaign found and how far it went (``bob-fuzz run``'s report)."""

    target: str
    executions: int = 0
    coverage: int = 0
    features: int = 0
    corpus: int = 0
    seconds: float = 0.0
    findings: list[Finding] = field(default_factory=list)
    crashes: int = 0
    """Every failing input the engine stopped on (the same failure found again included)."""
    discarded: list[Finding] = field(default_factory=list)
    """Resource artifacts (out of memory, timeout) that do not reproduce outside the engine."""
    fast_path_share: float | None = None
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:  # bob-fuzz run --json
        d = dict(self.__dict__)
        d["findings"] = [dict(f.__dict__, where=f.where) for f in self.findings]
        d["discarded"] = [dict(f.__dict__) for f in self.discarded]
        return d

    def add(self, finding: Finding) -> bool:
        """Count a failing input; True when it is a new failure (one artifact each)."""
        self.crashes += 1
        for f in self.findings:
            if f.key == finding.key:
                f.count += 1
                return False
        self.findings.append(finding)
        return True


# --------------------------------------------------------------------------- #
# The coverage-guided campaign
# --------------------------------------------------------------------------- #


class _Worker:
    def __init__(self, index: int) -> None:
        self.index = index
        self.executions_done = 0  # by earlier (finished) runs of this worker
        self.executions = 0
        self.coverage = self.features = self.exec_per_s = 0
        self.proc: subprocess.Popen | None = None
        self.last_error: str | None = None
        self.last_key: str | None = None
        self.written: list[str] = []
        self.found = False  # this generation wrote an artifact
        self.generation = 0
        self.stopped = False
        self.log: deque[str] = deque(maxlen=LOG_LINES)


def _passes_outside(target: str, path: str) -> bool:
    """Whether ``path`` passes its target when replayed in a fresh process (within 120 s)."""
    try:
        done = subprocess.run([sys.executable, "-m", "bob.fuzz.cli", "replay", path, "--target", target],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    except subprocess.TimeoutExpired:
        return False
    return done.returncode == 0


SCRATCH = "scratch-"  # ARTIFACTS/.logs/scratch-<pid>-…: a campaign's seeds and the engine's crash files


def _remove_stale_scratch(logs: Path) -> None:
    """Scratch directories a campaign killed by SIGKILL left (its pid is gone)."""
    for d in logs.glob(f"{SCRATCH}*"):
        try:
            pid = int(d.name[len(SCRATCH):].split("-")[0])
        except ValueError:
            continue
        try:
            os.kill(pid, 0)
            continue  # alive: another campaign's
        except ProcessLookupError:
            shutil.rmtree(d, ignore_errors=True)
        except PermissionError:
            continue


def _seed_dir(target: str, fmt: str | None, extra: list[Path], where: Path) -> str:
    d = tempfile.mkdtemp(prefix=f"{SCRATCH}{os.getpid()}-seeds-", dir=where)
    kind = target if target in TARGETS else fmt  # a module:function target is seeded with its format's files
    files = (seed_files(kind) if kind in TARGETS else []) + extra
    reg = regression_dir(target)
    if reg is not None:
        files += sorted(p for p in reg.iterdir() if p.is_file())
    from bob.fileio import write_atomic
    from bob.fuzz.replay import read_input

    for i, f in enumerate(files):
        write_atomic(os.path.join(d, f"{i:03d}-{f.name}"), read_input(f))
    return d


def _start_failure(exc: BaseException) -> str:
    """Why a worker or its reader thread did not start, in a few words."""
    from bob.commands import os_reason

    if isinstance(exc, OSError):
        return os_reason(exc)
    return f"{one_line(str(exc))} (the limit on processes and threads, ulimit -u, is reached)"


class _Stopped(Exception):
    """SIGTERM or SIGHUP reached the campaign."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _end_workers(workers: "list[_Worker]", grace: float = 3.0) -> None:
    """SIGTERM to every running worker, SIGKILL to any still there after ``grace`` seconds."""
    running = [w.proc for w in workers if w.proc is not None and w.proc.poll() is None]
    for proc in running:
        try:
            proc.terminate()
        except OSError:
            pass
    deadline = time.monotonic() + grace
    for proc in running:
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_campaign(target: str, *, seconds: float | None = None, runs: int | None = None, jobs: int = 1,
                 corpus: str | None = None, artifacts: str = "fuzz-artifacts", seed: int | None = None,
                 fmt: str | None = None, max_len: int | None = None, live: bool | None = None,
                 max_findings: int = 20) -> CampaignResult:
    """A coverage-guided campaign of ``target`` for ``seconds`` or ``runs`` executions (over all jobs)."""
    import signal

    from bob.commands import Refused, os_reason
    from bob.fileio import make_directory, write_atomic
    from bob.fuzz.replay import read_input
    from bob.fuzz.dictionary import write_dict

    if seconds is None and runs is None:
        seconds = 60
    artifacts_dir = Path(artifacts).resolve()
    logs = artifacts_dir / ".logs"
    make_directory(logs)
    _remove_stale_scratch(logs)
    corpus_dir = Path(corpus or f".bob-fuzz/{target.replace(':', '_')}/corpus").resolve()
    make_directory(corpus_dir)
    dict_path = logs / "bob.dict"
    write_dict(dict_path)
    result = CampaignResult(target)
    workers = [_Worker(i) for i in range(max(1, jobs))]
    start = time.monotonic()
    lock = threading.Lock()
    scratch_dirs: list[str] = []

    def remaining_time() -> float | None:
        return None if seconds is None else seconds - (time.monotonic() - start)

    def total_runs() -> int:
        return sum(w.executions_done + w.executions for w in workers)

    def launch(w: _Worker) -> bool:
        left = remaining_time()
        if left is not None and left < 1:
            return False
        argv = ["bob-fuzz", str(corpus_dir), seeds, f"-artifact_prefix={scratch}/", f"-dict={dict_path}",
                f"-max_len={max_len or MAX_LEN.get(target, DEFAULT_MAX_LEN)}", "-timeout=60",
                f"-rss_limit_mb={RSS_LIMIT_MB}", "-reload=1", "-print_final_stats=1", "-len_control=0"]
        if left is not None:
            argv.append(f"-max_total_time={max(1, int(left))}")
        share = GENERATION.get(target, 0)
        if runs is not None:
            left = (runs - total_runs()) // len(workers)
            if left <= 0:
                return False
            share = min(share, left) if share else left
        if share:
            argv.append(f"-runs={share}")
        w.found = False
        w.generation += 1
        engine_seed = (seed * 1000 + 100 * w.generation + w.index + 1) % 2**32 if seed is not None else 0
        argv.append(f"-seed={engine_seed}")
        stats = os.environ.get("BOB_FUZZ_FAST_PATH_STATS")  # a file: see docs/fuzzing.md
        spec = json.dumps({"target": target, "format": fmt, "argv": argv, "parent": os.getpid(),
                           "fast_path_stats": f"{stats}.{w.index}.{w.generation}" if stats else None})
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        # atheris prints an uncaught exception on stdout, libFuzzer its status on stderr: read both
        w.proc = subprocess.Popen([sys.executable, "-c", WORKER, spec], stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, errors="backslashreplace", env=env)
        return True

    def follow(w: _Worker) -> None:
        assert w.proc is not None and w.proc.stdout is not None
        try:
            for line in w.proc.stdout:
                w.log.append(line)
                m = STATUS.match(line)
                with lock:
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
                        _collect(written[1], w)
        finally:
            save_log(w)
        w.proc.wait()

    def save_log(w: _Worker) -> None:
        """The worker's log so far, replacing the last one whole (an old log survives a failed write)."""
        with lock:
            text = "".join(w.log)
        try:
            write_atomic(logs / f"{target.replace(':', '_')}-worker{w.index}.log",
                         text.encode("utf-8", "backslashreplace"))
        except OSError as exc:
            result.notes.append(f"worker {w.index + 1}'s log not written: {os_reason(exc)}")

    def _collect(path: str, w: _Worker) -> None:
        try:
            data = read_input(path)
        except OSError:
            return
        w.found = True
        if Path(path).name.startswith(("oom-", "timeout-", "slow-unit-")) and _passes_outside(target, path):
            result.discarded.append(Finding(path, f"{Path(path).name.split('-')[0]} in the engine only: the input "
                                            "passes when replayed in a fresh process"))
            return
        message = w.last_error or "the target crashed (see the worker log in .logs/)"
        key = w.last_key or ("crash: " + Path(path).name.split("-")[0])
        w.last_error = w.last_key = None
        name = f"{target.replace(':', '_').replace('.', '_')}-{hashlib.sha256(data).hexdigest()[:16]}.bin"
        dest = artifacts_dir / name
        finding = Finding(str(dest), message, key)
        if not result.add(finding):
            return  # the same failure again: one artifact per distinct failure
        write_atomic(dest, data)
        write_atomic(artifacts_dir / (name + ".txt"), f"{message}\n{key}\n".encode("utf-8", "backslashreplace"))
        w.written.append(str(dest))

    def stop(signum: int, frame: object) -> None:
        raise _Stopped(signum)

    handlers = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGHUP):
            handlers[signum] = signal.signal(signum, stop)
    display = CampaignDisplay(target, live)
    threads: list[threading.Thread] = []
    stopped: BaseException | None = None
    overdue = False
    try:
        seeds = _seed_dir(target.replace(":", "_"), fmt, [], logs)
        scratch_dirs.append(seeds)
        scratch = tempfile.mkdtemp(prefix=f"{SCRATCH}{os.getpid()}-crash-", dir=logs)
        scratch_dirs.append(scratch)
        for w in workers:
            try:
                if launch(w):
                    threads.append(threading.Thread(target=follow, args=(w,), daemon=True))
                    threads[-1].start()
            except (OSError, RuntimeError) as exc:  # a process limit, no memory: refused, the started ended
                raise Refused(f"cannot start worker {w.index + 1} of {len(workers)}: {_start_failure(exc)}; "
                              "ask fewer", option="--jobs") from None
        while True:
            time.sleep(0.5)
            with lock:
                result.executions = total_runs()
                result.coverage = max(w.coverage for w in workers)
                result.features = max(w.features for w in workers)
            result.corpus = sum(1 for _ in corpus_dir.iterdir())
            result.seconds = time.monotonic() - start
            display.update(result, sum(w.exec_per_s for w in workers))
            for w in workers:  # a worker that ended: a finding, or the end of a generation
                if w.stopped or w.proc is None or w.proc.poll() is None or threads[w.index].is_alive():
                    continue
                w.executions_done += w.executions
                w.executions = 0
                crashed_unseen = w.proc.returncode != 0 and not w.found
                if crashed_unseen and not overdue:
                    result.notes.append(f"worker {w.index + 1} ended (exit {w.proc.returncode}) without a finding: "
                                        f".logs/{target.replace(':', '_')}-worker{w.index}.log says why")
                try:
                    relaunched = not (crashed_unseen or len(result.findings) >= max_findings
                                      or result.crashes >= MAX_CRASHES) and launch(w)
                    if relaunched:
                        threads[w.index] = threading.Thread(target=follow, args=(w,), daemon=True)
                        threads[w.index].start()
                except (OSError, RuntimeError) as exc:
                    result.notes.append(f"worker {w.index + 1} could not be restarted: {_start_failure(exc)}")
                    relaunched = False
                if not relaunched:
                    w.stopped = True  # (a crash without an artifact would only repeat itself)
            if not any(t.is_alive() for t in threads) and all(w.stopped or w.proc is None for w in workers):
                break
            left = remaining_time()
            if left is not None and left < -OVERTIME and not overdue:  # a worker that hangs (a thread it
                overdue = True  # could not start, under a process limit) does not hold the campaign
                result.notes.append(f"workers still running {OVERTIME} s past --time were ended")
                _end_workers(workers)
    except (KeyboardInterrupt, _Stopped) as exc:
        stopped = exc
    finally:
        for signum, previous in handlers.items():
            signal.signal(signum, previous)
        try:
            _end_workers(workers)
            display.close()
        finally:
            for d in scratch_dirs:
                shutil.rmtree(d, ignore_errors=True)
    with lock:
        for w in workers:  # a generation still running when the campaign ended
            if w.proc is not None and not w.stopped:
                w.executions_done += w.executions
                w.executions = 0
    result.executions = total_runs()
    result.corpus = sum(1 for _ in corpus_dir.iterdir())
    result.seconds = time.monotonic() - start
    if isinstance(stopped, _Stopped):
        name = signal.Signals(stopped.signum).name
        raise Refused(f"stopped by {name} after {result.executions} executions; every worker ended",
                      code=128 + stopped.signum)
    if stopped is not None:
        raise KeyboardInterrupt
    return result


def seeded_loop(target: str, runs: int, seed: int = 0, **options: Any) -> CampaignResult:
    """:func:`bob.fuzz.loop.seeded_loop` (the engine-free loop, in its own module)."""
    from bob.fuzz.loop import seeded_loop as loop

    return loop(target, runs, seed, **options)
