"""A seeded random sample of the mutants the last mutmut run did not reach.

    .venv/bin/python scripts/mutants_sample.py COUNT SEED > target/mutmut-sample.txt
    (cd target/mutmut && BOB_CHECKOUT="$PWD/../.." ../../.venv/bin/mutmut run $(cat ../mutmut-sample.txt))

mutmut runs the mutants with the cheapest tests first, so a run stopped
part-way has covered the cheap functions and none of the dear ones (the
write path, the lock, bob-run's command line). A uniform random sample of
what is left, run to the end, gives an unbiased estimate for that part;
scripts/mutants_summary.py reports the two parts apart (docs/testing.md).
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

STAGE = Path(__file__).resolve().parent.parent / "target" / "mutmut" / "mutants"


def not_run() -> list[str]:
    names = []
    for meta in sorted(STAGE.glob("src/**/*.meta")):
        names += [name for name, code in json.loads(meta.read_text())["exit_code_by_key"].items() if code is None]
    return sorted(names)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    count, seed = int(argv[0]), int(argv[1])
    left = not_run()
    for name in sorted(random.Random(seed).sample(left, min(count, len(left)))):
        print(name)
    print(f"{min(count, len(left))} of {len(left)} mutants not run (seed {seed})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
