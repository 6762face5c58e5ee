"""``python -m bob.inspect …``: the same command as ``bob-inspect``."""

import sys

if __name__ == "__main__":
    from bob.inspect.cli import main

    sys.exit(main())
