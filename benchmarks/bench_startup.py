"""A whole bob-run invocation against the interpreter's own start, interleaved.

    .venv/bin/python benchmarks/bench_startup.py [--rounds N] [--importtime]

Each round runs every command once, in turn, so load elsewhere on the
machine slows all of them alike; the table gives median and minimum wall
time and the median's ratio to `python -c pass` (the venv's interpreter).
bob-run resumes a checkpoint each time (read, verify, one invocation's updates, write both
files atomically with their fsyncs). A second table sets `bob-inspect ckpt
FILE` (the whole report of that checkpoint) against `python -c "import
numpy"`. --importtime adds `-X importtime`'s breakdown of one bob-run and of
one `bob-inspect ckpt` (the largest cumulative imports).

The commands run with their modules' bytecode cached, as an installed
package has it: PYTHONDONTWRITEBYTECODE is dropped from their environment
and each command runs once, untimed, before the rounds (otherwise every
import compiles its module again, and that is most of what is measured).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _table import load_line, ratio_table

BIN = Path(sys.executable).parent


ENV = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def timed(argv: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=ENV)
    return time.perf_counter() - t0


def importtime(argv: list[str], top: int = 14) -> list[tuple[int, int, str]]:
    """(self µs, cumulative µs, module) of the largest cumulative imports of one run."""
    done = subprocess.run([sys.executable, "-X", "importtime", *argv], check=True, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, env=ENV)
    rows = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cumulative_us, name = (part.strip() for part in line[len("import time:"):].split("|"))
        rows.append((int(self_us), int(cumulative_us), name))
    total = sum(r[0] for r in rows)
    rows = [r for r in rows if not r[2].startswith(" ")] + [r for r in rows if r[2].startswith(" ")]
    rows.sort(key=lambda r: -r[1])
    return [(total, total, "(all imports, sum of self)")] + rows[:top]


# The file operations a resuming bob-run makes, and nothing else (standard
# library, no bob): lock file (open, flock, ftruncate, pwrite), read the
# checkpoint, then for each of the two outputs a hard-link backup, a
# temporary file written and fsynced, a rename, a directory fsync, and the
# backup dropped. Its time is the floor the file system sets under bob-run.
IO_ONLY = """
import fcntl, os, sys
d, ck, pred = sys.argv[1:4]
fd = os.open(os.path.join(d, '.ck.bin.bob-lock'), os.O_RDWR | os.O_CREAT | os.O_NONBLOCK, 0o666)
fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
os.ftruncate(fd, 0)
os.pwrite(fd, b'%d\\n' % os.getpid(), 0)
data = open(ck, 'rb').read()
for target, payload in ((pred, b'x' * 24), (ck, data)):
    link = target + '.bak-io'
    os.link(target, link)
    tmp = target + '.tmp-io'
    out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    os.write(out, payload)
    os.fsync(out)
    os.close(out)
    os.replace(tmp, target)
    dfd = os.open(d, os.O_RDONLY)
    os.fsync(dfd)
    os.close(dfd)
    os.unlink(link)
os.close(fd)
"""


WITH_TEARDOWN = "import sys; from bob.run import main; sys.exit(main(sys.argv[1:]))"

REMOVED_IMPORTS = (
    "import re, hashlib, dataclasses, typing, sys; import bob.invocation; from bob.run import main; "
    "sys.exit(main(sys.argv[1:]))"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("--importtime", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        rec, ck, pred = Path(d, "rec.bin"), Path(d, "ck.bin"), Path(d, "pred.bin")
        subprocess.run([str(BIN / "bob-fixture"), "--text", "abracadabra", "--prompt", "abra", "--prompt", "cad",
                        "--prompt", "", "--output", str(rec)], check=True, stdout=subprocess.DEVNULL)
        files = ["--input", str(rec), "--checkpoint", str(ck), "--predictions", str(pred)]
        run = [str(BIN / "bob-run"), *files]
        inspect = [str(BIN / "bob-inspect"), "ckpt", str(Path(d, "inspected.bin"))]
        subprocess.run(run, check=True, stdout=subprocess.DEVNULL)  # a checkpoint to resume from
        shutil.copy(ck, inspect[-1])  # bob-inspect reads a checkpoint that bob-run does not replace
        call = ("import sys; from bob.run import run_files; "
                f"run_files({str(rec)!r}, {str(ck)!r}, {str(pred)!r}, threads={{}})")
        io_dir = Path(d, "io")
        io_dir.mkdir()
        shutil.copy(ck, io_dir / "ck.bin")
        shutil.copy(pred, io_dir / "pred.bin")
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "file operations only (no bob)": [sys.executable, "-c", IO_ONLY, str(io_dir), str(io_dir / "ck.bin"),
                                              str(io_dir / "pred.bin")],
            "bob-run (resuming)": run,
            "python -m bob run (resuming)": [sys.executable, "-m", "bob", "run", *files],
            # bob-run's script as it was before it skipped the interpreter's
            # teardown (bob.text.exit_now).
            "bob-run, with the teardown": [sys.executable, "-c", WITH_TEARDOWN, *files],
            # What this change removed, put back: the imports the installer's
            # wrapper (re), hashlib, bob.invocation (dataclasses) and typing
            # made, then the same invocation on one thread.
            "bob-run + the removed imports": [sys.executable, "-c", REMOVED_IMPORTS, *files],
            "run_files, threads=0 (auto)": [sys.executable, "-c", call.format(0)],
            "run_files, threads=1": [sys.executable, "-c", call.format(1)],
            'python -c "import numpy"': [sys.executable, "-c", "import numpy"],
            'python -c "import numpy, construct"': [sys.executable, "-c", "import numpy, construct"],
            "bob-inspect ckpt FILE": inspect,
        }
        for argv in commands.values():  # untimed: the bytecode is cached (see above)
            subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=ENV)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.rounds):
            for name, argv in commands.items():
                times[name].append(timed(argv))
        breakdowns = {"bob-run": importtime(run), "bob-inspect ckpt": importtime(inspect)} if args.importtime else {}
    print(f"{args.rounds} interleaved rounds; {load_line()}")
    numpy_rows = list(commands)[-3:]
    print(ratio_table({k: v for k, v in times.items() if k not in numpy_rows}, "python -c pass",
                      first_column="command", unit="ms", scale=1e3, ratio_to="python -c pass"))
    print()
    print(ratio_table({k: times[k] for k in numpy_rows}, numpy_rows[0], first_column="command", unit="ms",
                      scale=1e3, ratio_to="import numpy"))
    for what, breakdown in breakdowns.items():
        print(f"\n-X importtime of one {what} (µs): self, cumulative, module")
        for self_us, cumulative_us, name in breakdown:
            print(f"{self_us:8d} {cumulative_us:8d}  {name}")
    shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
