"""``python -m bob.inspect …``: the same command as ``bob-inspect``."""

if __name__ == "__main__":
    from bob.inspect.cli import main

    raise SystemExit(main())
