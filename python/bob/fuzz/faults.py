"""The crash-point mechanism (docs/fuzzing.md, "The ``run`` target's world"): act just before the k-th ``os`` call a
commit makes. Only the thread that entered the block is counted and faulted: another thread stands for another process
(:mod:`bob.fuzz.race`'s pipe writer, which starts one)."""

from __future__ import annotations

import contextlib
import errno
import os
import threading
from typing import Any, Callable, Self

__all__ = ["COMMIT_CALLS", "ENTRY_CALLS", "ERRNO_OF", "Crash", "OsFaults", "OsPatch", "before_os_call"]

COMMIT_CALLS = ("open", "write", "fsync", "fchmod", "replace", "rename", "link", "unlink", "close")
ENTRY_CALLS = ("replace", "rename", "link", "unlink")
"""The calls that change a directory entry (a commit makes six, eight with --trace: the fuzzer's narrow draw)."""

ERRNO_OF = dict.fromkeys(COMMIT_CALLS, errno.EIO) | {  # fsync: a write-back that failed; close: NFS reports one
    "open": errno.ENOSPC,  # no room for a new inode (O_CREAT), or the directory entry
    "write": errno.ENOSPC,
    "fchmod": errno.EPERM,
    "link": errno.EMLINK,
}
"""The error a failing disk or filesystem gives each call (none of them a resource of the process)."""


class OsPatch:
    """``with``: each of ``os``'s functions :attr:`names` is ``self.wrap(name, real)`` inside the block
    (the one patching mechanism of :class:`OsFaults` and :class:`bob.fuzz.powerloss.Recorder`)."""

    names: tuple[str, ...] = ()

    def wrap(self, name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self._real = {name: getattr(os, name) for name in self.names}
        for name, real in self._real.items():
            setattr(os, name, self.wrap(name, real))
        return self

    def __exit__(self, *exc: object) -> None:
        for name, real in self._real.items():
            setattr(os, name, real)


def before_os_call(signum: str, names: "tuple[str, ...]" = COMMIT_CALLS) -> str:
    """A child's prologue: send itself ``signum`` (an expression) just before its k-th call of one of ``names`` in
    ``os`` from the main thread, k = ``sys.argv[1]`` (an :class:`OsFaults` in ``"signal"`` mode)."""
    return f"""
import os, signal, sys
from bob.fuzz.faults import OsFaults
OsFaults("signal", int(sys.argv[1]), {names!r}, signum={signum}).__enter__()
"""


class Crash(BaseException):
    """The process died at this ``os`` call (a SIGKILL, a power cut): nothing after it happens."""


class OsFaults(OsPatch):
    """``with OsFaults("fail" | "crash", k): …`` — the k-th call of ``names`` inside the block fails
    (:data:`ERRNO_OF`), or it and every later one raise :class:`Crash` and change nothing; in
    ``"signal"`` mode this process is sent ``signum`` just before it, and the call is made."""

    def __init__(self, mode: str, k: int, names: "tuple[str, ...]" = COMMIT_CALLS,
                 spare: "Callable[[str, tuple], bool] | None" = None, only: "tuple[str, ...] | None" = None,
                 signum: int = 0) -> None:
        if mode not in ("fail", "crash", "signal"):
            raise ValueError(f"mode is 'fail', 'crash' or 'signal', not {mode!r}")
        self.mode: str = mode
        self.signum: int = signum
        self.k: int = k
        self.names: tuple[str, ...] = names
        self.spare: "Callable[[str, tuple], bool] | None" = spare  # true of (name, args): the k-th call not failed
        self.only: "tuple[str, ...] | None" = only  # the calls counted (the k-th of these); all are still watched
        self.calls: int = 0  # the calls made
        self.hit: bool = False  # the k-th one came
        self.failed: "tuple[str, Any] | None" = None  # its name and first argument (failed, or the world ended there)
        # after the block, the descriptors opened inside it and not closed: after a crash the block closes
        # them, as the kernel would; otherwise they are the code's leak, and left as they are
        self.left_open: list[int] = []
        self._open_fds: set[int] = set()
        self._written: set[int] = set()

    def wrap(self, name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() != self._thread:
                return real(*args, **kwargs)
            counted = self.only is None or name in self.only
            self.calls += counted
            failing = counted and self.calls == self.k
            if failing and self.mode == "fail":  # spared: a close reports a write-back error only on a
                # descriptor written through (not a directory's, not a lock's); and what ``spare`` spares
                failing = not ((name == "close" and args[0] not in self._written)
                               or (self.spare is not None and self.spare(name, args)))
            if failing:
                self.hit, self.failed = True, (name, args[0] if args else None)
            if failing and self.mode == "signal":
                os.kill(os.getpid(), self.signum)
            if failing and self.mode == "fail" or self.hit and self.mode == "crash":
                if name == "close":  # a failing close still releases the descriptor (Linux), as a death does
                    self._forget(args[0])
                    real(*args, **kwargs)
                if self.mode == "crash":
                    raise Crash(f"the process died at os.{name} (call {self.calls})")
                raise OSError(ERRNO_OF[name], f"{os.strerror(ERRNO_OF[name])} (injected)", *args[:1])
            result = real(*args, **kwargs)
            if name == "write":
                self._written.add(args[0])
            elif name == "open":
                self._open_fds.add(result)
            elif name == "close":
                self._forget(args[0])
            return result

        return wrapper

    def _forget(self, fd: int) -> None:
        self._open_fds.discard(fd)
        self._written.discard(fd)

    def __enter__(self) -> Self:
        self._thread = threading.get_ident()
        return super().__enter__()

    def __exit__(self, *exc: object) -> None:
        super().__exit__()
        self.left_open = sorted(self._open_fds)
        for fd in self.left_open if self.mode == "crash" and self.hit else ():
            with contextlib.suppress(OSError):
                os.close(fd)
