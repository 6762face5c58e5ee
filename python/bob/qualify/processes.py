"""Real ``bob-run`` processes, as a user starts them."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator


def bob_run_command() -> list[str]:
    """The installed ``bob-run`` script beside this interpreter, else ``python -m bob run``."""
    script = Path(sys.executable).parent / "bob-run"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "bob", "run"]


def package_root() -> str:
    """The directory the ``bob`` package this process runs was imported from."""
    import bob

    return os.path.dirname(os.path.dirname(os.path.abspath(bob.__file__ or "")))


def child_environment() -> dict[str, str]:
    """This environment without the qualification's own test hook, in which a child imports the bob being
    qualified (this process's), not another copy its own path finds first (a checkout in its working directory,
    an installed one): no working or script directory on its path (``PYTHONSAFEPATH``), and this bob's
    directory first on ``PYTHONPATH`` unless it is a site directory, which comes after ``PYTHONPATH`` as here."""
    import site

    from bob.qualify.verdict import PERTURB_ENV

    env = {k: v for k, v in os.environ.items() if k != PERTURB_ENV}
    env["PYTHONSAFEPATH"] = "1"
    root, sites = package_root(), [*site.getsitepackages(), site.getusersitepackages()]
    if not any(os.path.realpath(root) == os.path.realpath(d) for d in sites):
        env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
    return env


@contextlib.contextmanager
def started(argv: list[str], *, output: bool = True) -> "Iterator[subprocess.Popen[str]]":
    """``argv`` as a child (in :func:`child_environment`, its output piped or dropped) that never outlives the
    block (:class:`bob.children.spawned`: a bob-run left running wrote into the directory bob-qualify removed)."""
    from bob.children import spawned

    pipe = subprocess.PIPE if output else subprocess.DEVNULL
    with spawned(argv, stdout=pipe, stderr=pipe, encoding="utf-8", env=child_environment()) as proc:
        yield proc


def finished(argv: list[str], timeout: float) -> "subprocess.CompletedProcess[str]":
    """``argv`` run to its end (``subprocess.run``'s, its output captured) through :func:`started`."""
    with started(argv) as proc:
        out, err = proc.communicate(timeout=timeout)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


@dataclass(frozen=True)
class RunFiles:
    """The three files of one ``bob-run`` series in a directory."""

    directory: Path

    @property
    def record(self) -> Path:
        return self.directory / "record.bin"

    @property
    def checkpoint(self) -> Path:
        return self.directory / "model.bob"

    @property
    def predictions(self) -> Path:
        return self.directory / "predictions.bin"

    def arguments(self) -> list[str]:
        return ["--input", str(self.record), "--checkpoint", str(self.checkpoint),
                "--predictions", str(self.predictions), "--json"]


class ProcessFailed(Exception):
    """A ``bob-run`` that should have succeeded did not."""


# Where bob-qualify writes (its own temporary directories), a full disk or the file-size limit (ulimit -f)
# is the machine's shortage, as memory is: no check failed (bob-run itself refuses them, naming the path).
SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def raise_shortage(done: "subprocess.CompletedProcess[str]") -> None:
    """Raise the machine's shortage a failed ``bob-run --json`` reported, as the error it stands for (out of memory:
    ``MemoryError``; a full disk or the file-size limit: the ``OSError`` bob-run refused): every caller that judges
    a bob-run's exit status asks this first, so that running out is never a failed check."""
    from bob.commands import os_reason
    from bob.failures import OUT_OF_MEMORY

    try:
        message = json.loads(done.stdout)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        return
    if not isinstance(message, str):
        return
    if message.startswith(OUT_OF_MEMORY):
        raise MemoryError(f"bob-run ran out of memory: {done.stderr.strip()[-200:]}")
    for code in SPACE_ERRNOS:  # the reason alone, or after what it is about (a lock file: "… cannot be used: …")
        reason = os_reason(OSError(code, os.strerror(code)))
        if message == reason or f": {reason}" in message:
            raise OSError(code, f"bob-run could not write its files ({os.strerror(code)})")


def _loss(value: object) -> float:
    """A loss as bob-run's JSON spells it: a number, or "nan", "inf", "-inf" (:func:`bob.text.json_number`)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if value in ("nan", "inf", "-inf"):
        return float(value)
    raise ValueError(f"no loss: {value!r}")


def run_once(files: RunFiles, command: list[str] | None = None, timeout: float = 60.0) -> dict:
    """One ``bob-run`` process on ``files``; its JSON summary. Raises :class:`ProcessFailed`."""
    argv = (command or bob_run_command()) + files.arguments()
    done = finished(argv, timeout)
    if done.returncode != 0:
        raise_shortage(done)  # the machine's, not a failed check
        raise ProcessFailed(f"{' '.join(argv[:3])} … exited {done.returncode}: {done.stderr.strip()[-400:]}")
    try:
        summary = json.loads(done.stdout)
        summary["losses"] = [_loss(loss) for loss in summary["losses"]]
    except (ValueError, KeyError, TypeError):
        raise ProcessFailed(f"bob-run printed no JSON summary with its losses: {done.stdout[-200:]!r}") from None
    return summary
