"""``python -m bob run|fixture|inspect|qualify|fuzz …``: the same commands as the scripts."""

import sys

USAGE = "usage: python -m bob {run,fixture,inspect,qualify,fuzz} [options]"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    if argv[0] == "--version":
        from bob.distribution import version

        print(f"bob {version()}")
        return 0
    command, rest = argv[0], argv[1:]
    if command == "run":
        from bob.run import main as run_main

        return run_main(rest, until_exit=True)  # sys.exit follows at once
    if command == "fixture":
        from bob.fixture import fixture_main as run
    elif command == "inspect":
        from bob.inspect import main as run
    elif command == "qualify":
        from bob.qualify import main as run
    elif command == "fuzz":
        from bob.fuzz import main as run
    else:
        print(f"{USAGE}\npython -m bob: unknown command {command!r}", file=sys.stderr)
        return 2
    return run(rest)


if __name__ == "__main__":
    sys.exit(main())
