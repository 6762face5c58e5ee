"""A coverage-guided campaign: ``jobs`` atheris workers on one corpus directory. What it shows, writes,
restarts, ends and removes: docs/fuzzing.md's "Commands". Only the worker imports atheris."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from bob import signals
from bob.children import drained, end_groups, ends_with_this_process, signal_group
from bob.commands import EXIT_SOFTWARE, Refused, about, os_reason, output_directory
from bob.fileio import make_directory, refuse_if_working_directory_gone, write_atomic
from bob.text import note
from bob.fuzz.common import DEFAULT_MAX_LEN, MAX_LEN, CampaignDisplay, CampaignResult, Finding, NoVerdict, \
    fast_path_stats, holding_flock, read_input, refuse_unless_fits, seed_paths, tell_when_stopped, unwritten
from bob.fuzz.dictionary import write_dict
from bob.fuzz.replay import passes_outside

__all__ = ["run_campaign", "WORKER", "KEY_LINE"]

# Big-input workers run in generations of this many executions, below -rss_limit_mb (docs/fuzzing.md, "Commands")
GENERATION = {"checkpoint": 20_000, "inspect": 20_000, "run": 20_000}
RSS_LIMIT_MB = 6144
LOG_LINES = 20_000  # a worker's log keeps its last lines, over every generation of this campaign
HANG = 60  # seconds an input may run in a worker before the engine ends it as a hang (its -timeout)
OVERTIME = 60  # seconds past --time (the engine's -max_total_time, plus its start-up) before workers are ended
MAX_CRASHES = 50  # workers are relaunched after a failing input until this many, then the campaign ends
SCRATCH = "scratch-"  # ARTIFACTS/.logs/scratch-<pid>-…: a campaign's seeds and the engine's crash files
# (cov:, ft: and corp: only once there is some: a target of no instrumented code has none)
STATUS = re.compile(r"^#(\d+)\s+(\w+)(?:\s+cov: (\d+))?(?:\s+ft: (\d+))?.*?exec/s: \d+")
WRITTEN = "Test unit written to "  # then the path, which may hold any byte: the worker's own directory says
EXECUTED = re.compile(r"stat::number_of_executed_units:\s*(\d+)")
KEY_LINE = "bob-fuzz failure key: "  # a worker's line naming the failure it is about to raise
RAN_OUT_LINE = "bob-fuzz no verdict: "  # then why: a worker that ran out (a full disk) or lacks a module ends
# The prelude libFuzzer runs around a target: a campaign's worker (its spec in argv[1]), or bob.fuzz.oss's harness
WORKER = r"""
import json, os, sys
spec = json.loads(sys.argv[1])
import atheris
harness = ["bob.fuzz." + m for m in ("mutator", "structural", "dictionary", "campaign", "common", "cli", "replay", "loop")]
# Every bob import inside: a module imported before it would run uninstrumented (the targets' own branches too)
with atheris.instrument_imports(include=["bob"], exclude=harness):
    from bob.fuzz.campaign import KEY_LINE, RAN_OUT_LINE
    from bob.fuzz.common import NoVerdict, failure, load_target
    from bob.fuzz.properties import exception_key
    from bob.signals import Interrupted
    from bob.fuzz import mutator, targets
    targets.preload(spec["target"])
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
        found = failure(run, bytes(data))
    except Interrupted as exc:  # a signal the target's command took: the campaign ends this worker
        os._exit(exc.exit_code)
    except (NoVerdict, MemoryError) as exc:  # the machine's (memory, a full disk) or the build's: no verdict
        said = str(exc) if isinstance(exc, NoVerdict) else "out of memory as the target ran; no verdict"
        print(RAN_OUT_LINE + said, flush=True)
        os._exit(70)
    if found is not None:
        print(KEY_LINE + exception_key(found), flush=True)
        raise found
# atheris.Mutate is looked up at each call: Setup replaces it with the engine's own
mutate = mutator.custom_mutator(fmt, lambda d, n: atheris.Mutate(d, n), targets.accepted_seeds(fmt))
def mutate_or_end(data, max_size, seed):
    try:
        return mutate(data, max_size, seed)
    except MemoryError:  # the machine's too, as the target's own: no verdict
        print(RAN_OUT_LINE + "out of memory as the mutator ran; no verdict", flush=True)
        os._exit(70)
atheris.Setup(spec["argv"], one, custom_mutator=mutate_or_end)
atheris.Fuzz()
"""


@dataclass
class _Worker:
    index: int
    executions_done: int = 0  # by earlier (finished) generations of this worker
    executions: int = 0
    coverage: int = 0
    features: int = 0
    proc: "subprocess.Popen[bytes] | None" = None
    partial: bytes = b""  # the start of a line not yet ended
    last_error: str | None = None
    last_key: str | None = None
    found: bool = False  # this generation wrote an artifact
    finished: bool = False  # this generation's engine ended as it does (its final stats), not the target the process
    held_since: float = 0.0  # when its pipe was first seen held past its end (by a process it started)
    inited: bool = False  # this generation ran the corpus and the seeds through (libFuzzer's INITED)
    generation: int = 0
    crash_dir: str = ""  # where the engine writes this worker's failing inputs (a scratch directory)
    collected: set[tuple[str, int]] = field(default_factory=set)  # (name, mtime) of the files read from it
    log: deque[str] = field(default_factory=lambda: deque(maxlen=LOG_LINES))


class _Campaign:
    def __init__(self, target: str, seconds: float | None, runs: int | None, jobs: int, corpus: str | None,
                 artifacts: str, seed: int | None, fmt: str | None, max_len: int | None, max_findings: int) -> None:
        self.stats = fast_path_stats(target, fmt)  # refused before anything is made
        self.target, self.name, self.seconds, self.runs = target, target.replace(":", "_"), seconds, runs
        self.seed, self.fmt, self.max_findings = seed, fmt, max_findings
        self.max_len = max_len or MAX_LEN.get(target, DEFAULT_MAX_LEN)
        corpus = f".bob-fuzz/{self.name}/corpus" if corpus is None else corpus
        for option, path in (("--corpus", corpus), ("--artifacts", artifacts)):
            try:  # (atheris passes the engine's arguments as str: a path of other bytes fails every worker)
                with about(option, path):  # (a relative path once the working directory is gone: refused so)
                    refuse_if_working_directory_gone(path)
                    os.path.realpath(path).encode()
            except UnicodeEncodeError:
                raise Refused("the engine takes its paths as UTF-8 text, and this one (its links resolved) is not",
                              option=option, path=path) from None
        self.corpus = Path(output_directory("--corpus", corpus)).resolve()
        refuse_unless_fits("--corpus", corpus, self.corpus, "0" * 40)  # (an entry: the SHA-1 of its input)
        self.before = set(os.listdir(self.corpus))  # (what the engine adds is checked at the end)
        self.artifacts = Path(output_directory("--artifacts", artifacts)).resolve()
        if self.corpus in (self.artifacts, *self.artifacts.parents):  # (what it made goes: run_command)
            raise Refused("is the --corpus directory or inside it, where the engine reads every file as an input "
                          "(findings and logs too)", option="--artifacts", path=artifacts)
        self.logs = self.artifacts / ".logs"  # its longest file: a worker's finding in the scratch (scratch())
        if self.logs in (self.corpus, *self.corpus.parents):  # (the next campaign sweeps its scratch-* entries)
            raise Refused("is inside --artifacts' .logs/, bob-fuzz's own files", option="--corpus", path=corpus)
        refuse_unless_fits("--artifacts", artifacts, self.logs / f"{SCRATCH}{os.getpid()}-{'x' * 8}" / f"crash{jobs}",
                           "slow-unit-" + "0" * 40)
        output_directory("--artifacts", self.logs)  # (removed with the artifacts' when the command fails)
        self.scratch_home, self.held = "", contextlib.ExitStack()  # made with the workers, held while it runs
        with holding_flock(str(self.logs)):  # what a campaign ended by SIGKILL left: no one holds it (a pid proves
            for d in self.logs.glob(f"{SCRATCH}*"):  # nothing across PID namespaces, two containers on one volume)
                with contextlib.suppress(OSError), holding_flock(str(d), fcntl.LOCK_NB):
                    shutil.rmtree(d, ignore_errors=True)
        self.dict_path = self.logs / "bob.dict"
        with about("--artifacts", artifacts):  # (a full disk: the option's refusal)
            write_dict(self.dict_path)
        self.result = CampaignResult(target)
        self.workers = [_Worker(i) for i in range(max(1, jobs))]
        self.start, self.selector, self.overdue = time.monotonic(), selectors.DefaultSelector(), False
        self.ran_out, self.ran_inputs = "", 0  # why a worker ended with no verdict (RAN_OUT_LINE); generations that
        # ran inputs to their end: past the engine's start (INITED), or to the engine's own end (final stats, exit 0)
        self.env, self.seeds = dict(os.environ), ""  # the workers' (their TMPDIR in the scratch); seeds: made with them

    def remaining_time(self) -> float | None:
        return None if self.seconds is None else self.seconds - (time.monotonic() - self.start)

    def launch(self, w: _Worker) -> None:
        """Start worker ``w``'s next generation, if anything is left to run."""
        left = self.remaining_time()
        if left is not None and left < 1 and w.generation:  # (a first one runs a second: --time 0.5 too)
            return
        argv = ["bob-fuzz", str(self.corpus), self.seeds, f"-artifact_prefix={w.crash_dir}/", f"-dict={self.dict_path}",
                f"-max_len={self.max_len}", f"-timeout={HANG}", f"-rss_limit_mb={RSS_LIMIT_MB}", "-reload=1",
                "-print_final_stats=1", "-len_control=0"]
        if left is not None:
            argv.append(f"-max_total_time={max(1, int(left))}")
        if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:  # ignored here (`cmd &` in a script): by the engine
            argv.append("-handle_int=0")  # too (SIGTERM stays the engine's: it is how the campaign ends a worker)
        share = GENERATION.get(self.target, 0)
        if self.runs is not None:  # each worker's share, the first ones one more each, over its generations
            runs_left = (self.runs + len(self.workers) - 1 - w.index) // len(self.workers) - w.executions_done
            if runs_left <= 0:
                return
            share = min(share, runs_left) if share else runs_left
        if share:
            argv.append(f"-runs={share}")
        w.found, w.finished, w.held_since, w.inited = False, False, 0.0, False
        w.generation += 1
        seed = 0 if self.seed is None else (self.seed * 1000 + 100 * w.generation + w.index + 1) % 2**32
        argv.append(f"-seed={seed}")
        spec = json.dumps({"target": self.target, "format": self.fmt, "argv": argv,
                           "fast_path_stats": f"{self.stats}.{w.index}.{w.generation}" if self.stats else None})
        # atheris prints an uncaught exception on stdout, libFuzzer its status on stderr: read both
        w.proc = subprocess.Popen([sys.executable, "-c", WORKER, spec], stdout=subprocess.PIPE, start_new_session=True,
                                  stderr=subprocess.STDOUT, env=dict(self.env, PYTHONUNBUFFERED="1"),  # (its group)
                                  preexec_fn=ends_with_this_process())
        assert w.proc.stdout is not None
        self.selector.register(w.proc.stdout, selectors.EVENT_READ, w)

    def read(self, w: _Worker, held: bool = False) -> None:
        """What worker ``w`` wrote since the last read: its status, its failure's key and message, its
        artifacts; at the end of its output, its log saved and its next generation started. ``held``: it ended, and
        its pipe is held by a process it started outside its group (setsid): what is in the pipe, then its end."""
        assert w.proc is not None and w.proc.stdout is not None
        if held:  # (the worker's last words are in the pipe, at most its size, among the holder's)
            chunk, ended = drained(w.proc.stdout.fileno(), 1 << 20)  # (its end: it was read late, nothing held it)
            said = (f"worker {w.index + 1} ended, its output held by a process it started outside its process group: "
                    "no longer read, that process left running")  # (once: each generation may leave one)
            self.result.notes += [] if ended or said in self.result.notes else [said]
        else:
            chunk = os.read(w.proc.stdout.fileno(), 1 << 16)
        lines = (w.partial + chunk).splitlines(keepends=True)
        w.partial = lines.pop() if chunk and not held and lines and not lines[-1].endswith((b"\n", b"\r")) else b""
        for line in (raw.decode("utf-8", "backslashreplace").rstrip("\r\n") + "\n" for raw in lines):
            w.log.append(line)
            if m := STATUS.match(line):
                w.executions, w.coverage, w.features = (int(g or 0) for g in m.group(1, 3, 4))
                w.inited = w.inited or m[2] == "INITED"
            elif line.startswith(KEY_LINE):
                w.last_key = line[len(KEY_LINE):].strip()
            elif line.startswith(RAN_OUT_LINE):
                self.ran_out = line[len(RAN_OUT_LINE):].strip()
            elif "Uncaught Python exception" in line:
                w.last_error = ""  # the next line is the exception, then its traceback
            elif w.last_error == "" and line.strip():
                w.last_error = line.strip()
            elif executed := EXECUTED.search(line):
                w.executions, w.finished = max(w.executions, int(executed[1])), True
            elif WRITTEN in line:  # (one input failing again is written again, under the same name)
                for name, mtime in sorted({(e.name, e.stat().st_mtime_ns) for e in os.scandir(w.crash_dir)}
                                          - w.collected):
                    w.collected.add((name, mtime))
                    self.collect(os.path.join(w.crash_dir, name), w)
        if not chunk or held:
            self.selector.unregister(w.proc.stdout)
            w.proc.stdout.close()
            w.proc.wait()
            self.save_log(w)
            self.relaunch(w)

    def save_log(self, w: _Worker) -> None:
        """The worker's log so far, replacing the last one whole (an old log survives a failed write)."""
        try:
            write_atomic(self.logs / f"{self.name}-worker{w.index}.log",
                         "".join(w.log).encode("utf-8", "backslashreplace"))
        except OSError as exc:
            self.result.notes.append(f"worker {w.index + 1}'s log not written: {os_reason(exc)}")

    def collect(self, path: str, w: _Worker) -> None:
        """An input the engine wrote: a finding (one artifact per failure), or a resource stop not counted."""
        try:
            data = read_input(path)
        except OSError:
            return
        w.found, name = True, Path(path).name
        if not (whole := hashlib.sha1(data).hexdigest() == name[-40:]):  # (named by its input's SHA-1: a full disk
            # left it empty or cut; the failure the worker said stands, these bytes are not its input)
            self.result.notes.append(f"the engine could not write a failing input whole ({name}; a full disk?): "
                                     "its finding has no input")
        kind = name.split("-")[0]  # a resource stop, or a failure no exception of the target's said (the engine's?)
        if whole and (kind in ("oom", "timeout", "slow") or not w.last_key) and passes_outside(self.target, path,
                                                                                              self.env):
            self.result.discarded.append(Finding("", f"{kind} in the engine only: the input passes when "  # (no
                                                 "replayed in a fresh process"))  # path: the scratch goes at the end)
            return
        message = w.last_error or (f"the target hung past the engine's -timeout of {HANG} s" if kind == "timeout"
                                   else "the target crashed") + " (see the worker log in .logs/)"
        self.result.add(data if whole else None, message, w.last_key or "crash: " + kind, self.artifacts)
        w.last_error = w.last_key = None

    def relaunch(self, w: _Worker) -> None:
        """A worker that ended: a finding, or the end of a generation; start its next one if it may."""
        assert w.proc is not None
        w.executions_done, w.executions = w.executions_done + w.executions, 0
        result = self.result  # (exit 0 with no final stats: the target ended the process, os._exit(0))
        self.ran_inputs += w.inited or w.proc.returncode == 0 and w.finished
        crashed_unseen = (w.proc.returncode != 0 or not w.finished) and not w.found  # (it would only repeat itself)
        if crashed_unseen and not self.overdue:
            rc = w.proc.returncode
            how = next((f"killed by {s.name}" for s in signal.Signals if s == -rc), f"exit {rc}")  # (Python's -9)
            result.notes.append(f"worker {w.index + 1} ended ({how}) without a finding: .logs/{self.name}-worker"
                                f"{w.index}.log says why")
        if at_start := w.found and not w.inited:  # (each generation would stop on it: a hang every 60 s, for hours)
            result.notes.append(f"worker {w.index + 1} not restarted: an input its engine runs as it starts fails")
        try:
            if not (crashed_unseen or at_start or len(result.findings) >= self.max_findings
                    or result.crashes >= MAX_CRASHES):
                self.launch(w)
        except OSError as exc:
            result.notes.append(f"worker {w.index + 1} could not be restarted: {os_reason(exc)}")

    def tally(self) -> CampaignResult:
        """The result, its counts as the workers last reported them."""
        r = self.result
        r.executions = sum(w.executions_done + w.executions for w in self.workers)
        try:
            r.corpus = len(os.listdir(self.corpus))
        except (FileNotFoundError, NotADirectoryError) as exc:  # removed while it ran: its last count, a note
            said = f"--corpus {self.corpus}: {os_reason(exc)} (its last count kept)"
            r.notes += [] if said in r.notes else [said]
        r.seconds = time.monotonic() - self.start
        r.coverage, r.features = max(w.coverage for w in self.workers), max(w.features for w in self.workers)
        return r

    def watch(self, display: CampaignDisplay) -> None:
        """Start the workers, then read them, showing the totals every half second, until none is left."""
        with about("--artifacts", self.logs):  # (a full disk or ulimit -f as the scratch is made: the option's)
            with holding_flock(str(self.logs)):  # the scratch, held while the campaign runs, removed at its end
                with signals.step_and_record():  # (kept for that removal before a Ctrl-C acts)
                    self.scratch_home = tempfile.mkdtemp(prefix=f"{SCRATCH}{os.getpid()}-", dir=self.logs)
                self.held.enter_context(holding_flock(self.scratch_home))  # (never swept between the two)
            self.seeds, self.env["TMPDIR"] = (os.path.join(self.scratch_home, d) for d in ("seeds", "tmp"))
            for w in self.workers:
                w.crash_dir = os.path.join(self.scratch_home, f"crash{w.index}")
            for made in (self.seeds, self.env["TMPDIR"], *(w.crash_dir for w in self.workers)):
                make_directory(made)
            for i, f in enumerate(seed_paths(self.name, self.fmt)):  # (a module:function target: its format's files)
                write_atomic(os.path.join(self.seeds, f"{i:03d}-{f.name}"), read_input(f))
        for w in self.workers:
            try:
                self.launch(w)
                continue
            except OSError as exc:  # a process limit, no memory or descriptors: refused, the started ended
                why = os_reason(exc)
            raise Refused(f"cannot start worker {w.index + 1} of {len(self.workers)}: {why}; " + ("ask fewer" if w.index
                          else "not even one can start here"), option="--jobs")  # (past the OSError: exit 2, not 70)
        result, shown = self.result, 0.0
        while self.selector.get_map():
            for key, _ in self.selector.select(0.5):
                self.read(key.data)
            for w in self.workers:  # ended, its pipe held by what it started (a target's forked child): that ends,
                if w.proc is not None and w.proc.poll() is not None and w.proc.stdout and not w.proc.stdout.closed:
                    signal_group(w.proc, signal.SIGKILL)  # and one outside its group is read no more a second on
                    w.held_since = w.held_since or time.monotonic()
                    if time.monotonic() - w.held_since > 1:
                        self.read(w, held=True)
            if time.monotonic() - shown >= 0.5:
                shown = time.monotonic()
                self.tally()
                display.update(result)
            left = self.remaining_time()
            if left is not None and left < -OVERTIME and not self.overdue:  # a worker that hangs does not
                self.overdue = True  # hold the campaign
                result.notes.append(f"workers still running {OVERTIME} s past --time were ended")
                end_groups([w.proc for w in self.workers if w.proc is not None])


def run_campaign(target: str, *, seconds: float | None = None, runs: int | None = None, jobs: int = 1,
                 corpus: str | None = None, artifacts: str = "fuzz-artifacts", seed: int | None = None,
                 fmt: str | None = None, max_len: int | None = None, live: bool | None = None,
                 max_findings: int = 20) -> CampaignResult:
    """A coverage-guided campaign of ``target`` for ``seconds`` or ``runs`` executions (over all jobs)."""
    if seconds is None and runs is None:
        seconds = 60
    c = _Campaign(target, seconds, runs, jobs, corpus, artifacts, seed, fmt, max_len, max_findings)
    replaced = signals.install()  # SIGTERM and SIGHUP end the campaign as Ctrl-C does
    display = CampaignDisplay(target, live)
    stopped: BaseException | None = None
    try:
        c.watch(display)
    except KeyboardInterrupt as exc:
        stopped = exc
    finally:
        signals.restore(replaced)
        try:
            end_groups([w.proc for w in c.workers if w.proc is not None])
            for w in [w for w in c.workers if w.log and stopped is not None]:  # stopped mid-read: as far as it went
                c.save_log(w)
            display.close()
        finally:
            c.selector.close()  # (first: the removal needs descriptors, ulimit -n)
            c.held.close()
            if c.scratch_home:
                shutil.rmtree(c.scratch_home, ignore_errors=True)
    if lost := unwritten(c.corpus, c.before):
        c.result.notes.append(f"{lost} entries added to --corpus do not hold the input their name says (the engine's "
                              "writes on a full disk?); left as they are, not counted in the corpus")
    result = c.tally()  # (a campaign shorter than a display tick: its last status lines too)
    result.corpus -= lost
    if stopped is not None:  # (a log that could not be saved, the findings written: on stderr)
        tell_when_stopped(result)
        said = f"stopped by {signals.signal_name(signum := getattr(stopped, 'signum', signal.SIGINT))} after " \
               f"{result.executions} executions; every worker ended"
        if signum != signal.SIGINT:
            raise Refused(said, code=128 + signum)
        note("bob-fuzz", said)  # (then "interrupted": a Ctrl-C stays a KeyboardInterrupt to a library caller)
        raise KeyboardInterrupt
    ended = [n for n in result.notes if n.startswith("worker")] if not (result.findings or c.ran_inputs) else []
    if not result.findings and (c.ran_out or ended):  # no verdict (never exit 0, "nothing found"): the notes first
        why = c.ran_out or f"no verdict: every worker ended before its engine did ({ended[0]})"
        for said in [n for n in result.notes if n not in why]:  # (the refusal's own line names one)
            note("bob-fuzz", said)
        raise NoVerdict(why) if c.ran_out else Refused(why, code=EXIT_SOFTWARE)
    return result
