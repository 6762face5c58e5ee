"""When the machine fails, not the input: out of memory, NumPy (or its BLAS) unable to load.

Such a failure is a command's unexpected exit (70 where 1 means "found
something", 1 for ``bob-run`` and ``bob-fixture``), never a finding, a
difference or a failed check; :func:`bob.commands.run_command` is the one
place that says so, with what this module gives it:

* :class:`LastWords`: the one line (and, under ``--json``, the envelope)
  that reports running out of memory, built before the work starts, so
  that reporting it allocates nothing of note (:meth:`LastWords.say`
  writes the prepared bytes when even the ordinary report fails);
* :func:`drawing`: started only where :data:`DRAWING_HEADROOM` bytes are
  free (NumPy, out of address space in a ufunc's buffers with the GIL
  released, sets its MemoryError without a thread state: SIGSEGV, no
  report), and matplotlib and Pillow out of memory said as such (they
  raise their own ValueError or OSError);
* :func:`load_numpy`: NumPy imported before the work, where address space
  is limited (``ulimit -v``) only after :data:`NUMPY_HEADROOM` bytes were
  found free, and with one BLAS thread unless the environment names
  another count. NumPy's OpenBLAS reserves a buffer for each of its
  threads as it loads, and its work buffer at its first call (which
  matplotlib makes inverting a transform); when that fails it ends the
  process with exit 1 ("OpenBLAS error: Memory allocation still failed"),
  which no handler sees: the headroom is checked first and the first call
  made within it, so the command exits 70 instead.

Standard library only.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable, Iterator

__all__ = ["OUT_OF_MEMORY", "NUMPY_HEADROOM", "DRAWING_HEADROOM", "LastWords", "load_numpy", "room_to_load",
           "out_of_memory", "drawing", "numpy_import_error", "one_blas_thread"]

OUT_OF_MEMORY = "out of memory"  # the message's start: a parent reading a child's --json tells it by this
# NumPy and one OpenBLAS thread's buffers take about 80 MiB of address space as they load (one more
# buffer, about 32 MiB, for each further thread): found free before NumPy is imported.
NUMPY_HEADROOM = 160 << 20
# A figure drawn and encoded (its fonts' cache built on a first run) takes up to about 70 MiB: found free
# before drawing starts, so that drawing never runs out midway.
DRAWING_HEADROOM = 128 << 20
_BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


class LastWords:
    """The out-of-memory report of one command, prepared: stderr's line and
    (``as_json``) stdout's envelope, as bytes. Made as the command starts
    and :meth:`done` as it ends; a command run inside another (a fuzz
    target runs ``bob-inspect`` in process) leaves the report to the outer one."""

    running: "list[LastWords]" = []  # the commands running in this process, outermost first

    def __init__(self, prog: str, command: str, code: int, as_json: bool) -> None:
        self.code: int = code
        self.message: str = f"{OUT_OF_MEMORY}: the machine could not give bob the memory it needed"
        self.line: bytes = f"{prog}: {self.message}\n".encode()
        self.document: bytes = b""
        if as_json:
            import json

            error = {"option": None, "path": None, "field": None, "message": self.message, "exit_code": code,
                     "text": self.message}
            self.document = (json.dumps({"command": command, "ok": False, "exit_code": code, "error": error},
                                        sort_keys=True) + "\n").encode()
        LastWords.running.append(self)

    def done(self) -> None:
        LastWords.running.remove(self)

    def report(self, ordinary: "Callable[[], int]") -> int:
        """Inside the handler of a MemoryError (or of an ImportError for want of address space): re-raise
        it inside another command; else the ``ordinary`` report's exit code, or, if that too runs out,
        :meth:`say`'s."""
        if LastWords.running[0] is not self:
            raise  # noqa: PLE0704 - the MemoryError being handled
        try:
            return ordinary()
        except MemoryError:
            return self.say()

    def say(self) -> int:
        """Write the prepared report (nothing is allocated but the calls); the exit code."""
        for stream in (sys.stderr, sys.stdout):  # what they hold goes first
            try:
                stream.flush()
            except (OSError, ValueError, MemoryError, AttributeError):  # (AttributeError: a stream never open, None)
                pass
        for fd, data in ((2, self.line), (1, self.document)):
            try:
                if data:
                    os.write(fd, data)
            except (OSError, ValueError, MemoryError):
                pass
        return self.code


def room_to_load(size: int = 16 << 20) -> bool:
    """Whether ``size`` more bytes of address space can be mapped (only asked under a finite ``ulimit -v``):
    an extension module that failed to load where they cannot failed for want of memory, not of the module."""
    try:
        import resource

        if resource.getrlimit(resource.RLIMIT_AS)[0] == resource.RLIM_INFINITY:
            return True
        import mmap

        mmap.mmap(-1, size).close()  # reserved, never touched: no memory is used
    except (OSError, MemoryError, ValueError, ImportError):  # ImportError: the loader could not map
        return False  # even a standard extension module's segments, so there is no room at all
    return True


def out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is the machine's want of memory: a MemoryError, ENOMEM, or a module that could not be
    loaded (an extension's segments not mapped, CPython's own allocation: SystemError) where no address space
    is left; or an error raised while one of these was handled (zipfile closing a BytesIO that a failed write
    left closed: "ValueError: I/O operation on closed file."). The runner asks it, and the scripts of an import
    that failed before the runner could."""
    seen: "list[BaseException]" = []
    each: "BaseException | None" = exc
    while each is not None and each not in seen:
        if isinstance(each, MemoryError) or getattr(each, "errno", None) == errno.ENOMEM or (
                isinstance(each, (ImportError, SystemError)) and not room_to_load()):
            return True
        seen.append(each)
        each = each.__cause__ or (None if each.__suppress_context__ else each.__context__)  # (raise … from None)
    return False


@contextlib.contextmanager
def drawing() -> "Iterator[None]":
    """Around matplotlib's and Pillow's drawing only: out of memory they raise their own ValueError ("Input
    array could not be made C-contiguous") or OSError (an encoder's), which is a MemoryError, the original
    chained, where no address space is left (:func:`room_to_load`); anywhere else these stay what they are.
    A MemoryError at once where :data:`DRAWING_HEADROOM` is not free (see the module). In matplotlib's own
    style (:func:`bob.distribution.plot_style`)."""
    if not room_to_load(DRAWING_HEADROOM):
        raise MemoryError(f"less than {DRAWING_HEADROOM >> 20} MiB of address space left to draw")
    from bob.distribution import plot_style

    try:
        with plot_style():
            yield
    except (ValueError, OSError) as exc:
        if room_to_load():
            raise
        raise MemoryError(f"no address space left while drawing ({type(exc).__name__}: {exc})") from exc


def load_numpy() -> None:
    """Import NumPy (see the module); MemoryError when the address space left cannot hold it."""
    if "numpy" in sys.modules:
        return
    if not room_to_load(NUMPY_HEADROOM):
        raise MemoryError(f"less than {NUMPY_HEADROOM >> 20} MiB of address space left for NumPy")
    with one_blas_thread():
        import numpy

        numpy.linalg.inv(numpy.eye(2))  # OpenBLAS's first call, within the headroom (see the module)


@contextlib.contextmanager
def one_blas_thread() -> "Iterator[None]":
    """A NumPy first imported within loads OpenBLAS with one thread, unless the environment names another count
    (bob needs no BLAS; a pool's start alone costs a short process as much CPU as its work)."""
    unset = not any(os.environ.get(name) for name in _BLAS_THREADS)
    if unset:
        os.environ["OPENBLAS_NUM_THREADS"] = "1"  # read once, as OpenBLAS loads; children keep their own
    try:
        yield
    finally:
        if unset:
            del os.environ["OPENBLAS_NUM_THREADS"]


def numpy_import_error() -> "ImportError | None":
    """:func:`load_numpy`, a NumPy that does not import returned, not raised: the runner loads NumPy before the
    script's hold on the signals is released (a Ctrl-C is never lost inside its import) and raises this only once
    the command line asks for work (``--version`` and ``--help`` answer without NumPy, argparse's usage errors come
    first). An ImportError an interruption is behind is raised at once: the interruption is reported."""
    from bob.signals import interruption_in

    try:
        load_numpy()
    except ImportError as exc:
        if interruption_in(exc) is not None:
            raise
        return exc
    return None
