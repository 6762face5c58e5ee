"""What the tests share, in one place: the contract's §8 public vector, the
golden files, the native core fixture, and the fixtures of the bob-inspect
tests (the files built from the library, and ``cli``, which runs
``bob.inspect.main`` in this process and captures its output as bytes).

Test modules import the constants with ``from conftest import …`` (pytest
puts this directory on ``sys.path``); there is deliberately one conftest.py.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import struct
import sys
import time
from pathlib import Path
from collections.abc import Iterator
from typing import Callable, NamedTuple

import numpy as np
import pytest

import bob
from bob.formats.constants import CHUNK_BYTES
from bob.formats.constants import LEARNER_PREFIX
from bob.formats.contract import Contract
from bob.formats.checkpoint import Checkpoint, canonical_header_bytes
from bob.formats.layout import CANONICAL_HEADER_BYTES

# The checkout (README, formats/, docs/): a mutation run (scripts/mutants.sh)
# runs a copy of these tests elsewhere and names the checkout in BOB_CHECKOUT.
ROOT = Path(os.environ.get("BOB_CHECKOUT") or Path(__file__).resolve().parent.parent)
GOLDEN = Path(bob.__file__).resolve().parent / "data" / "golden"  # the bob under test's

# Subprocesses (the installed bob-run, ``python -c``) run the bob under test:
# the package this session imported — the source tree, or a mutation tool's
# mutated copy of it (docs/testing.md) — not whatever the environment's
# .pth file names. One place, so no test can quietly check another copy.
BOB_SOURCE = Path(bob.__file__).resolve().parent.parent
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(BOB_SOURCE), os.environ.get("PYTHONPATH")]))

# Under mutmut (scripts/mutants.sh), subprocesses report the functions they
# reached, so a test of the real command counts as reaching them
# (tests/mutation_support/sitecustomize.py).
if "mutmut" in sys.modules:
    import tempfile

    os.environ["BOB_MUTMUT_HITS"] = tempfile.mkdtemp(prefix="bob-mutmut-hits-")
    os.environ["PYTHONPATH"] += os.pathsep + str(Path(__file__).resolve().parent / "mutation_support")

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_teardown(item) -> None:
        """Before mutmut's own teardown hook files this test's calls."""
        if os.environ.get("MUTANT_UNDER_TEST") != "stats":
            return
        from mutmut.state import state

        hits = Path(os.environ["BOB_MUTMUT_HITS"])
        for report in hits.iterdir():
            state()._stats.update(report.read_text(encoding="utf-8").split())
            report.unlink()

# --- the contract's §8 public vector, copied from python/bob/data/contract/bob-v1.md ---
CORPUS = b"abracadabra"
PROMPTS = [b"abra", b"cad", b""]
RECORD_SHA256 = "d0d6de4cdcaa05f34ff1fb517f90ca5181543fee16498e570f9b4bd6fadf59f1"
CKPT_10_SHA256 = "7c3544ee00bb44bc52844f36274c87715d84908ebbbeeb364f4fc5af80e5bc71"
CKPT_20_SHA256 = "9a338a2df4ede38e189262486d41edfdafdab04b90be4bac6406e5d3a63cd7b8"
PRED_HEX = "630000000100000061000000010000000000000000000000"
LOSSES_10 = (5.548397, 4.663767)  # first -> last update of invocation 1
LOSSES_20 = (4.566657, 3.710753)
# §6.1: the initial P plane
INITIAL_P_SHA256 = "abb32a4606ab19ddea632c8942100942f92eebedc5b336076c8b49b7756179a3"
INITIAL_P_WORDS = (0xBBA84A70, 0x3C19EFF0, 0xBACA6D7B, 0x3B9B54D4)


def main_of(prog: str) -> Callable[[list[str]], int]:
    """The ``main`` of one of bob's commands, for running it in process."""
    if prog == "bob-run":
        from bob.run import main
    elif prog == "bob-fixture":
        from bob.fixture import fixture_main as main
    elif prog == "bob-inspect":
        from bob.inspect import main
    elif prog == "bob-qualify":
        from bob.qualify import main
    else:
        from bob.fuzz import main
    return main


@pytest.fixture(autouse=True)
def progress_never_due(monkeypatch: pytest.MonkeyPatch) -> None:
    """In process, progress lines are not shown unless a test asks for them: they appear after two
    seconds of work, and a test's exact stderr must not depend on how loaded the machine is."""
    import bob.progress

    class NeverDue(bob.progress.Progress):
        def __init__(self, *args: object, **kwargs: object) -> None:
            kwargs.setdefault("after", float("inf"))
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(bob.progress, "Progress", NeverDue)  # (the commands import it when they run)


@pytest.fixture(params=[0o022, 0o077], ids=["umask-022", "umask-077"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    """The process umask set to each of two values for the test, then restored."""
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)

def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def golden(name: str) -> bytes:
    """A golden file's bytes (``python/bob/data/golden/NAME``)."""
    return (GOLDEN / name).read_bytes()


def golden_json(name: str):
    return json.loads((GOLDEN / name).read_text(encoding="ascii"))


@pytest.fixture(scope="module")
def core():
    """bob.core; a missing native core fails the test, it never skips it."""
    try:
        import bob.core as core_module
    except ImportError as exc:  # includes bob.core.NativeCoreUnavailable
        pytest.fail(f"bob.core cannot be imported; the native core must be built: {exc!r}")
    return core_module


# --------------------------------------------------------------------------- #
# bob-inspect
# --------------------------------------------------------------------------- #

HB = CANONICAL_HEADER_BYTES
CHUNK = CHUNK_BYTES
AB = 97 * 256 + 98  # the parameter (context 'a', next 'b')


class Ran(NamedTuple):
    code: int
    stdout: bytes
    stderr: bytes


def strict_json(raw: bytes) -> dict:
    def no_constants(name):  # NaN/Infinity are not JSON
        raise AssertionError(f"non-JSON constant {name} in output")

    assert raw.isascii()
    assert raw.count(b"\n") == 1  # one JSON object, one line
    return json.loads(raw, parse_constant=no_constants)


class Cli:
    """``bob-inspect`` in-process: ``run`` (exit code, stdout, stderr as bytes),
    ``text`` (human output, checked printable) and ``json`` (``--json``, strict)."""

    strict_json = staticmethod(strict_json)

    def __init__(self, capture) -> None:
        self.capture = capture

    def run(self, *args: str, code: int | None = 0) -> Ran:
        from bob.inspect import main

        self.capture.readouterr()
        rc = main(list(args))
        out, err = self.capture.readouterr()
        if code is not None:
            assert rc == code, (rc, out.decode(errors="replace"), err.decode(errors="replace"))
        assert b"Traceback" not in err
        return Ran(rc, out, err)

    def text(self, *args: str, code: int | None = 0) -> str:
        raw = self.run(*args, code=code).stdout
        assert raw.isascii() or all(b >= 0x20 or b == 0x0A for b in raw)
        return raw.decode()

    def json(self, *args: str, code: int | None = 0) -> dict:
        return strict_json(self.run(*args, "--json", code=code).stdout)


@pytest.fixture
def cli(capsysbinary) -> Cli:
    return Cli(capsysbinary)


@pytest.fixture(scope="session")
def files(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("inspect")
    rec = bob.build_input(b"abracadabra", [b"abra", b"cad", b""])
    (d / "rec.bin").write_bytes(rec.to_bytes())
    ck: bytes | Checkpoint = b""
    for k in (1, 2, 3):
        step = bob.invoke(rec, ck)
        ck = step.checkpoint
        (d / f"ck{k}.bin").write_bytes(step.checkpoint_bytes())
    (d / "pred.bin").write_bytes(step.predictions_bytes())
    (d / "empty.bin").write_bytes(b"")

    # two distinct problems: a wrong learner hyper-parameter (the header digest
    # recomputed, so the damage is only the contract) and a flipped byte in V
    learner = LEARNER_PREFIX + struct.pack("<5f", 0.5, 0.9, 0.999, 1e-8, 0.01)
    raw = bytearray(Checkpoint(ck.step, ck.p, ck.m, ck.v, contract=Contract(learner=learner)).to_bytes(for_resume=False))
    raw[HB + 2 * CHUNK + 4 * 100] ^= 0x01  # V[100]'s lowest mantissa bit
    (d / "two.bin").write_bytes(raw)

    # control characters in the contract strings
    evil = Contract(state=b"evil\x1b[2J\x1b]0;pwned\x07\r\nverdict: OK\x9b31m\xe2\x80\xae", seed=b"\x1b[31mred")
    (d / "evil.bin").write_bytes(
        Checkpoint(ck.step, ck.p, ck.m, ck.v, contract=evil, header_bytes=canonical_header_bytes(evil)).to_bytes(for_resume=False))

    # one value 3 ULP away
    one = ck.copy()
    for _ in range(3):
        one.p[AB] = np.nextafter(one.p[AB], np.float32(np.inf))
    (d / "one.bin").write_bytes(one.to_bytes())

    # state refused for resuming: a NaN in P, a negative V
    bad = ck.copy()
    bad.p[5] = np.nan
    bad.v[7] = -1.0
    (d / "state.bin").write_bytes(bad.to_bytes(for_resume=False))
    return d


def make_special(kind: str, path: Path) -> None:
    """Create a special file of ``kind`` at ``path`` (directory, fifo, socket,
    char-device or null-device, block-device)."""
    import socket
    import stat

    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        with socket.socket(socket.AF_UNIX) as sock:  # the node outlives the socket: nothing is left open
            sock.bind(str(path))
    elif kind in ("char-device", "null-device", "block-device"):
        if os.geteuid() != 0:
            pytest.skip("mknod needs root")
        if kind == "block-device":
            os.mknod(path, 0o600 | stat.S_IFBLK, os.makedev(7, 0))  # a loop device node, never opened
        else:
            os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # a /dev/null of our own


def signalled_as_spawned(monkeypatch: pytest.MonkeyPatch, run: Callable[[], object]) -> object:
    """``run()`` under bob's signal handlers, a SIGTERM arriving as the first child it spawns is spawned (a
    ``sleep`` in a session of its own in its place): ``run`` must end Interrupted. That child, for the caller
    to check bob ended and reaped it (``returncode == -SIGKILL``)."""
    import signal
    import subprocess

    from bob import signals

    real, children = subprocess.Popen, []

    def spawning(argv, **kwargs):
        children.append(real(["sleep", "30"], start_new_session=True))
        os.kill(os.getpid(), signal.SIGTERM)  # arrives as the child is spawned
        return children[-1]

    monkeypatch.setattr(subprocess, "Popen", spawning)
    replaced = signals.install()
    try:
        with pytest.raises(signals.Interrupted):
            run()
    finally:
        signals.restore(replaced)
        for child in children:
            child.kill()
    assert children
    return children[0]


def gone(pid: int, within: float) -> bool:
    """Whether process ``pid`` ends (or is a zombie nobody reaps: a container's first process) within the time."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


@contextlib.contextmanager
def tmpfs(path: Path, size: str, *, full: bool = False) -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``path`` (made here) for the block, filled first when ``full`` (a disk that
    runs out); a test that cannot mount one here is skipped."""
    import subprocess

    path.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True)
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        if full:
            with contextlib.suppress(OSError), open(path / "filler", "wb") as filler:  # (until the disk is full)
                while True:
                    filler.write(bytes(4096))
                    filler.flush()
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)
