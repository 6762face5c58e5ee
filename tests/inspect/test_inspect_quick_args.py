"""``bob-inspect``'s common command lines skip building the argparse parser
(its import and its six subparsers are a share of a report's process): the
quick reading must print exactly what argparse's reading prints (but for a
mistyped command, which it names where argparse blamed the file after it), and
anything it does not know goes to argparse."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import bob.inspect.cli as inspect_cli
from bob.inspect.cli import main, quick_args, route


def _outputs(argv: list[str], capsysbinary) -> tuple[int, bytes, bytes]:
    code = main(argv)
    out = capsysbinary.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("line", [
    ["ckpt", "{ck}"], ["checkpoint", "{ck}", "--json"], ["--json", "ckpt", "{state}"], ["{ck}"],
    ["{rec}", "--json"], ["input", "{rec}"], ["pred", "{pred}", "--json"], ["predictions", "{pred}"],
    ["{empty}"], ["ckpt", "{missing}"], ["ckpt", "{two}", "--debug", "--json"], ["input", "{ck}"],
])
def test_the_quick_reading_prints_what_argparse_prints(line: list[str], files: Path, capsysbinary,
                                                        monkeypatch) -> None:
    names = {"ck": "ck2.bin", "state": "state.bin", "rec": "rec.bin", "pred": "pred.bin", "empty": "empty.bin",
             "missing": "missing.bin", "two": "two.bin"}
    argv = [word.format(**{k: str(files / v) for k, v in names.items()}) for word in line]
    assert quick_args(route(list(argv))) is not None
    quick = _outputs(argv, capsysbinary)
    monkeypatch.setattr(inspect_cli, "quick_args", lambda argv: None)
    assert _outputs(argv, capsysbinary) == quick


@pytest.mark.parametrize("argv", [
    ["ckpt"], ["ckpt", "a", "b"], ["ckpt", "-"], ["ckpt", "f", "--json", "--json"], ["ckpt", "f", "--rows", "ab"],
    ["ckpt", "f", "--js"], ["diff", "a", "b"], ["schema", "input"], ["--help"], ["ckpt", "--", "f"],
])
def test_anything_else_goes_to_argparse(argv: list[str]) -> None:
    assert quick_args(route(list(argv))) is None


def test_a_checkpoint_report_imports_no_argparse(files: Path) -> None:
    script = ("import sys; from bob.inspect import main; code = main(['ckpt', sys.argv[1]]); "
              "assert 'argparse' not in sys.modules and 'bob.formats.docs' not in sys.modules, 'imported'; "
              "sys.exit(code)")
    done = subprocess.run([sys.executable, "-c", script, str(files / "ck2.bin")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("argv", [["--rows", "ab", "--version"], ["--heatmap", "h.png", "--json", "--version"],
                                  ["--export", "x.npz", "--help"]])
def test_help_or_version_after_a_files_option_is_answered_not_taken_for_a_command(argv: list[str], capsys) -> None:
    """``bob-inspect --rows ab --version`` took ``ab`` for a command ("invalid choice", naming the command
    metavar as the option and listing the hidden ``auto``): FILE's options go with the FILE form's parser."""
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert ("0.1.0" if "--version" in argv else "usage: bob-inspect") in out and "auto" not in out, out
