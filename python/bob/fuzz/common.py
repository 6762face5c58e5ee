"""What a campaign and the seeded loop share: their result, its findings and live display,
the input limits, the targets by name, and the worker's helpers."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from bob.formats.constants import MAX_CHECKPOINT_BYTES, PREDICTION_BYTES
from bob.fuzz.targets import TARGETS

__all__ = ["MAX_LEN", "DEFAULT_MAX_LEN", "INPUT_LIMIT", "Finding", "CampaignResult", "CampaignDisplay",
           "load_target", "regression_dir", "die_with_parent", "read_input", "fast_path_stats"]

MAX_LEN = {"input": 4096, "predictions": 4 * PREDICTION_BYTES, "core": 4096}
DEFAULT_MAX_LEN = MAX_CHECKPOINT_BYTES + 64  # a little past the largest checkpoint a reader accepts
INPUT_LIMIT = 64 << 20  # the largest file replayed: far past any target's -max_len


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


def fast_path_stats(target: str, fmt: str | None) -> str | None:
    """``BOB_FUZZ_FAST_PATH_STATS`` (docs/fuzzing.md) when ``target``'s workers will write it: each
    worker's first file is written here, before anything starts, so a file bob cannot write is
    a refusal naming the variable, not a finding against bob."""
    from bob.commands import about
    from bob.fileio import write_atomic

    stats = os.environ.get("BOB_FUZZ_FAST_PATH_STATS")
    if not stats or load_target(target, fmt)[1] not in ("input", "checkpoint"):
        return None
    with about("BOB_FUZZ_FAST_PATH_STATS", stats):
        write_atomic(f"{stats}.0.0", b'{"executions": 0, "recognized": 0}')
    return stats


def regression_dir(name: str) -> Path | None:
    """``fuzz/regressions/<target>`` of the source checkout, when running from one."""
    root = Path(__file__).resolve().parents[3] / "fuzz" / "regressions" / name
    return root if root.is_dir() else None


def die_with_parent(parent: int | None = None) -> None:
    """End this process (SIGKILL) when its parent dies (``PR_SET_PDEATHSIG`` on Linux);
    end now if ``parent`` is given and is not our parent any more."""
    import signal

    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass
    if parent is not None and os.getppid() != parent:
        os._exit(1)


def read_input(path: "str | os.PathLike[str]") -> bytes:
    """A regular file's bytes (at most :data:`INPUT_LIMIT`), through bob's bounded reader."""
    from bob.fileio import FileTooLarge, read_bounded

    try:
        data = read_bounded(path, INPUT_LIMIT)
    except FileTooLarge:
        raise OSError(27, f"larger than {INPUT_LIMIT} bytes, more than any target reads", os.fspath(path)) from None
    if data is None:
        raise FileNotFoundError(2, "no such file", os.fspath(path))
    return data


@dataclass
class Finding:
    path: str
    message: str
    key: str = ""
    """What makes two failures one: :func:`bob.fuzz.properties.failure_key`."""
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


class CampaignDisplay:
    """Live progress: a rich panel on a terminal, one plain line every 10 s otherwise."""

    def __init__(self, target: str, live: bool | None) -> None:
        self.target = target
        self.last_plain: float = 0.0
        self.live: Any = None  # a rich.live.Live on a terminal
        if live is None:
            live = sys.stderr.isatty()
        if live:
            try:
                from rich.console import Console
                from rich.live import Live
            except ImportError:
                return
            self.live = Live(console=Console(stderr=True), refresh_per_second=2, transient=False)
            self.live.start()

    def update(self, r: CampaignResult, rate: int) -> None:
        """Show ``r`` (and the executions per second over all workers)."""
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
            print(f"bob-fuzz {self.target}: {r.executions} execs ({rate}/s), cov {r.coverage} ft {r.features}, "
                  f"corpus {r.corpus}, findings {len(r.findings)}, {r.seconds:.0f}s", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()
