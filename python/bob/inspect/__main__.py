"""``python -m bob.inspect …``: the same command as ``bob-inspect``."""

import sys

from bob.inspect.cli import main

sys.exit(main())
