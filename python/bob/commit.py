"""``bob-run``'s one commit point, and the lock that guards it.

An invocation writes two files, the predictions and the checkpoint (three
with ``--trace``: the trace is committed with the pair). It is committed
exactly when the checkpoint's rename succeeds:

1. **stage** — every new file is written as a temporary beside its
   target and fsynced (:func:`bob.fileio.stage`); nothing visible changed;
2. the trace, then the predictions are renamed into place, a hard link
   keeping each old file (:class:`Backup`);
3. ``before_commit()`` — the last word: a deferred signal, a lock that is no
   longer the lock path's, a checkpoint another process replaced — raises,
   and the old files are put back, the very same files;
4. **the commit**: the checkpoint's rename. After it, nothing is rolled back.

The caller runs all of it inside a :class:`bob.signals.Deferral`, so SIGINT,
SIGTERM and SIGHUP never cut a step in half, and :attr:`Commit.committed`
says which side of the commit the run ended on.

The lock is an exclusive ``flock`` on ``.{name}.bob-lock`` beside the
resolved checkpoint (:class:`CheckpointLock`). It is what it claims:

* opened without following links, without creating over anything, and it
  must be a regular file with one link that is none of the run's own files
  (a lock path hard-linked to the checkpoint is refused, never truncated);
* after ``flock`` its descriptor must still be the lock path's inode, or the
  run opens the path again (a holder removes the file when it is done; a
  waiter may have locked the removed inode);
* a lock file this user cannot open for writing (another user's, in a
  sticky directory) is opened read-only: ``flock`` needs no write access, so
  it never locks the checkpoint's owner out;
* the holder checks before its commit that the lock path is still its
  inode: a lock file deleted or replaced while held makes that run refuse,
  nothing changed, so two runs can never both commit from one state.

The lock file is removed when its holder is done (a SIGKILLed holder leaves
it; the next run locks and removes it). So are the temporaries a killed
writer left: :func:`clean_stale_temporaries` (also the library's
``bob.clean_stale_temporaries``) removes those whose writer is dead, and
under the lock all of the target's. Standard library only.
"""

from __future__ import annotations

import os
import stat
import time

from bob.commands import EXIT_BUSY, Refused, about, os_reason
from bob import fileio
from bob.fileio import (
    TEMP_MARK,
    discard_temporary,
    fsync_directory,
    identity,
    open_regular,
    sidecar_name,
    temporary_name,
)
from bob.text import show_path

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Callable

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from bob.signals import Deferral

__all__ = ["LOCK_TAG", "lock_path_for", "CheckpointLock", "Backup", "Commit", "refuse_if_lock_of",
           "clean_stale_temporaries"]

LOCK_TAG = ".bob-lock"
_RETRIES = 1000  # lock paths replaced under us before bob gives up (each one is another process's doing)


def lock_path_for(target: str) -> str:
    """The lock file of a (resolved) checkpoint path: ``.{name}.bob-lock`` beside it (within NAME_MAX)."""
    directory = os.path.dirname(target)
    return os.path.join(directory, sidecar_name(target, LOCK_TAG))


def _identity(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


class CheckpointLock:
    """The exclusive lock of one resolved checkpoint path (see the module docstring).

    One link and no symbolic link is what keeps it from being any of the
    run's own files: a lock path that names the checkpoint, the input or the
    predictions is a second name of that file. (Comparing inode numbers
    would not do: a replaced checkpoint's number is free for the next new
    file, the lock file among them.)
    """

    def __init__(self, target: str, wait_seconds: float, deferral: "Deferral | None" = None) -> None:
        self.path = lock_path_for(target)
        self.wait_seconds = wait_seconds
        self.deferral = deferral  # open while bob-run waits: checked between two tries
        self.fd: int | None = None
        self.identity: tuple[int, int] | None = None

    def __enter__(self) -> "CheckpointLock":
        deadline = time.monotonic() + self.wait_seconds
        for _attempt in range(_RETRIES):
            fd, writable = self._open()
            locked = False
            try:
                self._checked(fd)  # before waiting: a hard link to the checkpoint is refused at once
                self._wait_for(fd, deadline)
                locked = True
                held = _identity(os.fstat(fd))
                if identity(self.path, follow_symlinks=False) != held:  # its holder removed it: lock the path's file
                    os.close(fd)
                    continue
                self._checked(fd)
                if writable:
                    os.ftruncate(fd, 0)
                    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            except BaseException as exc:
                if locked:  # ours to remove: nobody else holds it
                    self.fd, self.identity = fd, _identity(os.fstat(fd))
                    self.__exit__()
                else:
                    os.close(fd)
                if isinstance(exc, OSError):
                    raise self._unusable(os_reason(exc)) from None
                raise
            self.fd, self.identity = fd, held
            return self
        raise self._unusable("it was replaced more than 1000 times while bob-run tried to lock it")

    def _open(self) -> "tuple[int, bool]":
        """A descriptor of the lock file, never through a link, and whether it is writable."""
        nofollow = os.O_NOFOLLOW
        while True:
            for flags, writable in ((os.O_RDWR, True), (os.O_RDONLY, False)):
                try:
                    fd, _ = open_regular(self.path, flags | nofollow)
                    return fd, writable
                except FileNotFoundError:
                    break
                except PermissionError:  # someone else's lock file: flock needs no write access
                    continue
                except OSError as exc:
                    raise self._unusable(os_reason(exc)) from None
            else:
                raise self._unusable("permission denied")
            try:
                fd, _ = open_regular(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL | nofollow)
                return fd, True
            except FileExistsError:  # another run created it first: open theirs
                continue
            except OSError as exc:
                raise self._unusable(os_reason(exc)) from None

    def _checked(self, fd: int) -> os.stat_result:
        st = os.fstat(fd)
        if st.st_nlink != 1:
            raise self._unusable(f"it has {st.st_nlink} hard links (a lock file has one; bob never truncates "
                                 "another file's name)")
        return st

    def _wait_for(self, fd: int, deadline: float) -> None:
        import fcntl

        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if self.deferral is not None:
                    self.deferral.check()
                if time.monotonic() >= deadline:
                    raise Refused(f"the checkpoint is in use by another bob-run{_read_holder(fd)}; nothing was "
                                  "changed (use --wait SECONDS to wait for it)", code=EXIT_BUSY) from None
                time.sleep(0.02)

    def _unusable(self, reason: str) -> Refused:
        return Refused(f"its lock file {show_path(self.path)} cannot be used: {reason}; "
                       "nothing was changed", option="--checkpoint")

    def still_held(self) -> None:
        """Refuse (exit 75) if the lock path is no longer the file this run locked."""
        if identity(self.path, follow_symlinks=False) != self.identity:
            raise Refused(f"its lock file {show_path(self.path)} was deleted or replaced while this run held it; "
                          "another bob-run may be at work on this checkpoint, so nothing was changed",
                          option="--checkpoint", code=EXIT_BUSY)

    def __exit__(self, *exc: object) -> None:
        if self.fd is None:
            return
        try:
            if identity(self.path, follow_symlinks=False) == self.identity:
                os.unlink(self.path)  # while still locked: a waiter on this inode sees it gone and retries
        except OSError:  # gone already, or not ours to remove (another user's, in a sticky directory)
            pass
        os.close(self.fd)  # releases the flock
        self.fd = None


def _read_holder(fd: int) -> str:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return ""
    return f" (pid {text})" if text.isdigit() else ""


class Backup:
    """Keep the file at ``target`` (a resolved path) so it can be put back exactly.

    A hard link under a temporary name holds the old inode: :meth:`restore`
    renames it back over the target (the very same bytes and mode, whatever
    the size), :meth:`discard` drops it. A target that did not exist is
    restored by removing whatever was written there.
    """

    def __init__(self, target: str) -> None:
        self.target = target
        self.link: str | None = None
        if not os.path.lexists(target):
            return
        link = temporary_name(target)
        try:
            os.link(target, link)
        except OSError:  # a filesystem without hard links: keep a copy instead
            import shutil

            shutil.copy2(target, link)
        self.link = link

    def restore(self) -> None:
        if self.link is None:
            try:
                os.unlink(self.target)
            except FileNotFoundError:
                pass
        else:
            os.replace(self.link, self.target)
            self.link = None
        fsync_directory(os.path.dirname(self.target))

    def discard(self) -> None:
        if self.link is not None:
            try:
                os.unlink(self.link)
            except FileNotFoundError:  # pragma: no cover
                pass
            self.link = None


class Commit:
    """Replace the ``companions`` (the predictions, and the trace of
    ``bob-run --trace``) and then ``main`` (the checkpoint), all resolved
    targets; the main file's rename is the commit.

    Each file comes with the :class:`bob.commands.about` that names it in a
    refusal; ``companion``, ``companion_data``, ``companion_about`` is the
    first companion, ``more`` any others as (target, data, about). :meth:`stage`
    writes every temporary; :meth:`apply` renames the companions, last given
    first, then calls ``before_commit`` and renames the main file (anything
    raised before that rename rolls every companion back, the very same
    files); :meth:`close` removes whatever is left. ``committed`` is True
    from the moment the main rename returned.

    After that moment the invocation has happened, whatever fails next: the
    steps that follow it (syncing the checkpoint's directory, removing the
    backup links and the lock) go through :meth:`after_commit`, which records
    a failure in ``problems`` for the caller to tell, instead of raising it
    as if nothing had been done.
    """

    def __init__(self, main: str, main_data: "bytes | bytearray", main_about: about,
                 companion: str, companion_data: "bytes | bytearray", companion_about: about,
                 more: "tuple[tuple[str, bytes | bytearray, about], ...]" = ()) -> None:
        self.files = (*more[::-1], (companion, companion_data, companion_about), (main, main_data, main_about))
        self.staged: list[str] = []
        self.backups: list[Backup] = []
        self.committed = False
        self.problems: list[str] = []

    def after_commit(self, what: str, step: "Callable[[], object]") -> None:
        """Run ``step``; once committed, a failure is recorded as ``what``
        went wrong (with the reason) rather than raised."""
        try:
            step()
        except Exception as exc:
            if not self.committed:
                raise
            reason = os_reason(exc) if isinstance(exc, OSError) else f"{type(exc).__name__}: {exc}"
            self.problems.append(f"{what} failed ({reason})")

    def stage(self) -> None:
        """Write every new file as an fsynced temporary; nothing visible changes."""
        for target, data, naming in self.files:
            with naming:
                self.staged.append(fileio.stage(target, data))

    def apply(self, before_commit) -> None:
        *companions, (main, _, main_about) = self.files
        *companion_tmps, main_tmp = self.staged
        renamed: list[tuple[Backup, about]] = []  # what a failure from here on puts back, last renamed first
        try:
            for (companion, _, companion_about), tmp in zip(companions, companion_tmps):
                with companion_about:
                    backup = Backup(companion)
                    self.backups.append(backup)
                    os.replace(tmp, companion)
                renamed.append((backup, companion_about))
            synced = set()
            for (companion, _, companion_about) in companions:  # each directory once, after its renames
                if os.path.dirname(companion) not in synced:
                    with companion_about:
                        fsync_directory(os.path.dirname(companion))
                    synced.add(os.path.dirname(companion))
            before_commit()
            with main_about:
                os.replace(main_tmp, main)  # the commit point
        except BaseException:
            for backup, companion_about in reversed(renamed):
                with companion_about:
                    backup.restore()  # the very same file as before, whatever its size
            raise
        self.committed = True
        self.after_commit(f"syncing the directory of {show_path(main)} (the new checkpoint may not survive a power loss)",
                          lambda: fsync_directory(os.path.dirname(main)))

    def close(self) -> None:
        """Remove the backups and any temporary not renamed (idempotent)."""
        for backup in self.backups:
            self.after_commit(f"removing the backup link {show_path(backup.link or '')}", backup.discard)
        self.backups = []
        for tmp in self.staged:
            discard_temporary(tmp)  # one already renamed is no longer there: nothing happens
        self.staged = []


def refuse_if_lock_of(target: str, checkpoint_target: str, option: str) -> None:
    """``--predictions`` (or another output) may not be the checkpoint's own lock file."""
    if os.path.abspath(target) == os.path.abspath(lock_path_for(checkpoint_target)):
        raise Refused("names the checkpoint's lock file; choose another path", option=option, path=target)


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: someone else's live process
        return True
    return True


def clean_stale_temporaries(path: "str | os.PathLike[str]", *, holding_lock: bool = False) -> list[str]:
    """Remove the temporary files :func:`bob.fileio.write_atomic` (and this commit) left beside ``path``'s
    target whose writing process is dead; return the paths removed.

    Temporaries of live processes (this one included) are left alone: a pid
    is all a writer without a lock can judge by. ``holding_lock``: the caller
    holds the target's lock (``bob-run``), so every temporary of the target
    is stale, whoever left it (a pid says nothing across PID namespaces).
    """
    try:
        target = os.path.realpath(os.fspath(path))
    except (OSError, ValueError):  # pragma: no cover
        return []
    directory, name = os.path.split(target)
    prefix = sidecar_name(name, TEMP_MARK)
    removed: list[str] = []
    try:
        entries = os.listdir(directory or ".")
    except OSError:
        return removed
    for entry in entries:
        if not entry.startswith(prefix):
            continue
        pid_text, sep, token = entry[len(prefix):].partition("-")
        if not sep or not pid_text.isdigit() or not token:
            continue
        pid = int(pid_text)
        if not holding_lock and (pid == os.getpid() or _pid_alive(pid)):
            continue
        full = os.path.join(directory, entry)
        try:
            if stat.S_ISREG(os.lstat(full).st_mode):
                os.unlink(full)
                removed.append(full)
        except OSError:
            continue
    return removed
