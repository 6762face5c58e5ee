"""What bob's commands share: exit codes, refusals that name the option and path, and printing that
survives a closed or full stdout.

One mechanism each:

* :mod:`bob.refusals` says what a refusal is: the exit codes, :class:`Refused`, an OS error's reason.
* :func:`about` wraps the work on one command-line path: any ``OSError`` or :class:`~bob.errors.FormatError`
  raised inside becomes a :class:`Refused` naming the option (``--checkpoint``) and the path, escaped by
  :mod:`bob.text` — never ``None: None``, a descriptor number or a temporary file's name.
* :func:`fail` prints a refusal as one line on stderr and, under ``--json``, as one JSON object
  (``{"error": {...}}``) on stdout; every JSON object is :func:`json_text`'s, strict JSON.
* :func:`bob.text.emit` prints a command's result in one write; if stdout is closed, full or a broken pipe,
  it says so in one line on stderr and the command's exit status stands (the files are the record).
* :func:`run_command` is every command's runner: the parser (with ``--version``,
  :func:`bob.distribution.version`, ``--json`` and ``--debug``), the typed option converters
  (:func:`seconds_option`, :func:`count_option`, :func:`integer_option`: every number finite and in range,
  the option named in the refusal), refusals and usage errors as one line (exit 2), SIGINT, SIGTERM and
  SIGHUP (130, 143, 129; one that arrives while bob is imported too: :class:`bob.signals.Reporting`), one
  handler for anything unexpected, out of memory included (the command's own code; a traceback only under
  ``--debug``), and one ``--json`` envelope (``command``, ``ok``, ``exit_code``, ``error``) for every
  outcome. Text that the stream's encoding cannot hold is written escaped (``\\u2026``,
  :func:`bob.text.tolerant_streams`), never a ``UnicodeEncodeError``.

Standard library only (``bob-run`` imports it on its fast path).
"""

from __future__ import annotations

import os
import sys

from bob.options import count_option, integer_option, number_option, seconds_option, shown_argv, answered, \
    with_unknown_words, command_of, given_before_dashes, flag_read, leftover, subcommand_first
from bob.refusals import EXIT_BUSY, EXIT_FOUND, EXIT_INTERRUPTED, EXIT_OK, EXIT_REFUSED, EXIT_SOFTWARE, \
    EXIT_UNEXPECTED, RESOURCE_ERRNOS, Refused, os_reason, the_machine_ran_out
from bob.text import emit, json_text, note, show_path, tolerant_streams
from bob.text import write_whole as _write
# The installed launchers of earlier checkouts end with ``from bob.commands import
# exit_now`` (an editable install keeps its scripts): it stays importable here.
from bob.text import exit_now

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - typing costs start-up time bob-run does not pay
    import argparse
    from collections.abc import Callable
    from types import TracebackType
    from typing import Any, NoReturn

__all__ = ["EXIT_OK", "EXIT_UNEXPECTED", "EXIT_FOUND", "EXIT_REFUSED", "EXIT_SOFTWARE", "EXIT_BUSY", "EXIT_INTERRUPTED",
           "Refused", "about", "fail", "json_text", "os_reason", "argument_parser", "Outcome", "run_command",
           "number_option", "seconds_option", "count_option", "integer_option", "output_directory", "unexpected",
           "add_common_options", "exit_now", "envelope", "RESOURCE_ERRNOS", "Answered"]


class about:  # noqa: N801 - used as a `with` statement, like contextlib's helpers
    """``with about("--checkpoint", path): …`` names ``option`` and ``path`` in any OS error, format refusal
    or :class:`Refused` naming no path raised inside. ``what`` (``"input record"``) prefixes a format refusal's
    message. (A class, not ``contextlib.contextmanager``: bob-run's start-up does not import contextlib.)"""

    def __init__(self, option: str, path: Any, what: str | None = None) -> None:
        self.option: str = option
        self.path: Any = path
        self.what: str | None = what

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: "type[BaseException] | None", exc: "BaseException | None",
                 tb: "TracebackType | None") -> None:
        if isinstance(exc, Refused) and exc.option in (None, self.option) and exc.path is None:
            exc.option, exc.path = self.option, show_path(self.path)  # a refusal names the file it is about
        if exc is None or isinstance(exc, Refused):
            return
        from bob.errors import FormatError

        if isinstance(exc, FormatError):
            message = f"{self.what}: {exc}" if self.what else str(exc)
            raise Refused(message, option=self.option, path=self.path, field=exc.field,
                          detail=exc.to_dict()) from None
        if isinstance(exc, OSError):  # (a resource the process ran out of, memory or descriptors, says nothing about
            # the file it names: the runner reports it as unexpected, its words kept, the_machine_ran_out)
            shown = _under(exc.filename, self.path)
            raise Refused(os_reason(exc, shown), option=self.option, path=shown) \
                from (exc if exc.errno in RESOURCE_ERRNOS else None)


def _under(failed: Any, given: Any) -> Any:
    """The path an OS error is about: ``failed`` when it lies inside the directory ``given`` (a
    subdirectory of a corpus that cannot be listed), else ``given`` (never one of bob's temporaries)."""
    from bob.fileio import TEMP_MARK

    directory = os.fspath(given).rstrip(os.sep) if isinstance(given, (str, os.PathLike)) else None
    inside = isinstance(failed, str) and bool(directory) and failed.startswith(f"{directory}{os.sep}")
    return failed if inside and TEMP_MARK not in os.path.basename(failed) else given


def fail(prog: str, refusal: Refused, *, as_json: bool, command: str | None = None,
         extra: "dict[str, Any] | None" = None) -> int:
    """Report a refusal: one line on stderr; under ``--json`` also one object on stdout, the envelope every
    command shares (:func:`envelope`): ``command`` (``prog`` unless named), ``ok`` false, ``exit_code`` and
    ``error`` (the refusal's :meth:`Refused.to_dict`), plus ``extra``'s keys."""
    from bob import signals

    signals.printing()
    _write(sys.stderr, f"{prog}: refused: {refusal.text}\n" if refusal.code == EXIT_REFUSED
           else f"{prog}: {refusal.text}\n")
    if as_json:
        document = envelope(command or prog, refusal.code, refusal)
        emit(prog, json_text({**extra, **document} if extra else document), what="its --json object")
    return refusal.code


def envelope(command: str, code: int, refusal: "Refused | None" = None) -> "dict[str, Any]":
    """The keys every ``--json`` object of every command has: ``command``, ``ok`` (exactly when ``exit_code``
    is 0), ``exit_code`` and ``error`` (null, or ``{option, path, field, message, exit_code, text}``)."""
    return {"command": command, "ok": code == EXIT_OK, "exit_code": code,
            "error": None if refusal is None else refusal.to_dict()}


def argument_parser(*, epilog: str | None = None, **kwargs: Any) -> "argparse.ArgumentParser":
    """An ``argparse.ArgumentParser`` whose usage errors raise :class:`Refused` (after printing the usage line
    on stderr) instead of exiting, so every command reports them the same way, ``--json`` included.
    Subparsers inherit the behaviour. ``epilog``, the command's own exit codes, gets the signals' codes."""
    import argparse

    class Once(argparse._StoreAction):
        """An option's value, given once: a second would silently replace the first (a path, a pin)."""

        def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
            given = vars(namespace).setdefault("_given", set())
            if self.dest in given:
                parser.error(f"argument {'/'.join(self.option_strings)}: given twice; give it once")
            given.add(self.dest)
            super().__call__(parser, namespace, values, option_string)

    class CommandParser(argparse.ArgumentParser):
        def __init__(self, *args: Any, **kw: Any) -> None:  # no abbreviations, subcommands too: --js is no --json
            super().__init__(*args, **{"allow_abbrev": False, **kw})
            self.register("action", None, Once)

        def error(self, message: str) -> NoReturn:
            # one line, naming the option argparse names ("argument --time: …")
            option = None
            if message.startswith("argument ") and ": " in message:
                named, message = message[len("argument "):].split(": ", 1)
                option = None if named.startswith("{") else named.split("/")[0]  # ({run,replay,…}: the command word)
            if message.startswith(ignored := "ignored explicit argument ") and message.endswith(("'", '"')):
                import ast  # (--json=x: argparse's repr, where no subclass reaches) read back, shown once below

                message = f"{ignored}'{ast.literal_eval(message[len(ignored):])}'"
            raise Refused(f"usage: {shown_argv(message)} (see {self.prog} --help)", option=option)

        def _get_values(self, action: Any, arg_strings: list[str]) -> Any:  # argparse kept a -- that ends the options
            if action.nargs == argparse.PARSER and arg_strings[:1] == ["--"] and len(arg_strings) > 1:  # before the
                arg_strings = arg_strings[1:]  # subcommand as its name (what options.subcommand_first leaves: "-x")
            return super()._get_values(action, arg_strings)

        def _check_value(self, action: Any, value: Any) -> None:  # argparse's words, the value raw (not its repr)
            if action.choices is not None and value not in action.choices:
                choices = ", ".join(map(repr, action.choices))
                raise argparse.ArgumentError(action, f"invalid choice: '{value}' (choose from {choices})")

        def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
            parsed, extras = self.parse_known_args(args, namespace)
            # words left over: refused by the subcommand that was given them, its help named
            if extras := leftover(sys.argv[1:] if args is None else list(args), extras):
                subs = [a for a in self._actions if isinstance(a, argparse._SubParsersAction)]
                chosen = subs[0].choices.get(getattr(parsed, subs[0].dest, None) or "") if subs else None
                (chosen or self).error(f"unrecognized arguments: {' '.join(extras)}")
            return parsed

        def print_help(self, file: "Any" = None) -> None:
            if not _made:  # a parser used outside run_command: printed here
                return super().print_help(file)
            text = self.format_help()
            raise Answered({"help": text}, text, "the help")

        def _print_message(self, message: str, file: "Any" = None) -> None:  # --help outside run_command
            from bob import signals

            signals.printing()
            # (file is None when stdout was closed: argparse would write the help to stderr instead)
            if message and (file is None or not _write(file, message)):
                note(self.prog.split()[0], "the help could not be printed (stdout is closed or full)")
            signals.printed()

    codes = f", {EXIT_INTERRUPTED} interrupted (SIGINT), 143 SIGTERM, 129 SIGHUP"
    return CommandParser(epilog=epilog and epilog + codes, **kwargs)


# --------------------------------------------------------------------------- #
# The runner every command shares
# --------------------------------------------------------------------------- #


class Outcome:
    """What a command's work ends with: its exit ``code``, the JSON-ready
    ``data`` (``--json`` prints it inside the shared envelope) and the human
    ``text``; ``committed`` names what was written, for :func:`emit`."""

    __slots__ = ("code", "data", "text", "committed", "command")
    code: int
    data: "dict[str, Any]"
    text: str
    committed: str | None
    command: str | None

    def __init__(self, code: int, data: "dict[str, Any] | None" = None, text: str = "", *,
                 committed: str | None = None, command: str | None = None) -> None:
        self.code, self.data, self.text, self.committed, self.command = code, data or {}, text, committed, command


class Answered(SystemExit):
    """``--version`` or ``--help``, raised by the parser so that the runner prints the answer as it
    prints a result (the shared envelope under ``--json``); ``what`` names it if stdout cannot take it."""

    def __init__(self, data: "dict[str, Any]", text: str, what: str) -> None:
        super().__init__(EXIT_OK)
        self.outcome: Outcome = Outcome(EXIT_OK, data, text)
        self.what = what


def add_common_options(parser: "argparse.ArgumentParser", *, json_help: str = "print one JSON object (the result, a refusal or a usage "
                       "error) on stdout") -> None:
    """``--json``, ``--debug`` and ``--version``: every command and subcommand has them."""
    import argparse

    prog = parser.prog.split()[0]  # a subcommand's parser says "bob-inspect checkpoint": the command is bob-inspect

    class Version(argparse.Action):
        def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
            super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0, help=help)

        def __call__(self, parser, namespace, values, option_string=None):
            from bob.distribution import version

            asked = Answered({"version": version()}, f"{prog} {version()}", "the version")
            if not _made:  # a parser used outside run_command (which prints it, --json included): print it here
                emit(prog, asked.outcome.text)
            raise asked

    # (no default: a subcommand's parser would reset what was given before it, bob-inspect --json FORMAT)
    parser.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help=json_help)
    parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show a traceback for unexpected errors")
    parser.add_argument("--version", action=Version, help="print bob's version and exit")


_made: "list[list[str]]" = []  # for each command running, innermost last: the directories output_directory made


def output_directory(option: str, path: Any) -> str:
    """``path`` as a directory bob writes into, created if missing (with its
    parents); a file, a device or anything else in the way is a :class:`Refused`
    naming ``option`` and the path, and so is a directory that cannot be written.
    What it made is removed again, if still empty, when the command does not succeed (:func:`run_command`)."""
    from bob.fileio import make_directory, refuse_if_working_directory_gone

    with about(option, path):
        if not os.fspath(path):  # (not the working directory, which "" is to os.makedirs and pathlib)
            raise Refused("an empty path", option=option, path=path)
        refuse_if_working_directory_gone(path)  # (said as such, before a link's end is looked for: realpath's getcwd)
        if os.path.exists(path) and not os.path.isdir(path):  # (a link to nothing, or a loop: its own reason)
            raise Refused("exists and is not a directory", option=option, path=path)
        # a link to nothing: named by its last target, of which mkdir says "no such file" (a loop ends at a link)
        if os.path.islink(path) and not os.path.lexists(end := os.path.realpath(path)):
            raise Refused(f"is a symbolic link to {show_path(end)}, which does not exist", option=option, path=path)
        make_directory(path, _made[-1] if _made else None)  # (a library caller outside run_command keeps it)
    return os.fspath(path)


def unexpected(prog: str, exc: BaseException, *, debug: bool, as_json: bool, code: int = EXIT_UNEXPECTED,
               command: str | None = None) -> int:
    """The one handler of anything unexpected: one line (and a traceback only
    under ``debug``), exit ``code``. A missing native core says so plainly."""
    if debug:
        import traceback

        traceback.print_exception(exc)
    message = (str(exc).strip().splitlines() or [""])[-1] if isinstance(exc, ImportError) \
        else f"unexpected error: {type(exc).__name__}: {exc}"  # (NumPy's ImportError: its last line says why)
    message += "".join(f" {note}" for note in getattr(exc, "__notes__", ()))  # (what else is known: a verdict)
    return fail(prog, Refused(message, code=code), as_json=as_json, command=command)


def run_command(prog: str, build_parser: "Callable[[], argparse.ArgumentParser]", work: "Callable[[Any], Outcome]",
                argv: "list[str] | None" = None, *, unexpected_code: int = EXIT_UNEXPECTED,
                interrupted: str = "interrupted", subcommands: "dict[str, str] | None" = None,
                quick: "Callable[[list[str]], Any] | None" = None, numpy: bool = True) -> int:
    """Run one command: parse ``argv`` with ``build_parser()`` (an :func:`argument_parser`), call
    ``work(args)`` for an :class:`Outcome` and print it (``--json``: ``data`` inside the shared envelope).

    A :class:`Refused` (a refusal, or a usage error) is one line on stderr and, under ``--json``,
    the envelope on stdout; KeyboardInterrupt is exit 130 (128 + N for a signal); anything else, running out
    of memory (:mod:`bob.failures`) included, is :func:`unexpected` with ``unexpected_code``, and so is a refusal
    whose code is :data:`EXIT_UNEXPECTED` (where exit 1 means "found something", unexpected has a code of
    its own) or that the machine's shortage is behind (:func:`bob.refusals.the_machine_ran_out`: its words
    kept). NumPy is loaded first (:func:`bob.failures.load_numpy`) unless ``numpy`` is false (bob-run's
    start-up); one that does not import is reported once the command line is read (``--version`` needs none).
    ``subcommands`` (name or alias -> name) names the ``command`` key. ``quick(argv)`` reads the common
    command lines without the parser (bob-run's start-up); it returns None for anything else.

    SIGTERM and SIGHUP end every command as Ctrl-C does (:func:`bob.signals.install`, until it returns):
    reported as the exit table says, its temporary files removed on the way out. A command that does not
    succeed leaves no empty directory it made (:func:`output_directory`)."""
    from bob import signals

    replaced, code = signals.install(), None
    _made.append([])
    try:
        code = _run(prog, build_parser, work, argv, unexpected_code, interrupted, subcommands, quick, numpy)
        return code
    finally:
        made = _made.pop()
        if code != EXIT_OK and made:  # what a failure left empty goes
            from bob.fileio import remove_empty_directories

            remove_empty_directories(made)
        signals.restore(replaced)


def _run(prog: str, build_parser: "Callable[[], argparse.ArgumentParser]", work: "Callable[[Any], Outcome]",
         argv: "list[str] | None", unexpected_code: int, interrupted: str, subcommands: "dict[str, str] | None",
         quick: "Callable[[list[str]], Any] | None", numpy: bool) -> int:
    from bob import signals
    from bob.failures import LastWords, numpy_import_error, out_of_memory

    tolerant_streams()
    argv = subcommand_first(sys.argv[1:] if argv is None else list(argv), subcommands)
    as_json, debug = given_before_dashes(argv, "--json"), given_before_dashes(argv, "--debug")
    name = command_of(prog, argv, subcommands)
    last_words = LastWords(prog, name, unexpected_code, as_json)  # out of memory: reported without allocating
    args: Any = None

    def named() -> str:  # the command key, once the work has named its subcommand (bob-inspect FILE's kind)
        return getattr(args, "command_key", None) or name

    def refuse(exc: Refused) -> int:
        if exc.code == EXIT_UNEXPECTED or (exc.code == EXIT_REFUSED and the_machine_ran_out(exc)):
            exc.code = unexpected_code
        code = fail(prog, exc, as_json=as_json, command=named())
        signals.printed()
        return code

    def interrupted_by(exc: KeyboardInterrupt) -> int:  # SIGTERM and SIGHUP too (bob.signals.Interrupted)
        said = interrupted.replace("interrupted", str(exc), 1) if hasattr(exc, "signum") else interrupted
        return refuse(Refused(said, code=getattr(exc, "exit_code", EXIT_INTERRUPTED)))

    try:
        numpy_failed = numpy_import_error() if numpy else None  # (its BLAS must not end the process itself)
        with signals.Reporting():
            args = quick(argv) if quick is not None else None
            if args is None:
                try:
                    args = (parser := build_parser()).parse_args(argv)
                except Answered as asked:  # (not if a word before --help or --version is unknown)
                    args = answered(parser, argv, asked)
                except Refused as exc:  # argparse names missing arguments first: the unknown ones beside them
                    as_json = read if (read := flag_read(parser, argv, "json")) is not None else as_json
                    raise with_unknown_words(parser, argv, exc) from None
            if isinstance(args, Answered):
                outcome = args.outcome
            else:
                # the parser's word, not the scan's: a --json in a reader's command (bob-fuzz check) is the reader's
                args.json = as_json = bool(getattr(args, "json", False))
                args.debug = debug = bool(getattr(args, "debug", False))
                last_words.document = last_words.document if as_json else b""
                if numpy_failed is not None:
                    raise numpy_failed
                outcome = work(args)
    except Refused as exc:
        return refuse(exc)
    except KeyboardInterrupt as exc:
        return interrupted_by(exc)
    except Exception as exc:  # noqa: BLE001 - the promise: one line, a traceback only under --debug
        if (lost := signals.interruption_in(exc)) is not None:  # wrapped by an import or a class's creation
            return interrupted_by(lost)
        if out_of_memory(exc):
            # out of memory, a module that could not be mapped included (inside another command, a fuzz
            # target's, it is the outer one's to report)
            return last_words.report(lambda: fail(prog, Refused(last_words.message, code=unexpected_code),
                                                  as_json=as_json, command=name))
        return unexpected(prog, exc, debug=debug, as_json=as_json, code=unexpected_code, command=named())
    finally:
        last_words.done()
    signals.printing()
    try:
        text = outcome.text
        if as_json:
            text = json_text({**outcome.data, **envelope(outcome.command or name, outcome.code)})
        if text:
            emit(prog, text, committed=outcome.committed, what=args.what if isinstance(args, Answered) else None)
        signals.printed()
    except KeyboardInterrupt as exc:  # cut short (a reader that stopped reading): what was committed stands
        said = str(exc) if hasattr(exc, "signum") else "interrupted"
        _write(sys.stderr, f"{prog}: {said} while its output was printed (cut short)"
                           + (f"; {outcome.committed}\n" if outcome.committed else "\n"))
        return outcome.code if outcome.committed else getattr(exc, "exit_code", EXIT_INTERRUPTED)
    return outcome.code
