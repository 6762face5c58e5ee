"""What a refusal is, in every command: the exit codes, :class:`Refused` (one line naming the option, the
path and the field) and an OS error's reason. :mod:`bob.commands`, the shared runner, exports them with
the rest. Standard library only (``bob-run`` imports it on its fast path)."""

from __future__ import annotations

import errno
import os

from bob.text import one_line, show_path

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

__all__ = ["EXIT_OK", "EXIT_UNEXPECTED", "EXIT_FOUND", "EXIT_REFUSED", "EXIT_SOFTWARE", "EXIT_BUSY",
           "EXIT_INTERRUPTED", "RESOURCE_ERRNOS", "PATH_MAX", "Refused", "os_reason", "the_machine_ran_out"]

EXIT_OK = 0
EXIT_UNEXPECTED = 1
EXIT_FOUND = 1  # bob-fuzz, bob-qualify, bob-inspect diff: a finding, a failed check, a difference
EXIT_REFUSED = 2
EXIT_SOFTWARE = 70  # EX_SOFTWARE: "unexpected" where exit 1 means "found something"
EXIT_BUSY = 75  # EX_TEMPFAIL: try again later
EXIT_INTERRUPTED = 130  # Ctrl-C before the commit; SIGTERM and SIGHUP give 128 + their number

# OS errors that are the machine's, not the file's: out of memory, out of descriptors (ulimit -n), out of
# kernel buffers. Never "refused" (exit 2), which would tell a script the file is bad.
RESOURCE_ERRNOS = frozenset({errno.ENOMEM, errno.ENFILE, errno.EMFILE, errno.ENOBUFS})
PATH_MAX = 4096  # Linux's limit on a whole path, in bytes with its NUL


class Refused(Exception):
    """A refusal (exit 2 unless ``code`` says otherwise), in one line.

    ``option`` and ``path`` say which command-line file it is about;
    ``field`` names the format field for a refused file's content.
    """

    def __init__(self, message: str, *, option: str | None = None, path: Any = None,
                 field: str | None = None, code: int = EXIT_REFUSED, detail: "dict[str, Any] | None" = None) -> None:
        self.message: str = one_line(message)
        self.option: str | None = option
        self.path: str | None = None if path is None else show_path(path)
        self.field: str | None = field
        self.code: int = code
        self.detail: dict[str, Any] | None = detail
        super().__init__(self.text)

    @property
    def text(self) -> str:
        where = " ".join(x for x in (self.option, self.path) if x)
        return f"{where}: {self.message}" if where else self.message

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"option": self.option, "path": self.path, "field": self.field,
                               "message": self.message, "exit_code": self.code, "text": self.text}
        if self.detail:
            out["finding"] = self.detail
        return out


def the_machine_ran_out(refusal: BaseException) -> bool:
    """Whether an OS error of :data:`RESOURCE_ERRNOS` is behind ``refusal`` (its cause or the error being
    handled when it was raised): the machine's shortage, which the runner reports as unexpected, never as
    a refusal of the path the message names (a lock file, a reader, a worker)."""
    seen: BaseException | None = refusal
    for _ in range(8):  # (a chain bob makes is one or two links long)
        seen = seen.__cause__ or seen.__context__ if seen is not None else None
        if seen is None:
            return False
        if isinstance(seen, OSError) and seen.errno in RESOURCE_ERRNOS:
            return True
    return False


def os_reason(exc: OSError, path: "str | bytes | os.PathLike[str] | None" = None) -> str:
    """An OS error's reason in a few words (``no such file or directory``); a path too long is measured as the longer
    of the error's and ``path``, said with it (an output's, whose directory the error names; relative, resolved)."""
    reason = exc.strerror or (str(exc.args[0]) if exc.args else type(exc).__name__)
    size, name = max((len(os.fsencode(n)), os.fsdecode(n)) for n in (exc.filename, path, "")
                     if isinstance(n, (str, bytes, os.PathLike)))
    if exc.errno == errno.ENAMETOOLONG and size >= PATH_MAX:  # a short name in a deep working directory; the
        whole = " from /" if os.path.isabs(os.fsdecode(name)) else ""  # path refused: a prefix, maybe
        reason += f" (a path of {size} bytes{whole}; the system allows {PATH_MAX - 1})"
    if exc.errno == errno.EFBIG and exc.strerror == os.strerror(errno.EFBIG):  # (the system's: a write past a limit;
        # bob's own, a file too large for it to read, says so in its own words)
        reason += " (the file-size limit, ulimit -f, or the largest file its file system holds)"
    return one_line(reason[:1].lower() + reason[1:])
