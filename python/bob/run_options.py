"""``bob-run``'s command line: the argparse parser, and the common command
lines read without it (building the parser costs more than a whole
invocation's work, BENCHMARKS.md)."""

from __future__ import annotations

from bob.commands import Refused, add_common_options, argument_parser, seconds_option
from bob.options import checked_text, shown_argv

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    import argparse

__all__ = ["PROG", "run_parser", "QuickArgs", "quick_args", "refuse_bad_pin", "wait_seconds"]

PROG = "bob-run"


def run_parser() -> "argparse.ArgumentParser":
    from bob.formats.constants import PREDICTION_BYTES, UPDATES_PER_INVOCATION

    parser = argument_parser(
        prog=PROG,
        description=f"One bob invocation: {UPDATES_PER_INVOCATION} AdamW updates from CKPT (missing or empty: fresh), "
        "then CKPT and PRED replaced atomically.",
        epilog="exit codes: 0 done, 1 unexpected, 2 refused, 75 a file in use",
    )
    parser.add_argument("--input", required=True, metavar="RECORD", help="the input record (bob-input v1)")
    parser.add_argument("--checkpoint", required=True, metavar="CKPT", help="read, then replaced atomically")
    parser.add_argument("--predictions", required=True, metavar="PRED", help=f"written atomically ({PREDICTION_BYTES} bytes)")
    parser.add_argument("--trace", metavar="TRACE",
                        help="also write the trace of the updates (formats/trace.md), committed with the pair")
    parser.add_argument("--wait", default="0", metavar="SECONDS", type=checked_text(wait_seconds),
                        help="wait this long for files another bob-run holds (default: refuse at once, exit 75)")
    parser.add_argument("--expect-checkpoint", metavar="SHA256", type=checked_text(refuse_bad_pin),
                        help="refuse (exit 2), training nothing, unless CKPT's SHA-256 is this one (64 hex digits, "
                        "either case: the checkpoint_sha256 of the last run's --json); a missing or empty CKPT never is")
    add_common_options(parser, json_help="print the summary (or the refusal) as one JSON object")
    return parser


class QuickArgs:
    """The options of a common command line (see :func:`quick_args`); a
    plain class, as importing ``types`` for SimpleNamespace costs start-up."""

    input: str
    checkpoint: str
    predictions: str
    trace: "str | None"
    wait: str
    expect_checkpoint: "str | None"
    json: bool
    debug: bool

    def __init__(self, values: "dict[str, object]") -> None:
        self.__dict__.update(values)


_FLAGS = ("json", "debug")


def quick_args(argv: list[str]) -> "QuickArgs | None":
    """The common command lines, read without building the argparse parser
    (which costs more than a whole invocation's work). Anything else — help,
    an unknown or repeated option, a missing value — returns None and goes to
    argparse, which prints its usual messages."""
    values: "dict[str, object]" = {"input": None, "checkpoint": None, "predictions": None, "trace": None, "wait": "0",
                    "expect_checkpoint": None,
                    "json": False, "debug": False}
    seen = set()
    items = list(argv)
    while items:
        item = items.pop(0)
        name, eq, value = item.partition("=")
        key = name[2:].replace("-", "_") if name.startswith("--") and "_" not in name else None
        if key not in values or key in seen:
            return None
        seen.add(key)
        if key in _FLAGS:
            if eq:
                return None
            values[key] = True
            continue
        if not eq:
            if not items:
                return None
            value = items.pop(0)
        if value.startswith("-") and (value.startswith("--") or key != "wait" or not eq):  # argparse's to judge:
            # --wait -1 is a value to it, -0e0 not (its rule changes with Python's version), --wait=-0e0 is
            return None
        values[key] = value
    if None in (values["input"], values["checkpoint"], values["predictions"]):
        return None
    return QuickArgs(values)


def refuse_bad_pin(pin: "str | None") -> None:
    """``--expect-checkpoint``: a SHA-256's 64 hexadecimal digits (either case), or the refusal naming the option."""
    from bob.formats.checkpoint import pin_problem
    from bob.text import bounded

    if pin is not None and (problem := pin_problem(pin, lambda p: bounded(f"str '{shown_argv(p)}'"))) is not None:
        raise Refused(problem, option="--expect-checkpoint")  # (argv's bytes shown, bounded as shown_kind)


def wait_seconds(text: str) -> float:
    """``--wait``: a finite number of seconds, at least 0."""
    return seconds_option("--wait")(text)
