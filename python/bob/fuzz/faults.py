"""The crash-point mechanism: act just before the k-th ``os`` call a commit makes (:data:`COMMIT_CALLS`).

:func:`before_os_call` is a child process's prologue that sends the child a
signal before its k-th call (the SIGKILL and signal tests in ``tests/hostile``);
:class:`OsFaults` does the same in this process for the ``run`` target: in
``"fail"`` mode the k-th call raises the ``OSError`` a full or failing disk
gives (:data:`ERRNO_OF`); in ``"crash"`` mode the k-th call and every later one
raise :class:`Crash` and change nothing, and on leaving the block every
descriptor opened inside it is closed, as the kernel closes a killed process's.
Only the thread that entered the block is counted and faulted: another thread
stands for another process (:mod:`bob.fuzz.race`'s pipe writer, which starts one).
"""

from __future__ import annotations

import errno
import os
import threading
from typing import Any, Callable

__all__ = ["COMMIT_CALLS", "ENTRY_CALLS", "ERRNO_OF", "Crash", "OsFaults", "before_os_call", "patch_os", "restore_os"]

COMMIT_CALLS = ("open", "write", "fsync", "fchmod", "replace", "rename", "link", "unlink", "close")
ENTRY_CALLS = ("replace", "rename", "link", "unlink")
"""The calls that change a directory entry (a commit makes seven: the fuzzer's narrow draw)."""

ERRNO_OF = {
    "open": errno.ENOSPC,  # no room for a new inode (O_CREAT), or the directory entry
    "write": errno.ENOSPC,
    "fsync": errno.EIO,  # a write-back that failed
    "fchmod": errno.EPERM,
    "replace": errno.EIO,
    "rename": errno.EIO,
    "link": errno.EMLINK,
    "unlink": errno.EIO,
    "close": errno.EIO,  # NFS reports a failed write-back at close
}
"""The error a failing disk or filesystem gives each call (none of them a resource of the process)."""


def patch_os(names: "tuple[str, ...]", wrap: "Callable[[str, Callable[..., Any]], Callable[..., Any]]"
             ) -> "dict[str, Callable[..., Any]]":
    """Replace each of ``os``'s functions ``names`` with ``wrap(name, real)``; return the real ones."""
    real = {name: getattr(os, name) for name in names}
    for name, function in real.items():
        setattr(os, name, wrap(name, function))
    return real


def restore_os(real: "dict[str, Callable[..., Any]]") -> None:
    """Put back the functions :func:`patch_os` replaced."""
    for name, function in real.items():
        setattr(os, name, function)
    real.clear()


def before_os_call(signum: str, names: "tuple[str, ...]" = COMMIT_CALLS) -> str:
    """A child's prologue: send itself ``signum`` (an expression) just before
    its k-th call of one of ``names`` in ``os``, k = ``sys.argv[1]``. The
    signal tests (test_signals.py) use it with SIGINT, SIGTERM and SIGHUP."""
    return f"""
import os, signal, sys
_limit = int(sys.argv[1])
_calls = 0

def _signal_before(name):
    real = getattr(os, name)
    def wrapper(*args, **kwargs):
        global _calls
        _calls += 1
        if _calls == _limit:
            os.kill(os.getpid(), {signum})
        return real(*args, **kwargs)
    setattr(os, name, wrapper)

for _name in {names!r}:
    _signal_before(_name)
"""


class Crash(BaseException):
    """The process died at this ``os`` call (a SIGKILL, a power cut): nothing after it happens."""


class OsFaults:
    """``with OsFaults("fail" | "crash", k): …`` — the k-th call of :data:`COMMIT_CALLS`
    inside the block fails, or the world ends there (see the module docstring).

    ``spare(name, args)`` true: the k-th call is not failed after all (in ``"fail"`` mode);
    ``only``: the calls counted (the k-th of these; all are still watched).
    ``calls`` counts the calls made, ``hit`` says whether the k-th one came (and
    was failed, or ended the world: ``failed`` is its name and first argument),
    ``left_open`` (after the block) lists the descriptors opened inside it and
    not closed: after a crash the block closes them, as the kernel would;
    otherwise they are the code's leak, and left as they are.
    """

    def __init__(self, mode: str, k: int, names: "tuple[str, ...]" = COMMIT_CALLS,
                 spare: "Callable[[str, tuple], bool] | None" = None, only: "tuple[str, ...] | None" = None) -> None:
        if mode not in ("fail", "crash"):
            raise ValueError(f"mode is 'fail' or 'crash', not {mode!r}")
        self.mode, self.k, self.names = mode, k, names
        self.only: "tuple[str, ...] | None" = only
        self.calls = 0
        self.hit = False
        self._real: dict[str, Callable[..., Any]] = {}
        self._open_fds: set[int] = set()
        self.left_open: list[int] = []
        self.failed: "tuple[str, Any] | None" = None  # the call failed (or the one the world ended at)
        self.spare = spare
        self._written: set[int] = set()
        self._thread = threading.get_ident()

    def _wrap(self, name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() != self._thread:
                return real(*args, **kwargs)
            counted = self.only is None or name in self.only
            self.calls += counted
            if counted and self.calls == self.k and not (self.mode == "fail" and self._spared(name, args)):
                self.hit = True
                self.failed = (name, args[0] if args else None)
                if self.mode == "fail":
                    if name == "close":  # a failing close still releases the descriptor (Linux)
                        self._open_fds.discard(args[0])
                        self._written.discard(args[0])
                        real(*args, **kwargs)
                    raise OSError(ERRNO_OF[name], f"{os.strerror(ERRNO_OF[name])} (injected)", *args[:1])
            if self.hit and self.mode == "crash":
                if name == "close":  # the kernel closes a dead process's descriptors
                    self._open_fds.discard(args[0])
                    real(*args, **kwargs)
                raise Crash(f"the process died at os.{name} (call {self.calls})")
            result = real(*args, **kwargs)
            if name == "write":
                self._written.add(args[0])
            elif name == "open":
                self._open_fds.add(result)
            elif name == "close":
                self._open_fds.discard(args[0])
                self._written.discard(args[0])
            return result

        return wrapper

    def _spared(self, name: str, args: tuple) -> bool:
        """A call that cannot fail so: ``close`` reports a write-back error only on a
        descriptor written through (not a directory's, not a lock's); and the caller's ``spare``."""
        if name == "close" and args[0] not in self._written:
            return True
        return self.spare is not None and self.spare(name, args)

    def __enter__(self) -> "OsFaults":
        self._thread = threading.get_ident()
        self._real = patch_os(self.names, self._wrap)
        return self

    def __exit__(self, *exc: object) -> None:
        restore_os(self._real)
        self.left_open = sorted(self._open_fds)
        self._open_fds.clear()
        if self.mode == "crash" and self.hit:
            for fd in self.left_open:
                try:
                    os.close(fd)
                except OSError:
                    pass
