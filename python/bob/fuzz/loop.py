"""The seeded loop: a target over a fixed number of mutations drawn from a seeded
``random.Random`` -- no engine, deterministic, seconds -- for CI and ``bob-fuzz run --engine loop``."""

from __future__ import annotations

import hashlib
import os
import random
import time
from pathlib import Path

from bob.fuzz.common import DEFAULT_MAX_LEN, MAX_LEN, CampaignResult, Finding, load_target, read_input, \
    regression_dir
from bob.fuzz.properties import exception_key
from bob.fuzz.targets import TARGETS, seed_files

__all__ = ["seeded_loop"]


def _accepts(fmt: str, data: bytes) -> bool:
    import bob
    from bob.errors import FormatError

    try:
        (bob.load_input if fmt == "input" else bob.load_checkpoint)(data)
    except FormatError:
        return False
    return True


def _report(result: CampaignResult, exc: Exception, data: bytes, name: str, artifacts: "str | os.PathLike[str] | None"):
    """Count a failure; write its first input to ``artifacts`` (atomically) when that is given."""
    message = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    finding = Finding("", message, exception_key(exc))
    if result.add(finding) and artifacts is not None:
        from bob.fileio import write_atomic

        artifact = f"{name.replace('.', '_')}-{hashlib.sha256(data).hexdigest()[:16]}.bin"
        finding.path = str(Path(artifacts) / artifact)
        write_atomic(finding.path, data)
        write_atomic(finding.path + ".txt", f"{message}\n{finding.key}\n".encode("utf-8", "backslashreplace"))


def seeded_loop(target: str, runs: int, seed: int = 0, *, fmt: str | None = None,
                stop_on_finding: bool = True, artifacts: "str | os.PathLike[str] | None" = None,
                progress: bool = False) -> CampaignResult:
    """``runs`` executions of ``target`` over seeded mutations of its seeds; deterministic.

    A failure is a finding once per :func:`~bob.fuzz.properties.exception_key`; its
    first input is written to ``artifacts`` when given, else kept only in memory
    (``path`` empty). ``progress``: say on stderr how far the loop is, past two seconds.
    ``fast_path_share`` (input, checkpoint): the share of executions whose bytes
    the fast path recognized, i.e. that reached the differential assertion.
    """
    from bob.fuzz.mutator import custom_mutator, mutate_canonical, recognized
    from bob.progress import Progress

    run, fmt = load_target(target, fmt)
    name = target.replace(":", "_")
    seeds = [read_input(p) for p in (seed_files(name) if name in TARGETS else [])]
    reg = regression_dir(name)
    if reg is not None:
        seeds += [read_input(p) for p in sorted(reg.iterdir()) if p.is_file()]
    seeds = seeds or [b""]
    rnd = random.Random(seed)
    # The fast-path differential only asserts on bytes the fast path recognizes:
    # most mutations start from an accepted file and keep it canonical.
    accepted = [s for s in seeds if s and name in ("input", "checkpoint") and _accepts(name, s)]
    mutator = custom_mutator(fmt, None)
    limit = MAX_LEN.get(name, DEFAULT_MAX_LEN)
    result = CampaignResult(target)
    hits = 0
    start = time.monotonic()
    shown = Progress("bob-fuzz", f"run {target}", runs) if progress else None
    for i in range(runs):
        if shown is not None:
            shown.advance(extra=f"{len(result.findings)} findings")
        base = seeds[rnd.randrange(len(seeds))]
        if name == "core":
            data = rnd.randbytes(rnd.randrange(64))
        elif accepted and rnd.random() < 0.6:
            data = mutate_canonical(accepted[rnd.randrange(len(accepted))], rnd, name)
        else:
            data = mutator(base, limit, rnd.getrandbits(32))
        if name in ("input", "checkpoint"):
            hits += recognized(data, name)
        result.executions = i + 1
        try:
            run(data)
        except Exception as exc:  # noqa: BLE001 - a broken property, or any exception a target lets escape
            _report(result, exc, data, name, artifacts)
            if stop_on_finding:
                break
    if shown is not None:
        shown.__exit__(None, None, None)
    result.seconds = time.monotonic() - start
    if name in ("input", "checkpoint") and result.executions:
        result.fast_path_share = hits / result.executions
    return result
