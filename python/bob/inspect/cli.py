"""The ``bob-inspect`` command line: parsing, routing, exit codes, JSON or text (docs/bob-inspect.md).

The runner is :func:`bob.commands.run_command`, as for every bob command; the exit codes are the parser's
epilog's: 1 is ``diff``'s and ``trace``'s "they differ", so anything unexpected is 70, not 1."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, Callable

from bob.formats import kinds
from bob.formats.constants import VOCABULARY
from bob.commands import EXIT_FOUND, EXIT_SOFTWARE, Outcome, about, add_common_options, argument_parser, run_command
from bob.distribution import install_hint
from bob.fileio import same_file
from bob.options import ANSWERING, MOST_ATOL, MOST_ULP, checked_text, count_option, hex_bytes, number_option
from bob.text import escape_bytes, one_line, show_path

from bob.inspect.common import EXIT_OK, EXIT_PROBLEMS, PROG, Refused, add_note, invocations_text, peek, plural, read, \
    read_checkpoint
from bob.inspect.export import check_export, export_checkpoint

if TYPE_CHECKING:  # pragma: no cover - argparse is imported only to build the parser
    import argparse

COMMANDS = ("checkpoint", "input", "predictions", "diff", "trace", "verify", "schema")
SUBCOMMANDS = {**{c: c for c in COMMANDS}, **{a: n for a, n in kinds.ALIASES.items() if a != "envelope"}}
Result = tuple[dict[str, Any], list[str], int]


def rows_bytes(args: argparse.Namespace) -> bytes:
    """The context bytes of ``--rows`` and ``--rows-hex``, in order, each once."""
    out = bytearray()
    if args.rows is not None:
        out += os.fsencode(args.rows) or _no_bytes("--rows")
    if args.rows_hex is not None:
        out += hex_bytes("--rows-hex", args.rows_hex) or _no_bytes("--rows-hex")
    return bytes(dict.fromkeys(out))


def _no_bytes(option: str) -> bytes:
    raise Refused("no context bytes given (an empty value is not \"no rows\": leave the option out)", option=option)


def cmd_checkpoint(args: argparse.Namespace, *, peeked: "tuple[bytes, int, bool] | None" = None) -> Result:
    """``bob-inspect checkpoint FILE [--rows BYTES] [--rows-hex HEX] [--heatmap OUT] [--export OUT]``."""
    from bob.inspect.checkpoint import checkpoint_report
    from bob.inspect.render import render_checkpoint
    from bob.commit import replace_all

    export, heatmap = args.export, args.heatmap
    if export is not None:  # (an empty path is refused, not taken for no export)
        check_export(export, args.file)
    if heatmap is not None:
        from bob.inspect.heatmap import check_heatmap, draw_heatmap

        check_heatmap(heatmap, args.file)
        if export is not None and same_file(heatmap, export):
            raise Refused("names the same file as --export; each needs its own", option="--heatmap", path=heatmap)
    rows, written = rows_bytes(args), []
    data, problems = read_checkpoint(args.file, peeked=peeked)
    report, p_plane = checkpoint_report(data, problems, path=args.file, auto=peeked is not None, rows=rows)
    if heatmap is not None and p_plane is None:
        # the file has problems (they are reported); there is nothing to draw
        add_note(report, "no heatmap: the P plane could not be read")
    elif heatmap is not None:
        title = f"{show_path(os.path.basename(args.file))}: P at step {report['step']} " \
            f"({invocations_text(report['step'])})"
        image, report["heatmap"] = draw_heatmap(p_plane, heatmap, title)
        written.append((heatmap, image, about("--heatmap", heatmap)))
    if export is not None and (exported := export_checkpoint(report, data, export)) is not None:
        written.append((export, exported[0], about("--export", export)))
        report["export"] = exported[1]
    replace_all(written, keep=[args.file])  # both staged first; the file read checked again
    return report, render_checkpoint(report), EXIT_OK if report["ok"] else EXIT_PROBLEMS


def cmd_file(kind: str, path: str, *, peeked: "tuple[bytes, int, bool] | None" = None) -> Result:
    """``bob-inspect input|predictions|trace FILE`` and ``bob-inspect FILE``: one file, 0 valid, 2 it has problems.
    Each kind's module holds what ``read`` takes (``READ``), its report and its lines; only that one is imported."""
    if kind == kinds.INPUT:
        from bob.inspect.record import READ, input_report as make, render_input as render
    elif kind == kinds.PREDICTIONS:
        from bob.inspect.predictions import READ, predictions_report as make, render_predictions as render
    else:
        from bob.inspect.trace import READ, render_trace_file as render, trace_file_report as make
    data, problems = read(path, *READ, peeked=peeked)
    report = make(data, problems, path=path, auto=peeked is not None)
    return report, render(report), EXIT_OK if report["ok"] else EXIT_PROBLEMS


def cmd_diff(args: argparse.Namespace) -> Result:
    """``bob-inspect diff A B [--ulp N] [--atol X]``: 0 equal, 1 different, 2 a file has problems."""
    from bob.inspect.checkpoint import diff_report
    from bob.inspect.render import render_diff, render_diffable

    report = diff_report(args.a, args.b, ulp=args.ulp, atol=args.atol)
    code = EXIT_PROBLEMS if report["problems_found"] else EXIT_OK if report["equal"] else EXIT_FOUND
    return report, (render_diffable if args.diffable else render_diff)(report), code


def cmd_trace(args: argparse.Namespace) -> Result:
    """``bob-inspect trace A B [--checkpoints CA CB]``: 0 the runs agree, 1 they part, 2 refused;
    ``bob-inspect trace FILE``: that trace's report, as ``bob-inspect FILE`` gives it."""
    from bob.inspect.trace import render_trace, trace_report

    if args.b is None:
        if args.checkpoints:
            raise Refused("usage: trace: compares two traces; give A and B", option="--checkpoints")
        return cmd_file(kinds.TRACE, args.a)
    report = trace_report(args.a, args.b, args.checkpoints)
    return report, render_trace(report), EXIT_OK if report["same"] else EXIT_FOUND


def cmd_verify(args: argparse.Namespace) -> Result:
    """``bob-inspect verify FILE...``: 0 every checkpoint is good, 2 any is not."""
    from bob.inspect.verify import render_verify, verify_file
    from bob.progress import Progress

    checkpoints = []
    with Progress(PROG, "verify", len(args.files)) as progress:  # (thousands of files take seconds)
        for path in args.files:
            checkpoints.append(verify_file(path))
            progress.advance()
    good = all(r["ok"] for r in checkpoints)
    return {"checkpoints": checkpoints}, render_verify(checkpoints), EXIT_OK if good else EXIT_PROBLEMS


def cmd_schema(args: argparse.Namespace) -> Result:
    """``bob-inspect schema [KIND]`` (every kind without one)."""
    from bob.inspect.render import render_schema
    from bob.inspect.schema import SCHEMA_KINDS, schema_report

    if args.kind is not None and args.kind not in SCHEMA_KINDS:
        raise Refused(f"usage: schema: unknown kind {escape_bytes(os.fsencode(args.kind))}; "
                      f"one of {', '.join(SCHEMA_KINDS)}")
    report = schema_report([args.kind] if args.kind else list(SCHEMA_KINDS))
    return report, render_schema(report), EXIT_OK


def cmd_auto(args: argparse.Namespace) -> Result:
    """``bob-inspect FILE``: the kind from :func:`bob.formats.kinds.detect_kind`."""
    peeked = head, size, partial = peek(args.file)  # (read once: the report is of these bytes)
    if (kind := kinds.detect_kind(head, size)) is None:
        raise Refused(f"not a bob file ({'at least ' * partial}{plural(size, 'byte')} starting \""
                      f"{escape_bytes(head[:kinds.MAGIC_BYTES])}\"; {kinds.KIND_RULES})", path=args.file)
    args.command_key = f"{PROG} {kind}"  # its refusal, interruption or error is the subcommand's, as its report
    if kind == kinds.CHECKPOINT:
        return cmd_checkpoint(args, peeked=peeked)
    given = [o for o, v in zip(_VALUE_OPTIONS, (args.rows, args.rows_hex, args.heatmap, args.export)) if v is not None]
    if given:  # ('' too)
        what = {kinds.INPUT: "an input record", kinds.TRACE: "a trace"}.get(kind, "predictions")
        raise Refused(f"not a checkpoint (it is {what}); {given[0]} applies to checkpoints", path=args.file)
    return cmd_file(kind, args.file, peeked=peeked)


HANDLERS: dict[str, Callable[[argparse.Namespace], Result]] = {
    "checkpoint": cmd_checkpoint, "input": lambda args: cmd_file(kinds.INPUT, args.file),
    "predictions": lambda args: cmd_file(kinds.PREDICTIONS, args.file), "diff": cmd_diff, "trace": cmd_trace,
    "verify": cmd_verify, "schema": cmd_schema, "auto": cmd_auto}


def _checkpoint_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE")
    p.add_argument("--rows", metavar="BYTES", type=checked_text(lambda text: os.fsencode(text) or _no_bytes("--rows")),
                   help="context bytes given as text (e.g. abc): show each row's top-5 next bytes")
    p.add_argument("--rows-hex", metavar="HEX", help="context bytes as hex (e.g. 61,62 or 6162)",
                   type=checked_text(lambda text: hex_bytes("--rows-hex", text) or _no_bytes("--rows-hex")))
    p.add_argument("--heatmap", metavar="OUT.png",
                   help=f"draw the {VOCABULARY} x {VOCABULARY} P table (needs matplotlib: {install_hint('plot')})")
    p.add_argument("--export", metavar="OUT.safetensors|OUT.npz",
                   help=f"write the planes as {(VOCABULARY,) * 2} float32 arrays P, M, V with the step and contract as "
                        f"metadata, for other tools (.safetensors needs the interop extra: {install_hint('interop')})")


def build_parser() -> argparse.ArgumentParser:
    parser = argument_parser(
        prog=PROG, description="Show bob's files (checkpoints, input records, predictions, traces) whole and readably, "
        "from the format schemas. `bob-inspect FILE` detects the kind from the magic. See docs/bob-inspect.md.",
        epilog="exit codes: 0 clean (diff: equal), 1 diff: the files differ (trace: the runs part), 2 a file has "
        "problems / is refused / cannot be read (or a usage error), 70 unexpected")
    add_common_options(parser)
    sub = parser.add_subparsers(dest="command", metavar=f"{{{','.join(COMMANDS)}}} | FILE")
    _checkpoint_options(sub.add_parser("checkpoint", aliases=["ckpt"], help="a checkpoint: header, contract, "
                                       "chunk table, plane statistics, problems"))
    p = sub.add_parser("input", help="an input record: pairs, context counts, targets table, prompts")
    p.add_argument("file", metavar="FILE")
    p = sub.add_parser("predictions", aliases=["pred"], help="a predictions file: the three records")
    p.add_argument("file", metavar="FILE")
    p = sub.add_parser("diff", help="two checkpoints compared: header fields and planes (exit 1 when they differ)")
    p.add_argument("a", metavar="A")
    p.add_argument("b", metavar="B")
    p.add_argument("--ulp", type=count_option("--ulp", minimum=0, maximum=MOST_ULP), metavar="N",
                   help="plane values at most N units in the last place apart are equal")
    p.add_argument("--atol", type=number_option("--atol", maximum=MOST_ATOL), metavar="X",
                   help="plane values at most X apart are equal (with --ulp: either suffices)")
    p.add_argument("--diffable", action="store_true",
                   help="stable text for review: no paths, offsets, sizes or layout digests, so that diff -u of "
                        "two such outputs shows only what changed (--json is unchanged)")
    p = sub.add_parser("trace", help="two traces of one run (bob-run --trace): the first update at which they part "
                       "(exit 1 when they do); one trace: its updates and problems")
    p.add_argument("a", metavar="A")
    p.add_argument("b", metavar="B", nargs="?", help="without B: the report of trace A alone")
    p.add_argument("--checkpoints", nargs=2, metavar=("CA", "CB"),
                   help="a checkpoint of each run at the same step (resumed or made by an update): the first plane "
                        "and index that differ")
    p = sub.add_parser("verify", help="checkpoints checked whole, each on its own: every problem with its chunk "
                       "or field (exit 2 when any file has one)")
    p.add_argument("files", nargs="+", metavar="FILE")
    p = sub.add_parser("schema", help="layout tables from the construct schemas")
    p.add_argument("kind", nargs="?", metavar="{" + ",".join((*kinds.FORMATS, kinds.TRACE)) + "}",
                   type=lambda text: kinds.ALIASES.get(text, text))
    _checkpoint_options(sub.add_parser("auto", prog=PROG))  # `bob-inspect FILE`: not in the help, nor its usage
    for p in dict.fromkeys(sub.choices.values()):  # each command once (an alias names the same parser)
        add_common_options(p, json_help="print one JSON object (stable keys) instead of text")
    return parser


_VALUE_OPTIONS = ("--rows", "--rows-hex", "--heatmap", "--export")


def route(argv: list[str]) -> list[str]:
    """Put the command first; with no command (``bob-inspect [--json] FILE``) it is ``auto``; with neither
    command nor FILE (nothing, or only ``--json``/``--debug``) none, which :func:`_work` refuses."""
    if set(argv) <= set(_FLAGS):
        return argv
    i = 0
    while i < len(argv) and argv[i] != "--":
        if argv[i] in ANSWERING:  # the command's own, unless FILE's options came first
            return argv if set(argv[:i]) <= set(_FLAGS) else ["auto"] + argv
        if argv[i] in SUBCOMMANDS:
            return [argv[i]] + argv[:i] + argv[i + 1:]
        if not argv[i].startswith("-") or argv[i] == "-":  # FILE
            break
        i += 2 if argv[i] in _VALUE_OPTIONS else 1
    return ["auto"] + argv


_ONE_FILE = ("checkpoint", "input", "predictions", "auto")  # the commands that take FILE and no option of their own
_FLAGS = ("--json", "--debug")


def quick_args(argv: list[str]) -> "Any | None":
    """The common command lines (``COMMAND FILE [--json] [--debug]``, after :func:`route`), read without
    building the argparse parser, which costs a share of a report's whole process. Anything else (an option
    with a value, help, a repeated flag, a FILE that starts with ``-``) returns None and goes to argparse,
    which parses it and prints its usual messages; a mistyped command (``bob-inspect chekpoint FILE``) is named."""
    words = [w for w in argv[1:] if w not in _FLAGS]
    if argv[:1] == ["auto"] and len(words) > 1 and words[0][:1] not in ("", "-") and not os.path.lexists(words[0]) \
            and not {"--", *ANSWERING} & set(argv) and any(map(os.path.lexists, words[1:])):
        raise Refused(f"usage: {show_path(words[0])} is no command ({', '.join(COMMANDS)}) and names no file "
                      f"(see {PROG} --help)")  # (a first word naming nothing, then a file: argparse blamed the file)
    if len(argv) < 2 or SUBCOMMANDS.get(argv[0], argv[0]) not in _ONE_FILE:
        return None
    flags = [a for a in argv[1:] if a in _FLAGS]
    files = [a for a in argv[1:] if a not in _FLAGS]
    if len(files) != 1 or files[0].startswith("-") or len(set(flags)) != len(flags):
        return None
    from types import SimpleNamespace  # (already imported with typing: no start-up cost)

    return SimpleNamespace(command=argv[0], file=files[0], json="--json" in flags, debug="--debug" in flags,
                           rows=None, rows_hex=None, heatmap=None, export=None)


def main(argv: list[str] | None = None) -> int:
    argv = route(list(sys.argv[1:] if argv is None else argv))
    return run_command(PROG, build_parser, _work, argv, unexpected_code=EXIT_SOFTWARE, subcommands=SUBCOMMANDS,
                       quick=quick_args)


def _work(args: argparse.Namespace) -> Outcome:
    if args.command is None:
        raise Refused("usage: give a command or a FILE (see bob-inspect --help)")
    command = SUBCOMMANDS.get(args.command, args.command)
    report, lines, code = HANDLERS[command](args)
    name = f"{PROG} {report.get('kind', command) if command == 'auto' else command}"
    written = [item["path"] for item in (report.get("heatmap"), report.get("export")) if isinstance(item, dict)]
    return Outcome(code, report, "\n".join(_guard(line) for line in lines), command=name,
                   committed=f"wrote {', '.join(written)}" if written else None)


def _guard(line: str) -> str:
    """The last guard on a human line: a line with any character a terminal would not print (a control
    character, a bidirectional override …) goes through :func:`bob.text.one_line`; bob's own printable text
    (``VOCABULARY × u32``) stays."""
    return line if line.isprintable() else one_line(line)
