"""The exact rollback of ``bob-run``'s commit (:mod:`bob.commit`): :class:`Backup` keeps the file a commit is
about to replace, so that it can be put back, the very same file, or dropped; :func:`holds` says whether a target
is still the file a commit put there, which :func:`rename_into_place` asks of a rename said to fail. Standard
library only."""

from __future__ import annotations

import contextlib
import os
import stat

from bob.fileio import fsync_directory, read_to_end, temporary_name
from bob.refusals import RESOURCE_ERRNOS, Refused, os_reason

__all__ = ["Backup", "holds", "rename_into_place"]


class Backup:
    """Keep the file at ``target`` (a resolved path) so it can be put back exactly.

    A hard link under a temporary name holds the old inode: :meth:`restore`
    renames it back over the target (the very same bytes and mode, whatever
    the size), :meth:`discard` drops it. Where hard links fail the backup is a
    copy (its bytes, owner, mode, times and extended attributes). A target that
    did not exist is restored by removing whatever was written there. Given
    ``directory``, a descriptor of the target's directory, every call goes
    through it: a directory moved meanwhile is the one its file is put back in.
    """

    def __init__(self, target: str, directory: int | None = None) -> None:
        self.target = target
        self.directory = directory
        self.link: str | None = None  # (a path: the one a message shows)
        self.copied: bool = False  # (a copy has no other name: put back by a rename)
        self.put_back: bool = False
        try:
            os.stat(self._name(target), dir_fd=directory, follow_symlinks=False)
        except FileNotFoundError:
            return
        link = temporary_name(target)
        try:
            os.link(self._name(target), self._name(link), src_dir_fd=directory, dst_dir_fd=directory)
        except OSError:  # a filesystem without hard links: keep a copy instead, on disk before the rename
            try:
                self._copy(link)
            except BaseException as exc:  # (a full disk, a file size limit): no backup, and no part of one left
                with contextlib.suppress(OSError):
                    os.unlink(self._name(link), dir_fd=directory)
                if not isinstance(exc, OSError) or exc.errno in RESOURCE_ERRNOS:  # (the process's: the runner's)
                    raise
                raise Refused(f"its old file could not be kept for a rollback (a copy, where a hard link failed: "
                              f"{os_reason(exc)}); nothing was changed") from None
            self.copied = True
        self.link = link

    def _name(self, path: str) -> str:
        """What names ``path`` to the calls: its name in :attr:`directory`, or the path itself."""
        return path if self.directory is None else os.path.basename(path)

    def _copy(self, link: str) -> None:
        """The target's bytes, owner, mode, times and extended attributes into the new file ``link``, fsynced
        (through ``os``'s calls, as :func:`bob.fileio.stage` writes: what the power-loss checker records)."""
        at, flags = self.directory, os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        old = os.open(self._name(self.target), os.O_RDONLY | flags, dir_fd=at)
        try:
            st = os.fstat(old)  # (before the read moves its access time)
            new = os.open(self._name(link), os.O_WRONLY | os.O_CREAT | os.O_EXCL | flags, 0o600, dir_fd=at)
            try:
                while chunk := memoryview(os.read(old, 1 << 20)):
                    while chunk:
                        chunk = chunk[os.write(new, chunk):]
                if (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):  # root keeping a user's file theirs
                    with contextlib.suppress(OSError):  # (best effort, as bob.fileio.stage)
                        os.fchown(new, st.st_uid, st.st_gid)  # first: a chown clears setuid and file capabilities
                for key in _attribute_names(old):
                    with contextlib.suppress(OSError):  # (one this user may not set: trusted.*, security.*)
                        os.setxattr(new, key, os.getxattr(old, key))
                os.fchmod(new, st.st_mode & 0o7777)
                os.utime(new, ns=(st.st_atime_ns, st.st_mtime_ns))
                os.fsync(new)
            finally:
                os.close(new)
        finally:
            os.close(old)

    def restore(self, strict: bool = True, into_empty: bool = False) -> None:
        """Put the old file back and sync its directory; a sync that fails (``strict``) is raised with
        ``put_back`` set: the old file is there, but may not survive a power loss, and the report says so.
        ``into_empty``: the target's name was found empty (another process removed this run's file); the old
        file goes back as a new name there, so a file made there since stays (``FileExistsError``), and where
        there was none, nothing is removed."""
        if self.link is None:
            if not into_empty:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self._name(self.target), dir_fd=self.directory)
        elif into_empty and not self.copied:
            os.link(self._name(self.link), self._name(self.target), src_dir_fd=self.directory,
                    dst_dir_fd=self.directory)
            with contextlib.suppress(OSError):  # (a second name left is the next run's to remove)
                self.discard()
        else:  # (a copy renamed into a name found empty: a file made there in that instant would be replaced)
            os.replace(self._name(self.link), self._name(self.target), src_dir_fd=self.directory,
                       dst_dir_fd=self.directory)
            self.link = None
        self.put_back = True
        fsync_directory(os.path.dirname(self.target) if self.directory is None else self.directory, strict=strict)

    def kept_in(self) -> str | None:
        """The path of the old file's backup as it is now (its directory where the descriptor says it is, on
        Linux), or None when there is none."""
        if self.link is None:
            return None
        try:
            os.stat(self._name(self.link), dir_fd=self.directory, follow_symlinks=False)
        except OSError:
            return None
        with contextlib.suppress(OSError):  # (no directory descriptor, or no /proc)
            return os.path.join(os.readlink(f"/proc/self/fd/{self.directory}"), os.path.basename(self.link))
        return self.link

    def discard(self) -> None:
        if self.link is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._name(self.link), dir_fd=self.directory)
            self.link = None


def _attribute_names(fd: int) -> list[str]:
    """The names of a file's extended attributes; none where the file system or the system has none."""
    try:
        return os.listxattr(fd)
    except (OSError, AttributeError):
        return []


def holds(name: str, directory: "int | None", placed: "tuple[int, int, int]",
          data: "bytes | bytearray") -> "bool | None":
    """Whether ``name`` in ``directory`` (a descriptor) is still the file this run renamed there (``placed``: its
    device, inode and mtime) with the bytes it wrote: another process may have replaced it, or written into it
    (the same inode; a touch alone changes nothing). None: nothing is there now. A look that fails (EACCES, EIO)
    is raised: it says nothing of whose file is there."""
    try:
        st = os.stat(name, dir_fd=directory, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if (st.st_dev, st.st_ino) != placed[:2] or not stat.S_ISREG(st.st_mode):  # (a link given the freed inode number)
        return False
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=directory)
    except PermissionError:  # a file this user may write, not read (0200): its mtime and size tell
        return st.st_mtime_ns == placed[2] and st.st_size == len(data)
    try:
        return read_to_end(fd, len(data), len(data)) == data
    finally:
        os.close(fd)


def rename_into_place(tmp: str, name: str, directory: "int | None", placed: "tuple[int, int, int]",
                      data: "bytes | bytearray") -> None:
    """``os.replace`` of ``tmp`` (this run's new file: ``placed``, ``data``) over ``name`` in ``directory``. A rename
    said to fail that was made (an NFS client's retried one, a FUSE daemon's late reply) was made: whose file
    ``name`` is tells (:func:`holds`). The rename's error is raised otherwise."""
    try:
        os.replace(tmp, name, src_dir_fd=directory, dst_dir_fd=directory)
    except OSError as exc:
        with contextlib.suppress(OSError, MemoryError):  # (a look that fails: the rename's error stands)
            if holds(name, directory, placed, data):
                return
        raise
