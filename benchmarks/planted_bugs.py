#!/usr/bin/env python3
"""A planted-bug benchmark for bob-fuzz (in the spirit of Magma): how many realistic bugs it finds.

    .venv/bin/python benchmarks/planted_bugs.py [--bugs ID,...] [--runs-scale X]
                                                [--engine loop|atheris] [--time S]
                                                [--suite] [--suite-timeout S] [--json]

Each bug in ``BUGS`` is a small patch of bob's Python source (or, for the
native core, a wrapper around one ``bob._core`` function installed by a
``sitecustomize`` — a simulation at the binding, since rebuilding the core per
bug takes minutes) with the user-visible effect it would have. For each bug in
turn the ``python/`` tree is copied to a temporary directory, the patch is
applied there (each old text must occur exactly once; the real tree is never
touched), and in a fresh process with that copy first on ``sys.path``:

* the fuzzer runs on the bug's target for a fixed budget — the seeded loop
  (``--engine loop``, the default: ``runs`` executions, deterministic) or a
  coverage-guided campaign (``--engine atheris --time S``, from an empty
  corpus plus bob's seeds) — and the benchmark records whether it found a
  failure and after how many executions;
* with ``--suite``, the test suite (``pytest -x -q tests``) runs against the
  same copy: a failure kills the bug (the suite's kill rate).

Prints one row per bug and the detection rate.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

from bob.formats.constants import UPDATES_PER_INVOCATION as U
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Bug:
    id: str
    area: str  # formats | fast path | files | core
    target: str  # the bob-fuzz target that should find it
    runs: int  # the seeded loop's budget
    effect: str  # what a user would see
    patches: tuple[tuple[str, str, str], ...] = ()  # (file under python/, old text, new text)
    shim: str = ""  # sitecustomize source wrapping bob._core (a simulated core bug)
    property: str = ""  # which property is expected to see it
    test: str = ""  # a test of the suite that kills it (--suite-named runs only these)


_KERNEL_SHIM = '''
import numpy as np
from bob import _core
_real = _core.train
def train(planes, pairs, step, updates, *, threads=0, kernel="auto"):
    losses = _real(planes, pairs, step, updates, threads=threads, kernel=kernel)
    p = planes[0]
    if kernel != "scalar" and isinstance(p, np.ndarray) and p.size and p.dtype == np.float32 \\
            and isinstance(step, int) and {lo} <= step < {hi} and np.isfinite(p[0]):
        p.view(np.uint32)[0] ^= 1
    return losses
_core.train = train
'''

_PREDICT_SHIM = '''
import numpy as np
from bob import _core
_real = _core.predict
def predict(p, words):
    out = _real(p, words)
    if not isinstance(p, np.ndarray):
        return out
    values = np.asarray(p, dtype=np.float32)
    rows = int(round(values.size ** 0.5))
    fixed = []
    for (t, v), w in zip(out, words):
        if v:
            row = values[w * rows:(w + 1) * rows]
            t = int(np.flatnonzero(row == row.max())[-1])
        fixed.append((t, v))
    return fixed
_core.predict = predict
'''

BUGS: tuple[Bug, ...] = (
    Bug("token-256", "formats", "predictions", 20_000,
        "a predictions file with token 256 is accepted by every reader (bob-inspect shows it as valid)",
        (("bob/formats/rules.py", "lambda t: t < VOCABULARY", "lambda t: t <= VOCABULARY"),),
        property="contract oracle"),
    Bug("prompt-word-256", "formats", "input", 20_000,
        "a record whose prompt word is 256 is accepted by the schema and the fast path alike; bob-run then "
        "fails inside the core instead of refusing the record by name",
        (("bob/formats/rules.py", "return 0 <= word < VOCABULARY or word == EMPTY_PROMPT",
          "return 0 <= word <= VOCABULARY or word == EMPTY_PROMPT"),),
        property="contract oracle (the two readers share the one rule, so the wrong bound)"),
    Bug("header-65536-refused", "formats", "checkpoint", 3_000,
        "a valid checkpoint with header_bytes = 65,536 (the largest the contract allows) is refused",
        (("bob/formats/rules.py", "lambda v: v % HEADER_ALIGNMENT == 0 and v <= MAX_HEADER_BYTES,",
          "lambda v: v % HEADER_ALIGNMENT == 0 and v < MAX_HEADER_BYTES,"),),
        property="contract oracle + header_bytes grown with the padding"),
    Bug("step-limit-off-by-one", "formats", "checkpoint", 3_000,
        f"a checkpoint at step 2**64 - {U + 1}, which still has room for {U} updates, is refused for resuming",
        (("bob/formats/rules.py", "lambda step: step <= U64_MAX - UPDATES_PER_INVOCATION",
          "lambda step: step < U64_MAX - UPDATES_PER_INVOCATION"),),
        property="contract oracle + any step with digests re-sealed"),
    Bug("padding-first-64", "formats", "checkpoint", 3_000,
        "non-zero bytes in a wide header's padding past its first 64 bytes are accepted",
        (("bob/formats/checkpoint/examination.py", "pad = data[end:min(hb, n)]", "pad = data[end:min(hb, n)][:64]"),),
        property="contract oracle + header_bytes grown with the padding"),
    Bug("offsets-at-aligned-header", "formats", "checkpoint", 3_000,
        "every valid checkpoint whose header_bytes is larger than its header's aligned length is refused "
        "(chunk offsets expected where a 448-byte header would put them)",
        (("bob/formats/checkpoint/examination.py", "want = chunk_offset(hb, i)", "want = chunk_offset((end + 63) // 64 * 64, i)"),),
        property="contract oracle + header_bytes grown with the padding"),
    Bug("step0-only-m", "formats", "checkpoint", 3_000,
        "a step-0 checkpoint whose V is not zero (but M is) is accepted for resuming",
        (("bob/formats/checkpoint/state.py", "for i in (1, 2):", "for i in (1,):"),),
        property="contract oracle + step 0 with the moments zeroed one at a time"),
    Bug("targets-low-byte", "formats", "input", 20_000,
        "a record whose widened target has garbage in its high bytes is accepted (and re-serializes "
        "to other bytes)",
        (("bob/formats/rules.py", "lambda widened, target: widened == target",
          "lambda widened, target: widened & 0xFF == target"),),
        property="round trip, fast path, contract oracle"),
    Bug("fast-record-skips-version", "fast path", "input", 20_000,
        "bob-run's fast path takes a version-2 record as valid",
        (("bob/formats/canonical.py", "if len(data) != RECORD_BYTES or data[:_PAIRS.offset] != _RECORD_HEAD:",
          "if len(data) != RECORD_BYTES or data[:8] != _RECORD_HEAD[:8]:"),),
        property="fast path against the schemas"),
    Bug("fast-ckpt-skips-table", "fast path", "checkpoint", 3_000,
        "the canonical path (bob-run's and the readers') does not compare the chunk table: it accepts a checkpoint whose "
        "planes no longer match their digests",
        (("bob/formats/checkpoint/header.py",
          "return step if data[:HEADER_BYTES] == checkpoint_header(step, digests, digest) else None",
          "from bob.formats.layout import CANONICAL\n    table = CANONICAL.chunk_table\n"
          "    return step if data[:table] == checkpoint_header(step, digests, digest)[:table] else None"),),
        property="fast path against the schemas"),
    Bug("backup-link-left", "files", "run", 300,
        "after every successful bob-run a hard link of the old predictions is left beside the new ones",
        (("bob/backup.py", "                os.unlink(self._name(self.link), dir_fd=self.directory)\n",
          "                os.path.exists(self.link)\n"),),
        property="bob-run leaves no other file"),
    Bug("mode-not-kept", "files", "run", 300,
        "a replaced checkpoint or predictions file loses its permissions (0600 becomes 0644)",
        (("bob/fileio.py", "                os.fchmod(fd, old.st_mode & 0o7777)\n", "                pass\n"),),
        property="the world: a replaced file keeps its mode"),
    Bug("hard-link-split", "files", "run", 600,
        "a checkpoint or predictions file with a second name (a hard link) is replaced: the other name "
        "keeps the old bytes, split from this one",
        (("bob/fileio.py", "    if st.st_nlink > 1:\n", "    if st.st_nlink > 2:\n"),),
        property="the world: hard-linked paths refused"),
    Bug("rollback-skipped", "files", "run", 1_500,
        "when the checkpoint cannot be replaced (a full or failing disk), the new predictions stay "
        "beside the old checkpoint, and bob-run says nothing was changed",
        (("bob/commit.py", "                        backup.restore(strict=os.path.dirname(companion) != unsynced, "
          "into_empty=held is None)", "                        pass"),),
        property="the world: a failing os call, files old exactly when bob-run refuses"),
    Bug("checkpoint-renamed-first", "files", "run", 600,
        "the checkpoint is renamed into place before the predictions: a crash between the two leaves a "
        "new checkpoint beside the old predictions (and the run's own check refuses it, exit 75)",
        (("bob/commit.py",
          "self.files = (*more[::-1], (companion, companion_data, companion_about), (main, main_data, main_about))",
          "self.files = (*more[::-1], (main, main_data, main_about), (companion, companion_data, companion_about))"),),
        property="bob-run exits 0 exactly when bob.invoke accepts"),
    Bug("room-checked-before", "core", "run", 1_500,
        f"from a step between 2**64 - {2 * U} and 2**64 - {U + 1} bob-run writes a checkpoint with no room for the "
        f"next {U} updates, which bob then refuses to resume (D14)",
        (("bob/invocation.py", "problem = core.resume_problem(p, m, v, step_after)",
          "problem = core.resume_problem(p, m, v, step)"),),
        property="bob-run's output held to the contract oracle"),
    Bug("dirsync-after-commit-missing", "files", "run", 1_500,
        "the checkpoint's directory is not fsynced after the commit rename: bob-run says it committed, and "
        "after a power loss the old checkpoint is back",
        (("bob/commit.py", "lambda: fsync_directory(self.directories[os.path.dirname(main)], strict=True))",
          "lambda: None)"),),
        property="the powerloss world: only the new pair once bob-run said it committed",
        test="tests/hostile/test_power_loss.py::test_every_crash_state_of_bob_run_resumes"),
    Bug("dirsync-after-commit-of-the-predictions", "files", "run", 1_500,
        "after the commit rename bob-run syncs the predictions' directory, not the checkpoint's: where the two "
        "lie apart, it says it committed, and after a power loss the old checkpoint is back",
        (("bob/commit.py", "lambda: fsync_directory(self.directories[os.path.dirname(main)], strict=True))",
          "lambda: fsync_directory(self.directories[os.path.dirname(self.files[0][0])], "
          "strict=True))"),),
        property="the powerloss world through links (two directories): only the new pair once bob-run said it committed",
        test="tests/hostile/test_power_loss.py::test_every_crash_state_of_bob_run_resumes"),
    Bug("rollback-without-dirsync", "files", "run", 1_500,
        "a rollback puts the old predictions back without syncing their directory: bob-run says nothing was "
        "changed, and after a power loss the new predictions are there, the old ones under a temporary name "
        "the next run deletes",
        (("bob/backup.py", "        self.put_back = True\n        fsync_directory(os.path.dirname(self.target) if "
          "self.directory is None else self.directory, strict=strict)\n", "        self.put_back = True\n"),),
        property="the powerloss world, its lock lost: the old predictions once bob-run said nothing was changed",
        test="tests/hostile/test_power_loss.py::test_a_run_that_rolls_back_leaves_the_old_files_after_any_power_loss"),
    Bug("rollback-through-link", "files", "run", 1_500,
        "the old predictions are kept by the path as given: when the checkpoint cannot be replaced, the "
        "rollback renames them over a symlinked --predictions, which becomes a regular file, while the file "
        "it named keeps the new predictions beside the old checkpoint",
        (("bob/commit.py", "                    backup = Backup(companion, self._at(companion)[1])\n",
          "                    backup = Backup(companion_about.path)\n"),),
        property="links x a failing directory-entry call: files old exactly when bob-run refuses, links stay links",
        test="tests/fuzz/test_fuzz_world.py::test_worlds_combine_at_every_os_call"),
    Bug("lock-released-before-commit", "files", "run", 1_500,
        "bob-run gives up its flocks once it has trained (the lock file stays, so its own check "
        "that the lock path is still its file passes): a second bob-run --wait trains from the same "
        "checkpoint, and one of the two updates is lost or refused",
        (("bob/run.py", "        deferral.check()  # a signal during the updates ends the run here, nothing written\n",
          "        deferral.check()  # a signal during the updates ends the run here, nothing written\n"
          "        [__import__('fcntl').flock(lock.fd, __import__('fcntl').LOCK_UN) for lock in locks]\n"),),
        property="the racer world: a second bob-run --wait met at a drawn point of the commit",
        test="tests/hostile/test_races.py::test_two_concurrent_runs_lose_no_update"),
    Bug("trace-temporary-left", "files", "run", 1_500,
        "the next bob-run cleans up what a dead one left beside the checkpoint and the predictions, not "
        "beside the trace: after a crash during a traced commit, the dead run's trace temporary stays",
        (("bob/run.py", "        for _, _, target in outputs:\n            cleaned += clean_stale",
          "        for _, _, target in outputs[:2]:\n            cleaned += clean_stale"),),
        property="the powerloss world with --trace: the next bob-run leaves nothing of the dead run",
        test="tests/hostile/test_power_loss.py"),
    Bug("kernel-bc2-early", "core", "core", 6_000,
        "the fast kernels take bc2 as 1.0 from t > 2**14 instead of t = 17,321: P differs from the scalar "
        "transcription by an ulp for steps 16,384-17,319 (simulated at the binding)",
        shim=_KERNEL_SHIM.format(lo=2 ** 14, hi=17_320), property="kernels at the regime changes"),
    Bug("kernel-bc1-regime", "core", "core", 6_000,
        "the fast kernels' bias correction 1 is wrong between t = 6,724 and 7,072, where beta1**t is "
        "subnormal in f64 (simulated at the binding)",
        shim=_KERNEL_SHIM.format(lo=6_723, hi=7_072), property="kernels at the regime changes"),
    Bug("predict-last-max", "core", "core", 6_000,
        "predict returns the highest index among equal maxima instead of the lowest (simulated at the "
        "binding)", shim=_PREDICT_SHIM, property="predict against §4"),
)


@dataclass
class Outcome:
    bug: Bug
    applied: bool = True
    found: bool = False
    executions: int = 0
    seconds: float = 0.0
    message: str = ""
    killed: bool | None = None
    suite_seconds: float = 0.0
    notes: list[str] = field(default_factory=list)


def planted_tree(bug: Bug, into: Path) -> Path:
    """A copy of ``python/`` with ``bug`` applied; raises ValueError if a patch does not apply."""
    tree = into / "python"
    shutil.copytree(ROOT / "python", tree, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for rel, old, new in bug.patches:
        path = tree / rel
        text = path.read_text(encoding="utf-8")
        if text.count(old) != 1:
            raise ValueError(f"{bug.id}: {old!r} occurs {text.count(old)} times in {rel}")
        path.write_text(text.replace(old, new), encoding="utf-8")
    if bug.shim:
        (tree / "sitecustomize.py").write_text(bug.shim, encoding="utf-8")
    return tree


_LOOP = r"""
import json, sys
from bob.fuzz.loop import seeded_loop
r = seeded_loop(sys.argv[1], int(sys.argv[2]), seed=int(sys.argv[3]))
print(json.dumps({"found": bool(r.findings), "executions": r.executions, "seconds": r.seconds,
                  "message": r.findings[0].message[:200] if r.findings else ""}))
"""


def _env(tree: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONOPTIMIZE", None)
    return env


def fuzz(bug: Bug, tree: Path, args: argparse.Namespace) -> dict:
    if args.engine == "loop":
        runs = max(1, int(bug.runs * args.runs_scale))
        out = subprocess.run([sys.executable, "-c", _LOOP, bug.target, str(runs), str(args.seed)],
                             env=_env(tree), capture_output=True, text=True, timeout=3600)
        if out.returncode:
            return {"found": False, "executions": 0, "seconds": 0.0, "message": "loop failed: " + out.stderr[-300:]}
        return json.loads(out.stdout.strip().splitlines()[-1])
    work = tree.parent / "campaign"
    cmd = [sys.executable, "-m", "bob", "fuzz", "run", bug.target, "--time", str(args.time), "--jobs", "1",
           "--corpus", str(work / "corpus"), "--artifacts", str(work / "artifacts"), "--seed", str(args.seed),
           "--json"]
    t0 = time.monotonic()
    out = subprocess.run(cmd, env=_env(tree), capture_output=True, text=True, timeout=args.time + 600)
    result = {"found": out.returncode == 1, "executions": 0, "seconds": time.monotonic() - t0, "message": ""}
    try:
        summary = json.loads(out.stdout.strip().splitlines()[-1])
        result["executions"] = summary.get("executions", 0)
        if summary.get("findings"):
            result["message"] = summary["findings"][0]["message"][:200]
    except (ValueError, IndexError):
        result["message"] = out.stderr[-300:]
    return result


def suite(tree: Path, timeout: float, tests: str = "tests") -> tuple[bool | None, float]:
    """Does ``pytest -x`` over the test suite (or ``tests``) fail against ``tree``? (None: it ran out of time.)"""
    t0 = time.monotonic()
    try:
        out = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", tests],
                             cwd=ROOT, env=_env(tree), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, time.monotonic() - t0
    return out.returncode != 0, time.monotonic() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bugs", help="comma-separated bug ids (default: all)")
    ap.add_argument("--engine", choices=("loop", "atheris"), default="loop")
    ap.add_argument("--runs-scale", type=float, default=1.0, help="scale every seeded-loop budget")
    ap.add_argument("--time", type=int, default=120, help="seconds per campaign (--engine atheris)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--suite", action="store_true", help="also run the test suite against each bug")
    ap.add_argument("--suite-named", action="store_true",
                    help="run only the test each bug names as its killer (bugs naming none: the whole suite)")
    ap.add_argument("--suite-timeout", type=float, default=1800)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    chosen = [b for b in BUGS if not args.bugs or b.id in args.bugs.split(",")]
    outcomes = []
    for bug in chosen:
        o = Outcome(bug)
        with tempfile.TemporaryDirectory(prefix=f"bob-planted-{bug.id}-") as tmp:
            try:
                tree = planted_tree(bug, Path(tmp))
            except ValueError as exc:
                o.applied, o.message = False, str(exc)
                outcomes.append(o)
                continue
            r = fuzz(bug, tree, args)
            o.found, o.executions, o.seconds, o.message = r["found"], r["executions"], r["seconds"], r["message"]
            if args.suite or args.suite_named:
                o.killed, o.suite_seconds = suite(tree, args.suite_timeout,
                                                  bug.test if args.suite_named and bug.test else "tests")
        outcomes.append(o)
        print(f"{bug.id:<28} {bug.target:<12} {'FOUND' if o.found else 'missed' if o.applied else 'not applied':<12}"
              f" {o.executions:>7} execs {o.seconds:7.1f} s"
              + ("" if o.killed is None and not (args.suite or args.suite_named) else
                 f"  suite: {'killed' if o.killed else 'survived' if o.killed is False else 'timeout'}"),
              flush=True)
    applied = [o for o in outcomes if o.applied]
    found = sum(o.found for o in applied)
    print(f"detection: {found} of {len(applied)} bugs ({args.engine}"
          + (f", {args.time} s each" if args.engine == "atheris" else f", seeded loop x{args.runs_scale}") + ")")
    if args.suite or args.suite_named:
        killed = sum(bool(o.killed) for o in applied)
        print(f"test suite: killed {killed} of {len(applied)}")
    if args.json:
        print(json.dumps([{"id": o.bug.id, "area": o.bug.area, "target": o.bug.target, "applied": o.applied,
                           "found": o.found, "executions": o.executions, "seconds": o.seconds,
                           "message": o.message, "killed": o.killed, "effect": o.bug.effect,
                           "property": o.bug.property, "test": o.bug.test} for o in outcomes], indent=1))


if __name__ == "__main__":
    main()
