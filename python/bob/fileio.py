"""bob's files on disk: one bounded reader, one atomic writer, one rule for paths.

``bob-run``, ``bob-fixture``, ``bob-inspect`` and the library read and replace files only through here and
:mod:`bob.commit`, bob-run's commit built on it (``tests/house/test_house.py`` holds that; ``bob-fuzz`` and
``bob-qualify`` write their corpora, scratch files and reports directly), so every path they are given gets the
same treatment:

* **Only regular files.** :func:`open_regular` opens only what ``stat`` says is one (opening a FIFO wakes its
  writer), then decides from ``fstat`` of the descriptor; :func:`replace_target` refuses to replace anything but a
  regular file (or a missing one). A directory, a FIFO, a socket or a device raises :class:`NotARegularFile`,
  before anything is opened, read or created (the three exceptions: :mod:`bob.errors`, importable from here too).
* **Bounded.** A file over the caller's limit is never read: :class:`FileTooLarge` carries its size and first bytes.
* **Symbolic links are followed.** Replacing ``path`` replaces the file a link points to (the temporary file
  lives in the *target's* directory and the link stays a link); :func:`replace_target` gives that resolved path,
  which is also what ``bob-run`` locks; not the path's own link (or one it leads to) another user put in a sticky
  directory others can write (a link among the directories: the kernel's to judge).
* **Resolved by the kernel.** The directory part of a path is ``stat``-ed as given (``nope/../ck`` is refused
  when ``nope`` does not exist, as the kernel would refuse it), and the string resolution of links must name the
  same directory; a relative path after the working directory was deleted is refused by name.
* **Only files their owner may replace.** :func:`replace_target` refuses a file with more than one hard link
  (replacing one name would split it from the others), a file whose owner or this user cannot write it (mode
  0444), and another user's file in a sticky directory (renaming over it would fail halfway through a commit),
  with :class:`NotReplaceable`.
* **Atomic.** :func:`write_atomic` writes a temporary file beside the target, fsyncs it, renames it over the
  target and fsyncs the directory; on any failure the target is byte-identical, the temporary file is gone and
  an OS error names the target. A SIGKILL leaves at worst a temporary ``.{name}.bob-tmp-{pid}-{random}``, which
  ``bob-run`` removes under its targets' locks, and :func:`bob.temporaries.clean_stale_temporaries` once its writer is
  dead (the exact rollback of a commit: :class:`bob.backup.Backup`).
* **Names within NAME_MAX.** Every name bob puts beside a target (temporaries, the lock) comes from
  :func:`sidecar_name`: a target's name over 214 bytes (NAME_MAX less ``_TAG_ROOM`` and the dot) keeps a prefix
  of itself and a hash of all of it.

Standard library only: ``bob-run`` uses this module on its fast path.
"""

from __future__ import annotations

import errno
import os
import stat
from contextlib import suppress

from bob.errors import FileTooLarge, NotARegularFile, NotReplaceable, byte_buffer
from bob.signals import step_and_record

__all__ = ["NotARegularFile", "NotReplaceable", "FileTooLarge", "open_regular", "read_bounded", "read_bounded_buffer",
           "replace_target", "same_file", "check_directory", "refuse_if_working_directory_gone", "make_directory",
           "remove_empty_directories", "refuse_unreplaceable", "identity", "stage", "discard_temporary",
           "fsync_directory", "write_atomic", "temporary_name", "sidecar_name", "read_to_end", "TEMP_MARK"]

TEMP_MARK = ".bob-tmp-"
NAME_MAX = 255  # bytes in one file name on every filesystem bob is used on (Linux, macOS)
_TAG_ROOM = 40  # bytes kept for what follows the target's name: ".bob-tmp-{pid}-{12 hex}" and ".bob-lock"
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_HEAD = 16  # bytes of a too-large file kept to name its format
_SHARED = stat.S_ISVTX | stat.S_IWOTH  # a sticky directory others can write (/tmp): a link there may be a trap


def read_bounded(path: "str | os.PathLike[str]", limit: int) -> bytes | None:
    """The bytes of the regular file ``path`` (at most ``limit``), or None if it does not exist.

    Raises :class:`NotARegularFile` for anything but a regular file (:func:`open_regular`: from its ``stat``, then
    ``fstat`` of the one descriptor opened), :class:`FileTooLarge` for a file over ``limit`` bytes (only its first
    bytes are read), and the usual ``OSError`` for a path that cannot be opened."""
    return None if (data := read_bounded_buffer(path, limit)) is None else bytes(data)


def read_bounded_buffer(path: "str | os.PathLike[str]", limit: int) -> bytearray | None:
    """:func:`read_bounded`, giving the buffer the file was read into (no copy): ``bob-run`` trains in it."""
    try:
        fd, st = open_regular(path, os.O_RDONLY)
    except FileNotFoundError:
        refuse_if_working_directory_gone(path)  # (not "no such file": an empty path, or the directory gone)
        return None
    try:
        if st.st_size > limit:
            raise FileTooLarge(st.st_size, os.read(fd, _HEAD))
        data = read_to_end(fd, st.st_size, limit)
        if len(data) > limit:  # its first bytes read in full, to name its format
            head = bytes(data[:_HEAD]) + os.read(fd, max(0, _HEAD - len(data)))
            raise FileTooLarge(max(len(data), len(head)), head, partial=True)
        return data
    finally:
        os.close(fd)


def open_regular(path: "str | os.PathLike[str]", flags: int, mode: int = 0o666) -> "tuple[int, os.stat_result]":
    """A descriptor of the regular file ``path`` and its ``fstat``, opened with ``flags`` and what every path bob is
    given is opened with: ``O_NONBLOCK`` (a FIFO swapped in does not hang the open), ``O_NOCTTY`` (a terminal does
    not become bob's controlling terminal) and ``O_CLOEXEC``.

    Anything but a regular file is :class:`NotARegularFile`, decided from the path's ``stat`` before the open (opening
    a FIFO wakes its writer, a device may act on it; ``lstat`` under ``O_NOFOLLOW``: a link keeps the open's own error),
    then from the ``fstat`` of the descriptor, or where the open fails (a socket cannot be opened) from ``stat`` again.
    Any other failure is the open's ``OSError``."""
    def kind() -> int:  # (regular where it cannot be told: the open says why)
        try:
            return os.stat(path, follow_symlinks=not flags & os.O_NOFOLLOW).st_mode
        except OSError:
            return stat.S_IFREG
    st_mode, fd = kind(), -1
    if stat.S_ISREG(st_mode) or stat.S_ISLNK(st_mode):
        try:
            fd = os.open(path, flags | os.O_NONBLOCK | os.O_NOCTTY | _CLOEXEC, mode)
        except OSError:
            if stat.S_ISREG(st_mode := kind()) or stat.S_ISLNK(st_mode):
                raise  # (else no regular file, whatever the open's own error, EMFILE too: said outside its context)
    if fd < 0:
        raise NotARegularFile(path, st_mode)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotARegularFile(path, st.st_mode)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def read_to_end(fd: int, size: int, limit: int) -> bytearray:
    """What is left to read of ``fd``, read straight into one buffer of the file's size; at most ``limit`` + 1
    bytes (one more tells a file that grew while it was read)."""
    data, got = bytearray(size + 1), 0
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


def replace_target(path: "str | os.PathLike[str]", *, check_replaceable: bool = True) -> str:
    """The file that replacing ``path`` would replace: symbolic links resolved. The directory part is resolved by
    the kernel (``stat``), not by string normalisation; the resolved target must lie in the directory the kernel
    names. Raises :class:`NotARegularFile` when the target exists and is not a regular file, :class:`NotReplaceable`
    when it has other hard links, its owner cannot write it or a link on the way is another user's in a sticky
    directory, ``FileNotFoundError`` naming the directory when that does not exist (or the working directory is
    gone), ``IsADirectoryError`` for a path that ends in a slash. ``check_replaceable=False`` leaves the first two
    to the caller (``bob-run``, under its lock, once a killed run's backup link is removed)."""
    text = os.fsdecode(path)
    directory, name = os.path.split(text)
    if not name:
        raise IsADirectoryError(errno.EISDIR, "a directory path, not a file" if text else "an empty path", text)
    hop, where = text, _directory_stat(directory, text)
    target = os.path.realpath(text)
    for _ in range(40):  # each link's text as the kernel reads it (nope/../x, x/): not as realpath's strings
        if not os.path.islink(hop):
            break
        if where.st_mode & _SHARED == _SHARED and (owner := os.lstat(hop).st_uid) not in (os.geteuid(), where.st_uid):
            raise NotReplaceable(text, f"it leads through a link another user (uid {owner}) put in a sticky directory "
                                       "others can write; bob follows none (as the kernel's fs.protected_symlinks)")
        if (link := os.readlink(hop)).endswith("/"):
            raise IsADirectoryError(errno.EISDIR, "a link to a directory path, not a file", text)
        hop = os.path.join(os.path.dirname(hop), link)
        where = _directory_stat(os.path.dirname(hop), text)
    try:
        st = os.stat(text)
    except FileNotFoundError:  # to be created: at the end of a dangling link, or here
        if not os.path.samestat(where, _directory_stat(os.path.dirname(target), text)):
            raise FileNotFoundError(errno.ENOENT, "its directory changed while it was resolved", text) from None
        return target
    if not stat.S_ISREG(st.st_mode):
        raise NotARegularFile(text, st.st_mode)
    if identity(text) != identity(target):  # (a rename over it since: the same; /proc/PID/fd/N of a deleted file: not)
        raise FileNotFoundError(errno.ENOENT, "it changed while its links were resolved, or names a deleted file", text)
    if check_replaceable:
        refuse_unreplaceable(text, st)
    return target


def check_directory(path: "str | os.PathLike[str]") -> None:
    """Refuse (``FileNotFoundError``) a path whose directory the kernel cannot find (``nope/..``, cwd gone)."""
    _directory_stat(os.path.dirname(text := os.fsdecode(path)), text)


def refuse_if_working_directory_gone(path: "str | os.PathLike[str]") -> None:
    """Refuse (``FileNotFoundError``) an empty path, or a relative one once the working directory is gone."""
    if not os.fspath(path):  # (the kernel's "no such file" would read as a missing file: a fresh start)
        raise FileNotFoundError(errno.ENOENT, "an empty path", "")
    if not os.path.isabs(path):
        try:
            os.getcwd()
        except FileNotFoundError:
            raise FileNotFoundError(errno.ENOENT, "a relative path, and the working directory no longer exists",
                                    os.fspath(path)) from None


def _directory_stat(directory: str, path: str) -> os.stat_result:
    """The kernel's ``stat`` of the directory a path names, or the error that names why there is none."""
    refuse_if_working_directory_gone(path)
    try:
        st = os.stat(directory or ".")
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise FileNotFoundError(errno.ENOENT, "its directory does not exist" if isinstance(exc, FileNotFoundError)
                                else "a part of its directory is not a directory", path) from None
    if not stat.S_ISDIR(st.st_mode):  # ("afile/x": its directory is a file)
        raise FileNotFoundError(errno.ENOENT, "its directory is not a directory", path)
    return st


def identity(path: "str | os.PathLike[str]", *, follow_symlinks: bool = True) -> "tuple[int, int] | None":
    """(device, inode) of what ``path`` names now, or None when it names nothing."""
    with suppress(OSError):
        return (st := os.stat(path, follow_symlinks=follow_symlinks)).st_dev, st.st_ino
    return None


def refuse_unreplaceable(path: str, st: "os.stat_result | None" = None) -> None:
    """Raise :class:`NotReplaceable` if bob must not replace the regular file
    ``path`` (``st``: its stat, taken here when not given; a missing file is fine)."""
    if st is None:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return
    if st.st_nlink > 1:
        raise NotReplaceable(path, f"it has {st.st_nlink} hard links; replacing it would split this name from "
                                   "the others (bob replaces only files with one link)")
    if not st.st_mode & stat.S_IWUSR:
        raise NotReplaceable(path, f"it is read-only (mode {st.st_mode & 0o7777:04o}); bob replaces only files "
                                   "their owner can write")
    if not os.access(path, os.W_OK):  # (on a file system mounted read-only, not for want of rights)
        raise NotReplaceable(path, "its file system is mounted read-only" if os.statvfs(path).f_flag & os.ST_RDONLY
                             else f"this user (uid {os.geteuid()}) cannot write it (its owner is uid {st.st_uid}, "
                                  f"mode {st.st_mode & 0o7777:04o})")
    # In a sticky directory only the file's owner, the directory's or root may rename over it: a run
    # would otherwise fail halfway through its commit, with a backup link it could not remove.
    home = os.stat(os.path.dirname(os.path.realpath(path)))
    if home.st_mode & stat.S_ISVTX and os.geteuid() not in (0, st.st_uid, home.st_uid):
        raise NotReplaceable(path, f"it is another user's (uid {st.st_uid}) in a sticky directory, where only its "
                                   "owner may replace it")


def make_directory(path: "str | os.PathLike[str]", into: "list[str] | None" = None) -> list[str]:
    """Create the directory ``path`` and its parents if missing (``PermissionError`` if bob cannot write into it,
    EROFS on a read-only mount); return those it made, outermost first, each put on ``into`` too as it is made (no
    signal falls between a directory and the cleanup's list of them); when it fails part-way, it removes them."""
    refuse_if_working_directory_gone(path)
    made, start = ([], 0) if into is None else (into, len(into))
    chain, name = [], os.fspath(path)  # it and its missing parents, innermost first: os.makedirs's walk as a loop
    while True:  # (no RecursionError a thousand levels deep), keeping what mkdir itself made ("a/../b": a and b)
        head, tail = os.path.split(name)
        if not tail:
            head, tail = os.path.split(head)
        chain.append((name, tail))
        if not (head and tail and not os.path.exists(head)):
            break
        name = head
    try:
        for k, (name, tail) in enumerate(reversed(chain)):
            if k and tail == os.curdir:  # ("a/." once a is made)
                continue
            try:
                with step_and_record():
                    os.mkdir(name)
                    made.append(name)
            except OSError as exc:
                if not os.path.isdir(name):
                    if isinstance(exc, FileExistsError):  # a link leading nowhere: its own reason (a loop, no target)
                        os.stat(name)
                    raise
        if not os.access(path, os.W_OK | os.X_OK):  # a read-only mount said as the kernel says it
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fspath(path)) if os.statvfs(path).f_flag & \
                os.ST_RDONLY else PermissionError(errno.EACCES, "permission denied", os.fspath(path))
    except BaseException:
        remove_empty_directories(made[start:])
        del made[start:]
        raise
    return made[start:]


def remove_empty_directories(made: "list[str]") -> None:
    """Remove the directories :func:`make_directory` made, innermost first, that are still empty."""
    for directory in reversed(made):
        with suppress(OSError):  # not empty, or not there: kept as it is
            os.rmdir(directory)


def same_file(a: "str | os.PathLike[str]", b: "str | os.PathLike[str]") -> bool:
    """True when two paths name one file (links resolved, hard links too), or, where neither exists
    yet, one name in one directory (a bind mount shows a directory at two paths)."""
    try:
        real = os.path.realpath(a), os.path.realpath(b)
    except OSError:  # the working directory is gone: only the kernel can say
        real = os.fspath(a), os.fspath(b)
    with suppress(OSError, ValueError):
        return real[0] == real[1] or os.path.samefile(a, b)
    with suppress(OSError, ValueError):  # one is missing: both are, if they are one name in one directory
        return os.path.basename(real[0]) == os.path.basename(real[1]) and os.path.samefile(*map(os.path.dirname, real))
    return False


def sidecar_name(target: str, tag: str) -> str:
    """A file bob keeps beside ``target``: ``.{name}{tag}``, within NAME_MAX (a name too long for the tag keeps a
    prefix of itself and a hash of all of itself, FNV-1a 64-bit, so long names never share one)."""
    raw = os.fsencode(name := os.path.basename(target))
    if len(raw) + _TAG_ROOM + 1 <= NAME_MAX:
        return f".{name}{tag}"
    digest = 0xCBF29CE484222325
    for byte in raw:
        digest = ((digest ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    keep = raw[:NAME_MAX - _TAG_ROOM - 1 - 17]  # a cut through a UTF-8 sequence round-trips (surrogateescape)
    return f".{os.fsdecode(keep)}~{digest:016x}{tag}"


def temporary_name(target: str, pid: int | None = None) -> str:
    """A fresh temporary path beside ``target``: ``.{name}.bob-tmp-{pid}-{random}``."""
    directory, name = os.path.split(target)
    pid = os.getpid() if pid is None else pid
    return os.path.join(directory or ".", f"{sidecar_name(name, TEMP_MARK)}{pid}-{os.urandom(6).hex()}")


def fsync_directory(directory: "str | os.PathLike[str] | int", strict: bool = False) -> None:
    """Sync a directory, given by its path or by a descriptor (a commit's ``O_PATH`` one: its "." is synced)."""
    path, at = (".", directory) if isinstance(directory, int) else (os.fspath(directory) or ".", None)
    try:
        fd = os.open(path, os.O_DIRECTORY | _CLOEXEC, dir_fd=at)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:  # a filesystem that refuses it; ``strict`` (a commit's): any other error is said,
        if strict and exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.ENOSYS):  # a directory not readable too
            raise


def _create_temporary(target: str, made: "list[str]") -> int:
    for _attempt in range(16):
        made.append(temporary_name(target))  # named before it exists: a signal once it does leaves no file unnamed
        try:
            return os.open(made[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | _CLOEXEC, 0o666)
        except FileExistsError:  # 48 random bits: someone put it there
            made.pop()
    raise FileExistsError(errno.EEXIST, "could not create a temporary file", target)


def write_atomic(path: "str | os.PathLike[str]", data: bytes | bytearray | memoryview) -> str:
    """Replace ``path`` (a regular file, or none; links followed) with ``data`` atomically; returns the path
    actually replaced. If anything fails before the rename (a full disk, KeyboardInterrupt …) the temporary
    file is removed and the target is byte-identical. The new file keeps the old file's mode (and, where this
    user may give it, owner and group: root), or gets 0o666 minus the umask."""
    view = byte_buffer(data, "the data to write", flat=True, str_hint=False)
    target, made = replace_target(path), list[str]()
    try:
        os.replace(stage(target, view, os.fsdecode(path), made=made), target)
    except BaseException:
        for tmp in made:
            discard_temporary(tmp)
        raise
    fsync_directory(os.path.dirname(target))
    return target


def stage(target: str, data: "bytes | bytearray | memoryview", named: str | None = None,
          made: "list[str] | None" = None) -> str:
    """Write ``data`` to a new fsynced temporary beside the resolved ``target`` (its mode; as root, its owner), and
    return its path: nothing visible changes until it is renamed; on any failure it is gone, and an OS error names
    ``named`` (the path as the caller gave it), else ``target`` (a read-only directory: not a temporary never made).
    ``made``: the caller's list, which holds the path before the file exists (a signal never leaves one unnamed)."""
    view = memoryview(data).cast("B")
    try:
        old: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        old = None
    made, first = ([], 0) if made is None else (made, len(made))
    try:
        fd = _create_temporary(target, made)
        try:
            if old is not None:
                if (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):  # root replacing a user's file: theirs
                    with suppress(OSError):  # best effort (not root: EPERM; an id a user namespace lacks: EINVAL)
                        os.fchown(fd, old.st_uid, old.st_gid)  # before the mode: a chown clears setuid
                os.fchmod(fd, old.st_mode & 0o7777)
            written = 0
            while written < len(view):
                written += os.write(fd, view[written:])
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException as exc:
        while len(made) > first:
            discard_temporary(made.pop())
        if isinstance(exc, OSError) and exc.errno is not None:  # the kernel's (a full disk, ulimit -f): which file
            exc.filename = named or target
        raise
    return made[-1]


def discard_temporary(tmp: str) -> None:
    """Remove a file bob made (a temporary, a failed corpus's file), if it is still there."""  # (renamed: not)
    with suppress(OSError):
        os.unlink(tmp)
