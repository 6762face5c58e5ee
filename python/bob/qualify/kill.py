"""``--thorough``: SIGKILL a ``bob-run`` while it commits. The checkpoint must
then be the old file or the new one, whole (§5), and a rerun must succeed and
continue the series exactly.

Two ways to kill: deterministically at three moments of the checkpoint's
commit (half of the temporary file written; written and fsynced but not
renamed; renamed but the directory not yet fsynced), by running bob-run's
``main`` under a launcher that replaces ``os.write``/``os.replace`` with
versions that SIGKILL their own process; and by racing a SIGKILL against
a real ``bob-run`` process at random moments.
"""

from __future__ import annotations

import random
import signal
import sys
import time
from pathlib import Path
from typing import Callable

import bob
from bob.qualify.checks import locate, section8_record
from bob.qualify.processes import ProcessFailed, RunFiles, bob_run_command, finished, raise_shortage, run_once, started
from bob.qualify.verdict import Verdict
from bob.scratch import scratch_directory

CHECK = "commit-kill"
TEMPORARY_MARK = ".bob-tmp-"

_LAUNCHER = r"""
import os, signal, sys
point = sys.argv[1]
real_write, real_replace = os.write, os.replace

def die():
    os.kill(os.getpid(), signal.SIGKILL)

def write(fd, data):
    if point == "mid-write" and len(data) > 4096:  # the checkpoint (predictions are 24 bytes)
        real_write(fd, bytes(memoryview(data)[: len(data) // 2]))
        die()
    return real_write(fd, data)

def replace(src, dst, *args, **kwargs):
    checkpoint = os.path.basename(os.fspath(dst)) == "model.bob"
    if checkpoint and point == "before-rename":
        die()
    real_replace(src, dst, *args, **kwargs)
    if checkpoint and point == "after-rename":
        die()

os.write, os.replace = write, replace
from bob.run import main
sys.exit(main(sys.argv[2:]))
"""

# Where each deterministic kill must leave the checkpoint.
POINTS = {"mid-write": "old", "before-rename": "old", "after-rename": "new"}


def _series(record: bytes, invocations: int) -> list[bytes]:
    """Checkpoint files after 0 (none), 1, 2, … invocations, through bob.invoke."""
    files, checkpoint = [b""], b""
    for _ in range(invocations):
        checkpoint = bob.invoke(record, checkpoint).checkpoint_bytes()
        files.append(checkpoint)
    return files


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if TEMPORARY_MARK in p.name)


def _after_kill(label: str, files: RunFiles, series: list[bytes], command: list[str],
                must_be: str | None) -> tuple[Verdict | None, str]:
    """The checkpoint is the first invocation's or the second's, whole; a rerun continues the series.
    Returns the problem (or None) and which file the kill left ("old", "new")."""
    found = files.checkpoint.read_bytes()
    if found == series[1]:
        state, expected_next = "old", series[2]
    elif found == series[2]:
        state, expected_next = "new", series[3]
    else:
        spot = locate(series[1], found)
        return Verdict(CHECK, False, f"{label}: the checkpoint is neither the old nor the new file "
                                     f"({len(found)} bytes)", plane=spot.get("plane"), index=spot.get("index"),
                       details={"offset": spot.get("offset")}), "torn"
    if must_be is not None and state != must_be:
        return Verdict(CHECK, False, f"{label}: the checkpoint is the {state} file; expected the {must_be} one"), state
    try:
        run_once(files, command)
    except ProcessFailed as exc:
        return Verdict(CHECK, False, f"{label}: the rerun after the kill failed: {exc}"), state
    again = files.checkpoint.read_bytes()
    if again != expected_next:
        spot = locate(expected_next, again)
        return Verdict(CHECK, False, f"{label}: the rerun from the {state} file did not continue the series",
                       plane=spot.get("plane"), index=spot.get("index")), state
    left = _leftovers(files.directory)
    if left:
        return Verdict(CHECK, False, f"{label}: the rerun left temporary files: {', '.join(left)}"), state
    return None, state


def _one_run_seconds(record: bytes, command: list[str]) -> float:
    """How long one bob-run takes here, to aim the racing kills."""
    with scratch_directory("bob-qualify-kill-") as directory:
        files = RunFiles(Path(directory))
        files.record.write_bytes(record)
        begun = time.perf_counter()
        run_once(files, command)
        return time.perf_counter() - begun


def check_commit_kill(seed: int, races: int, tick: Callable[[], None] = lambda: None) -> list[Verdict]:
    began = time.perf_counter()
    record = section8_record()
    series = _series(record, 3)
    command = bob_run_command()
    rng = random.Random(seed)
    left: dict[str, int] = {"old": 0, "new": 0}
    problem = None
    duration = _one_run_seconds(record, command)
    with scratch_directory("bob-qualify-kill-") as directory:
        scenarios = [(f"kill {point}", point) for point in POINTS] + [(f"race {i + 1}", None) for i in range(races)]
        for label, point in scenarios:
            files = RunFiles(Path(directory) / label.replace(" ", "-"))
            files.directory.mkdir()
            files.record.write_bytes(record)
            files.checkpoint.write_bytes(series[1])
            if point is not None:
                argv = [sys.executable, "-c", _LAUNCHER, point] + files.arguments()
                done = finished(argv, 60)
                if done.returncode != -signal.SIGKILL:
                    raise_shortage(done)  # (a full disk, no memory: the machine's, not a failed check)
                    problem = Verdict(CHECK, False, f"{label}: the launcher was not killed "
                                                    f"(exit {done.returncode}): {done.stderr.strip()[-300:]}")
                    break
            else:
                with started(command + files.arguments(), output=False):  # (SIGKILLed at the block's end: a
                    time.sleep(rng.uniform(0.3, 1.1) * duration)  # signal ending bob-qualify here too)
            problem, state = _after_kill(label, files, series, command, POINTS.get(point or ""))
            if problem:
                break
            if point is None:
                left[state] += 1
            tick()
    verdict = problem or Verdict(
        CHECK, True, f"{len(POINTS)} kills at fixed moments of the commit and {races} racing SIGKILLs: "
                     "the checkpoint was always the old or the new file, and every rerun continued the series",
        details={"points": POINTS, "races": races, "races_left": left, "seed": seed,
                 "one_run_seconds": duration})
    if verdict.ok:
        verdict.summary += f" (races left the old file {left['old']} times, the new one {left['new']})"
    verdict.seconds = time.perf_counter() - began
    return [verdict]
