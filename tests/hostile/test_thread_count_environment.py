"""``RAYON_NUM_THREADS``, which sizes rayon's pools, set to anything.

The core keeps its own pool (rust/bob-core/src/kernel.rs, ``pool``): as many
threads as the process has CPUs, or ``RAYON_NUM_THREADS`` when that is a
smaller positive number. Before, rayon's global pool took the variable as it
was, and ``RAYON_NUM_THREADS=100000`` kept ``bob.invoke`` starting threads for
minutes. Each value runs in a fresh process (the pool is sized once).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import CKPT_10_SHA256, PRED_HEX

INVOKE = """
import hashlib, os
import numpy  # its BLAS starts its own threads on import: counted before
import bob
record = bob.build_input(b"abracadabra", [b"abra", b"cad", b""])
before = len(os.listdir("/proc/self/task"))
result = bob.invoke(record)
started = len(os.listdir("/proc/self/task")) - before
print(hashlib.sha256(result.checkpoint_bytes()).hexdigest(), result.predictions_bytes().hex(), started,
      len(os.sched_getaffinity(0)))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts threads in /proc/self/task")
@pytest.mark.parametrize("value", ["100000", "18446744073709551615", "99999999999999999999999", "0", "-1", "x", " 1 ",
                                   ""])
def test_any_rayon_num_threads_gives_the_section8_bytes_promptly(value: str) -> None:
    env = {**os.environ, "RAYON_NUM_THREADS": value}
    done = subprocess.run([sys.executable, "-c", INVOKE], env=env, capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    checkpoint, predictions, started, cpus = done.stdout.decode().split()
    assert (checkpoint, predictions) == (CKPT_10_SHA256, PRED_HEX)
    # The threads the call started (the pool) never outnumber the CPUs, and
    # are one when the variable asks for one.
    assert 1 <= int(started) <= (1 if value.strip() == "1" else int(cpus))
