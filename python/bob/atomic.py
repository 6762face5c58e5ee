"""Replace a file atomically, and clean up what a killed writer left behind.

:func:`write_atomic` writes the new bytes to a temporary file in the target's
directory, named ``.{name}.bob-tmp-{pid}-{random}`` so it can be recognized,
flushes and fsyncs it, renames it over the target with ``os.replace`` and
fsyncs the directory. On any exception before the rename the temporary file
is removed and the target is untouched; a SIGKILL at any moment leaves the
target either the old or the new whole file (plus, at worst, a temporary
file that :func:`clean_stale_temporaries` removes once its writer is dead).

Standard library only.
"""

from __future__ import annotations

import os

__all__ = ["write_atomic", "clean_stale_temporaries", "temporary_name", "TEMP_MARK"]

TEMP_MARK = ".bob-tmp-"
_NAME_LIMIT = 180  # keeps the temporary name under the usual 255-byte limit


def _split(path: "str | os.PathLike[str]") -> tuple[str, str]:
    path = os.fspath(path)
    if isinstance(path, bytes):  # pragma: no cover - bob passes str paths
        path = os.fsdecode(path)
    directory, name = os.path.split(path)
    if not name:
        raise IsADirectoryError(f"not a file path: {path!r}")
    return directory or ".", name


def _prefix(name: str) -> str:
    return f".{name[:_NAME_LIMIT]}{TEMP_MARK}"


def temporary_name(path: "str | os.PathLike[str]", pid: int | None = None) -> str:
    """A fresh temporary path for ``path``: same directory, ``.{name}.bob-tmp-{pid}-{random}``."""
    directory, name = _split(path)
    pid = os.getpid() if pid is None else pid
    return os.path.join(directory, f"{_prefix(name)}{pid}-{os.urandom(6).hex()}")


def _fsync_directory(directory: str) -> None:
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(directory, flags)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - some filesystems refuse fsync on directories
        pass
    finally:
        os.close(fd)


def write_atomic(path: "str | os.PathLike[str]", data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically (temporary file, fsync, rename, fsync of the directory).

    If anything fails before the rename (including KeyboardInterrupt), the
    temporary file is removed and ``path`` is left byte-identical. The new
    file gets mode 0o666 minus the umask, or the old file's mode if it exists.
    """
    data = memoryview(data).cast("B")
    directory, _ = _split(path)
    target = os.fspath(path)
    try:
        mode = os.stat(target).st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    for _attempt in range(16):
        tmp = temporary_name(target)
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
            break
        except FileExistsError:  # pragma: no cover - 48 random bits
            continue
    else:  # pragma: no cover
        raise FileExistsError(f"could not create a temporary file next to {target!r}")
    try:
        try:
            if mode is not None:
                os.fchmod(fd, mode)
            written = 0
            while written < len(data):
                written += os.write(fd, data[written:])
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
    _fsync_directory(directory)


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    except OSError:  # pragma: no cover
        return True
    return True


def clean_stale_temporaries(path: "str | os.PathLike[str]") -> list[str]:
    """Remove the temporary files :func:`write_atomic` left for ``path`` whose
    writing process is no longer alive; return the paths removed.

    Temporaries of live processes (including this one) are left alone.
    """
    directory, name = _split(path)
    prefix = _prefix(name)
    removed: list[str] = []
    try:
        entries = os.listdir(directory)
    except FileNotFoundError:
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
            os.unlink(full)
        except FileNotFoundError:
            continue
        except IsADirectoryError:  # pragma: no cover - not ours
            continue
        removed.append(full)
    return removed
