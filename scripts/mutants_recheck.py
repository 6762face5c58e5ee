"""Re-check the survivors of the last mutmut run against tests written since.

    .venv/bin/python scripts/mutants_recheck.py tests/formats/test_refusal_objects.py …

For each mutant the last run (target/mutmut) reported as surviving, runs
the given test files — the ones added or changed after that run's copy of
the tests — against the staged package with that mutant switched on
(mutmut's own MUTANT_UNDER_TEST), and records "killed" or "survived" in
target/mutmut-recheck.json, which scripts/mutants_summary.py lays over the
run's results. A survivor of the run already passed every older test, so
the new files are all it needs to meet. A mutant once killed stays killed
(a later re-check with other files does not undo it), and the listed
equivalents are skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from mutants_summary import equivalent_names

ROOT = Path(__file__).resolve().parent.parent
STAGE = ROOT / "target" / "mutmut"
OUT = ROOT / "target" / "mutmut-recheck.json"
TIMEOUT = 300  # seconds for one mutant's tests; the new test files take seconds


def survivors() -> list[str]:
    text = subprocess.run([str(ROOT / ".venv" / "bin" / "mutmut"), "results"], cwd=STAGE, capture_output=True,
                          text=True, check=True).stdout
    return [line.strip().rsplit(": ", 1)[0] for line in text.splitlines()
            if line.strip().endswith((": survived", ": no tests"))]


def run_tests(mutant: str, test_files: list[str]) -> int:
    """pytest's exit code for ``test_files`` with ``mutant`` switched on, with
    the same options as mutmut's own runs ([tool.mutmut] in pyproject.toml:
    the tests it leaves out, such as the import-graph ones, which the
    instrumented code fails by design, are left out here too)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]
    env = dict(os.environ, MUTANT_UNDER_TEST=mutant, PYTHONPATH="src", BOB_CHECKOUT=str(ROOT))
    try:
        return subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "-m", "pytest", "-x",
                               *config.get("pytest_add_cli_args", []), *test_files],
                              cwd=STAGE / "mutants", env=env, capture_output=True, timeout=TIMEOUT).returncode
    except subprocess.TimeoutExpired:  # the mutant made something loop: caught, as mutmut counts a timeout
        return 1


def main(test_files: list[str]) -> int:
    if not test_files:
        print(__doc__)
        return 2
    mutants = STAGE / "mutants"
    for name in test_files:  # the new tests, into the staged copy of the suite
        shutil.copy2(ROOT / name, mutants / name)
    # With no mutant switched on the tests must pass, or "killed" would mean nothing.
    baseline = run_tests("", test_files)
    if baseline != 0:
        print(f"the tests fail with no mutant switched on (pytest exit {baseline}); nothing re-checked",
              file=sys.stderr)
        return 1
    results = json.loads(OUT.read_text()) if OUT.exists() else {}
    equivalent = equivalent_names()
    for name in survivors():
        # Killed by any test of the suite is killed: a re-check against other
        # files never takes that back. Listed equivalents are not scored.
        if results.get(name) == "killed" or name in equivalent:
            continue
        rc = run_tests(name, test_files)
        results[name] = "killed" if rc == 1 else "survived" if rc == 0 else f"error {rc}"
        print(f"{results[name]:9} {name}", flush=True)
        OUT.write_text(json.dumps(results, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
