"""``python -m bob run|fixture|inspect|qualify|fuzz …``: the same commands as the scripts."""

import sys

USAGE = "usage: python -m bob {run,fixture,inspect,qualify,fuzz} [options]"


def main(argv: list[str] | None = None, *, until_exit: bool = False) -> int:
    """The command ``argv`` names; its exit status. ``until_exit``: the process ends with it at once
    (``bob.run.main``'s), as under ``python -m bob``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    at = next((i for i, a in enumerate(argv) if not a.startswith("-")), len(argv))  # options before it: its own
    leading, command, rest = argv[:at], (argv[at:] or [""])[0], [*argv[:at], *argv[at + 1:]]
    asked = "help" if {"-h", "--help"} & set(leading) else "version" if "--version" in leading else None
    if asked is not None:  # printed as every command prints its answer (the envelope under --json)
        from bob.commands import envelope
        from bob.distribution import version
        from bob.text import emit, json_text

        value, text = (USAGE, USAGE) if asked == "help" else (version(), f"bob {version()}")
        said = json_text({asked: value, **envelope("python -m bob", 0)}) if "--json" in leading else text
        emit("python -m bob", said, what="the help" if asked == "help" else None)
        return 0
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
        from bob.commands import Refused, fail

        why = f"unknown command {command!r}" if command else "no command given"
        return fail("python -m bob", Refused(f"{USAGE} ({why})"), as_json="--json" in argv)
    return run(rest)


if __name__ == "__main__":  # as the installed scripts: the three held until bob's runner can report one
    import _signal  # type: ignore[import-not-found]  # the C module under signal (it imports enum); no stub

    try:  # a Ctrl-C delivered just before is raised by this very call, the hold already on: sent again, held
        _held_from = _signal.pthread_sigmask(_signal.SIG_BLOCK, (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP))
    except KeyboardInterrupt:  # (whether the parent held the other two cannot be told now: they stay held)
        _held_from = _signal.pthread_sigmask(_signal.SIG_BLOCK, ()) - {_signal.SIGINT}
        _signal.raise_signal(_signal.SIGINT)
    try:
        from bob.signals import run_script

        _status = run_script(lambda: main(until_exit=True), _held_from)
    except MemoryError:  # while a command's modules are imported, before its runner can report it
        import os

        os.write(2, b"python -m bob: out of memory while bob was imported\n")
        os._exit(1 if sys.argv[1:2] in (["run"], ["fixture"]) else 70)
    sys.exit(_status)
