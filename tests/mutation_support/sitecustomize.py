"""Imported by Python at start-up in the tests' subprocesses during a mutation
run (tests/conftest.py puts this directory on PYTHONPATH only then).

mutmut learns which tests reach a function from the calls it records in its
own process; a test that runs the real ``bob-run`` reaches bob's functions in
a child process, where those records would be lost. In mutmut's stats phase
this child writes the names it recorded to ``$BOB_MUTMUT_HITS/<pid>``, and
conftest.py hands them to mutmut as reached by the test that started it.
bob-run and bob-fixture end with ``os._exit`` (bob.text.exit_now), which
runs no atexit handler, so the report is also made just before that.
Outside a mutation run it does nothing.
"""

import atexit
import os
import sys


def _report() -> None:
    state = sys.modules.get("mutmut.state")
    if state is None:
        return
    hits = state.state()._stats
    if hits:
        path = os.path.join(os.environ["BOB_MUTMUT_HITS"], str(os.getpid()))
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(sorted(hits)))


def _reporting_exit(code: int, _exit=os._exit) -> None:
    _report()
    _exit(code)


if os.environ.get("MUTANT_UNDER_TEST") == "stats" and os.environ.get("BOB_MUTMUT_HITS"):
    atexit.register(_report)
    os._exit = _reporting_exit
