"""bob's files on disk: one bounded reader, one atomic writer, one rule for paths.

``bob-run``, ``bob-fixture``, ``bob-inspect`` and the library read and replace
files only through here (``tests/house/test_house.py`` holds that; ``bob-fuzz``
and ``bob-qualify`` write their corpora, scratch files and reports directly),
so every path they are given gets the same treatment:

* **Only regular files.** :func:`read_bounded` opens a path once
  (``O_NONBLOCK``, so a FIFO never blocks the open) and decides from
  ``fstat`` of that descriptor; :func:`replace_target` refuses to replace
  anything but a regular file (or a missing one). A directory, a FIFO, a
  socket or a device raises :class:`NotARegularFile`, before anything is
  read or created.
* **Bounded.** A file larger than the caller's limit is never read:
  :class:`FileTooLarge` carries its size and first bytes so the formats
  layer can name it.
* **Symbolic links are followed.** Replacing ``path`` replaces the file a
  link points to (the temporary file lives in the *target's* directory and
  the link stays a link); :func:`replace_target` gives that resolved path,
  which is also what ``bob-run`` locks.
* **Atomic.** :func:`write_atomic` writes a temporary file beside the
  target, fsyncs it, renames it over the target and fsyncs the directory; on
  any failure the target is byte-identical and the temporary file is gone.
  A SIGKILL leaves at worst a temporary file named
  ``.{name}.bob-tmp-{pid}-{random}``, which :func:`clean_stale_temporaries`
  removes once its writer is dead.
* **Exact rollback.** :func:`Backup` keeps a hard link to the file about to
  be replaced, so putting it back restores the very same bytes, whatever
  their size.

Standard library only: ``bob-run`` uses this module on its fast path.
"""

from __future__ import annotations

import errno
import os
import stat

__all__ = [
    "NotARegularFile",
    "FileTooLarge",
    "open_regular",
    "read_bounded",
    "read_bounded_buffer",
    "replace_target",
    "same_file",
    "write_atomic",
    "Backup",
    "clean_stale_temporaries",
    "temporary_name",
    "TEMP_MARK",
]

TEMP_MARK = ".bob-tmp-"
_NAME_LIMIT = 180  # keeps the temporary name under the usual 255-byte limit
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_HEAD = 16  # bytes of a too-large file kept to name its format


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "not a regular file"


class NotARegularFile(OSError):
    """The path names a directory, FIFO, socket or device: bob reads and replaces regular files only."""

    def __init__(self, path: "str | os.PathLike[str]", mode: int) -> None:
        self.kind = _kind(mode)
        code = errno.EISDIR if stat.S_ISDIR(mode) else errno.EINVAL
        super().__init__(code, f"{self.kind}, not a regular file", os.fspath(path))


class FileTooLarge(Exception):
    """A regular file larger than any valid one; it was not read."""

    def __init__(self, size: int, head: bytes) -> None:
        super().__init__(f"{size} bytes")
        self.size = size
        self.head = head


def read_bounded(path: "str | os.PathLike[str]", limit: int) -> bytes | None:
    """The bytes of the regular file ``path`` (at most ``limit``), or None if it does not exist.

    Raises :class:`NotARegularFile` for anything but a regular file (decided
    from ``fstat`` of the one descriptor opened), :class:`FileTooLarge` for a
    file over ``limit`` bytes (only its first bytes are read), and the usual
    ``OSError`` for a path that cannot be opened.
    """
    data = read_bounded_buffer(path, limit)
    return None if data is None else bytes(data)


def read_bounded_buffer(path: "str | os.PathLike[str]", limit: int) -> bytearray | None:
    """:func:`read_bounded`, giving the buffer the file was read into (no
    copy): ``bob-run`` trains in it and writes it back."""
    try:
        fd, st = open_regular(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        if st.st_size > limit:
            raise FileTooLarge(st.st_size, os.read(fd, _HEAD))
        data = _read_to_end(fd, st.st_size, limit)
        if len(data) > limit:
            raise FileTooLarge(len(data), bytes(data[:_HEAD]))
        return data
    finally:
        os.close(fd)


def open_regular(path: "str | os.PathLike[str]", flags: int, mode: int = 0o666) -> "tuple[int, os.stat_result]":
    """A descriptor of the regular file ``path`` and its ``fstat``, opened
    with ``flags`` and what every path bob is given is opened with:
    ``O_NONBLOCK`` (a FIFO does not hang the open), ``O_NOCTTY`` (a terminal
    does not become bob's controlling terminal) and ``O_CLOEXEC``.

    Anything but a regular file is :class:`NotARegularFile`, decided from the
    ``fstat`` of the descriptor, or, where the open itself fails (a socket
    cannot be opened), from the path's ``stat`` (``lstat`` under
    ``O_NOFOLLOW``: a link keeps the open's own error). Any other failure is
    the open's ``OSError``.
    """
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | os.O_NOCTTY | _CLOEXEC, mode)
    except FileNotFoundError:
        raise
    except OSError:
        try:
            st_mode = os.stat(path, follow_symlinks=not flags & os.O_NOFOLLOW).st_mode
        except OSError:
            st_mode = stat.S_IFREG
        if not (stat.S_ISREG(st_mode) or stat.S_ISLNK(st_mode)):
            raise NotARegularFile(path, st_mode) from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotARegularFile(path, st.st_mode)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def _read_to_end(fd: int, size: int, limit: int) -> bytearray:
    """What is left to read of ``fd``, read straight into one buffer of the
    file's size; at most ``limit`` + 1 bytes (one more tells a file that grew
    while it was read)."""
    data = bytearray(size + 1)
    got = 0
    while got < len(data):
        n = os.readv(fd, [memoryview(data)[got:]])
        if n == 0:
            break
        got += n
    while got == len(data) <= limit:  # it grew while we read it: on, to one byte past the limit
        chunk = os.read(fd, min(limit + 1 - got, 1 << 20))
        if not chunk:
            break
        data += chunk
        got += len(chunk)
    del data[got:]
    return data


def replace_target(path: "str | os.PathLike[str]") -> str:
    """The file that replacing ``path`` would replace: symbolic links resolved.

    Raises :class:`NotARegularFile` when it exists and is not a regular file,
    ``FileNotFoundError`` naming the directory when that does not exist, and
    ``IsADirectoryError`` for a path that ends in a slash.
    """
    text = os.fspath(path)
    if isinstance(text, bytes):  # pragma: no cover - bob passes str paths
        text = os.fsdecode(text)
    if not os.path.basename(text):
        raise IsADirectoryError(errno.EISDIR, "a directory path, not a file", text)
    target = os.path.realpath(text)
    try:
        st = os.stat(target)
    except FileNotFoundError:
        directory = os.path.dirname(target)
        if not os.path.isdir(directory):
            raise FileNotFoundError(errno.ENOENT, "its directory does not exist", text) from None
        return target
    if not stat.S_ISREG(st.st_mode):
        raise NotARegularFile(text, st.st_mode)
    return target


def same_file(a: "str | os.PathLike[str]", b: "str | os.PathLike[str]") -> bool:
    """True when two paths name one file (links resolved, hard links too)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def _prefix(name: str) -> str:
    return f".{name[:_NAME_LIMIT]}{TEMP_MARK}"


def temporary_name(target: str, pid: int | None = None) -> str:
    """A fresh temporary path beside ``target``: ``.{name}.bob-tmp-{pid}-{random}``."""
    directory, name = os.path.split(target)
    pid = os.getpid() if pid is None else pid
    return os.path.join(directory or ".", f"{_prefix(name)}{pid}-{os.urandom(6).hex()}")


def _fsync_directory(directory: str) -> None:
    try:
        fd = os.open(directory or ".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - some filesystems refuse fsync on directories
        pass
    finally:
        os.close(fd)


def _create_temporary(target: str) -> tuple[str, int]:
    for _attempt in range(16):
        tmp = temporary_name(target)
        try:
            return tmp, os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _CLOEXEC, 0o666)
        except FileExistsError:  # 48 random bits: someone put it there
            continue
    raise FileExistsError(errno.EEXIST, "could not create a temporary file", target)


def write_atomic(path: "str | os.PathLike[str]", data: bytes | bytearray | memoryview) -> str:
    """Replace ``path`` (a regular file, or none; links followed) with ``data`` atomically.

    Returns the path actually replaced. If anything fails before the rename
    (a full disk, KeyboardInterrupt …) the temporary file is removed and the
    target is byte-identical. The new file keeps the old file's mode, or
    gets 0o666 minus the umask.
    """
    try:
        view = memoryview(data).cast("B")
    except TypeError:
        raise TypeError(f"the data to write must be bytes (or a bytes-like object), not {type(data).__name__}") from None
    target = replace_target(path)
    try:
        mode: int | None = os.stat(target).st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    tmp, fd = _create_temporary(target)
    try:
        try:
            if mode is not None:
                os.fchmod(fd, mode)
            written = 0
            while written < len(view):
                written += os.write(fd, view[written:])
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_directory(os.path.dirname(target))
    return target


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
        _fsync_directory(os.path.dirname(self.target))

    def discard(self) -> None:
        if self.link is not None:
            try:
                os.unlink(self.link)
            except FileNotFoundError:  # pragma: no cover
                pass
            self.link = None


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


def clean_stale_temporaries(path: "str | os.PathLike[str]") -> list[str]:
    """Remove the temporary files :func:`write_atomic` left beside ``path``'s
    target whose writing process is dead; return the paths removed.

    Temporaries of live processes (this one included) are left alone.
    """
    try:
        target = os.path.realpath(os.fspath(path))
    except (OSError, ValueError):  # pragma: no cover
        return []
    directory, name = os.path.split(target)
    prefix = _prefix(name)
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
        if pid == os.getpid() or _pid_alive(pid):
            continue
        full = os.path.join(directory, entry)
        try:
            if stat.S_ISREG(os.lstat(full).st_mode):
                os.unlink(full)
                removed.append(full)
        except OSError:
            continue
    return removed
