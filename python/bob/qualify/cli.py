"""``bob-qualify``: the command line, on the runner every bob command shares
(:func:`bob.commands.run_command`).

Exit codes: 0 qualified; 1 a check failed (each failure names the check,
kernel, thread count, plane and first differing index); 2 the command line
is refused (one line, no traceback); 70 anything unexpected (not 1, which
a failed check has); 130 interrupted, 143 and 129 ended by SIGTERM, SIGHUP.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bob.commands import (
    EXIT_SOFTWARE,
    Outcome,
    Refused,
    about,
    add_common_options,
    argument_parser,
    integer_option,
    output_directory,
    run_command,
)
from bob.distribution import install_hint, plotting_problem
from bob.text import emit, note
from bob.options import shown_argv

PROG = "bob-qualify"


def parser() -> argparse.ArgumentParser:
    p = argument_parser(
        prog=PROG,
        description="Prove on this machine that bob's native path gives the contract's bytes: the §8 public "
                    "vector (bob.invoke and fresh bob-run processes), every kernel × thread count against the "
                    "scalar transcription of §6, fresh-process resume, the shipped golden files; plus a machine "
                    "fingerprint and a performance snapshot.",
        epilog="exit codes: 0 qualified, 1 a check failed, 2 the command line or a path refused, 70 unexpected",
    )
    modes = p.add_mutually_exclusive_group()
    modes.add_argument("--quick", action="store_const", dest="mode", const="quick",
                       help="fewer random states and samples (about 2 s)")
    modes.add_argument("--thorough", action="store_const", dest="mode", const="thorough",
                       help="many more random states, and SIGKILL bob-run while it commits")
    p.set_defaults(mode="default")
    p.add_argument("--seed", type=integer_option("--seed", minimum=0, maximum=2**64 - 1), metavar="N",
                   help="the seed of the random states (printed; default: fresh)")
    p.add_argument("--report", metavar="DIR",
                   help=f"write DIR/qualify.json and PNG plots there, atomically (needs the plot extra: "
                        f"{install_hint('plot')})")
    add_common_options(p, json_help="print one JSON object (checks, verdicts, fingerprint, timings) instead of "
                                    "the tables")
    return p


def main(argv: list[str] | None = None) -> int:
    return run_command(PROG, parser, _work, argv, unexpected_code=EXIT_SOFTWARE,
                       interrupted="interrupted; nothing was qualified")


def _work(args: argparse.Namespace) -> Outcome:
    from rich.console import Console

    from bob.qualify import report, runner
    from bob.qualify.kernels import configurations
    from bob.qualify.verdict import PERTURB_ENV, perturbation  # (NumPy: imported by the runner first)

    if args.report is not None:
        if (problem := plotting_problem()) is not None:
            raise Refused(problem, option="--report", path=args.report)
        output_directory("--report", args.report)
        from bob.commit import replace_targets  # (only with --report: not on every start)

        # a file in the way is refused now, not after the whole run
        replace_targets([(str(Path(args.report) / name), about("--report", Path(args.report) / name))
                         for name in report.REPORT_FILES])
    try:
        perturb = perturbation()
    except ValueError as exc:
        raise Refused(str(exc), option=PERTURB_ENV) from None
    if perturb is not None and perturb not in (runs := configurations()):  # (it would flip nothing, said or not)
        raise Refused(f"{shown_argv(perturb[0])}:{perturb[1]} is no configuration the kernels check runs here; one of "
                      + ", ".join(f"{k}:{t}" for k, t in runs), option=PERTURB_ENV)
    seed = runner.new_seed() if args.seed is None else args.seed
    plan = runner.PLANS[args.mode]
    err = Console(stderr=True)
    if not args.json:  # first, so the seed is known even if the run is cut short
        emit(PROG, f"bob-qualify {plan.mode}: seed {seed} (reproduce with --seed {seed})",
             what=f"its output (seed {seed}: reproduce with --seed {seed})")  # (the seed said on stderr, then)
    elif args.seed is None:  # (on stderr: stdout holds the --json object alone)
        note(PROG, f"seed {seed} (reproduce with --seed {seed})")
    if perturb is not None:
        err.print(f"[bold yellow]{PERTURB_ENV} is set: the kernels check will flip one bit of "
                  f"{perturb[0]} at {perturb[1]} threads (a test hook)[/]")
    with report.LiveProgress(err) as progress:
        result = runner.qualify(plan, seed, perturb=perturb, progress=progress)
    committed = None
    finished = f"(the qualification itself finished: {'' if result['qualified'] else 'NOT '}QUALIFIED, seed {seed})"
    if args.report is not None:
        try:
            images = report.plots(result)  # drawn before about(): running out there is the machine's, no path's
        except Exception as exc:  # the verdict is decided: said with what ended the drawing, not lost
            from bob.failures import OUT_OF_MEMORY, out_of_memory

            if out_of_memory(exc):  # (the runner's words for it are made before: they could not say the verdict)
                raise Refused(f"{OUT_OF_MEMORY} as the report's plots were drawn {finished}", code=EXIT_SOFTWARE) \
                    from exc
            exc.add_note(finished)
            raise
        try:
            with about("--report", args.report):
                report.write_report(Path(args.report), result, PROG, images)
        except Refused as refusal:  # the verdict is decided: said, not lost with the report
            refusal.message += f" {finished}"
            raise
        committed = f"wrote {', '.join(result['report_files'])}"
    if args.json:  # (rich's Console would write to stdout on its own: --json prints the envelope only)
        return Outcome(result["exit_code"], result, "", committed=committed)
    # The tables at the width of the terminal, or rich's own default in a file or
    # a pipe (80 columns, or $COLUMNS), but never under report.MIN_WIDTH.
    out = Console(highlight=False)
    out.width = max(out.width, report.MIN_WIDTH)
    with out.capture() as captured:
        report.print_human(result, out)
        if args.report is not None:
            out.print(report.shown(f"report: {', '.join(result['report_files'])}"))
    return Outcome(result["exit_code"], result, captured.get(), committed=committed)
