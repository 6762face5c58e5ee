"""Re-running findings through their targets, and shrinking them out of process. No engine needed."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator, NamedTuple

from bob.children import ends_with_this_process, readable, signal_group
from bob.formats.constants import CHECKPOINT_MAGIC
from bob.fuzz.common import INPUT_LIMIT, NoVerdict, failure, failure_message, load_target, read_input
from bob.fuzz.properties import exception_key
from bob.fuzz.structural import refresh_digests
from bob.fuzz.targets import TARGETS
from bob.scratch import scratch_directory

__all__ = ["Verdict", "NotAlone", "files_under", "infer_target", "read_input", "replay_file", "replay", "failure_of",
           "passes_outside", "OUTSIDE_SECONDS", "signature_of", "minimize_out_of_process", "skipped", "INPUT_LIMIT",
           "RUST_TARGETS"]

RUST_TARGETS = ("kernels", "predict", "resume")  # fuzz/regressions/<these>: cargo test -p bob-core --test fuzz_replay
STARTUP = 120.0  # seconds a minimizer's worker may take to start and load its target (apart from --timeout)
_DEEPEST = 100  # directory levels under a path replay walks: a corpus has a few
OUTSIDE_SECONDS = 120  # a replay in a fresh process, judging a campaign's keyless crash or hang: longer fails


class Verdict(NamedTuple):
    path: str
    target: str | None
    passed: bool
    message: str


def _unreadable(exc: OSError) -> None:
    raise exc


def files_under(paths: "list[str | os.PathLike[str]]") -> Iterator[Path]:
    """The files named, and every file under the directories named, sorted (docs/fuzzing.md's ``replay``: what is
    skipped, followed, refused); a directory under them that cannot be listed raises its ``OSError``."""
    for p in map(Path, paths):
        if not p.is_dir():
            yield p
            continue
        found, top, seen, tree = [], os.fspath(p).rstrip(os.sep).count(os.sep), set(), os.path.realpath(p)
        for directory, subdirectories, names in os.walk(p, onerror=_unreadable, followlinks=True):
            if directory.count(os.sep) - top > _DEEPEST:  # one answer on every Python (3.11's os.walk recursed out)
                raise OSError(errno.ELOOP, f"directories nested more than {_DEEPEST} levels deep", os.fspath(p))
            _inside(tree, directory)  # (never the machine's whole tree)
            st = os.stat(directory)  # a linked directory is walked once (a link back up: not again)
            if (st.st_dev, st.st_ino) in seen:
                subdirectories[:] = []
                continue
            seen.add((st.st_dev, st.st_ino))
            subdirectories[:] = sorted((d for d in subdirectories if not d.startswith(".")),  # a directory's own
                                       key=lambda d: (os.path.islink(os.path.join(directory, d)), d))  # name first
            _inside(tree, *(files := [os.path.join(directory, n) for n in names if not n.startswith(".")]))
            found += [Path(f) for f in files]  # (a file's link out of the tree refused as a directory's is)
        yield from (f for f in sorted(found) if f.suffix not in (".txt", ".md", ".json"))  # (a FIFO too: refused)


def _inside(tree: str, *paths: str) -> None:
    """The ``OSError`` of a link out of ``tree``, if one of ``paths`` leads out of it once links are followed."""
    for path in (p for p in paths if os.path.commonpath([tree, os.path.realpath(p)]) != tree):
        raise OSError(errno.EXDEV, "a link out of the directory given: name where it leads as a PATH", path)


def skipped(path: Path) -> bool:
    """The Rust targets' files (``fuzz/regressions/kernels``, ``fuzz/corpus/kernels`` …): replayed by cargo, not
    here (a directory of another name, ``cases/predict``, is no Rust target's)."""
    return path.parent.name in RUST_TARGETS and path.parent.parent.name in ("regressions", "corpus")


def infer_target(path: "str | os.PathLike[str]") -> str | None:
    """The target of a file from where bob puts files, or None: a campaign's corpus ``.bob-fuzz/TARGET/corpus/…``,
    ``fuzz/regressions/TARGET/…``, a conformance corpus's ``FORMAT/accepted/…`` or ``FORMAT/refused/FIELD/…``,
    or an artifact's name prefix ``TARGET-<sha>.bin``."""
    parts = Path(os.path.abspath(path)).parts  # (parts[0] is "/": never a layout's, so parts[-1] is never looked at)
    for layout, at in ((("accepted", "refused"), -1), ((".bob-fuzz", "regressions"), 1)):  # the target before, after
        for i in range(len(parts) - 2, -1, -1):  # the innermost layout wins
            if parts[i] in layout and parts[i + at] in TARGETS:
                return parts[i + at]
    p = Path(path)
    return next((part for part in (p.parent.name, p.name.split("-")[0]) if part in TARGETS), None)


def failure_of(run: Callable[[bytes], None], data: bytes) -> str | None:
    """None when ``run(data)`` passes, else the failure as ``Type: message`` (first line)."""
    return None if (exc := failure(run, data)) is None else failure_message(exc)


def signature_of(run: Callable[[bytes], None], data: bytes) -> str | None:
    """None when ``run(data)`` passes, else the failure's identity (:func:`bob.fuzz.properties.exception_key`)."""
    return None if (exc := failure(run, data)) is None else exception_key(exc)


def passes_outside(target: str, path: str, env: "dict[str, str]") -> bool:
    """Whether ``path`` passes its target when replayed in a fresh process (within :data:`OUTSIDE_SECONDS`)."""
    try:
        return subprocess.run([sys.executable, "-m", "bob.fuzz.cli", "replay", path, "--target", target],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=OUTSIDE_SECONDS,
                              env=env, preexec_fn=ends_with_this_process()).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def replay_file(path: Path, target: str | None = None) -> Verdict:
    name = target or infer_target(path)
    if name is None:
        return Verdict(str(path), None, False, "no target: name one with --target (or keep the file in a "
                                               "directory named after its target)")
    failure = failure_of(load_target(name)[0], read_input(path))  # (a file it cannot read: its OSError, no verdict)
    return Verdict(str(path), name, failure is None, failure or "ok")


def replay(paths: "list[str | os.PathLike[str]]", target: str | None = None) -> list[Verdict]:
    """Each file through its target; the Rust targets' files (``fuzz/regressions/kernels`` …) are left out."""
    return [replay_file(f, target) for f in files_under(paths) if target is not None or not skipped(f)]


def shrink(data: bytes, same: Callable[[bytes], bool], max_tries: int,
           seal: Callable[[bytes], bytes] = bytes) -> tuple[bytes, int]:
    """The simplest input ``same`` keeps, in at most ``max_tries`` calls of ``same`` (docs/fuzzing.md's
    ``minimize``); chunks already zero cost no call, and a rejected candidate is tried again ``seal``-ed."""
    tries, best = 0, data

    def kept(candidate: bytes) -> bool:
        nonlocal tries, best
        for form in dict.fromkeys((candidate, seal(candidate))):
            if tries < max_tries:
                tries += 1
                if same(form):
                    best = form
                    return True
        return False

    chunk = max(len(best) // 2, 1)
    while chunk and tries < max_tries:
        for at in range(0, len(best), chunk):
            piece = best[at:at + chunk]
            if tries < max_tries and piece.count(0) < len(piece):
                kept(best[:at] + bytes(len(piece)) + best[at + chunk:])
        chunk //= 2
    chunk = max(len(best) // 2, 1)
    while chunk and tries < max_tries:
        at, length = 0, len(best)
        while at < len(best) and tries < max_tries:
            if not kept(best[:at] + best[at + chunk:]):
                at += chunk
        if len(best) == length:  # (nothing deleted: each deletion kept shortens it, as seal keeps a length)
            chunk //= 2
    return best, tries


# The worker of minimize_out_of_process: candidates in (8-byte length, bytes) on stdin, one JSON
# line per candidate out (its signature, or null) on a private copy of stdout; the target's output goes nowhere.
WORKER = r"""
import json, os, sys
results = os.fdopen(os.dup(1), "w", encoding="utf-8")
null = os.open(os.devnull, os.O_WRONLY)
os.dup2(null, 1)
from bob.fuzz.common import NoVerdict, load_target
from bob.fuzz.replay import signature_of
from bob.fuzz.targets import preload
run, _ = load_target(sys.argv[1])
preload(sys.argv[1])
print("ready", file=results, flush=True)  # (candidates are timed from here, past every import: bob's, the target's)
os.dup2(null, 2)  # started: what a target writes on stderr goes nowhere, as its stdout does
source = sys.stdin.buffer
while True:
    head = source.read(8)
    if len(head) < 8:
        break
    data = source.read(int.from_bytes(head, "little"))
    try:
        said = signature_of(run, data)
    except NoVerdict as exc:  # (a full disk: said, never a crash to minimize)
        said = {"machine": str(exc)}
    except MemoryError:  # (nor is running out of memory: the input's is the machine's, a candidate's its own)
        said = {"machine": "the machine ran out of memory while the target ran; no verdict", "memory": True}
    print(json.dumps(said), file=results, flush=True)
"""


class _OutOfMemory(NoVerdict):
    """The worker's target ran out of memory."""


class NotAlone(ValueError):
    """The minimized input fails its target only after other candidates ran in its worker, not alone in a fresh one."""


class _Runner:
    """Candidates run one at a time in a worker process; a crash or a hang is a failure of its
    own (``crash: signal N``, ``timeout``), and the next candidate gets a new worker. The workers'
    TMPDIR is the runner's (a worker that dies cannot remove what it made there)."""

    def __init__(self, target: str, timeout: float, tmp: str) -> None:
        self.target, self.timeout, self.tmp = target, timeout, tmp
        self.proc: subprocess.Popen[bytes] | None = None

    def signature(self, data: bytes) -> str | None:
        if self.proc is None or self.proc.poll() is not None:
            self.close(kill=False)
            with tempfile.TemporaryFile(dir=self.tmp) as errors:  # its stderr (a pipe the target could fill)
                self.proc = proc = subprocess.Popen([sys.executable, "-c", WORKER, self.target], stdin=subprocess.PIPE,
                                                    stdout=subprocess.PIPE, stderr=errors, start_new_session=True,
                                                    env=dict(os.environ, TMPDIR=self.tmp),  # (its group: close ends it)
                                                    preexec_fn=ends_with_this_process())
                assert proc.stdout is not None
                ready = readable(proc.stdout, wait := max(self.timeout, STARTUP))
                if (line := proc.stdout.readline() if ready else b"") != b"ready\n":  # no candidate yet: no finding
                    ended = self.close()[len("crash: "):]
                    how = ended if ready else f"not ready in {wait:g} s"
                    errors.seek(0)
                    said = (errors.read() or line).decode("utf-8", "replace").strip()[-300:]
                    raise RuntimeError(f"the minimizer's worker could not start ({how}): {said}")
        proc = self.proc
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(len(data).to_bytes(8, "little") + data)
            proc.stdin.flush()
        except BrokenPipeError:
            return self.close(kill=False)
        deadline = time.monotonic() + self.timeout
        while not readable(proc.stdout, min(0.1, deadline - time.monotonic())):  # the worker writes its line whole
            if proc.poll() is not None:  # ended, its pipe held by a child the target forked: its end is the answer
                return self.close(kill=False)
            if time.monotonic() >= deadline:
                self.close()
                return "timeout"
        line = proc.stdout.readline()  # no line, or part of one: the worker died
        said = json.loads(line) if line.endswith(b"\n") else self.close(kill=False)
        if isinstance(said, dict):
            raise (_OutOfMemory if said.get("memory") else NoVerdict)(said["machine"])
        return said

    def close(self, kill: bool = True) -> str:
        """End the worker (if there is one; else wait for the one that is ending); how it ended."""
        proc, self.proc = self.proc, None
        if proc is None:
            return ""
        if kill or proc.poll() is not None:  # (and what the target started in the worker's group: ended with it)
            signal_group(proc, signal.SIGKILL)
        try:  # (one whose output ended lives on a --timeout at the most: a target that closed it, then hangs)
            code = proc.wait(timeout=self.timeout)
            how = f"crash: signal {-code}" if code < 0 else f"crash: exit {code}"
        except subprocess.TimeoutExpired:
            signal_group(proc, signal.SIGKILL)
            proc.wait()
            how = "timeout"
        for stream in filter(None, (proc.stdin, proc.stdout)):
            with contextlib.suppress(OSError):
                stream.close()
        return how


def minimize_out_of_process(target: str, data: bytes, *, max_tries: int = 2000,
                            timeout: float = 60.0) -> tuple[bytes, str | None, int]:
    """``(smaller, failure, tries)``: ``data`` shrunk while it fails the same way (:func:`signature_of`, or the same
    crash or hang) by :class:`_Runner`'s workers; ``failure`` is None (nothing shrunk) when ``data`` passes."""
    from bob.progress import Progress

    with scratch_directory("bob-fuzz-minimize-") as tmp, contextlib.closing(_Runner(target, timeout, tmp)) as runner:
        if (want := runner.signature(data)) is None:
            return data, None, 1
        with Progress("bob-fuzz", "minimize", max_tries) as progress:
            def same(candidate: bytes) -> bool:
                progress.advance(extra=f"{len(candidate)} bytes")
                try:
                    return runner.signature(candidate) == want
                except _OutOfMemory:  # a candidate's (a size it asks for): not the input's failure
                    return False

            seal = refresh_digests if data.startswith(CHECKPOINT_MAGIC) else bytes
            small, tries = shrink(data, same, max_tries, seal)
        runner.close()
        if small != data and runner.signature(small) != want:  # (in a fresh worker, as the input was first)
            raise NotAlone("the minimized input does not fail its target alone, in a fresh worker (the target keeps "
                           "state from one input to the next): no smaller file is known to fail; nothing written")
        return small, want, tries + 1 + (small != data)  # (the input alone, the candidates, the result alone)
