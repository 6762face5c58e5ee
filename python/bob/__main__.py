"""``python -m bob run|fixture|inspect|qualify|fuzz …``: the same commands as the scripts."""

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import NoReturn

    from bob.commands import Answered, Refused  # noqa: F811 - imported again where they are used

USAGE = "usage: python -m bob {run,fixture,inspect,qualify,fuzz} [options]"


def command_at(argv: list[str]) -> int:
    """Where the command is in ``argv``: its first word not an option (the options before it are
    ``python -m bob``'s own), or the word after ``--`` whatever it is; ``len(argv)`` when there is none."""
    return next((i + (word == "--") for i, word in enumerate(argv) if word == "--" or not word.startswith("-")),
                len(argv))


def main(argv: list[str] | None = None, *, until_exit: bool = False) -> int:
    """The command ``argv`` names; its exit status. ``until_exit``: the process ends with it at once
    (``bob.run.main``'s), as under ``python -m bob``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    at = command_at(argv)
    leading, command = argv[:at], (argv[at:] or [""])[0]
    rest = [*(word for word in leading if word != "--"), *argv[at + 1:]]  # (-- before the command: its own)
    from bob.options import ANSWERING  # (every command imports it: bob.commands does)

    at_answer = next((i for i, word in enumerate(leading) if word in ANSWERING), None)  # the first word decides
    if at_answer is not None:  # printed by the runner as every command prints its answer (--json's envelope)
        from bob.commands import Answered, Refused
        from bob.distribution import version
        from bob.options import shown_argv

        if unknown := [word for word in leading[:at_answer] if word not in ("--json", "--debug", "--")]:
            return _own_answer(argv, Refused(f"{USAGE} (unrecognized arguments: {shown_argv(' '.join(unknown))})"))
        asked = "version" if leading[at_answer] == "--version" else "help"
        value, text = (USAGE, USAGE) if asked == "help" else (version(), f"bob {version()}")
        what = f"the {asked}"  # (named if stdout cannot take it)
        return _own_answer(leading, Answered({asked: value}, text, what))
    if command == "run":
        from bob.run import main as run_main

        return run_main(rest, until_exit=until_exit)
    if command == "fixture":
        from bob.fixture import fixture_main as run
    elif command == "inspect":
        from bob.inspect import main as run
    elif command == "qualify":
        from bob.qualify import main as run
    elif command == "fuzz":
        from bob.fuzz import main as run
    else:  # a usage error, as every command's (README, "One convention for all five")
        from bob.commands import Refused
        from bob.options import shown_argv

        why = f"unknown command '{shown_argv(command)}'" if at < len(argv) else "no command given"
        return _own_answer(argv, Refused(f"{USAGE} ({why})"))
    return run(rest)


def _own_answer(argv: list[str], answer: "Answered | Refused") -> int:
    """``python -m bob``'s own answer (its help, its version, a usage error) given by the shared runner: a
    signal held since the start is reported first, as every command reports it."""
    from bob.commands import EXIT_SOFTWARE, run_command

    def quick(argv: list[str]) -> "Answered":
        if isinstance(answer, Exception):
            raise answer
        return answer

    def unused(*_: object) -> "NoReturn":  # (quick answers every command line: no parser, no work)
        raise AssertionError("python -m bob's own answer needs no parser")

    argv = [word for word in argv if word != "--"]  # (its --json is anywhere, -- or not)
    return run_command("python -m bob", unused, unused, argv, quick=quick, numpy=False,
                       unexpected_code=EXIT_SOFTWARE)


if __name__ == "__main__":  # as the installed scripts: the three held until bob's runner can report one
    import _signal  # type: ignore[import-not-found]  # the C module under signal (it imports enum); no stub

    try:  # a Ctrl-C delivered just before is raised by this very call, the hold already on: sent again, held
        _held_from = _signal.pthread_sigmask(_signal.SIG_BLOCK, (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP))
    except KeyboardInterrupt:  # (whether the parent held the other two cannot be told now: they stay held)
        _held_from = _signal.pthread_sigmask(_signal.SIG_BLOCK, ()) - {_signal.SIGINT}
        _signal.raise_signal(_signal.SIGINT)
    try:
        from bob.failures import out_of_memory  # first: it judges what the imports after it raise
        from bob.signals import run_script

        _status = run_script(lambda: main(until_exit=True), _held_from)
    except (MemoryError, ImportError, SystemError, OSError) as _failed:  # while a command's modules are imported,
        import errno  # before its runner can report it
        import os

        if "out_of_memory" not in globals():  # failed before bob.failures loaded: a module not mapped, not missing
            def out_of_memory(exc: BaseException) -> bool:
                return type(exc) in (MemoryError, SystemError, ImportError) or getattr(exc, "errno", 0) == errno.ENOMEM
        if not out_of_memory(_failed):  # (a module missing or broken, with room left: said as it is)
            raise

        os.write(2, b"python -m bob: out of memory while bob was imported\n")
        os._exit(1 if (sys.argv[1:] + [""])[command_at(sys.argv[1:])] in ("run", "fixture") else 70)
    sys.exit(_status)
