"""What a campaign and the seeded loop share: their result, its findings and live display,
the input limits, the targets and their seeds, and the worker's helpers."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import importlib
import io
import os
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from bob.commands import RESOURCE_ERRNOS, Refused, about, os_reason
from bob.refusals import PATH_MAX
from bob.signals import Interrupted, taken
from bob.fileio import FileTooLarge, read_bounded, write_atomic
from bob.formats.constants import MAX_CHECKPOINT_BYTES, PREDICTION_BYTES
from bob.formats.kinds import ALIASES
from bob.options import shown_argv  # (a spec is argv's: its bytes shown as a refusal shows a path's)
from bob.text import note, one_line, show_path, write_whole  # (a closed or full stderr drops a line, never the run)
from bob.fuzz.targets import TARGETS, build_lacks, seed_files

__all__ = ["MAX_LEN", "DEFAULT_MAX_LEN", "INPUT_LIMIT", "Finding", "CampaignResult", "CampaignDisplay", "load_target",
           "seed_paths", "read_input", "fast_path_stats", "failure", "failure_message",
           "stdout_on_stderr", "NoVerdict", "OUT_OF_ROOM", "refuse_unless_fits", "unwritten", "tell_when_stopped",
           "holding_flock"]

MAX_LEN = {"input": 4096, "predictions": 4 * PREDICTION_BYTES, "core": 4096}
DEFAULT_MAX_LEN = MAX_CHECKPOINT_BYTES + 64  # a little past the largest checkpoint a reader accepts
INPUT_LIMIT = 64 << 20  # the largest file replayed: far past any target's -max_len
OUT_OF_ROOM = RESOURCE_ERRNOS | {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}  # a target's OSError that is the machine's


def load_target(spec: str, fmt: str | None = None) -> "tuple[Callable[[bytes], None], str | None]":
    """(function, format) for a registered target name or a ``package.module:function`` spec."""
    fmt = ALIASES.get(fmt or "", fmt)  # (ckpt, pred, envelope: as the command line takes them, for either kind)
    if t := TARGETS.get(spec):  # (a Target, a NamedTuple: never false)
        if fmt not in (None, t.format):  # (its seeds and mutations are its own format's: another would be fuzzed)
            raise ValueError(f"target {spec} reads {t.format or 'bytes of no format'}; a format is named for a "
                             "package.module:function target")
        return t.run, t.format
    if ":" not in spec:
        raise ValueError(f"unknown target '{shown_argv(spec)}'; one of {', '.join(TARGETS)} or package.module:function")
    module, _, name = spec.partition(":")
    try:
        with contextlib.redirect_stdout(sys.stderr):  # (what its import prints too; fd 1: stdout_on_stderr's)
            function = getattr(importlib.import_module(module), name)
    except SystemExit as exc:  # (a script's sys.exit or argparse run as it is imported: never the command's end)
        raise ImportError(f"importing '{shown_argv(module)}' ended it (SystemExit {exc.code!r}); a target's module "
                          "must not exit as it is imported") from None
    except (ImportError, AttributeError) as exc:  # Python's words quote a name as code points: argv's bytes instead
        said = str(exc)
        for word in {module, name, getattr(exc, "name", None) or name}:  # (as repr or between quotes)
            said = said.replace(repr(word), f"'{word}'").replace(f"'{word}'", f"'{shown_argv(word)}'")
        raise type(exc)(said) from None
    except Exception as exc:  # noqa: BLE001 - its import failing (a SyntaxError, a relative name): the user's module
        if isinstance(exc, MemoryError) or isinstance(exc, OSError) and exc.errno in OUT_OF_ROOM:
            raise  # (the machine's, as it imported: exit 70, never the user's usage)
        raise ImportError(f"importing '{shown_argv(module)}' raised {type(exc).__name__}: {exc}") from None
    if not callable(function):
        raise ValueError(f"target '{shown_argv(spec)}' is no function (a {type(function).__name__})")

    def printing_to_stderr(data: bytes) -> None:  # stdout is the command's: one JSON object under --json
        __tracebackhide__ = True  # (a failure's key names the target's frame: exception_key)
        with contextlib.redirect_stdout(sys.stderr or io.StringIO()):  # (fd 1: stdout_on_stderr; no stderr: nowhere)
            function(data)

    return printing_to_stderr, fmt


def seed_paths(name: str, fmt: str | None = None, *, root: Path | None = None) -> list[Path]:
    """The seeds of target ``name``: bob's files for it (a ``module:function`` target: its format ``fmt``'s,
    none without one), then ``fuzz/regressions/<name>`` of the checkout ``root`` (default: bob's)."""
    kind = name if name in TARGETS else fmt
    files = seed_files(kind) if kind in TARGETS else []
    regressions = (root or Path(__file__).resolve().parents[3]) / "fuzz" / "regressions" / name
    return files + (sorted(p for p in regressions.iterdir() if p.is_file()) if regressions.is_dir() else [])


def fast_path_stats(target: str, fmt: str | None) -> str | None:
    """``BOB_FUZZ_FAST_PATH_STATS`` when ``target``'s workers will write it, its ``.0.0`` written now, before
    anything starts (docs/fuzzing.md, "Ten-minute campaigns": why)."""
    stats = os.environ.get("BOB_FUZZ_FAST_PATH_STATS")
    if not stats or load_target(target, fmt)[1] not in ("input", "checkpoint"):
        return None
    with about("BOB_FUZZ_FAST_PATH_STATS", stats):
        write_atomic(f"{stats}.0.0", b'{"executions": 0, "recognized": 0}')
    return stats


def refuse_unless_fits(option: str, given: str, directory: "str | os.PathLike[str]", name: str) -> None:
    """Refuse ``option`` (``given``) if the engine's file ``name`` in ``directory`` passes PATH_MAX: libFuzzer drops
    such a write unsaid, as it leaves a file empty or cut on a full disk."""
    if len(os.fsencode(path := os.path.join(directory, name))) >= PATH_MAX:
        why = os_reason(OSError(errno.ENAMETOOLONG, "file name too long", path))
        raise Refused(f"the engine could not write its files in it: {why}", option=option, path=given)


def unwritten(corpus: Path, before: "set[str]") -> int:
    """How many entries added to ``corpus`` (not ``before``) have a SHA-1 name not their input's: docs/fuzzing.md."""
    lost = 0
    for entry in os.scandir(corpus) if corpus.is_dir() else ():
        if entry.name not in before and len(entry.name) == 40 and not entry.name.strip("0123456789abcdef"):
            with contextlib.suppress(OSError):
                lost += hashlib.sha1(read_input(entry.path)).hexdigest() != entry.name
    return lost


def read_input(path: "str | os.PathLike[str]") -> bytes:
    """A regular file's bytes (at most :data:`INPUT_LIMIT`), through bob's bounded reader."""
    try:
        data = read_bounded(path, INPUT_LIMIT)
    except FileTooLarge:
        raise OSError(errno.EFBIG, f"larger than {INPUT_LIMIT} bytes, more than any target reads",
                      os.fspath(path)) from None
    if data is None:
        raise FileNotFoundError(2, "no such file", os.fspath(path))
    return data


@contextlib.contextmanager
def holding_flock(directory: str, flags: int = 0) -> Iterator[None]:
    """``directory``'s exclusive flock for the block (``fcntl.LOCK_NB`` in ``flags``: a BlockingIOError if held)."""
    fd = os.open(directory, os.O_RDONLY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | flags)
        yield
    finally:
        os.close(fd)


@contextlib.contextmanager
def stdout_on_stderr() -> Iterator[None]:
    """fd 1 on stderr for the block, in which a command runs targets in its own process, so that what their
    children and C code print stays off its stdout (one JSON object under --json); ``sys.stdout`` writes to
    a copy of the old fd 1 meanwhile. Each step leaves both on a stdout, so a signal between two never sends
    the command's object to stderr. No stdout or stderr, or no descriptor to spare: left as they are."""
    old, saved = sys.stdout, None
    with contextlib.suppress(AttributeError, OSError, ValueError):  # (None, an io.StringIO, no stderr, EMFILE)
        if old.fileno() == 1 and os.fstat(2):
            saved = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    if saved is None:
        yield
        return
    sys.stdout = io.TextIOWrapper(io.FileIO(saved, "w", closefd=False), encoding=old.encoding, errors=old.errors,
                                  write_through=True)
    try:
        os.dup2(2, 1)
        yield
    finally:
        os.dup2(saved, 1)
        sys.stdout = old
        os.close(saved)


class NoVerdict(RuntimeError):
    """The machine ran out of room (a full disk, ``ulimit -f``, no descriptor) or the build lacks a module (the native
    core, a dependency) while a target ran: no verdict on the input."""


def failure(run: "Callable[[bytes], None]", data: bytes) -> BaseException | None:
    """What ``run(data)`` let escape, or None: any exception is a failure (a pyo3 panic and ``SystemExit`` are
    BaseExceptions), except Ctrl-C, running out of memory or room (the machine's) and an import the build lacks."""
    __tracebackhide__ = True  # (a failure's key names the target's frame)
    before, found = len(taken()), None
    try:
        run(data)
    except (KeyboardInterrupt, MemoryError):
        raise
    except BaseException as exc:  # noqa: BLE001 - any escape is the verdict
        if isinstance(exc, OSError) and exc.errno in OUT_OF_ROOM:
            raise NoVerdict(f"the machine ran out while the target ran ({os_reason(exc)}); no verdict") from exc
        if isinstance(exc, ImportError) and build_lacks(exc):  # (the build's, whatever the input)
            raise NoVerdict(f"the target could not import what it runs ({failure_message(exc)}); no verdict") from exc
        found = exc
    if arrived := taken()[before:]:  # a signal the target caught (a bare except) was this process's: it ends
        raise Interrupted(arrived[0])
    return found


def failure_message(exc: BaseException) -> str:
    """``Type: the message's first line`` (a message that cannot be made, its ``__str__`` failing: said so)."""
    try:
        said = str(exc)
    except Exception as why:  # noqa: BLE001 - the target's own object: its failure is the finding, not the harness's
        said = f"(its message could not be made: {type(why).__name__})"
    return f"{type(exc).__name__}: {said.splitlines()[0] if said else ''}"


@dataclass
class Finding:
    path: str
    message: str
    key: str = ""  # what makes two failures one: bob.fuzz.properties.exception_key
    count: int = 1  # how many failing inputs had this key

    @property
    def where(self) -> str:
        return self.key.split(" at ", 1)[1] if " at " in self.key else "(no Python frame: a native crash?)"


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
    crashes: int = 0  # every failing input the engine stopped on (the same failure found again included)
    discarded: list[Finding] = field(default_factory=list)  # the engine's stops that pass replayed outside it
    fast_path_share: float | None = None
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:  # bob-fuzz run --json
        return dict(asdict(self), findings=[dict(asdict(f), where=f.where) for f in self.findings])

    def add(self, data: bytes | None, message: str, key: str, artifacts: "str | os.PathLike[str] | None") -> None:
        """Count a failing input; a new failure is a finding, its input (None: not known) written to ``artifacts``
        (``<target>-<sha256 prefix>.bin`` and a ``.txt`` of its message and key) when that is given."""
        self.crashes += 1
        if same := next((f for f in self.findings if f.key == key), None):  # (the same failure: no second artifact)
            same.count += 1
            return
        artifacts = None if data is None else artifacts  # (its input lost: the finding stands, said in a note)
        name = f"{self.target.replace(':', '_').replace('.', '_')}-{hashlib.sha256(data or b'').hexdigest()[:16]}.bin"
        self.findings.append(found := Finding("" if artifacts is None else str(Path(artifacts) / name), message, key))
        if artifacts is not None and data is not None:
            from bob.commit import replace_all

            said = f"{message}\n{key}\n".encode("utf-8", "backslashreplace")
            try:  # both staged before either is renamed: a full disk leaves no input without its .txt
                replace_all([(path, body, about("--artifacts", path))
                             for path, body in ((found.path, data), (found.path + ".txt", said))], outcome=False)
            except Refused as exc:  # the finding stands, its input unsaved (ulimit -f, a full disk)
                found.path = ""
                self.notes.append(f"a finding's input was not saved: {exc.text}")


def tell_when_stopped(result: CampaignResult) -> None:
    """On stderr, as a signal ends a campaign or a loop: its notes, and each finding's input written so far."""
    for said in result.notes + [f"found before the stop: {show_path(f.path)} ({one_line(f.message)})"
                                for f in result.findings if f.path]:
        note("bob-fuzz", said)


class CampaignDisplay:
    """Live progress: a rich panel on a terminal, one plain line every 10 s otherwise."""

    def __init__(self, target: str, live: bool | None) -> None:
        self.target = target
        self.last_plain: float = 0.0
        self.live: Any = None  # a rich.live.Live on a terminal
        if live if live is not None else (sys.stderr is not None and sys.stderr.isatty()):
            from rich.console import Console
            from rich.live import Live

            self.live = Live(console=Console(stderr=True), refresh_per_second=2, transient=False)
            self.live.start()

    def update(self, r: CampaignResult) -> None:
        """Show ``r``, with its executions a second since it began (libFuzzer's own rate is a generation's:
        0 in the first second of each, and a worker starts one after each finding)."""
        rate = round(r.executions / r.seconds) if r.seconds > 0 else 0
        if self.live is not None:
            from rich.table import Table

            table = Table(title=f"bob-fuzz run {self.target}", show_header=False)
            for k, v in (("executions", f"{r.executions} ({rate}/s)"), ("coverage", f"{r.coverage} edges, "
                         f"{r.features} features"), ("corpus", r.corpus), ("findings", len(r.findings)),
                         ("elapsed", f"{r.seconds:.0f} s")):
                table.add_row(k, str(v))
            self.live.update(table)
        elif r.seconds - self.last_plain >= 10:
            self.last_plain = r.seconds
            write_whole(sys.stderr, f"bob-fuzz {self.target}: {r.executions} execs ({rate}/s), cov {r.coverage} "
                        f"ft {r.features}, corpus {r.corpus}, findings {len(r.findings)}, {r.seconds:.0f}s\n")

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()
