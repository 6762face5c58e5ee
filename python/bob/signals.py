"""The signals that end a command — SIGINT, SIGTERM, SIGHUP — as one exception, deferrable.

A command that installs :func:`install` turns each of the three into
:class:`Interrupted` (a ``KeyboardInterrupt``, so ``except KeyboardInterrupt``
still catches Ctrl-C), raised where the main thread is, like Ctrl-C. Its
exit status is 128 + the signal's number (130, 143, 129), as a shell reports
a process the signal ended.

While a :class:`Deferral` is open (``bob-run``'s commit) the handler records the
signal instead of raising: a Python signal handler runs only between two
bytecodes of the main thread, so what it sees is exact, and no write, rename
or rollback is ever cut in half by it. The command then asks
:attr:`Deferral.pending` and tells the truth: interrupted before its commit
(nothing changed) or after it (the files are the new ones).

Once one has ended the command, another is only recorded while it cleans up, so that what it removes
or rolls back is not cut in half either.

Each installed command's script blocks the three as its first statement, so
one that arrives while bob is imported waits for the runner that can report it
(:class:`Reporting`). Once the outcome is decided they are only recorded, while
it is printed (:func:`printing`: unless the printing waits for a reader that
stopped reading) and after (:func:`printed`), and the hold comes back before
bob's handlers go (:func:`restore`), so the status printed is the process's.

A signal the parent process ignored (``nohup``, a background job's SIGINT),
or blocked, stays so. Standard library only, and ``_signal`` rather than
``signal`` (which imports ``enum``): ``bob-run`` installs this on every start.
"""

from __future__ import annotations

import sys

import _signal  # type: ignore[import-not-found]  # the C module under signal; it has no stub

__all__ = ["ENDING", "Interrupted", "install", "restore", "Deferral", "signal_name", "taken", "script_held",
           "run_script", "run_module", "Reporting", "interruption_in", "printing", "printed", "until_exit", "writing",
           "step_and_record"]

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable, Iterable
    from typing import NoReturn

ENDING = (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP)
_NAMES = {_signal.SIGINT: "SIGINT", _signal.SIGTERM: "SIGTERM", _signal.SIGHUP: "SIGHUP"}


def signal_name(signum: int) -> str:
    """``SIGTERM`` for 15; ``signal 10`` for one bob does not name."""
    return _NAMES.get(signum, f"signal {signum}")


class Interrupted(KeyboardInterrupt):
    """A SIGINT, SIGTERM or SIGHUP arrived; ``exit_code`` is 128 + its number."""

    def __init__(self, signum: int = _signal.SIGINT) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum

    def __str__(self) -> str:
        return f"interrupted by {signal_name(self.signum)}"

    def __reduce__(self):
        return type(self), (self.signum,)


_deferral: "Deferral | None" = None
_taken: list[int] = []


def taken() -> "tuple[int, ...]":
    """Every signal the handler has taken in this process, in order of arrival, deferred or raised:
    a harness that runs a command inside its own process (bob-fuzz's ``run`` target) asks it
    whether a signal meant for the harness arrived while the command ran."""
    return tuple(_taken)


def _handler(signum: int, frame: object) -> None:
    _taken.append(signum)
    if _deferral is not None:
        _deferral._arrived.append(signum)
        return
    if _phase is None or (_phase in _STALL_ENDS and _writing is not None and _full(_writing)):
        _ending()
        raise Interrupted(signum)


def _ending() -> None:
    """The command is ending on a signal: what it removes or rolls back on the way out is not cut short
    by another one (a second SIGTERM, a shell's Ctrl-C twice), which is only recorded (:func:`taken`),
    unless it waits on a write to a reader that stopped reading (a terminal stopped with Ctrl-S)."""
    global _phase
    _phase = "ending"


_STALL_ENDS = ("printing", "ending")  # a signal only recorded in these, unless a write waits on a stalled reader


def _full(fd: int) -> bool:
    """The descriptor takes nothing for a second: its reader stopped reading (a slow one goes on, and a
    closed descriptor does not wait)."""
    import select

    try:
        return not select.select([], [fd], [], 1.0)[1]
    except (OSError, ValueError):
        return False


_writing: "int | None" = None  # the descriptor bob.text.write_whole is writing a piece to
_since: "list[int]" = []  # how many signals had been taken when each running command's install() ran


class writing:  # noqa: N801 - used as a `with` statement
    """``with writing(fd):`` one piece of :func:`bob.text.write_whole`'s written to ``fd``. While an outcome is
    printed, a signal the command took (its interruption, or one recorded while printing) ends the
    printing here, before a piece ``fd`` cannot take: bob does not wait for a reader that stopped."""

    def __init__(self, fd: "int | None") -> None:
        self.fd = fd

    def __enter__(self) -> None:
        global _writing
        if _phase in _STALL_ENDS and _since and len(_taken) > _since[-1] and self.fd is not None and _full(self.fd):
            raise Interrupted(_taken[_since[-1]])
        _writing = self.fd

    def __exit__(self, *exc: object) -> None:
        global _writing
        _writing = None


script_held: "frozenset[int]" = frozenset()
"""The three that an installed command's script blocked as its first statement (:func:`run_script`;
not those its parent had blocked): they wait, pending, while bob is imported, for :class:`Reporting`."""


def run_script(main: "Callable[[], int]", parent_mask: "Iterable[int]") -> int:
    """An installed command's ``main()`` (its script blocked the three first; ``parent_mask``: the mask
    it replaced). A signal that cuts the printing of the outcome short ends it with that signal's status;
    once ``main`` has returned they are blocked again, so the status it printed is the process's."""
    global script_held
    script_held = frozenset(ENDING) - frozenset(parent_mask)
    try:
        return main()
    except KeyboardInterrupt as exc:
        return getattr(exc, "exit_code", 128 + _signal.SIGINT)
    finally:
        _signal.pthread_sigmask(_signal.SIG_BLOCK, script_held)


def run_module(main: "Callable[[], int]") -> "NoReturn":
    """``python -m bob.run`` and ``python -m bob.fixture``: ``main()`` as :func:`run_script` runs an installed
    command's, so that the status it printed is the process's (a signal in the teardown ended it 143 after an ok
    JSON); the hold comes after the module's own imports, a signal during them is CPython's."""
    parent_mask = _signal.pthread_sigmask(_signal.SIG_BLOCK, ENDING)
    sys.exit(run_script(main, parent_mask))


class Reporting:
    """``with Reporting():`` the runner's window (:func:`bob.commands.run_command`) in which a command
    works and the three act: the script's hold is released (one that arrived while bob was imported acts
    at once, reported by the runner). A Ctrl-C landing inside an import's callback, where CPython cannot
    raise it and would print a traceback, is dropped quietly: the command goes on and says what it did."""

    def __init__(self) -> None:
        self.unraisable: "Callable[[sys.UnraisableHookArgs], object]" = sys.unraisablehook

    def __enter__(self) -> "Reporting":
        _signal.pthread_sigmask(_signal.SIG_UNBLOCK, script_held)  # (one held acts here: no __exit__ then)
        if _deferral is not None:  # bob-run's, open from its start: nothing is done yet, so it acts here, before
            _deferral.check()  # an answer (--version, --help) or a usage refusal could take its place
        sys.unraisablehook = self._unraisable
        return self

    def __exit__(self, *exc: object) -> None:
        sys.unraisablehook = self.unraisable

    def _unraisable(self, hook: "sys.UnraisableHookArgs") -> None:
        global _phase
        if not issubclass(hook.exc_type, KeyboardInterrupt):
            self.unraisable(hook)
        elif _phase == "ending":  # it ended nothing: the next one acts (and the command says so)
            _phase = None


def interruption_in(exc: "BaseException | None") -> "KeyboardInterrupt | None":
    """The KeyboardInterrupt behind ``exc``, if one is: CPython wraps one raised while a class is made
    (``__set_name__``: a RuntimeError), an import can turn one into its own error."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


_phase: "str | None" = None  # None (working): the three raise; "ending" (_ending), "printing", "printed": below
_until_exit = False


def printing() -> None:
    """The outcome is decided and being printed (or, from :func:`bob.commit.replace_all`, its files are
    replaced: it is decided): a deferral still open (``bob-run``'s) ends, and the three are only recorded
    (:func:`taken`), unless the printing waits for a reader that stopped reading (the descriptor being
    written cannot take a byte): then it ends on the signal instead."""
    global _deferral, _phase
    _deferral, _phase = None, "printing"


def printed() -> None:
    """The outcome is printed whole: until the command returns (:func:`restore`), or the process ends
    after :func:`until_exit`, the three are only recorded (:func:`taken`), so none changes its status."""
    global _phase
    _phase = "printed"


def until_exit() -> None:
    """The process ends when this command returns (``bob-run``'s script): what :func:`printed` holds
    stays held to the end."""
    global _until_exit
    _until_exit = True


def install() -> "dict[int, object]":
    """Make SIGINT, SIGTERM and SIGHUP raise :class:`Interrupted` (unless the
    parent ignored them); return the handlers replaced, for :func:`restore`.
    Off the main thread (a library caller's worker) nothing is installed."""
    global _phase
    _phase = None  # (a command that ends its process never reaches the next one's install)
    _since.append(len(_taken))
    replaced: dict[int, object] = {}
    for signum in ENDING:
        previous = _signal.getsignal(signum)
        if previous == _signal.SIG_IGN:
            continue
        try:
            _signal.signal(signum, _handler)
        except ValueError:  # not the main thread
            break
        replaced[signum] = previous
    return replaced


def restore(replaced: "dict[int, object]") -> None:
    """Put back the handlers :func:`install` replaced. Leaving bob's handlers (the outermost command),
    the script's hold (:data:`script_held`) comes back first: nothing reaches a default action while the
    process ends. A :func:`printed` outcome's hold ends here, unless :func:`until_exit`."""
    global _phase
    if any(previous is not _handler for previous in replaced.values()):
        _signal.pthread_sigmask(_signal.SIG_BLOCK, script_held)
    for signum, previous in replaced.items():
        _signal.signal(signum, previous)
    _phase = _phase if _until_exit or _phase == "ending" else None  # (an outer command still cleans up)
    del _since[-1:]


class Deferral:
    """From :meth:`begin` to :meth:`end`, the three signals are recorded in
    :attr:`pending` (in order of arrival), not raised. One is open at a time."""

    def __init__(self) -> None:
        self._arrived: list[int] = []

    @property
    def pending(self) -> tuple[int, ...]:
        return tuple(self._arrived)

    def check(self) -> None:
        """Raise :class:`Interrupted` for the first signal recorded, if any: a point where acting is safe."""
        if self._arrived:
            _ending()
            raise Interrupted(self._arrived[0])

    def begin(self) -> None:
        """Record from here on (a Deferral a finished command left open is replaced)."""
        global _deferral
        _deferral = self

    def end(self) -> None:
        """Signals act again from here on (safe to call when never begun)."""
        global _deferral
        if _deferral is self:
            _deferral = None


class step_and_record:
    """``with step_and_record():`` a step and the record of it (a directory made and put on the list the
    cleanup removes), never cut between the two: a signal that arrives inside the block acts at its end,
    the block's error or not (a mkdir that found the directory there); inside a :class:`Deferral` already
    open it is that one's to report, and once the command is ending or printing, only recorded."""

    deferral: "Deferral | None"
    """This block's own, when no other records the signals."""

    def __enter__(self) -> None:
        self.deferral = None if _deferral is not None or _phase is not None else Deferral()
        if self.deferral is not None:
            self.deferral.begin()

    def __exit__(self, kind: "type[BaseException] | None", value: "BaseException | None", traceback: object) -> None:
        if self.deferral is not None:
            self.deferral.end()
            if kind is None or not issubclass(kind, KeyboardInterrupt):
                self.deferral.check()  # (chained to the block's error)
