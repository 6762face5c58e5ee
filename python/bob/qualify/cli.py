"""``bob-qualify``: the command line.

Exit codes: 0 qualified; 1 a check failed (each failure names the check,
kernel, thread count, plane and first differing index); 2 the command line
is refused (one line, no traceback); 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bob.commands import EXIT_INTERRUPTED, Refused, argument_parser, emit, fail, os_reason, parse_command_line
from bob.distribution import install_hint
from bob.qualify.verdict import PERTURB_ENV, perturbation

PROG = "bob-qualify"


def parser() -> argparse.ArgumentParser:
    p = argument_parser(
        prog=PROG,
        description="Prove on this machine that bob's native path gives the contract's bytes: the §8 public "
                    "vector (bob.invoke and fresh bob-run processes), every kernel × thread count against the "
                    "scalar transcription of §6, fresh-process resume, the shipped golden files; plus a machine "
                    "fingerprint and a performance snapshot.",
        epilog="exit codes: 0 qualified, 1 a check failed, 2 command line refused, 130 interrupted",
    )
    modes = p.add_mutually_exclusive_group()
    modes.add_argument("--quick", action="store_const", dest="mode", const="quick",
                       help="fewer random states and samples (about 5 s)")
    modes.add_argument("--thorough", action="store_const", dest="mode", const="thorough",
                       help="many more random states, and SIGKILL bob-run while it commits")
    p.set_defaults(mode="default")
    p.add_argument("--seed", type=_seed, metavar="N", help="the seed of the random states (printed; default: fresh)")
    p.add_argument("--json", action="store_true", help="print one JSON object (checks, verdicts, fingerprint, "
                                                       "timings) instead of the tables")
    p.add_argument("--report", type=Path, metavar="DIR",
                   help=f"write DIR/qualify.json and PNG plots there (needs the plot extra: {install_hint('plot')})")
    return p


def _seed(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not 0 <= value < 1 << 64:
        raise argparse.ArgumentTypeError(f"must be between 0 and 2**64 - 1, got {value}")
    return value


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_command_line(PROG, parser(), argv)
    if isinstance(args, int):
        return args

    def _refuse(message: str, option: str | None = None, path: object = None) -> int:
        return fail(PROG, Refused(message, option=option, path=path), as_json=args.json)

    from rich.console import Console as RichConsole

    class Console(RichConsole):
        """rich exits with status 1 when stdout's reader goes away; the verdict
        must stay the exit status, so a broken stdout is just silenced."""

        def on_broken_pipe(self) -> None:
            emit(PROG, "")  # points the stream at /dev/null and says so once on stderr

    from bob.qualify import report, runner

    try:
        perturb = perturbation()
    except ValueError as exc:
        return _refuse(str(exc))
    if args.report is not None:
        if not report.plotting_available():
            return _refuse("--report draws plots with matplotlib, which is not installed "
                           f"({install_hint('plot')})")
        if args.report.exists() and not args.report.is_dir():
            return _refuse("exists and is not a directory", "--report", args.report)
    seed = runner.new_seed() if args.seed is None else args.seed
    plan = runner.PLANS[args.mode]
    err = Console(stderr=True)
    out = Console()
    if not out.is_terminal:  # a file or a pipe: wide enough that the table's rows stay on one line
        out = Console(width=max(out.width, 140))
    if not args.json:
        out.print(f"bob-qualify {plan.mode}: seed {seed} (reproduce with --seed {seed})", highlight=False)
    if perturb is not None:
        err.print(f"[bold yellow]{PERTURB_ENV} is set: the kernels check will flip one bit of "
                  f"{perturb[0]} at {perturb[1]} threads (a test hook)[/]")
    try:
        with report.LiveProgress(err) as progress:
            result = runner.qualify(plan, seed, perturb=perturb, progress=progress)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; nothing was qualified", file=sys.stderr)
        return EXIT_INTERRUPTED
    if args.report is not None:
        try:
            written = report.write_report(args.report, result)
        except OSError as exc:
            return _refuse(f"cannot write the report: {os_reason(exc)}", "--report", args.report)
        result["report_files"] = [str(p) for p in written]
    if args.json:
        emit(PROG, json.dumps(result, sort_keys=True))
        return result["exit_code"]
    try:
        report.print_human(result, out)
        if args.report is not None:
            out.print(f"report: {', '.join(result['report_files'])}", highlight=False)
    except (OSError, ValueError):  # stdout closed, full or a broken pipe: the verdict is the exit status
        emit(PROG, "")
    return result["exit_code"]
