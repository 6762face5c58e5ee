"""``bob-run``'s one commit point.

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

From the stage on, the commit reaches each file through a descriptor of its
directory, opened once: a directory another process moves meanwhile keeps
its files, and is where the old one is put back.

The caller runs all of it inside a :class:`bob.signals.Deferral`, so SIGINT,
SIGTERM and SIGHUP never cut a step in half, and :attr:`Commit.committed`
says which side of the commit the run ended on.

The locks that guard it are :class:`bob.lock.TargetLock` objects, one a file replaced; :mod:`bob.lock` also holds
the race hook (:func:`bob.lock.pause_at`) that waits at each point of the commit window. The temporaries a killed
writer left: :func:`bob.temporaries.clean_stale_temporaries`. Standard library only.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import itertools
import os

from bob import fileio
from bob.backup import Backup, holds, rename_into_place
from bob.commands import EXIT_BUSY, EXIT_INTERRUPTED, EXIT_REFUSED, Refused, about, os_reason
from bob.refusals import RESOURCE_ERRNOS
from bob.fileio import TEMP_MARK, discard_temporary, fsync_directory
from bob.lock import LOCK_TAG, pause_at
from bob.temporaries import clean_stale_temporaries, temporary_pid
from bob.signals import Deferral, printing
from bob.text import own_stream, show_bytes, show_path

_O_PATH = getattr(os, "O_PATH", os.O_RDONLY)  # (Linux: a directory this user may search, if not read, 0300)
TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any, Callable, Sequence

__all__ = ["Backup", "Commit", "replace_all", "replace_targets", "refuse_unsafe_target",
           "refuse_replacing_a_checkpoint", "temporary_pid", "clean_stale_temporaries", "file_version"]


class Commit:
    """Replace the ``companions`` (the predictions, and the trace of ``bob-run --trace``) and then ``main`` (the
    checkpoint), all resolved targets; the main file's rename is the commit.

    Each file comes with the :class:`bob.commands.about` that names it in a refusal; ``companion``,
    ``companion_data``, ``companion_about`` is the first companion, ``more`` any others as (target, data, about).
    :meth:`stage` writes every temporary; :meth:`apply` renames the companions, last given first, then calls
    ``before_commit`` and renames the main file (anything raised before that rename rolls every companion back,
    the very same files); :meth:`close` removes whatever is left. ``committed`` is True from the moment the main
    rename was made.

    After that moment the invocation has happened, whatever fails next: the steps that follow it (syncing the
    checkpoint's directory, removing the backup links) go through :meth:`after_commit`, which records a failure
    in ``problems`` for the caller to tell, instead of raising it as if nothing had been done.
    """

    def __init__(self, main: str, main_data: "bytes | bytearray", main_about: about,
                 companion: str, companion_data: "bytes | bytearray", companion_about: about,
                 more: "tuple[tuple[str, bytes | bytearray, about], ...]" = ()) -> None:
        self.files = (*more[::-1], (companion, companion_data, companion_about), (main, main_data, main_about))
        self.staged: list[str] = []
        self.placed: list[tuple[int, int, int]] = []  # each temporary's device, inode and mtime as written
        self.backups: list[Backup] = []
        self.committed = False
        self.lost: bool = False  # a rollback left a file not put back: something changed, whatever stopped it
        self.problems: list[str] = []
        # each target's directory, opened once: every later call goes through it (a directory moved meanwhile
        # keeps its files, its backups and its temporaries, and a run's report of them stays true)
        self.directories: dict[str, int] = {}

    def _at(self, path: str) -> "tuple[str, int | None]":
        """``path``'s name and the descriptor of its directory: what every call of the commit names it by (once
        :meth:`close` has closed them, the path itself)."""
        at = self.directories.get(os.path.dirname(path))
        return path if at is None else os.path.basename(path), at

    def after_commit(self, what: str, step: "Callable[[], object]") -> None:
        """Run ``step``; once committed, a failure is recorded as ``what``
        went wrong (with the reason) rather than raised."""
        try:
            step()
        except Exception as exc:
            if not self.committed:
                raise
            reason = os_reason(exc) if isinstance(exc, OSError) else f"{type(exc).__name__}: {exc}" if str(exc) \
                else type(exc).__name__
            self.problems.append(f"{what} failed ({reason})")

    def stage(self) -> None:
        """Write every new file as an fsynced temporary; nothing visible changes."""
        for target, data, naming in self.files:
            with naming:
                if (directory := os.path.dirname(target)) not in self.directories:
                    self.directories[directory] = os.open(directory, _O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
                try:
                    self.staged.append(tmp := fileio.stage(target, data))
                except OSError as exc:  # (the process's shortage, memory or descriptors: the runner's, as it is)
                    if exc.errno in RESOURCE_ERRNOS:
                        raise
                    if isinstance(exc, FileNotFoundError):  # (its directory, found a moment ago, moved away)
                        raise _gone(directory, self.directories[directory]) from None
                    raise Refused(f"its new file could not be written: {os_reason(exc)}; nothing was changed") from None
                try:  # (a rename keeps them: each file is checked before the commit, the checkpoint's too)
                    st = os.stat(os.path.basename(tmp), dir_fd=self.directories[directory], follow_symlinks=False)
                except FileNotFoundError:  # written where its directory was, and is no longer; or removed since
                    discard_temporary(self.staged.pop())
                    raise _gone(directory, self.directories[directory]) from None
                self.placed.append((st.st_dev, st.st_ino, st.st_mtime_ns))
        pause_at("staged")

    def apply(self, before_commit) -> None:
        *companions, (main, main_data, main_about) = self.files
        *companion_tmps, main_tmp = self.staged
        # what a failure from here on puts back, last renamed first, with the file this run put there
        renamed: list[tuple[Backup, about, str, tuple[int, int, int], bytes | bytearray]] = []
        unsynced = None  # a directory whose sync failed before the commit: its rollback's sync fails too, said once
        try:
            for (companion, data, companion_about), tmp, placed in zip(companions, companion_tmps, self.placed):
                with companion_about:
                    backup = Backup(companion, self._at(companion)[1])
                    self.backups.append(backup)
                    self._rename(tmp, companion, placed, data)
                self.staged.remove(tmp)  # renamed: no temporary left to remove
                renamed.append((backup, companion_about, companion, placed, data))
            synced = set()
            for (companion, _, companion_about) in self.files:  # each directory once, after its renames (the
                if os.path.dirname(companion) not in synced:  # checkpoint's too: one that cannot be is refused now)
                    with companion_about:
                        try:
                            fsync_directory(self.directories[os.path.dirname(companion)], strict=True)
                        except OSError as exc:  # (a directory bob may write but not read, 0300)
                            unsynced = os.path.dirname(companion)
                            raise Refused(f"its directory could not be synced before the commit ({os_reason(exc)}); "
                                          "the checkpoint was not replaced") from None
                    synced.add(os.path.dirname(companion))
            pause_at("predictions-renamed")
            for _, companion_about, companion, placed, data in [*renamed, (None, main_about, main_tmp, self.placed[-1],
                                                                       main_data)]:  # another writer's file: not ours
                with companion_about:  # (a look that fails, EIO: refused naming the file too)
                    if not (held := holds(*self._at(companion), placed, data)):
                        raise Refused(f"its new file was {'written' if held is False else 'removed'} by another "
                                      "process during this run's commit; the checkpoint was not replaced",
                                      code=EXIT_BUSY)
            before_commit()
            pause_at("checked")
            with main_about:
                self._rename(main_tmp, main, self.placed[-1], main_data)  # the commit point
            self.staged.remove(main_tmp)
        except BaseException as stopped:
            unrestored = []  # every companion is put back that can be; each that cannot is said, and why
            for backup, companion_about, companion, placed, data in reversed(renamed):
                try:
                    with companion_about:  # the very same file, where this run's is or none is
                        if (held := holds(*self._at(companion), placed, data)) is False:
                            continue  # another process wrote it since: its file, left as it is (the backup dropped)
                        backup.restore(strict=os.path.dirname(companion) != unsynced, into_empty=held is None)
                except (Refused, OSError) as exc:
                    why = exc.message if isinstance(exc, Refused) else os_reason(exc)
                    kept = f"; its old bytes are kept in {show_path(where)}, which the next bob-run on it " \
                        "removes" if (where := backup.kept_in()) is not None else ""
                    self.backups.remove(backup)  # (the only copy of the old file: close must not remove it)
                    unrestored.append((companion_about, backup.put_back, f"was rolled back, but its directory could "
                                       f"not be synced ({why}): the rollback may not survive a power loss"
                                       if backup.put_back else f"could not be put back ({why}){kept}"))
            if unrestored:
                self.lost = not all(back for _, back, _ in unrestored)
                (first, _, how), *others = unrestored
                also = "".join(f"; {naming.option} {show_path(naming.path)} {it}" for naming, _, it in others)
                code = EXIT_REFUSED  # (a file not put back: something changed)
                if not self.lost:  # every file back, a sync alone failed: the stop's own code
                    code = stopped.code if isinstance(stopped, Refused) else getattr(
                        stopped, "exit_code", EXIT_INTERRUPTED if isinstance(stopped, KeyboardInterrupt) else code)
                cause = str(stopped).rsplit("; ", 1)[0] if isinstance(stopped, Refused) else str(stopped)  # (its
                # outcome, "nothing was committed", is no longer true: this refusal's own follows)
                raise Refused(f"the run stopped before its commit ({cause or 'stopped'}), and this file {how}"
                              f"{also}; the checkpoint was not replaced", option=first.option, path=first.path,
                              code=code)
            raise
        self.committed = True
        for _, naming, path, placed, data in [(None, main_about, main, self.placed[-1], main_data), *reversed(renamed)]:
            what = "the new checkpoint" if path == main else f"the new {naming.option} {show_path(naming.path)}"
            self.after_commit(f"reading {what} back", functools.partial(self._read_back, naming, path, placed, data))
        pause_at("committed")
        self.after_commit(f"syncing the directory of {show_path(main)} (the new checkpoint may not survive a power loss)",
                          lambda: fsync_directory(self.directories[os.path.dirname(main)], strict=True))

    def _read_back(self, naming: about, path: str, placed: "tuple[int, int, int]", data: "bytes | bytearray") -> None:
        """A file written or removed by another process in the instant before the checkpoint's rename: said, not
        undone (``problems``)."""
        if (held := holds(*self._at(path), placed, data)):
            return
        how = "written" if held is False else "removed"
        self.problems.append(f"the new checkpoint was {how} by another process as it was committed: this report's "
                             "SHA-256 is of the bytes this run wrote" if path == self.files[-1][0] else
                             f"{naming.option} {show_path(naming.path)}: its new file was {how} by another process "
                             "as the checkpoint was committed")

    def _rename(self, tmp: str, target: str, placed: "tuple[int, int, int]", data: "bytes | bytearray") -> None:
        """Rename ``tmp`` over ``target``, in their directory; a temporary gone is another process's doing."""
        name, at = self._at(target)
        try:
            rename_into_place(os.path.basename(tmp), name, at, placed, data)
        except FileNotFoundError:
            raise Refused("its new file was removed by another process during this run's commit; the checkpoint "
                          "was not replaced", code=EXIT_BUSY) from None
        except OSError as exc:
            if exc.errno in RESOURCE_ERRNOS:
                raise
            raise _not_renamed(exc, "the checkpoint was not replaced") from None

    def close(self) -> None:
        """Remove the backups and any temporary not renamed (idempotent). Before the commit a
        removal that fails is not raised: the refusal that stopped the run is the one to tell."""
        try:
            for backup in self.backups:
                with contextlib.suppress(OSError):  # (after the commit: recorded in problems)
                    where = backup.kept_in() or backup.link or ""  # (where its directory is now)
                    self.after_commit(f"removing the backup link {show_path(where)}", backup.discard)
            self.backups = []
            for tmp in self.staged:  # (one renamed just before a signal is no longer there: nothing happens)
                name, at = self._at(tmp)
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=at)
            self.staged = []
        finally:  # (an exception in the middle of it, a signal's, leaves no descriptor open)
            for directory in self.directories.values():
                with contextlib.suppress(OSError):  # (close frees it whatever it says; nothing is written through it)
                    os.close(directory)
            self.directories = {}
            for backup in self.backups:  # (a second close removes them by their paths)
                backup.directory = None


def file_version(path: str) -> "tuple[int, ...] | None":
    """What tells the file read from another: its device, inode, size, mtime, ctime and mode (an inode
    number alone would not: a file rewritten in place keeps it, and ext4 gives a replaced file's
    number to the next new file). ``path`` is resolved: a link there now is another file (lstat).
    None when nothing is there."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode


def refuse_unsafe_target(target: str) -> None:
    """What no command replaces (a :class:`Refused`, named by its caller's ``about``): a bob-run lock file or a bob
    temporary by its name (another run may hold the one, and removes the other beside its target), and the file
    this process's standard output or error goes to (what it prints would go with the file it replaced)."""
    name = os.path.basename(target)
    if name.startswith(".") and name.endswith(LOCK_TAG) and len(name) > len(LOCK_TAG) + 1:  # (a NAME at all)
        raise Refused("names a bob-run lock file (.NAME.bob-lock); choose another path")
    if name.startswith(".") and name.find(TEMP_MARK) > 1 and temporary_pid(name.rpartition(TEMP_MARK)[2]) is not None:
        raise Refused("names a bob temporary file (.NAME.bob-tmp-PID-HEX), which a later run removes; choose "
                      "another path")
    with contextlib.suppress(FileNotFoundError):
        if (stream := own_stream(os.stat(target))) is not None:
            raise Refused(f"is the file this command's standard {stream} goes to, which would go with the file it "
                          "replaced; name another, or send the stream elsewhere")


def refuse_replacing_a_checkpoint(target: str, data: "bytes | bytearray | None" = None) -> None:
    """A file that holds a bob checkpoint (it starts with the magic) is replaced only by a checkpoint (``data``; None:
    no checkpoint, or bytes not made yet): the trained state is the one file no command makes
    again, and predictions, a trace, a record, an export or a report named onto it (a slip of the argv) would take
    it unsaid. A file this user may not read cannot be told, and is not judged; one that cannot be read now (EIO;
    EAGAIN: another process holds a lease on it) is refused."""
    from bob.formats.constants import CHECKPOINT_MAGIC

    if data is not None and bytes(data[:len(CHECKPOINT_MAGIC)]) == CHECKPOINT_MAGIC:
        return
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            head = os.pread(fd, len(CHECKPOINT_MAGIC), 0)
        finally:
            with contextlib.suppress(OSError):  # (read: a close that reports a failure changes nothing here)
                os.close(fd)
    except (FileNotFoundError, PermissionError):
        return
    except OSError as exc:
        if exc.errno in RESOURCE_ERRNOS:
            raise
        lease = ": another process holds a lease on it" if exc.errno == errno.EAGAIN else ""
        raise Refused(f"could not be read to tell whether it holds a checkpoint ({os_reason(exc)}{lease}); "
                      "nothing was changed") from None
    if head == CHECKPOINT_MAGIC:
        raise Refused(f"holds a bob checkpoint (it starts {show_bytes(CHECKPOINT_MAGIC)}), which only a checkpoint "
                      "replaces; nothing was changed (name another path, or remove that file first)")


def replace_targets(files: "list[tuple[str, Any]]", keep: "Sequence[str]" = (),
                    data: "Sequence[bytes | bytearray | None]" = ()) -> list[str]:
    """Each ``(path, naming)``'s :func:`bob.fileio.replace_target`, inside its ``naming``; refused: a path naming the
    same file as an earlier one (two links to one file: one would overwrite the other), or a file the command read
    (``keep``: a link planted since its first look would be followed onto it), or a checkpoint that its ``data``
    (none by default) is not (:func:`refuse_replacing_a_checkpoint`)."""
    targets: list[str] = []
    for (path, naming), written in itertools.zip_longest(files, data[:len(files)]):
        with naming:
            target = fileio.replace_target(path)
            refuse_unsafe_target(target)
            for (earlier, _), other in zip(files, targets):
                if fileio.same_file(other, target):
                    raise Refused(f"names the same file as {show_path(earlier)}; each needs its own")
            if any(fileio.same_file(read, target) for read in keep):
                raise Refused("that is a file this command read; bob never replaces what it reads")
            refuse_replacing_a_checkpoint(target, written)  # (what it is, once it is none of those)
        targets.append(target)
    return targets


def _not_renamed(exc: OSError, outcome: str) -> Refused:
    """A rename over a target that failed (EBUSY: a mount point, either way), and what that leaves (``outcome``)."""
    mount = ": a mount point, which no rename replaces" if exc.errno == errno.EBUSY else ""
    return Refused(f"its new file could not be renamed over it ({os_reason(exc)}{mount}); {outcome}")


def _gone(directory: str, descriptor: int) -> Refused:
    """The refusal (75) of a temporary not found, or not made, through its directory's ``descriptor``: the
    directory moved away from its path, or the file removed."""
    what = "its directory was moved or replaced"
    with contextlib.suppress(OSError):
        if os.path.samestat(os.fstat(descriptor), os.stat(directory)):
            what = "its new file was removed by another process"
    return Refused(f"{what} while this run wrote it; nothing was changed", code=EXIT_BUSY)


def replace_all(files: "list[tuple[str, bytes, Any]]", keep: "Sequence[str]" = (), *,
                outcome: bool = True) -> list[str]:
    """Replace each ``(path, data, naming)`` atomically: every path is checked
    (:func:`replace_targets`) and every file staged, each inside its ``naming`` (a
    :class:`bob.commands.about`, which names its file in a refusal), before the first rename, so a
    write that fails (a full disk) or a signal replaces none. The renames hold the signals (a
    :class:`bob.signals.Deferral`); once they are done, if the files are the command's ``outcome``, it is
    decided and a signal is only recorded (:func:`bob.signals.printing`); if not (a scratch corpus a check
    reads next), one that came during the renames acts then. A rename that fails (rare: a mount over the
    file) is refused naming the files already replaced; a target that is one of the files read (``keep``)
    is refused. The targets."""
    if not files:
        return []
    targets = replace_targets([(path, naming) for path, _, naming in files], keep, [data for _, data, _ in files])
    deferral, staged = Deferral(), list[str]()
    try:
        for target, (_, data, naming) in zip(targets, files):
            with naming:
                fileio.stage(target, data, made=staged)
        deferral.begin()
        for i, (tmp, target, (_, data, naming)) in enumerate(zip(staged, targets, files)):
            with naming:
                try:
                    st = os.stat(tmp, follow_symlinks=False)
                    rename_into_place(tmp, target, None, (st.st_dev, st.st_ino, st.st_mtime_ns), data)
                except OSError as exc:
                    if exc.errno in RESOURCE_ERRNOS and not i:  # (the machine's, as the runner tells it)
                        raise
                    replaced = ", ".join(show_path(path) for path, _, _ in files[:i])
                    raise _not_renamed(exc, f"{replaced} replaced already" if i else "nothing was changed") from None
        if outcome:
            printing()  # all replaced: a signal that came during the renames, or comes now, changes nothing said
    finally:
        deferral.end()  # (a rename that failed: the signals act again)
        for tmp in staged:
            discard_temporary(tmp)  # (one renamed into place is not there any more)
    for directory in dict.fromkeys(os.path.dirname(target) for target in targets):
        fsync_directory(directory)
    if not outcome:
        deferral.check()  # a signal from the renames acts now (after an outcome's it was only recorded)
    return targets
