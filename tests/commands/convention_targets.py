"""Fuzz targets for tests/commands/test_convention.py (imported by bob-fuzz's
worker processes too, through PYTHONPATH)."""

from __future__ import annotations


def varying(data: bytes) -> None:
    """One bug whose message holds a value that changes from input to input."""
    if len(data) % 3 == 1:
        raise ValueError(f"planted: length {len(data)} is 1 mod 3, first byte {data[:1].hex() or 'none'}")


def always_fails(data: bytes) -> None:
    """Fails on every input, the empty one included: minimize shrinks anything to nothing."""
    raise ValueError(f"planted: {len(data)} bytes")


def crashes(data: bytes) -> None:
    """A native crash on inputs that start with 'X' (the process dies by SIGSEGV)."""
    if data[:1] == b"X":
        import os
        import signal

        os.kill(os.getpid(), signal.SIGSEGV)


def _f32_text_before_the_fix(value: float) -> str:
    """bob.text.f32_text as it was when the inspect target found its 786,880-byte
    regression: a short decimal of a value near FLT_MAX rounds past binary32's
    range, and ``struct.pack`` raises OverflowError."""
    import math
    import struct

    from bob.text import float_text

    value = float(value)
    if not math.isfinite(value):
        return float_text(value)
    bits = struct.pack("<f", value)
    for digits in range(1, 10):
        text = f"{value:.{digits}g}"
        if struct.pack("<f", float(text)) == bits:
            return text
    return repr(value)


def inspect_before_the_fix(data: bytes) -> None:
    """The inspect target with bob's f32_text put back as it was before the fix
    (fuzz/regressions/inspect holds the checkpoint that found it)."""
    import sys

    import bob.text
    from bob.fuzz.targets import inspect_target

    fixed = bob.text.f32_text
    patched = [module for module in list(sys.modules.values())  # every bob module holding the name, bob.text too
               if (getattr(module, "__name__", None) or "").startswith("bob")
               and getattr(module, "f32_text", None) is fixed]
    for module in patched:
        module.f32_text = _f32_text_before_the_fix
    try:
        inspect_target(data)
    finally:  # in a test's own process the fixed code is back for every other test (modules imported since too)
        for module in list(sys.modules.values()):
            if getattr(module, "f32_text", None) is _f32_text_before_the_fix:
                module.f32_text = fixed


def inspects_then_crashes(data: bytes) -> None:
    """The inspect target (its scratch directory made), then :func:`crashes`."""
    from bob.fuzz.targets import inspect_target

    inspect_target(data)
    crashes(data)


def prints(data: bytes) -> None:
    """Prints on every input, as a debugging user's target does."""
    print(f"a target's own line: {len(data)} bytes")


def exits(data: bytes) -> None:
    """Ends its process with status 0 on every input (os._exit: no exception, no finding)."""
    import os

    os._exit(0)


def terminates_itself(data: bytes) -> None:
    """Sends its process SIGTERM on every input (the engine's own handler ends it, final stats and all, exit 72)."""
    import os
    import signal

    os.kill(os.getpid(), signal.SIGTERM)


def killed(data: bytes) -> None:
    """Ends its process by SIGKILL on every input (the kernel's, as when memory runs out: no exception)."""
    import os
    import signal

    os.kill(os.getpid(), signal.SIGKILL)


def out_of_memory(data: bytes) -> None:
    """Raises MemoryError on every input, as a target does when the machine has no memory left for it."""
    raise MemoryError


_CALLS: list[bytes] = []


def aborts_in_the_engine(data: bytes) -> None:
    """Aborts (SIGABRT, no exception) in a libFuzzer worker only, as atheris does when it cannot map its counters, at
    its 50th input (past the seeds) and once ($BOB_TEST_MARKER: a file made as it does); passes anywhere else."""
    import os
    import sys

    _CALLS.append(data)
    if "atheris" in sys.modules and len(_CALLS) == 50 and not os.path.exists(os.environ["BOB_TEST_MARKER"]):
        open(os.environ["BOB_TEST_MARKER"], "x").close()
        os.abort()


_FORKED: list[int] = []


def forks_a_sleeper(data: bytes) -> None:
    """Forks, once a process, a child that sleeps a minute holding the worker's output; its pid in $BOB_TEST_PIDS."""
    import os
    import time

    if not _FORKED:
        _FORKED.append(os.fork())
        if _FORKED[0] == 0:
            time.sleep(60)
            os._exit(0)
        with open(os.environ["BOB_TEST_PIDS"], "a", encoding="ascii") as pids:
            pids.write(f"{_FORKED[0]}\n")


def forks_a_printing_session_leader(data: bytes) -> None:
    """Forks, once a process, a child that leaves the worker's process group (setsid) and prints for a minute on
    the worker's output; its pid in $BOB_TEST_PIDS."""
    import os
    import time

    if not _FORKED:
        _FORKED.append(os.fork())
        if _FORKED[0] == 0:
            os.setsid()
            for _ in range(1200):
                os.write(1, b"still here\n")
                time.sleep(0.05)
            os._exit(0)
        with open(os.environ["BOB_TEST_PIDS"], "a", encoding="ascii") as pids:
            pids.write(f"{_FORKED[0]}\n")


not_a_function = 5


def says_escapes(data: bytes) -> None:
    """Fails with a message that would clear the screen and retitle the terminal."""
    raise ValueError("\x1b[2J\x1b]0;title\x07 planted")


def prints_then_exits(data: bytes) -> None:
    """Writes to fd 1, as a reader it ran or C code would, then ends with SystemExit(0) on any input
    but three bytes: a failure however it ends, and never a line in the command's stdout."""
    import os
    import sys

    os.write(1, b"the target's own line\n")
    if len(data) != 3:
        sys.exit(0)


def complains_then_fails(data: bytes) -> None:
    """Writes 10 KB to stderr on every input, as a chatty target does; fails on inputs that start with 'X'."""
    import sys

    sys.stderr.write("a target's complaint\n" * 500)
    if data[:1] == b"X":
        raise ValueError("planted")


def out_of_room(data: bytes) -> None:
    """The machine's disk is full under the target (bob-fuzz: no finding, exit 70)."""
    import errno

    raise OSError(errno.ENOSPC, "No space left on device")
