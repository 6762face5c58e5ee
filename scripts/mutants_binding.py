"""Mutation testing of the PyO3 binding (rust/bob-py), whose tests are Python's.

cargo-mutants finds the mutants but can only judge them with `cargo test`,
and the binding has no Rust tests: what it must do is seen from Python. So
this script takes cargo-mutants' list, and for each mutant, in a scratch
worktree of HEAD (target/mutants-binding/tree, with its own .venv):

1. writes the mutant into rust/bob-py/src, builds the extension
   (`cargo build --release -p bob-py`; a build failure is "unviable") and
   puts it where `import bob._core` finds it;
2. runs the tests that call the binding directly (tests/core,
   tests/test_invocation.py); a failure is "caught";
3. if they pass, runs the whole Python suite; a failure is "caught", a pass
   "missed", a run over the time limit "timeout".

Outcomes go to target/mutants-binding/outcomes.json as they come, so an
interrupted run resumes where it stopped. The mutants are of the committed
HEAD, not of uncommitted changes. Not part of CI: about 5 s a mutant the
direct tests catch, a minute for one they miss; ~20 min for the crate.

    .venv/bin/python scripts/mutants_binding.py [--fresh] [NAME-REGEX]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "target" / "mutants-binding"
TREE = OUT / "tree"
OUTCOMES = OUT / "outcomes.json"
DIRECT_TESTS = ["tests/core", "tests/test_invocation.py"]
DIRECT_LIMIT_S = 120
SUITE_LIMIT_S = 600


def run(cmd: list[str], cwd: Path, limit: float | None = None) -> subprocess.CompletedProcess[str] | None:
    """The finished process, or None when it ran over `limit` seconds."""
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        return None


def prepare_tree(fresh: bool) -> None:
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()
    if fresh and TREE.exists():
        subprocess.run(["git", "worktree", "remove", "--force", str(TREE)], cwd=ROOT, check=True)
    if not TREE.exists():
        OUT.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "worktree", "add", "--detach", str(TREE), head], cwd=ROOT, check=True)
    else:
        subprocess.run(["git", "checkout", "--detach", "--force", head], cwd=TREE, check=True)
    subprocess.run(["bash", "scripts/bootstrap.sh", "test,plot,fuzz"], cwd=TREE, check=True)


def build(tree: Path) -> bool:
    done = run(["cargo", "build", "--release", "--locked", "-p", "bob-py"], tree)
    if done is None or done.returncode != 0:
        errors = [line for line in (done.stderr if done else "").splitlines() if line.startswith("error")]
        print(f"    build failed: {errors[0] if errors else 'no error line'}", flush=True)
        return False
    shutil.copyfile(tree / "target" / "release" / "lib_core.so", tree / "python" / "bob" / "_core.abi3.so")
    return True


def pytest(tree: Path, paths: list[str], limit: float) -> str:
    """'pass', 'fail' or 'timeout'."""
    done = run([str(tree / ".venv" / "bin" / "python"), "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
                *paths], tree, limit)
    if done is None:
        return "timeout"
    return "pass" if done.returncode == 0 else "fail"


def apply(source: str, mutant: dict) -> str:
    """`source` with the mutant's span replaced (lines and columns from 1)."""
    lines = source.splitlines(keepends=True)
    start, end = mutant["span"]["start"], mutant["span"]["end"]
    offset = [0]
    for line in lines:
        offset.append(offset[-1] + len(line))
    a = offset[start["line"] - 1] + start["column"] - 1
    b = offset[end["line"] - 1] + end["column"] - 1
    return source[:a] + mutant["replacement"] + source[b:]


def judge(mutant: dict) -> str:
    path = TREE / mutant["file"]
    original = path.read_text()
    path.write_text(apply(original, mutant))
    try:
        if not build(TREE):
            return "unviable"
        direct = pytest(TREE, DIRECT_TESTS, DIRECT_LIMIT_S)
        if direct != "pass":
            return "caught" if direct == "fail" else "timeout"
        whole = pytest(TREE, [], SUITE_LIMIT_S)
        return {"fail": "caught", "pass": "missed", "timeout": "timeout"}[whole]
    finally:
        path.write_text(original)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fresh", action="store_true", help="a new tree and no earlier outcomes")
    parser.add_argument("only", nargs="?", default="", help="only mutants whose name matches this regex")
    args = parser.parse_args()
    prepare_tree(args.fresh)
    outcomes: dict[str, str] = {} if args.fresh or not OUTCOMES.exists() else json.loads(OUTCOMES.read_text())
    listing = subprocess.run(["cargo", "mutants", "-p", "bob-py", "--list", "--json"], cwd=TREE,
                             capture_output=True, text=True, check=True)
    mutants = [m for m in json.loads(listing.stdout) if re.search(args.only, m["name"])]
    if not build(TREE) or pytest(TREE, [], SUITE_LIMIT_S) != "pass":
        print("the unmutated tree does not pass its tests", file=sys.stderr)
        return 1
    todo = [m for m in mutants if m["name"] not in outcomes]
    print(f"{len(mutants)} mutants, {len(todo)} to run", flush=True)
    for n, mutant in enumerate(todo, 1):
        began = time.monotonic()
        outcomes[mutant["name"]] = judge(mutant)
        OUTCOMES.write_text(json.dumps(outcomes, indent=1, sort_keys=True) + "\n")
        print(f"[{n}/{len(todo)}] {outcomes[mutant['name']]:8} {time.monotonic() - began:5.1f}s  {mutant['name']}",
              flush=True)
    build(TREE)  # leave the tree's extension unmutated
    counts = {k: sum(1 for m in mutants if outcomes.get(m["name"]) == k)
              for k in ("caught", "missed", "timeout", "unviable")}
    print(counts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
