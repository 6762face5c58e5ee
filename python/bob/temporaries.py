"""The temporary files a writer leaves beside its target when it is killed, and their removal.

:func:`bob.fileio.write_atomic` and ``bob-run``'s commit (:mod:`bob.commit`) stage each new file as
``.{name}.bob-tmp-{pid}-{12 hex}`` beside its target, and ``bob-run`` keeps a killed commit's old file as
such a name too (its backup link). :func:`clean_stale_temporaries` removes those their writer no longer
needs: ``bob-run`` under its targets' locks (:mod:`bob.lock`), the library's
``bob.clean_stale_temporaries`` without one. Standard library only.
"""

from __future__ import annotations

import os
import stat

from bob import fileio
from bob.errors import flag_value
from bob.fileio import TEMP_MARK, open_regular, sidecar_name
from bob.lock import lock_path_for, place
from bob.text import own_stream

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Sequence

__all__ = ["temporary_pid", "clean_stale_temporaries", "lock_held"]


def temporary_pid(tail: str) -> int | None:
    """The pid in what follows ``.bob-tmp-`` in a temporary's name (``{pid}-{12 hex}``), or None for other text
    (a user's file named after a target; "²" is a digit to ``str``)."""
    pid, _, token = tail.partition("-")
    return int(pid) if pid.isascii() and pid.isdigit() and len(token) == 12 and not token.strip("0123456789abcdef") \
        else None


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # (past any pid: no process)
        return False
    except OSError:  # PermissionError: someone else's live process
        return True
    return True


def clean_stale_temporaries(path: "str | os.PathLike[str]", *, holding_lock: bool = False,
                            keep: "Sequence[str | os.PathLike[str]]" = ()) -> list[str]:
    """Remove the temporary files :func:`bob.fileio.write_atomic` (and this commit) left beside ``path``'s
    target whose writing process is dead; return the paths removed.

    Temporaries of live processes (this one included) are left alone: a pid
    is all a writer without a lock can judge by. So is every temporary of a
    target whose lock may be held (:func:`lock_held`, asked just before each
    removal: in another PID namespace a live bob-run's pid looks dead, and
    its backups are the only copies of the old files). ``holding_lock``:
    the caller holds the target's lock (``bob-run``), so every temporary of
    the target is stale, whoever left it (a pid says nothing across PID namespaces:
    a run killed in a container was often pid 1). Only a lock file deleted under a
    live run (by another process of its user: no other user can in a sticky
    directory) lets another run take the lock and remove that run's backup; the
    run then says which file could not be put back (:mod:`bob.commit`).
    A name ``keep`` gives is left alone (:func:`bob.lock.place`: links followed, bind mounts seen through).
    """
    holding_lock = flag_value(holding_lock, "holding_lock")  # ("False" would remove live writers' files)
    fileio.refuse_if_working_directory_gone(path)  # ("" is no file: it named the working directory's own)
    try:
        target = os.path.realpath(os.fsdecode(path))  # (a bytes path as write_atomic takes it)
        kept = {place(os.path.realpath(os.fsdecode(given))) for given in keep}
    except (OSError, ValueError):  # pragma: no cover
        return []
    directory, name = os.path.split(target)
    prefix = sidecar_name(name, TEMP_MARK)
    removed: list[str] = []
    try:
        entries, home = os.listdir(directory or "."), os.stat(directory or ".")
    except OSError:
        return removed
    for entry in entries:
        if not entry.startswith(prefix):
            continue
        if (pid := temporary_pid(entry[len(prefix):])) is None:  # (only temporary_name's: never another
            continue  # target's temporary)
        if not holding_lock and (pid == os.getpid() or _pid_alive(pid) or lock_held(target)):
            continue  # (a bob-run removes its temporaries before it gives up its lock: one left once it is free is stale)
        full = os.path.join(directory, entry)
        if (home.st_dev, home.st_ino, entry) in kept:
            continue
        try:
            if stat.S_ISREG((st := os.lstat(full)).st_mode) and own_stream(st) is None:  # (never what it prints to)
                os.unlink(full)
                removed.append(full)
        except OSError:
            continue
    return removed


def lock_held(target: str) -> bool:
    """Whether a bob-run may hold ``target``'s lock: its lock file is locked, or cannot be examined (another
    user's this one cannot read, anything but a regular file). Asked without creating the file, for an instant
    (a shared ``flock``, given up at once): a bob-run that tries its lock in that instant may find it busy."""
    import fcntl

    try:
        fd, _ = open_regular(lock_path_for(target), os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except OSError:  # (BlockingIOError: held)
        return True
    finally:
        os.close(fd)
