"""The per-module table of docs/testing.md, from the last mutation runs.

Reads cargo-mutants' target/mutants-rust/mutants.out/outcomes.json, the
binding's target/mutants-binding/outcomes.json (scripts/mutants_binding.py),
mutmut's results in target/mutmut (``mutmut results --all true``), and
docs/equivalent-mutants.txt: one mutant per line, ``NAME  # why`` — mutants
that cannot change what bob does, left out of the score. A listed name that
the last run did not report as surviving is printed as stale.

    score = killed / (killed + survived), timeouts counted as killed,
    equivalent mutants excluded; "no tests" counts as survived.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUST = ROOT / "target" / "mutants-rust" / "mutants.out" / "outcomes.json"
# Later runs over some functions only (cargo mutants -F … -o target/mutants-rust-recheck…,
# after adding tests or changing those functions), in the order they ran: each
# stands for every mutant of the functions it covers (their line numbers may
# have moved since the full run).
RUST_RECHECKS = sorted((ROOT / "target").glob("mutants-rust-recheck*/mutants.out/outcomes.json"))
# scripts/mutants_binding.py: the binding's mutants, judged by the Python tests.
BINDING = ROOT / "target" / "mutants-binding" / "outcomes.json"
PYTHON_STAGE = ROOT / "target" / "mutmut"
PYTHON_RECHECK = ROOT / "target" / "mutmut-recheck.json"  # scripts/mutants_recheck.py
# scripts/mutants_sample.py: uniform random samples of the mutants not run
# yet, named so that they sort in the order they were drawn
# (target/mutmut-samples/01-all.txt, 02-fileio.txt, ...), each with the
# record of its run (.ran.json). For each group the newest sample with
# members in it stands for the mutants still not run.
PYTHON_SAMPLES = sorted((ROOT / "target" / "mutmut-samples").glob("*.txt"))
# The groups issue 13 sets its aim on.
GROUPS = {"formats/": ("bob.formats",), "fileio.py": ("bob.fileio",), "invocation.py": ("bob.invocation",),
          "run.py, commands.py": ("bob.run", "bob.commands")}
EQUIVALENT = ROOT / "docs" / "equivalent-mutants.txt"

KILLED = {"caught", "killed", "timeout"}
SURVIVED = {"missed", "survived", "no tests"}


def equivalent_names() -> set[str]:
    if not EQUIVALENT.exists():
        return set()
    names = set()
    for line in EQUIVALENT.read_text(encoding="utf-8").splitlines():
        name = line.split("  #", 1)[0].strip()
        if name and not name.startswith("#"):
            names.add(name)
    return names


def rust_outcomes() -> list[tuple[str, str, str]]:
    """(module, mutant name, status) of the last cargo-mutants runs."""
    if not RUST.exists():
        return []
    out: dict[str, tuple[str, str, str, tuple[str, str]]] = {}
    for path in (RUST, *RUST_RECHECKS):
        mutants = []
        for o in json.loads(path.read_text())["outcomes"]:
            scenario = o["scenario"]
            if scenario == "Baseline":
                continue
            mutant = scenario["Mutant"]
            status = {"CaughtMutant": "caught", "MissedMutant": "missed", "Timeout": "timeout",
                      "Unviable": "unviable"}.get(o["summary"], o["summary"])
            function = (mutant["file"], (mutant.get("function") or {}).get("function_name", ""))
            mutants.append((mutant["file"], mutant["name"], status, function))
        covered = {m[3] for m in mutants}
        out = {name: m for name, m in out.items() if m[3] not in covered}
        out.update({m[1]: m for m in mutants})
    return [(file, name, status) for file, name, status, _ in out.values()]


def binding_outcomes() -> list[tuple[str, str, str]]:
    """(module, mutant name, status) of the last scripts/mutants_binding.py run."""
    if not BINDING.exists():
        return []
    return [(name.split(":", 1)[0], name, status) for name, status in json.loads(BINDING.read_text()).items()]


def python_outcomes(recheck: bool = True) -> list[tuple[str, str, str]]:
    """(module, mutant name, status) of the last mutmut run (with the re-checks, unless told not to)."""
    if not (PYTHON_STAGE / "mutants").exists():
        return []
    text = subprocess.run([str(ROOT / ".venv" / "bin" / "mutmut"), "results", "--all", "true"], cwd=PYTHON_STAGE,
                          capture_output=True, text=True, check=True).stdout
    rechecked = json.loads(PYTHON_RECHECK.read_text()) if recheck and PYTHON_RECHECK.exists() else {}
    out = []
    for line in text.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if not sep:
            continue
        if status in SURVIVED and rechecked.get(name) == "killed":
            status = "killed"
        module = name.split(".x_")[0].split(".xǁ")[0]
        out.append((module, name, status))
    return out


def table(title: str, outcomes: list[tuple[str, str, str]], equivalent: set[str]) -> list[str]:
    per: dict[str, Counter] = defaultdict(Counter)
    for module, name, status in outcomes:
        per[module]["equivalent" if name in equivalent and status in SURVIVED else status] += 1
    lines = [f"## {title}", "", "| module | mutants | killed | timeout | survived | no tests | equivalent | "
             "not run | score |", "|---|---|---|---|---|---|---|---|---|"]
    total: Counter = Counter()
    for module in sorted(per):
        c = per[module]
        total += c
        lines.append(row(module, c))
    lines.append(row("**all**", total))
    return lines + [""]


def row(module: str, c: Counter) -> str:
    killed = c["caught"] + c["killed"]
    survived = c["missed"] + c["survived"]
    scored = killed + c["timeout"] + survived + c["no tests"]
    score = f"{100 * (killed + c['timeout']) / scored:.1f}%" if scored else "-"
    not_run = c["not checked"] + c["unviable"] + c["skipped"]
    return (f"| {module} | {sum(c.values())} | {killed} | {c['timeout']} | {survived} | {c['no tests']} | "
            f"{c['equivalent']} | {not_run} | {score} |")


def scored(outcomes: list[tuple[str, str, str]], equivalent: set[str]) -> tuple[int, int]:
    """(killed incl. timeouts, killed + survived + no tests) over non-equivalent mutants."""
    killed = sum(1 for _, name, status in outcomes if status in KILLED)
    survived = sum(1 for _, name, status in outcomes if status in SURVIVED and name not in equivalent)
    return killed, killed + survived


def estimate(python: list[tuple[str, str, str]], samples: list[Path], equivalent: set[str]) -> list[str]:
    """Each group's score over every mutant, run or not.

    A mutant with a result (a run, a sample, a re-check) counts as itself:
    its status against today's tests. The mutants still not run are
    estimated from the group's newest sample as it ran (NN-LABEL.ran.json,
    written by ``mutants_sample.py --record``): a uniform random draw from
    the mutants not run when it was drawn, so its rate of killed and of
    scored mutants stands for theirs. Tests written since for its survivors
    do not raise that rate: they kill the sampled survivors only. The bound
    is one-sided 95 % (Clopper-Pearson on the sample's survivors); the
    "all" row adds the groups' bounds, which is more cautious still."""
    ran = KILLED | SURVIVED
    ran_path = [path.with_suffix(".ran.json") for path in samples]
    records = [(path, path.read_text().split(), json.loads(ran.read_text()) if ran.exists() else None)
               for path, ran in zip(samples, ran_path)]
    lines = ["## python/bob: every mutant, by the groups of issue 13", "",
             "| group | mutants | known: killed / scored | not run | newest sample as it ran: killed / scored "
             "of sampled | estimated score | 95 % lower bound |", "|---|---|---|---|---|---|---|"]
    totals = [0.0, 0.0, 0.0, 0.0]  # estimate killed, scored; bound killed, scored
    notes = []
    for group, prefixes in GROUPS.items():
        mine = [o for o in python if o[0].startswith(prefixes)]
        known = [o for o in mine if o[2] in ran]
        not_run = len(mine) - len(known)
        a = scored(known, equivalent)
        path, as_ran = next(((p, r) for p, names, r in reversed(records)
                             if any(name.startswith(prefixes) for name in names)), (None, None))
        sample = [(group, name, status) for name, status in (as_ran or {}).items() if name.startswith(prefixes)]
        if path is not None and as_ran is None:
            notes.append(f"{group}: {path.name} has no record of its run yet (mutants_sample.py --record)")
        elif any(status not in ran for _, _, status in sample):
            notes.append(f"{group}: {path.name} was stopped part-way: a sample run cheapest first is not uniform")
            sample = []
        b = scored(sample, equivalent)
        share = (b[0] / len(sample), b[1] / len(sample)) if sample else (0.0, 0.0)
        est = (a[0] + not_run * share[0], a[1] + not_run * share[1])
        survival_bound = clopper_pearson_upper(b[1] - b[0], b[1]) if b[1] else 0.0
        low = (a[0] + not_run * share[1] * (1 - survival_bound), est[1])
        if not_run and not sample:
            notes.append(f"{group}: {not_run} mutants not run and no sample of them: the score is of what ran")
        totals = [totals[0] + est[0], totals[1] + est[1], totals[2] + low[0], totals[3] + low[1]]
        sampled = f"{b[0]} / {b[1]} of {len(sample)}" if sample else "-"
        lines.append(f"| {group} | {len(mine)} | {a[0]} / {a[1]} | {not_run} | {sampled} | "
                     f"{percent(*est)} | {percent(*low)} |")
    lines.append(f"| **all** | {sum(1 for o in python if o[0].startswith(sum(GROUPS.values(), ())))} | | | | "
                 f"{percent(totals[0], totals[1])} | {percent(totals[2], totals[3])} |")
    return lines + [""] + [f"- {note}" for note in notes] + ([""] if notes else [])


def clopper_pearson_upper(survivors: int, scored: int, confidence: float = 0.95) -> float:
    """The largest survival rate q for which seeing at most `survivors` of
    `scored` still has probability 1 - confidence (one-sided, exact)."""
    if survivors >= scored:
        return 1.0

    def at_most(q: float) -> float:
        return sum(math.comb(scored, k) * q**k * (1 - q) ** (scored - k) for k in range(survivors + 1))

    lo, hi = 0.0, 1.0
    for _ in range(60):  # at_most falls as q rises
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if at_most(mid) > 1 - confidence else (lo, mid)
    return hi


def percent(killed: float, scored: float) -> str:
    return f"{100 * killed / scored:.1f}%" if scored else "-"


def main() -> int:
    equivalent = equivalent_names()
    rust, binding, python = rust_outcomes(), binding_outcomes(), python_outcomes()
    lines = (table("rust/bob-core (cargo-mutants)", rust, equivalent)
             + table("rust/bob-py, the binding (its mutants, the Python tests)", binding, equivalent)
             + table("python/bob (mutmut)", python, equivalent))
    if PYTHON_SAMPLES and python:
        lines += estimate(python, PYTHON_SAMPLES, equivalent)
    print("\n".join(lines))
    survivors = {name for _, name, status in rust + binding + python if status in SURVIVED}
    stale = sorted(equivalent - survivors)
    if stale and (rust or binding or python):
        print("listed as equivalent but not reported surviving by the last run:", *stale, sep="\n  ")
    left = sorted(survivors - equivalent)
    if left:
        print(f"{len(left)} survivors not listed as equivalent:", *left, sep="\n  ")
    return 0


if __name__ == "__main__":
    sys.exit(main())
