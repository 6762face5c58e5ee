"""The scratch directories of bob-qualify and bob-fuzz: made where a temporary directory can be made (and where
none can, the reason said as the machine's shortage), removed whole, and never left half made or half removed by
a SIGINT, SIGTERM or SIGHUP (:class:`bob.signals.Deferral`)."""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
from contextlib import suppress

from bob.signals import Deferral

__all__ = ["scratch_directory", "temporary_directory"]


def temporary_directory(prefix: str) -> str:
    """``tempfile.mkdtemp(prefix=prefix)``, except where tempfile finds no usable temporary directory (its 4-byte
    test write failed in each: ``ulimit -f 0``, a full disk): tempfile's FileNotFoundError (ENOENT) read as a
    failed check, not the machine's shortage. The directory is then made in the first of tempfile's candidates
    that takes it, so the write that fails there says why (EFBIG, ENOSPC); where none does, the first such
    shortage is raised, else tempfile's error."""
    try:
        return tempfile.mkdtemp(prefix=prefix)
    except FileNotFoundError as none_usable:
        if tempfile.tempdir is not None:  # (one was chosen before, and is gone: that is the error)
            raise
        failed: list[OSError] = []
        for candidate in getattr(tempfile, "_candidate_tempdir_list", list)():  # (TMPDIR, /tmp, ...: as tried)
            try:
                return tempfile.mkdtemp(prefix=prefix, dir=os.path.abspath(candidate))
            except OSError as exc:
                failed.append(exc)
        raise next((e for e in failed if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)), none_usable)


class scratch_directory:
    """``with scratch_directory(prefix) as path``: a new temporary directory, removed whole when the block
    ends, bob-qualify's and bob-fuzz's. A SIGINT, SIGTERM or SIGHUP that arrives as it is made waits until it has
    a name (then it is removed, and the signal acts), and one that arrives while it is removed waits until it is
    gone (``tempfile.TemporaryDirectory``'s removal was cut short by one, leaving a check's 786 KB checkpoint
    behind); the removal: :func:`_remove_tree`."""

    prefix: str
    path: str
    """The directory, once the block has begun."""

    def __init__(self, prefix: str) -> None:
        self.prefix, self.path = prefix, ""

    def __enter__(self) -> str:
        made = Deferral()
        made.begin()
        try:
            self.path = temporary_directory(self.prefix)
            if made.pending:
                _remove_tree(self.path)
        finally:
            made.end()
        made.check()
        return self.path

    def __exit__(self, kind: "type[BaseException] | None", value: "BaseException | None", traceback: object) -> None:
        deferral = Deferral()  # (a signal already ending the command: one more during the removal is only recorded)
        deferral.begin()
        try:
            _remove_tree(self.path)
        finally:
            deferral.end()
        if kind is None or not issubclass(kind, KeyboardInterrupt):
            deferral.check()  # raised once the directory is gone (chained to an error in the block: it ends all)


def _remove_tree(path: str) -> None:
    """``path`` removed whole as far as it can be (a tree left behind is not the command's failure): by
    ``shutil.rmtree``, then what that left, bottom up with one directory open at a time and never through a
    link: out of descriptors (``ulimit -n``: rmtree holds one a level), or a directory a reader made read-only.
    A link put in ``path``'s place (a reader's, or another user's in a TMPDIR without the sticky bit) is removed,
    and what it leads to is left as it is: rmtree refuses it, and the walk never starts through it."""
    shutil.rmtree(path, ignore_errors=True)
    with suppress(OSError):
        root = os.lstat(path)
        if stat.S_ISDIR(root.st_mode):
            real = os.path.realpath(path)
            for top, dirs, files in os.walk(path, topdown=False):
                # (a directory swapped for a link since it was listed, at any depth, or the root: left)
                if os.path.commonpath([real, os.path.realpath(top)]) == real and os.path.samestat(os.lstat(path), root):
                    for name in files + dirs:
                        _remove(os.path.join(top, name))
    _remove(path)


def _remove(path: str) -> None:
    """A file, a link or an empty directory, if it can be removed; its directory made writable once if it
    was read-only (as ``tempfile.TemporaryDirectory`` does)."""
    for attempt in range(2):
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                os.rmdir(path)
            else:
                os.unlink(path)
            return
        except PermissionError:
            parent = os.path.dirname(path)
            if attempt or os.path.islink(parent):
                return
            try:
                os.chmod(parent, stat.S_IRWXU)
            except OSError:
                return
        except OSError:
            return
