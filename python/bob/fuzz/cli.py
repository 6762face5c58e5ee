"""The ``bob-fuzz`` command line (also ``python -m bob fuzz``).

Exit codes: 0 nothing found / everything passed / every reader agreed;
1 a finding, a failing replay or a disagreement; 2 a usage error or a
missing engine (atheris is the optional ``fuzz`` extra; only ``run``
without ``--engine loop`` needs it).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

PROG = "bob-fuzz"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="Fuzz bob's formats, commands and native core; "
                                "write and check a conformance corpus for other implementations.")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("targets", help="list the targets and the property each checks")

    r = sub.add_parser("run", help="a coverage-guided campaign (atheris/libFuzzer)")
    r.add_argument("target", help="a target name, or package.module:function")
    when = r.add_mutually_exclusive_group()
    when.add_argument("--time", type=float, metavar="SECONDS", help="how long (default 60 s)")
    when.add_argument("--runs", type=int, metavar="N", help="how many executions, over all jobs")
    r.add_argument("--jobs", type=int, default=1, metavar="N", help="worker processes sharing one corpus")
    r.add_argument("--corpus", metavar="DIR", help="the corpus directory (default .bob-fuzz/TARGET/corpus)")
    r.add_argument("--artifacts", default="fuzz-artifacts", metavar="DIR", help="where findings are written")
    r.add_argument("--seed", type=int, metavar="N", help="seed the engine (and the mutator) for a repeatable run")
    r.add_argument("--format", choices=("input", "checkpoint", "predictions"),
                   help="the format of a package.module:function target, for the field-aware mutator")
    r.add_argument("--engine", choices=("atheris", "loop"), default="atheris",
                   help="atheris (coverage-guided) or loop (seeded mutations, no engine, needs --runs)")
    r.add_argument("--json", action="store_true", help="print the summary as one JSON object")

    rp = sub.add_parser("replay", help="re-run files or directories through their targets")
    rp.add_argument("paths", nargs="+", metavar="PATH")
    rp.add_argument("--target", help="the target (default: from the file's directory or name prefix)")

    mz = sub.add_parser("minimize", help="shrink a finding, keeping its failure")
    mz.add_argument("path", metavar="PATH")
    mz.add_argument("--target", help="the target (default: from the file's directory or name prefix)")
    mz.add_argument("--out", metavar="PATH", help="where to write the smaller file (default PATH.min)")
    mz.add_argument("--max-tries", type=int, default=2000, metavar="N")

    cf = sub.add_parser("conformance", help="write the labelled conformance corpus with manifest.json")
    cf.add_argument("outdir", metavar="OUTDIR")

    ck = sub.add_parser("check", help="run another reader over the conformance corpus: "
                        "bob-fuzz check --format F [--corpus DIR] -- COMMAND ... {}")
    ck.add_argument("--format", required=True, choices=("input", "checkpoint", "predictions"))
    ck.add_argument("--corpus", metavar="DIR", help="a corpus written by `bob-fuzz conformance` "
                    "(default: a fresh one in a temporary directory)")
    ck.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS", help="per file")
    ck.add_argument("--json", action="store_true", help="print the table as one JSON object")
    ck.add_argument("reader", nargs=argparse.REMAINDER, metavar="-- COMMAND {}")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    try:
        return COMMANDS[args.command](args)
    except ValueError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


def cmd_targets(args: argparse.Namespace) -> int:
    from bob.fuzz.targets import TARGETS

    width = max(map(len, TARGETS))
    for t in TARGETS.values():
        print(f"{t.name:<{width}}  {t.property}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from bob.fuzz.campaign import load_target, run_campaign, seeded_loop

    load_target(args.target, args.format)  # an unknown target is a usage error before anything starts
    if args.engine == "loop":
        if args.runs is None:
            raise ValueError("--engine loop needs --runs N")
        result = seeded_loop(args.target, args.runs, args.seed or 0, fmt=args.format)
    else:
        try:
            import importlib.util

            if importlib.util.find_spec("atheris") is None:
                raise ImportError
        except ImportError:
            from bob.distribution import install_hint

            print(f"{PROG}: atheris is not installed: `{install_hint('fuzz')}`, or use --engine loop --runs N",
                  file=sys.stderr)
            return 2
        result = run_campaign(args.target, seconds=args.time, runs=args.runs, jobs=args.jobs, corpus=args.corpus,
                              artifacts=args.artifacts, seed=args.seed, fmt=args.format)
    if args.json:
        print(json.dumps(result.as_dict(), sort_keys=True))
    else:
        share = "" if result.fast_path_share is None else f", fast path reached {result.fast_path_share:.0%}"
        print(f"{PROG} run {args.target}: {result.executions} executions in {result.seconds:.0f} s, "
              f"coverage {result.coverage}, corpus {result.corpus}{share}, {len(result.findings)} finding(s)"
              + (f" ({result.crashes} failing inputs)" if result.crashes > len(result.findings) else ""))
        for f in result.findings:
            print(f"  {f.message}\n    reproduce: {f.repro(args.target)}")
        for f in result.discarded:
            print(f"  not counted: {f.path}: {f.message}")
    return 1 if result.findings else 0


def cmd_replay(args: argparse.Namespace) -> int:
    from bob.fuzz.replay import replay

    verdicts = replay(args.paths, args.target)
    for v in verdicts:
        print(f"{'PASS' if v.passed else 'FAIL'}  {v.target or '?'}  {v.path}" + ("" if v.passed else f"  {v.message}"))
    failed = sum(not v.passed for v in verdicts)
    print(f"{PROG} replay: {len(verdicts) - failed} passed, {failed} failed")
    return 1 if failed else 0


def cmd_minimize(args: argparse.Namespace) -> int:
    from bob.fuzz.campaign import load_target
    from bob.fuzz.replay import minimize
    from bob.fuzz.targets import target_for_file

    name = args.target or target_for_file(args.path)
    if name is None:
        raise ValueError("name the target with --target")
    run, _ = load_target(name)
    data = Path(args.path).read_bytes()
    small = minimize(run, data, max_tries=args.max_tries)
    out = Path(args.out or args.path + ".min")
    out.write_bytes(small)
    print(f"{PROG} minimize: {len(data)} -> {len(small)} bytes: {out}\n  reproduce: "
          f"bob-fuzz replay {out} --target {name}")
    return 0


def cmd_conformance(args: argparse.Namespace) -> int:
    from bob.fuzz.conformance import write_corpus

    entries = write_corpus(args.outdir)
    counts: dict[tuple[str, str], int] = {}
    for e in entries:
        counts[e["format"], e["verdict"]] = counts.get((e["format"], e["verdict"]), 0) + 1
    print(f"{PROG} conformance: {len(entries)} files in {args.outdir} (manifest.json): " +
          ", ".join(f"{fmt} {verdict} {n}" for (fmt, verdict), n in sorted(counts.items())))
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from bob.fuzz.conformance import check, render_table

    reader = args.reader[1:] if args.reader[:1] == ["--"] else args.reader
    if not reader:
        raise ValueError("give the reader's command after --, with {} where the file goes")
    report = check(args.format, reader, corpus=args.corpus, timeout=args.timeout)
    print(json.dumps(report, sort_keys=True) if args.json else render_table(report))
    return 1 if report["disagreements"] else 0


COMMANDS = {"targets": cmd_targets, "run": cmd_run, "replay": cmd_replay, "minimize": cmd_minimize,
            "conformance": cmd_conformance, "check": cmd_check}


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
