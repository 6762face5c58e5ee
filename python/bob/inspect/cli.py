"""The ``bob-inspect`` command line: parsing, routing, exit codes, JSON or text.

Each command reads its file(s) through the formats layer, asks a report
module for a JSON-ready dict (:mod:`~bob.inspect.checkpoint`,
:mod:`~bob.inspect.record`, :mod:`~bob.inspect.predictions`,
:mod:`~bob.inspect.diff`, :mod:`~bob.inspect.schema`) and prints it: one
JSON object with ``--json``, else the lines of :mod:`~bob.inspect.render`,
each guarded by :func:`bob.text.one_line` when it holds anything unprintable.

Exit codes: 0 the file(s) are clean; 2 a file has a problem, is refused or
cannot be read (missing, a directory, a FIFO, a device), or the command
line is wrong; 1 anything unexpected (a traceback only under ``--debug``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import Any, Callable

from bob.formats import kinds
from bob.formats.constants import MAX_CHECKPOINT_BYTES, RECORD_BYTES
from bob.formats.files import CHECKPOINT_FILE, INPUT_FILE
from bob.commands import argument_parser, fail, parse_command_line, silence
from bob.distribution import install_hint
from bob.text import escape_bytes, one_line, show_path

from bob.inspect.common import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PROBLEMS,
    EXIT_UNEXPECTED,
    PROG,
    Refused,
    peek,
    plural,
    read,
)
from bob.inspect.schema import SCHEMA_ALIASES, SCHEMA_KINDS

COMMANDS = ("ckpt", "checkpoint", "input", "pred", "diff", "schema")  # checkpoint: another name of ckpt
Result = tuple[dict[str, Any], list[str], int]


def _code(report: dict[str, Any]) -> int:
    return EXIT_OK if report["ok"] else EXIT_PROBLEMS


def rows_bytes(args: argparse.Namespace) -> bytes:
    """The context bytes of ``--rows`` and ``--rows-hex``, in order, each once."""
    out = bytearray()
    if getattr(args, "rows", None):
        out += os.fsencode(args.rows)
    if getattr(args, "rows_hex", None):
        text = re.sub(r"0x|[\s,:]", "", args.rows_hex, flags=re.IGNORECASE)
        try:
            out += bytes.fromhex(text)
        except ValueError:
            raise Refused(f"--rows-hex: {escape_bytes(os.fsencode(args.rows_hex))} is not hex "
                          "(pairs of 0-9a-f)") from None
    return bytes(dict.fromkeys(out))


def cmd_ckpt(args: argparse.Namespace, *, auto: bool = False) -> Result:
    """``bob-inspect ckpt FILE [--rows BYTES] [--rows-hex HEX] [--heatmap OUT]``."""
    from bob.inspect.checkpoint import checkpoint_report
    from bob.inspect.render import render_checkpoint

    export = getattr(args, "export", None)
    if export:
        from bob.inspect.export import check_export

        check_export(export, args.file)
    heatmap = getattr(args, "heatmap", None)
    if heatmap:
        from bob.inspect.heatmap import require_matplotlib

        require_matplotlib()
        from bob.fileio import same_file

        if same_file(heatmap, args.file):
            raise Refused(f"--heatmap {show_path(heatmap)}: that is the checkpoint being inspected; "
                          "bob-inspect never replaces what it reads")
    rows = rows_bytes(args)
    data, problems = read(args.file, MAX_CHECKPOINT_BYTES, CHECKPOINT_FILE)
    report, p_plane = checkpoint_report(data, problems, path=args.file, auto=auto, rows=rows)
    report["rows_requested"] = list(rows) if rows else None
    if heatmap and p_plane is None:
        # the file has problems (they are reported); there is nothing to draw
        report["note"] = "no heatmap: the P plane could not be read"
    elif heatmap:
        from bob.inspect.heatmap import draw_heatmap

        title = (f"{show_path(os.path.basename(args.file))}: P at step {report['step']} "
                 f"({plural(report['invocations'], 'invocation')})")
        report["heatmap"] = draw_heatmap(p_plane, heatmap, title)
    if export:
        from bob.inspect.export import export_checkpoint

        report["export"] = export_checkpoint(report, data, export)
    return report, render_checkpoint(report), _code(report)


def cmd_input(args: argparse.Namespace, *, auto: bool = False) -> Result:
    """``bob-inspect input FILE``."""
    from bob.inspect.record import input_report
    from bob.inspect.render import render_input

    data, problems = read(args.file, RECORD_BYTES, INPUT_FILE)
    report = input_report(data, problems, path=args.file, auto=auto)
    return report, render_input(report), _code(report)


def cmd_pred(args: argparse.Namespace, *, auto: bool = False) -> Result:
    """``bob-inspect pred FILE``."""
    from bob.inspect.predictions import predictions_report
    from bob.inspect.render import render_predictions

    # read up to the largest bob file so predictions_findings can say what a
    # longer file is ("this file starts like a bob input record")
    data, problems = read(args.file, MAX_CHECKPOINT_BYTES, None)
    report = predictions_report(data, problems, path=args.file, auto=auto)
    return report, render_predictions(report), _code(report)


def cmd_diff(args: argparse.Namespace) -> Result:
    """``bob-inspect diff A B``."""
    from bob.inspect.diff import diff_report
    from bob.inspect.render import render_diff

    report = diff_report(args.a, args.b)
    return report, render_diff(report), _code(report)


def cmd_schema(args: argparse.Namespace) -> Result:
    """``bob-inspect schema [input|envelope|pred]`` (all three without a kind)."""
    from bob.inspect.render import render_schema
    from bob.inspect.schema import schema_report

    report = schema_report([args.kind] if args.kind else list(SCHEMA_KINDS))
    return report, render_schema(report), EXIT_OK


def cmd_auto(args: argparse.Namespace) -> Result:
    """``bob-inspect FILE``: the kind from :func:`bob.formats.kinds.detect_kind`."""
    head, size = peek(args.file)
    kind = kinds.detect_kind(head, size)
    if kind is None:
        raise Refused(f"{show_path(args.file)}: not a bob file ({size} bytes starting "
                      f"\"{escape_bytes(head[:kinds.MAGIC_BYTES])}\"; {kinds.KIND_RULES})")
    if kind != kinds.CHECKPOINT and (args.rows or args.rows_hex or args.heatmap or args.export):
        what = "an input record" if kind == kinds.INPUT else "predictions"
        raise Refused(f"{show_path(args.file)} is not a checkpoint (it is {what}); "
                      "--rows, --rows-hex, --heatmap and --export apply to checkpoints")
    handler: dict[str, Callable[..., Result]] = {
        kinds.CHECKPOINT: cmd_ckpt, kinds.INPUT: cmd_input, kinds.PREDICTIONS: cmd_pred}
    return handler[kind](args, auto=True)


HANDLERS: dict[str, Callable[[argparse.Namespace], Result]] = {
    "ckpt": cmd_ckpt, "checkpoint": cmd_ckpt, "input": cmd_input, "pred": cmd_pred, "diff": cmd_diff, "schema": cmd_schema,
    "auto": cmd_auto,
}


# --------------------------------------------------------------------------- #
# Parsing and routing
# --------------------------------------------------------------------------- #


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print one JSON object (stable keys) instead of text")
    p.add_argument("--debug", action="store_true", help="show a traceback for unexpected errors")


def _add_ckpt_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rows", metavar="BYTES",
                   help="context bytes given as text (e.g. abc): show each row's top-5 next bytes")
    p.add_argument("--rows-hex", metavar="HEX", help="context bytes as hex (e.g. 61,62 or 6162)")
    p.add_argument("--heatmap", metavar="OUT.png",
                   help=f"draw the 256 x 256 P table (needs matplotlib: {install_hint('plot')})")
    p.add_argument("--export", metavar="OUT.safetensors|OUT.npz",
                   help="write the planes as (256, 256) float32 arrays P, M, V with the step and contract as "
                        f"metadata, for other tools (.safetensors needs the interop extra: {install_hint('interop')})")


def build_parser() -> argparse.ArgumentParser:
    parser = argument_parser(
        prog=PROG,
        description="Show bob's files (checkpoints, input records, predictions) whole and readably, "
        "from the format schemas. `bob-inspect FILE` detects the kind from the magic.",
        epilog="exit codes: 0 clean, 2 a file has problems / is refused / cannot be read (or a usage error), "
        "1 unexpected. See docs/bob-inspect.md.",
    )
    sub = parser.add_subparsers(dest="command", metavar="{ckpt,input,pred,diff,schema} | FILE")
    p = sub.add_parser("ckpt", aliases=["checkpoint"],
                       help="a checkpoint: header, contract, chunk table, plane statistics, problems")
    p.add_argument("file", metavar="FILE")
    _add_ckpt_options(p)
    _add_common(p)
    p = sub.add_parser("input", help="an input record: pairs, context counts, targets table, prompts")
    p.add_argument("file", metavar="FILE")
    _add_common(p)
    p = sub.add_parser("pred", help="a predictions file: the three records")
    p.add_argument("file", metavar="FILE")
    _add_common(p)
    p = sub.add_parser("diff", help="two checkpoints compared: header fields and planes")
    p.add_argument("a", metavar="A")
    p.add_argument("b", metavar="B")
    _add_common(p)
    p = sub.add_parser("schema", help="layout tables from the construct schemas")
    p.add_argument("kind", nargs="?", metavar="{input,envelope,pred}", type=lambda s: SCHEMA_ALIASES.get(s, s))
    _add_common(p)
    p = sub.add_parser("auto")  # `bob-inspect FILE`: not listed in the help
    p.add_argument("file", metavar="FILE")
    _add_ckpt_options(p)
    _add_common(p)
    return parser


_VALUE_OPTIONS = {"--rows", "--rows-hex", "--heatmap", "--export"}


def route(argv: list[str]) -> list[str]:
    """Put the command first; with no command (``bob-inspect [--json] FILE``) it is ``auto``."""
    if not argv or argv[0] in ("-h", "--help") or argv[0] in COMMANDS:
        return argv
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok == "--":
            break
        if tok in _VALUE_OPTIONS:
            i += 2
            continue
        if tok.startswith("-") and tok != "-":
            if tok in ("-h", "--help"):
                return argv
            i += 1
            continue
        if tok in COMMANDS:
            return [tok] + argv[:i] + argv[i + 1:]
        break
    return ["auto"] + argv


# --------------------------------------------------------------------------- #
# The entry point
# --------------------------------------------------------------------------- #


def main(argv: list[str] | None = None) -> int:
    """The ``bob-inspect`` entry point; returns the exit code."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
        except (AttributeError, ValueError):  # pragma: no cover - a replaced or closed stream
            pass
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    parsed = parse_command_line(PROG, parser, route(argv))
    if isinstance(parsed, int):
        return parsed
    args = parsed
    if args.command is None:
        parser.print_usage(sys.stderr)
        return fail(PROG, Refused("usage: give a command or a FILE"), as_json="--json" in argv)
    if args.command == "schema" and args.kind is not None and args.kind not in SCHEMA_KINDS:
        return _fail(args, "schema", Refused(f"usage: schema: unknown kind {escape_bytes(os.fsencode(args.kind))}; "
                                             "one of input, envelope, pred"), EXIT_PROBLEMS)
    command = "ckpt" if args.command in ("auto", "checkpoint") else args.command
    try:
        report, lines, code = HANDLERS[args.command](args)
    except Refused as exc:
        return _fail(args, command, exc, exc.code)
    except KeyboardInterrupt:
        return _fail(args, command, Refused("interrupted"), EXIT_INTERRUPTED)
    except BrokenPipeError:
        return _quiet_broken_pipe()
    except Exception as exc:  # noqa: BLE001 - the promise: one line, exit 1, a traceback only under --debug
        if args.debug:
            import traceback

            traceback.print_exc()
        return _fail(args, command, Refused(f"unexpected error: {type(exc).__name__}: {exc}"), EXIT_UNEXPECTED)
    return _emit(args, report, lines, code)


def _emit(args: argparse.Namespace, report: dict[str, Any], lines: list[str], code: int) -> int:
    """Print the report (JSON or text); a closed stdout is exit 1 without a traceback."""
    if sys.stdout is None:
        print(f"{PROG}: cannot write the report: stdout is closed", file=sys.stderr)
        return EXIT_UNEXPECTED
    try:
        if args.json:
            report.pop("rows_requested", None)
            print(json.dumps(report, allow_nan=False))
        else:
            for line in lines:
                print(_guard(line))
        sys.stdout.flush()
    except BrokenPipeError:
        return _quiet_broken_pipe()
    except OSError as exc:
        print(f"{PROG}: cannot write the report: {one_line(exc.strerror or type(exc).__name__)}",
              file=sys.stderr)
        return EXIT_UNEXPECTED
    return code


def _guard(line: str) -> str:
    """The last guard on a human line: a line with any character a terminal would
    not print (a control character, a bidirectional override …) goes through
    :func:`bob.text.one_line`; bob's own printable text (``256 × u32``) stays."""
    return line if line.isprintable() else one_line(line)


def _fail(args: argparse.Namespace, command: str, refusal: Refused, code: int) -> int:
    """One line on stderr; under ``--json`` one object on stdout whose ``error``
    is the refusal's object (option, path, field, message, exit_code, text)."""
    refusal.code = code
    print(f"{PROG}: {refusal.text}", file=sys.stderr)
    if getattr(args, "json", False) and sys.stdout is not None:
        files = [getattr(args, k) for k in ("file", "a", "b") if getattr(args, k, None) is not None]
        try:
            print(json.dumps({"command": command, "files": [show_path(f) for f in files], "ok": False,
                              "error": refusal.to_dict(), "exit": code}), flush=True)
        except BrokenPipeError:
            _quiet_broken_pipe()
        except OSError:
            pass  # stdout is full: the line on stderr stands
    return code


def _quiet_broken_pipe() -> int:
    """stdout's reader has gone: silence it (:func:`bob.commands.silence`) so the
    interpreter's last flush does not complain, and exit 1."""
    silence(sys.stdout)
    return EXIT_UNEXPECTED
