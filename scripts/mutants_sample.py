"""A seeded random sample of the mutants the last mutmut run did not reach.

    .venv/bin/python scripts/mutants_sample.py COUNT SEED [PREFIX ...] > target/mutmut-samples/NN-LABEL.txt
    (cd target/mutmut && BOB_CHECKOUT="$PWD/../.." ../../.venv/bin/mutmut run $(cat ../mutmut-samples/NN-LABEL.txt))

mutmut runs the mutants with the cheapest tests first, so a run stopped
part-way has covered the cheap functions and none of the dear ones (the
write path, the lock, bob-run's command line). A uniform random sample of
what is left, run to the end, gives an unbiased estimate for that part
(scripts/mutants_summary.py, docs/testing.md).
PREFIXes (``bob.run. bob.commands.``) sample one group. NN orders the
samples: for each group, the summary lets its newest sample stand for the
mutants still not run, and counts every mutant with a result as itself.

    .venv/bin/python scripts/mutants_sample.py --record target/mutmut-samples/NN-LABEL.txt

right after the sample's run, before any test is added, keeps what it
found (NN-LABEL.ran.json): tests written for its survivors kill them, but
say nothing of the survivors it did not draw, so the summary estimates the
mutants not run from the sample as it ran.
"""

from __future__ import annotations

import json
import random
import sys
from collections import Counter
from pathlib import Path

from mutants_summary import python_outcomes


def not_run(prefixes: tuple[str, ...] = ("",)) -> list[str]:
    """The names of the mutants mutmut has no result for, sorted."""
    return sorted(name for _, name, status in python_outcomes(recheck=False)
                  if status == "not checked" and name.startswith(prefixes))


def record(sample: Path) -> int:
    """Write ``sample``'s statuses as mutmut reports them now beside it."""
    names = sample.read_text().split()
    status = {name: st for _, name, st in python_outcomes(recheck=False)}
    ran = {name: status.get(name, "not checked") for name in names}
    sample.with_suffix(".ran.json").write_text(json.dumps(ran, indent=1, sort_keys=True) + "\n")
    counts = Counter(ran.values())
    print(f"{sample.name}: " + ", ".join(f"{n} {st}" for st, n in sorted(counts.items())), file=sys.stderr)
    return 0


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "--record":
        return record(Path(argv[1]))
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    count, seed = int(argv[0]), int(argv[1])
    left = not_run(tuple(argv[2:]) or ("",))
    for name in sorted(random.Random(seed).sample(left, min(count, len(left)))):
        print(name)
    print(f"{min(count, len(left))} of {len(left)} mutants not run (seed {seed})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
