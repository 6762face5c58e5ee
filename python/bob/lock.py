"""The locks that guard ``bob-run``'s commit (:mod:`bob.commit`), and the race hook.

``bob-run`` locks every file it replaces (the checkpoint, the predictions,
the trace): an exclusive ``flock`` on ``.{name}.bob-lock`` beside each
resolved target (:class:`TargetLock`), taken in one order (:func:`lock_targets`).
So under its locks every temporary beside a target is its own or a dead run's (:mod:`bob.temporaries`),
and two runs that share any file exclude each other. A lock is what it claims:

* opened without following links, without creating over anything, and it
  must be a regular file with one link that is none of the run's own files
  (a lock path hard-linked to the checkpoint is refused, never truncated),
  holding nothing but a pid (any other file at the lock path, a checkpoint
  once written there say, is refused, never truncated or removed);
* after ``flock`` its descriptor must still be the lock path's inode, or the
  run opens the path again (a holder removes the file when it is done; a
  waiter may have locked the removed inode);
* a lock file this user cannot open for writing (another user's, in a
  sticky directory) is opened read-only: ``flock`` needs no write access, so
  a killed run's lock file another user left does not lock the checkpoint's
  owner out (one this user cannot even read is refused, nothing changed: in
  a directory others can write, they can keep a run from its lock, never
  make it lose a file);
* the holder checks before its commit that each lock path is still its
  inode: a lock file deleted or replaced while held makes that run refuse,
  nothing changed, so two runs can never both commit from one state.

A lock file is removed when its holder is done (a SIGKILLed holder leaves
it; the next run locks and removes it). The temporaries a killed writer left
are :mod:`bob.temporaries`'. Standard library only.

**The race hook** :func:`pause_at`, inert unless ``BOB_COMMIT_PAUSE=POINT:FIFO``
is set: at POINT (:data:`COMMIT_WINDOW`, or ``waiting``: the lock first found
taken) the run opens the named pipe FIFO for reading, once, and goes on when
its writer closes it. So a second process meets every point of the commit
window by construction, not by chance (``bob.fuzz.race``, tests/hostile/test_races.py).
"""

from __future__ import annotations

import contextlib
import errno
import os
import time

from bob.commands import EXIT_BUSY, Refused, os_reason
from bob.fileio import identity, open_regular, same_file, sidecar_name
from bob.text import exact_text, own_stream, show_path

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from bob.signals import Deferral

__all__ = ["LOCK_TAG", "lock_path_for", "TargetLock", "lock_targets", "release", "refuse_if_lock_of", "COMMIT_WINDOW",
           "PAUSE_ENV", "pause_at", "place"]

LOCK_TAG = ".bob-lock"
_MOST_LOCK_BYTES = 32  # a lock file holds nothing but its holder's pid and a newline
_RETRIES = 1000  # lock paths replaced under us before bob gives up (each one is another process's doing)
PAUSE_ENV = "BOB_COMMIT_PAUSE"
COMMIT_WINDOW = ("locked", "staged", "predictions-renamed", "checked", "committed", "unlocking")
"""The race hook's points, in order: the locks taken; every temporary written; the predictions in
place; the last checks passed; the checkpoint renamed (the commit); the locks about to be removed."""


def pause_at(point: str) -> None:
    """The race hook (module docstring): wait on ``BOB_COMMIT_PAUSE``'s pipe at its point, once."""
    where, _, fifo = os.environ.get(PAUSE_ENV, "").partition(":")
    if where == point and fifo:
        del os.environ[PAUSE_ENV]
        try:
            with open(fifo, "rb") as pipe:  # the builtin open: not one of the os calls a fault or a recorder counts
                while pipe.read(1 << 16):  # until the writer closes it; what it writes is dropped, never held
                    pass
        except OSError:  # no such pipe: the run goes on as if the hook were unset
            pass


def lock_path_for(target: str) -> str:
    """The lock file of a (resolved) target path: ``.{name}.bob-lock`` beside it (within NAME_MAX)."""
    directory = os.path.dirname(target)
    return os.path.join(directory, sidecar_name(target, LOCK_TAG))


def _identity(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


class TargetLock:
    """The exclusive lock of one resolved target path (see the module docstring); a refusal names
    ``option`` and ``shown`` (the path as the command line gives it).

    One link and no symbolic link is what keeps it from being any of the
    run's own files: a lock path that names the checkpoint, the input or the
    predictions is a second name of that file. (Comparing inode numbers
    would not do: a replaced checkpoint's number is free for the next new
    file, the lock file among them.)
    """

    def __init__(self, target: str, wait_seconds: float, deferral: "Deferral | None" = None,
                 option: str = "--checkpoint", shown: "str | None" = None, asked: "float | None" = None,
                 found: bool = False) -> None:
        self.path: str = lock_path_for(target)
        self.asked: float = wait_seconds if asked is None else asked  # --wait's seconds, all of a run's locks within them
        self.found: bool = found  # the caller found the directory (lock_targets, for bob-run), or this lock made a
        # file in it: gone now, it went
        self.option: str = option
        self.shown: str = target if shown is None else shown  # named in a refusal
        self.wait_seconds = wait_seconds
        self.deferral = deferral  # open while bob-run waits: checked between two tries
        self.fd: int | None = None
        self.identity: tuple[int, int] | None = None

    def __enter__(self) -> "TargetLock":
        deadline = time.monotonic() + self.wait_seconds
        for _attempt in range(_RETRIES):
            fd, writable, created = self._open()
            locked = False
            try:
                # before waiting: a hard link to the checkpoint is refused at once
                if self._checked(fd, first=True) is None:  # its holder removed it since: the path's next file
                    os.close(fd)
                    continue
                self._wait_for(fd, deadline)
                locked = True
                held = _identity(os.fstat(fd))
                if identity(self.path, follow_symlinks=False) != held or self._checked(fd, first=True) is None:
                    # (first again: a holder's file written over in place while this run waited is not truncated)
                    self._let_go(fd, created)  # its holder removed it (or its directory moved): the path's file next
                    continue
                if writable:
                    os.ftruncate(fd, 0)
                    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            except BaseException as exc:
                if locked or (created and _takes(fd)):  # ours to remove: nobody else holds it
                    self.fd, self.identity = fd, _identity(os.fstat(fd))
                    self.__exit__()
                else:
                    os.close(fd)
                if isinstance(exc, OSError):
                    raise self._unusable(os_reason(exc)) from None
                raise
            self.fd, self.identity = fd, held
            return self
        raise self._unusable(f"it was replaced more than {_RETRIES} times while bob-run tried to lock it")

    def _let_go(self, fd: int, created: bool) -> None:
        """Close a locked file that is no longer the lock path's; one this run created, removed where it is now
        (and its directory ``found``: a path then without a directory is that directory gone, not one never there)."""
        self.found = self.found or created
        if created:
            self.fd, self.identity = fd, _identity(os.fstat(fd))
            self.__exit__()
        else:
            os.close(fd)

    def _open(self) -> "tuple[int, bool, bool]":
        """A descriptor of the lock file, never through a link; whether it is writable, and this run created it."""
        nofollow = os.O_NOFOLLOW
        while True:
            for flags, writable in ((os.O_RDWR, True), (os.O_RDONLY, False)):
                try:
                    fd, _ = open_regular(self.path, flags | nofollow)
                    return fd, writable, False
                except FileNotFoundError:
                    break
                except PermissionError:  # someone else's lock file: flock needs no write access
                    continue
                except OSError as exc:
                    raise self._unusable(_reason(exc)) from None
            else:
                raise self._unusable("this user may not open it (only its owner or the directory's may remove it)")
            try:
                fd, _ = open_regular(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL | nofollow)
                return fd, True, True
            except FileExistsError:  # another run created it first: open theirs
                continue
            except OSError as exc:
                if isinstance(exc, FileNotFoundError) and self.found:  # the directory gone since it was found, or
                    if os.path.isdir(os.path.dirname(self.path)):  # one where no file is made (/proc): no race
                        raise self._unusable("its directory makes no new file (no such file or directory)") from None
                    raise Refused(f"its directory was moved or removed by another process while bob-run took its "
                                  f"lock {show_path(self.path)}; nothing was changed", option=self.option,
                                  path=self.shown, code=EXIT_BUSY) from None
                raise self._unusable(_reason(exc)) from None

    def _checked(self, fd: int, first: bool = False) -> "os.stat_result | None":
        """The lock file as found (``first``: also holding nothing but a pid, and None if it was removed
        since it was opened), refused otherwise."""
        st = os.fstat(fd)
        if st.st_nlink == 0:  # (removed since it was opened, or locked)
            return None
        if st.st_nlink != 1:
            raise self._unusable(f"it has {st.st_nlink} hard links (a lock file has one; bob never truncates "
                                 "another file's name)")
        if (stream := own_stream(st)) is not None:  # (its holder removes it: what this run prints would go with it)
            raise self._unusable(f"it is the file this command's standard {stream} goes to")
        if first and not _only_a_pid(os.pread(fd, _MOST_LOCK_BYTES + 1, 0)):
            raise self._unusable(f"it holds {st.st_size} bytes that are not a pid (a lock file holds at most its "
                                 "holder's pid; bob never truncates or removes another file)")
        return st

    def _wait_for(self, fd: int, deadline: float) -> None:
        import fcntl

        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                pause_at("waiting")
                if self.deferral is not None:
                    self.deferral.check()
                if time.monotonic() >= deadline:
                    way_out = f"still in use after --wait {exact_text(self.asked)}" if self.asked else \
                        "use --wait SECONDS to wait for it"
                    raise Refused(f"in use by another bob-run{_read_holder(fd)}; nothing was changed ({way_out})",
                                  option=self.option, path=self.shown, code=EXIT_BUSY) from None
                time.sleep(0.02)

    def _unusable(self, reason: str) -> Refused:
        return Refused(f"its lock file {show_path(self.path)} cannot be used: {reason}; "
                       "nothing was changed", option=self.option, path=self.shown)

    def still_held(self) -> None:
        """Refuse (exit 75) if the lock path is no longer the file this run locked."""
        if identity(self.path, follow_symlinks=False) != self.identity:
            raise Refused(f"its lock file {show_path(self.path)} was deleted or replaced while this run held it; "
                          "another bob-run may be at work on this file, so nothing was committed",
                          option=self.option, path=self.shown, code=EXIT_BUSY)

    def __exit__(self, *exc: object) -> None:
        if self.fd is None:
            return
        try:  # (its directory moved since: where its descriptor says it is now, on Linux)
            here = self.path if identity(self.path, follow_symlinks=False) == self.identity else \
                os.readlink(f"/proc/self/fd/{self.fd}")
            ours = _only_a_pid(os.pread(self.fd, _MOST_LOCK_BYTES + 1, 0))  # (else written over in place: kept)
            if ours and identity(here, follow_symlinks=False) == self.identity:
                os.unlink(here)  # while still locked: a waiter on this inode sees it gone and retries
        except OSError:  # gone already, or not ours to remove (another user's, in a sticky directory)
            pass
        with contextlib.suppress(OSError):  # (a deferred write's error, NFS, FUSE: the flock is released, and the
            os.close(self.fd)  # pid it may not have written is read by no one; the run's outcome stands)
        self.fd = None


def _only_a_pid(held: bytes) -> bool:
    """Whether a lock file's bytes are what a lock file holds: a pid, or nothing (NULs: a pid lost to a power cut);
    anything else was written there by someone else, and is never truncated or removed. Digits, newlines and NULs
    in any order: a power cut may keep a pid written over a longer one, losing the truncation (``12\\n2\\n``)."""
    return len(held) <= _MOST_LOCK_BYTES and not held.strip(b"0123456789\n\0")


def _takes(fd: int) -> bool:
    """Whether this run may remove the lock file it created but did not lock (a signal or failure came first): it locks
    it now, or the file system has no flock (no run can hold it); not where another may (ENOLCK, EIO: an NFS client
    without lockd; fcntl not importable: this process's shortage): that file is the next run's to remove."""
    try:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        return exc.errno in (errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL)
    except Exception:  # noqa: BLE001 - (ImportError, MemoryError)
        return False
    return True


def place(path: str) -> "tuple[int, int, str] | None":
    """A name as (its directory's device and inode, the name): one however a bind mount shows the
    directory (a hard link of the file is another place). None where the directory cannot be found."""
    try:
        home = os.stat(os.path.dirname(path) or ".")
    except OSError:
        return None
    return home.st_dev, home.st_ino, os.path.basename(path)


def lock_targets(outputs: "tuple[tuple[str, str, str], ...]", wait_seconds: float,
                 deferral: "Deferral | None" = None) -> "list[TargetLock]":
    """A :class:`TargetLock` of each of a run's ``outputs`` (option, path, resolved target), all within one
    ``wait_seconds``; taken in the order of the lock files' places (their directory's device and inode, then
    their name: a path string differs through a bind mount), so two runs never wait for each other in a
    circle, and a lock file two targets share (a long name's hash) is taken once. If one cannot be taken,
    those taken are released."""
    places: dict[tuple[int, int, str], tuple[str, str, str]] = {}
    for option, path, target in outputs:
        lock = lock_path_for(target)  # (no directory: the lock's own open says why)
        places.setdefault(place(lock) or (0, 0, os.path.basename(lock)), (option, path, target))
    deadline = time.monotonic() + wait_seconds
    locks: list[TargetLock] = []
    try:
        for _, (option, path, target) in sorted(places.items()):
            left = max(0.0, deadline - time.monotonic())
            locks.append(TargetLock(target, left, deferral, option, path, asked=wait_seconds, found=True).__enter__())
    except BaseException:
        release(locks)
        raise
    pause_at("locked")
    return locks


def release(locks: "list[TargetLock]") -> None:
    """Remove and unlock what :func:`lock_targets` took, last taken first."""
    if locks:
        pause_at("unlocking")
    for lock in reversed(locks):
        lock.__exit__()


def _reason(exc: OSError) -> str:
    """Why a lock file cannot be opened: opened without following links, a link is ELOOP, said as what it is."""
    link = exc.errno == errno.ELOOP
    return "it is a symbolic link (bob never follows one to a lock file)" if link else os_reason(exc)


def _read_holder(fd: int) -> str:
    """The holder's pid for a refusal, from a whole line only (one cut short, by a file size limit, is another pid)
    and of a live process: a holder that may only read the file writes no pid, and the one there is an earlier
    holder's, perhaps gone (or of another pid namespace)."""
    try:
        text = os.pread(fd, _MOST_LOCK_BYTES, 0).decode("ascii", "replace")
        if not (text.endswith("\n") and text[:-1].isdigit() and int(text) > 0):
            return ""
        os.kill(int(text), 0)
    except PermissionError:  # alive, another user's
        pass
    except (OSError, OverflowError):  # (no such process; past any pid)
        return ""
    return f" (pid {text[:-1]})"


def refuse_if_lock_of(outputs: "tuple[tuple[str, str, str], ...]") -> None:
    """No file a run replaces (``outputs``: option, path, resolved target) may be another one's lock file
    (any bob lock by its name: :func:`bob.commit.refuse_unsafe_target`)."""
    for option, path, target in outputs:
        for other, _, other_target in outputs:
            if other != option and same_file(target, lock_path_for(other_target)):  # (a bind mount too)
                whose = "the checkpoint's lock file" if other == "--checkpoint" else f"the lock file of {other}"
                raise Refused(f"names {whose}; choose another path", option=option, path=path)
