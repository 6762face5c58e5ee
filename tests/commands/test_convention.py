"""The one convention of bob's five commands (issue 23), command by command and
subcommand by subcommand: ``--version``; ``--json`` on success, refusal and
usage error with the shared keys (``command``, ``ok``, ``exit_code``,
``error`` {option, path, field, message}); every numeric option at -1, 0,
nan, inf and 1e309; every path option as missing, a directory, a file where
a directory is needed and /dev/full; stdout closed, a broken pipe and
``PYTHONIOENCODING=ascii``. Each: the documented exit code, one line on
stderr, no traceback, nothing left in TMPDIR.

In process wherever the stream or the process is not what is tested;
the real installed commands for the streams."""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

import pytest

from bob.options import shown_argv
from conftest import GOLDEN, ROOT, main_of

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
CHECKPOINT = GOLDEN / "checkpoint-abracadabra-step10.bin"
INPUT = GOLDEN / "input-abracadabra.bin"
PREDICTIONS = GOLDEN / "predictions-abracadabra.bin"
VERSION_LINE = "{prog} 0.1.0\n"


@pytest.fixture
def tmpdir_watched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """TMPDIR (for this process and its children) is a fresh directory that must be empty at the end."""
    scratch = tmp_path / "TMPDIR"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.syspath_prepend(str(HERE))
    yield scratch
    assert sorted(p.name for p in scratch.iterdir()) == []


class Work:
    """A directory of the files the cases use."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.plain = root / "plain.txt"
        self.plain.write_text("a plain file\n")
        self.adir = root / "adir"
        self.adir.mkdir()
        self.missing = root / "no-such-dir" / "x.bin"
        self.corpus = root / "corpus"  # a conformance corpus of one file, bob's layout
        (self.corpus / "predictions" / "accepted").mkdir(parents=True)
        (self.corpus / "predictions" / "accepted" / "golden.bin").write_bytes(PREDICTIONS.read_bytes())
        (self.corpus / "manifest.json").write_text(json.dumps({"format": "bob-conformance-1", "files": [
            {"file": "predictions/accepted/golden.bin", "format": "predictions", "verdict": "accept", "field": None,
             "offset": None, "error": None, "message": None, "fields": []}]}))
        self.failing = root / "failing.bin"
        self.failing.write_bytes(b"0123456789")
        self.n = 0

    def fresh(self, name: str) -> str:
        self.n += 1
        return str(self.root / f"{self.n}-{name}")


@pytest.fixture
def work(tmp_path: Path, tmpdir_watched: Path) -> Work:
    return Work(tmp_path)


def call(prog: str, argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main_of(prog)(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, err
    return rc, out, err


# --------------------------------------------------------------------------- #
# Every command and subcommand: how it succeeds
# --------------------------------------------------------------------------- #

# (command name, the program, its successful argv, its exit code). The argv
# builders take the Work directory.
SUCCESS: list[tuple[str, str, Callable[[Work], list[str]], int]] = [
    ("bob-run", "bob-run", lambda w: ["--input", str(INPUT), "--checkpoint", w.fresh("ck.bin"), "--predictions",
                                      w.fresh("pred.bin")], 0),
    ("bob-fixture", "bob-fixture", lambda w: ["--text", "abc", "--prompt", "a", "--prompt", "b", "--prompt", "",
                                              "--output", w.fresh("rec.bin")], 0),
    ("bob-inspect checkpoint", "bob-inspect", lambda w: ["checkpoint", str(CHECKPOINT)], 0),
    ("bob-inspect input", "bob-inspect", lambda w: ["input", str(INPUT)], 0),
    ("bob-inspect predictions", "bob-inspect", lambda w: ["predictions", str(PREDICTIONS)], 0),
    ("bob-inspect diff", "bob-inspect", lambda w: ["diff", str(CHECKPOINT), str(CHECKPOINT)], 0),
    ("bob-inspect schema", "bob-inspect", lambda w: ["schema"], 0),
    ("bob-inspect input", "bob-inspect", lambda w: [str(INPUT)], 0),  # the kind detected
    ("bob-fuzz targets", "bob-fuzz", lambda w: ["targets"], 0),
    ("bob-fuzz run", "bob-fuzz", lambda w: ["run", "predictions", "--engine", "loop", "--runs", "20",
                                            "--artifacts", w.fresh("artifacts")], 0),
    ("bob-fuzz replay", "bob-fuzz", lambda w: ["replay", str(w.corpus)], 0),  # the target from the layout
    ("bob-fuzz minimize", "bob-fuzz", lambda w: ["minimize", str(w.failing), "--target",
                                                 "convention_targets:always_fails", "--output", w.fresh("min.bin")], 0),
    ("bob-fuzz check", "bob-fuzz", lambda w: ["check", "--format", "predictions", "--corpus", str(w.corpus), "--",
                                              "true"], 0),
]
# bob-qualify and bob-fuzz conformance take seconds: their successes are tested once, below
# (and bob-qualify's --json in tests/qualify).
PROGRAMS = ["bob-run", "bob-fixture", "bob-inspect", "bob-qualify", "bob-fuzz"]
SUBCOMMANDS = [["bob-inspect", w] for w in ("checkpoint", "ckpt", "input", "predictions", "pred", "diff", "schema")] \
    + [["bob-fuzz", w] for w in ("targets", "run", "replay", "minimize", "conformance", "check")]


@pytest.mark.parametrize("argv", [[p] for p in PROGRAMS] + SUBCOMMANDS, ids=" ".join)
def test_version(argv: list[str], capsys) -> None:
    prog, rest = argv[0], argv[1:]
    rc, out, err = call(prog, [*rest, "--version"], capsys)
    assert (rc, out, err) == (0, VERSION_LINE.format(prog=prog), "")


@pytest.mark.parametrize("argv", [[p] for p in PROGRAMS] + SUBCOMMANDS, ids=" ".join)
def test_an_unknown_word_before_version_or_help_is_refused_as_without_them(argv: list[str], capsys) -> None:
    """argparse answers --version and --help as it meets them, and reports the words it does not know only at
    the end: ``bob-run --js --version`` printed the version, exit 0. The first word decides, as for getopt."""
    prog, rest = argv[0], argv[1:]
    for asked in ("--version", "--help", "-h"):
        rc, out, err = call(prog, [*rest, "--js", asked], capsys)
        assert (rc, out) == (2, "") and "usage: unrecognized arguments: --js (see " in err, (asked, err)
    rc, out, err = call(prog, [*rest, "--version", "--js"], capsys)
    assert (rc, out, err) == (0, VERSION_LINE.format(prog=prog), "")


@pytest.mark.parametrize("argv, option", [(["bob-run", "--wait", "nan"], "--wait"),
                                          (["bob-run", "--expect-checkpoint", "zz"], "--expect-checkpoint"),
                                          (["bob-inspect", "checkpoint", "--rows-hex", "zz"], "--rows-hex"),
                                          (["bob-inspect", "checkpoint", "--rows-hex", ""], "--rows-hex"),
                                          (["bob-inspect", "checkpoint", "--rows", ""], "--rows"),
                                          (["bob-qualify", "--seed", "nan"], "--seed")])
def test_a_bad_value_before_version_or_help_is_refused_on_every_command(argv: list[str], option: str,
                                                                          capsys) -> None:
    """``bob-run --wait nan --version`` printed the version (exit 0) where ``bob-qualify --seed nan --version``
    was refused: the values a command checked in its own code were not read before the answer."""
    for asked in ("--version", "--help"):
        rc, out, err = call(argv[0], [*argv[1:], asked], capsys)
        assert (rc, out) == (2, "") and f"refused: {option}: " in err, (asked, err)


def test_version_of_a_parser_used_outside_the_runner_is_printed(capsys) -> None:
    """The shared options on a caller's own parser: --version printed nothing once the runner printed it."""
    from bob import commands

    parser = commands.argument_parser(prog="tool")
    commands.add_common_options(parser)
    with pytest.raises(SystemExit) as ended:
        parser.parse_args(["--version"])
    assert ended.value.code == 0 and capsys.readouterr().out == "tool 0.1.0\n"


@pytest.mark.parametrize("argv", [[p] for p in PROGRAMS] + SUBCOMMANDS, ids=" ".join)
def test_version_under_json_is_the_envelope(argv: list[str], capsys) -> None:
    """--json promises one JSON object for every outcome: --version was printed as text."""
    prog, rest = argv[0], argv[1:]
    for order in ([*rest, "--version", "--json"], ["--json", *rest, "--version"]):
        rc, out, err = call(prog, order, capsys)
        command = " ".join([prog, *[{"ckpt": "checkpoint", "pred": "predictions"}.get(w, w) for w in rest]])
        assert (rc, err) == (0, "") and json.loads(out) == {
            "command": command, "ok": True, "exit_code": 0, "error": None, "version": VERSION_LINE.split()[1]}


@pytest.mark.parametrize("argv", [[p] for p in PROGRAMS] + SUBCOMMANDS, ids=" ".join)
def test_help_under_json_is_the_envelope(argv: list[str], capsys) -> None:
    """--help --json printed the help as text, the one outcome not in the envelope; without
    --json it is the same text as before."""
    prog, rest = argv[0], argv[1:]
    rc, text, err = call(prog, [*rest, "--help"], capsys)
    assert (rc, err) == (0, "") and text.startswith(f"usage: {prog} ") and not text.endswith("\n\n")
    for order in ([*rest, "--help", "--json"], ["--json", *rest, "-h"]):
        rc, out, err = call(prog, order, capsys)
        command = " ".join([prog, *[{"ckpt": "checkpoint", "pred": "predictions"}.get(w, w) for w in rest]])
        assert (rc, err) == (0, "") and json.loads(out) == {
            "command": command, "ok": True, "exit_code": 0, "error": None, "help": text}


def test_loop_engine_refuses_a_corpus_it_would_ignore(work, capsys) -> None:
    """--engine loop keeps no corpus: --corpus (even /dev/null) was accepted and silently ignored."""
    rc, out, err = call("bob-fuzz", ["run", "predictions", "--engine", "loop", "--runs", "1", "--corpus", "/dev/null",
                                     "--artifacts", work.fresh("artifacts"), "--json"], capsys)
    error = json.loads(out)["error"]
    assert rc == 2 and error["option"] == "--corpus" and "keeps no corpus" in error["message"]
    assert not list(work.root.glob("*artifacts"))
    rc, out, err = call("bob-fuzz", ["run", "predictions", "--engine", "loop", "--runs", "1", "--jobs", "2",
                                     "--artifacts", work.fresh("artifacts"), "--json"], capsys)  # (one process ran)
    assert rc == 2 and json.loads(out)["error"]["option"] == "--jobs"


@pytest.mark.parametrize("prog, argv, option", [
    ("bob-run", ["--input", "nope", "--input", "rec.bin", "--checkpoint", "ck.bin", "--predictions", "p.bin"], "--input"),
    ("bob-fixture", ["--text", "abc", "--text", "xyz", "--prompt", "a", "--prompt", "b", "--prompt", "",
                     "--output", "r.bin"], "--text"),
    ("bob-inspect", [str(GOLDEN / "checkpoint-abracadabra-step10.bin"), "--export", "a.npz", "--export", "b.npz"],
     "--export"),
    ("bob-fuzz", ["minimize", "x.bin", "--output", "a", "--out", "b"], "--output")])
def test_an_option_given_twice_is_a_usage_error_not_the_last_one_silently(prog, argv, option, work, capsys) -> None:
    """A path or a pin typed twice: the first was dropped without a word (the last one won)."""
    before = sorted(p.name for p in work.root.iterdir())
    files = [a if a.startswith(("-", "/")) or a == "minimize" else str(work.root / a) for a in argv]
    rc, out, err = call(prog, files + ["--json"], capsys)
    assert rc == 2 and json.loads(out)["error"]["option"] == option and "given twice" in err, err
    assert sorted(p.name for p in work.root.iterdir()) == before


def shared_keys(document: dict, command: str, code: int) -> None:
    assert document["command"] == command and document["exit_code"] == code and document["ok"] is (code == 0)
    if code == 0:
        assert document["error"] is None
    else:
        assert {"option", "path", "field", "message"} <= set(document["error"]) and document["error"]["message"]


@pytest.mark.parametrize("command, prog, argv, code", SUCCESS, ids=[f"{c[0]}-{i}" for i, c in enumerate(SUCCESS)])
def test_success_as_text_and_as_json(command, prog, argv, code, work, capsys) -> None:
    rc, out, err = call(prog, argv(work), capsys)
    assert rc == code and out and err == ""
    args = argv(work)
    rc, out, err = call(prog, _before_dashes(args, "--json") if "--" in args else [*args, "--json"], capsys)
    assert rc == code and err == ""
    assert out.count("\n") == 1
    shared_keys(json.loads(out), command, code)
    if "--" not in args:  # a lone -- ends the options on every command, with a positional after it or none
        assert call(prog, [*args, "--"], capsys)[0] == code
        assert call(prog, [*args, "--", "--"], capsys)[0] == 2 or command == "bob-inspect schema"  # (a kind "--")


def test_a_subcommand_after_dashes_is_the_subcommand(capsys) -> None:
    """``bob-fuzz -- targets``: the options end, and the first word left names the subcommand (argparse took the
    ``--`` for it: "invalid choice: '--'"). To bob-inspect, whose FILE may come first, that word is a FILE."""
    assert call("bob-fuzz", ["--", "targets"], capsys)[:2] == call("bob-fuzz", ["targets"], capsys)[:2]
    rc, out, _ = call("bob-fuzz", ["--json", "--", "targets"], capsys)
    assert rc == 0 and json.loads(out)["command"] == "bob-fuzz targets"
    rc, _, err = call("bob-fuzz", ["--", "targets", "--json"], capsys)  # (an operand: targets takes none)
    assert rc == 2 and "unrecognized arguments: -- --json (see" in err, err  # (the -- says why it is no option)
    rc, _, err = call("bob-run", ["--jso", "--", "--input"], capsys)  # (without the --, "--input" contradicts itself)
    assert rc == 2 and "unrecognized arguments: --jso -- --input; the following arguments are required: --input" in err
    for argv in (["--jso", "--", "targets"], ["--jso", "targets", "--"]):  # (the options' end is no unknown word)
        assert call("bob-fuzz", argv, capsys)[2] == "bob-fuzz: refused: usage: unrecognized arguments: --jso " \
                                                    "(see bob-fuzz targets --help)\n"
    rc, _, err = call("bob-inspect", ["--", "checkpoint"], capsys)
    assert rc == 2 and err == "bob-inspect: refused: checkpoint: no such file\n", err
    for word in ("bogus", "-x", "-", "--bogus"):  # (a word that is no subcommand: named, not the --)
        rc, _, err = call("bob-fuzz", ["--", word], capsys)
        assert rc == 2 and err.startswith(f"bob-fuzz: refused: usage: invalid choice: '{word}' (choose from 'targ"), err


def _before_dashes(argv: list[str], *extra: str) -> list[str]:
    i = argv.index("--")
    return [*argv[:i], *extra, *argv[i:]]


# (command, program, argv of a refusal, the option and the path it names)
REFUSALS: list[tuple[str, str, Callable[[Work], list[str]], str | None, Callable[[Work], str]]] = [
    ("bob-run", "bob-run", lambda w: ["--input", str(w.missing), "--checkpoint", w.fresh("ck"), "--predictions",
                                      w.fresh("p")], "--input", lambda w: str(w.missing)),
    ("bob-fixture", "bob-fixture", lambda w: ["--corpus", str(w.missing), "--prompt", "a", "--prompt", "b",
                                              "--prompt", "c", "--output", w.fresh("r")], "--corpus",
     lambda w: str(w.missing)),
    ("bob-inspect checkpoint", "bob-inspect", lambda w: ["checkpoint", str(w.adir)], None, lambda w: str(w.adir)),
    ("bob-inspect input", "bob-inspect", lambda w: ["input", str(w.missing)], None, lambda w: str(w.missing)),
    ("bob-inspect predictions", "bob-inspect", lambda w: ["pred", str(w.missing)], None, lambda w: str(w.missing)),
    ("bob-inspect diff", "bob-inspect", lambda w: ["diff", str(CHECKPOINT), "/dev/full"], "B", lambda w: "/dev/full"),
    ("bob-qualify", "bob-qualify", lambda w: ["--report", "/dev/full"], "--report", lambda w: "/dev/full"),
    ("bob-fuzz run", "bob-fuzz", lambda w: ["run", "predictions", "--engine", "loop", "--runs", "1",
                                            "--artifacts", str(w.plain)], "--artifacts", lambda w: str(w.plain)),
    ("bob-fuzz replay", "bob-fuzz", lambda w: ["replay", str(w.missing)], "PATH", lambda w: str(w.missing)),
    ("bob-fuzz minimize", "bob-fuzz", lambda w: ["minimize", "/dev/full", "--target", "input"], "PATH",
     lambda w: "/dev/full"),
    ("bob-fuzz conformance", "bob-fuzz", lambda w: ["conformance", "/dev/full"], "OUTDIR", lambda w: "/dev/full"),
    ("bob-fuzz check", "bob-fuzz", lambda w: ["check", "--format", "input", "--corpus", str(w.adir), "--", "true"],
     "--corpus", lambda w: str(w.adir)),
]


@pytest.mark.parametrize("command, prog, argv, code", SUCCESS, ids=[f"{c[0]}-{i}" for i, c in enumerate(SUCCESS)])
def test_an_abbreviated_option_is_a_usage_error_never_another_option(command, prog, argv, code, work, capsys) -> None:
    """``--js`` was --json to argparse but not to the runner, which decides before parsing whether a usage
    error is JSON: a run that parsed printed JSON, one that did not printed text. One spelling for each
    option now (``--out`` is --output's alias where README says so)."""
    args = argv(work)
    rc, out, err = call(prog, _before_dashes(args, "--js") if "--" in args else [*args, "--js"], capsys)
    assert (rc, out) == (2, "") and "unrecognized arguments: --js" in err, err


@pytest.mark.parametrize("argv", [[p] for p in PROGRAMS] + SUBCOMMANDS, ids=" ".join)
def test_a_mistyped_option_is_named_even_when_a_required_argument_is_missing(argv: list[str], capsys) -> None:
    """argparse reports missing arguments before unknown ones: ``bob-run --inpt a`` said only that --input
    was required, and ``bob-inspect --bogus`` that FILE was, the mistyped option unnamed."""
    for mistyped, extra in ((["--bogus"], []), (["-z"], ["--json"])):  # a short option too
        rc, out, err = call(argv[0], [*argv[1:], *mistyped, *extra], capsys)
        assert rc == 2 and f"usage: unrecognized arguments: {mistyped[0]}" in err.splitlines()[-1], err


def test_a_mistyped_option_before_a_subcommand_is_named_too(capsys) -> None:
    rc, out, err = call("bob-fuzz", ["--bogus", "run"], capsys)
    assert rc == 2 and err.splitlines()[-1].endswith(
        "usage: unrecognized arguments: --bogus; the following arguments are required: TARGET (see bob-fuzz run --help)")


def test_reading_a_callers_parser_for_unknown_words_leaves_what_it_requires() -> None:
    """with_unknown_words and answered read the parser again with nothing required: the caller's parser came
    back with nothing required, so its next parse_args([]) passed without --input."""
    from bob.commands import Refused, argument_parser
    from bob.options import answered, with_unknown_words

    parser = argument_parser(prog="wrap")
    parser.add_argument("--input", required=True)
    with pytest.raises(Refused) as missing:
        parser.parse_args(["--inpt", "a"])
    assert "--inpt" in with_unknown_words(parser, ["--inpt", "a"], missing.value).message
    assert answered(parser, ["--version"], "answer") == "answer"
    with pytest.raises(Refused, match="the following arguments are required: --input"):
        parser.parse_args([])


def test_a_library_callers_parser_reads_as_argparse_does() -> None:
    """Only the runner names unknown words beside missing ones: a parser's own parse_known_args leaves them
    to its caller, reads an iterator, and runs an action once."""
    from bob.commands import Refused, argument_parser

    parser = argument_parser(prog="wrap")
    parser.add_argument("--input", required=True)
    with pytest.raises(Refused, match=r"^usage: the following arguments are required: --input \(see wrap --help\)$"):
        parser.parse_known_args(["--forward", "x"])
    assert parser.parse_known_args(iter(["--input", "a", "--forward"]))[1] == ["--forward"]


def test_a_word_the_checked_reader_takes_is_not_called_unrecognized(capsys) -> None:
    """bob-fuzz check's READER takes every word after it, options included: only --format is missing."""
    rc, out, err = call("bob-fuzz", ["check", "--corpus", "c", "bob-inspect", "--strict", "{}"], capsys)
    assert rc == 2 and err.splitlines()[-1].endswith(
        "usage: the following arguments are required: --format (see bob-fuzz check --help)"), err


@pytest.mark.parametrize("command, prog, argv, option, path", REFUSALS, ids=[r[0] for r in REFUSALS])
def test_a_refusal_is_one_line_naming_option_and_path(command, prog, argv, option, path, work, capsys) -> None:
    for extra in ([], ["--json"]):
        args = argv(work)
        args = _before_dashes(args, *extra) if "--" in args else [*args, *extra]
        rc, out, err = call(prog, args, capsys)
        assert rc == 2 and err.count("\n") == 1 and err.startswith(f"{prog}: refused: "), err
        assert path(work) in err and (option is None or option in err)
        if extra:
            document = json.loads(out)
            shared_keys(document, command, 2)
            assert document["error"]["option"] == option and path(work) in document["error"]["path"]
        else:
            assert out == ""


@pytest.mark.parametrize("argv", [[p] for p in PROGRAMS] + SUBCOMMANDS, ids=" ".join)
def test_a_usage_error_is_one_line_and_the_same_envelope(argv: list[str], capsys) -> None:
    prog, rest = argv[0], argv[1:]
    command = " ".join([prog, {"ckpt": "checkpoint", "pred": "predictions"}.get(rest[0], rest[0])] if rest else [prog])
    for extra in ([], ["--json"]):
        rc, out, err = call(prog, [*rest, "--no-such-option", *extra], capsys)
        assert rc == 2 and err.count("\n") == 1 and f"{prog}: refused: usage: " in err, err
        if extra:
            document = json.loads(out)
            shared_keys(document, command if rest else prog, 2)
            assert document["error"]["message"].startswith("usage: ")


@pytest.mark.parametrize("prog, argv, option", [
    ("bob-fixture", ["--text", "ab", "--prompt", "-a", "--prompt", "b", "--prompt", "c", "--output", "r.bin"],
     "--prompt"),
    ("bob-run", ["--input", "-r.bin", "--checkpoint", "ck.bin", "--predictions", "p.bin"], "--input"),
    ("bob-fuzz", ["minimize", "x.bin", "--output", "-x.min"], "--output")])
def test_a_value_starting_with_a_dash_is_said_how_to_give(prog, argv, option, capsys) -> None:
    """argparse takes `--prompt -a` for two options: the refusal said only "expected one argument", though one was
    given (a prompt, a path starting with '-')."""
    rc, out, _ = call(prog, argv + ["--json"], capsys)
    error = json.loads(out)["error"]
    assert rc == 2 and error["option"] == option and error["message"].startswith(
        f"usage: expected one argument; a value that starts with '-' goes as {option}=VALUE"), error


def test_an_unknown_command_word_names_no_option(capsys) -> None:
    """README's `option`: an option, an operand's name, or null; argparse named bob-fuzz's command words by their
    list ("{targets,run,replay,…}")."""
    rc, out, _ = call("bob-fuzz", ["bogus", "--json"], capsys)
    error = json.loads(out)["error"]
    assert rc == 2 and error["option"] is None and error["message"].startswith("usage: invalid choice: 'bogus'")


@pytest.mark.parametrize("argv", [[], ["nope"], ["--json"]], ids=["nothing", "nope", "--json"])
def test_python_m_bob_without_a_command_is_the_same_usage_error(argv: list[str], capsys) -> None:
    """The dispatcher's own usage errors follow the convention (it printed its usage on stdout for no
    command, and a line of its own without JSON for an unknown one)."""
    from bob.__main__ import main

    for extra in ([], ["--json"]):
        rc, (out, err) = main([*argv, *extra]), capsys.readouterr()
        assert rc == 2 and err.count("\n") == 1 and err.startswith("python -m bob: refused: usage: "), err
        if extra or argv == ["--json"]:
            shared_keys(json.loads(out), "python -m bob", 2)
        else:
            assert out == ""
    assert main(["--help"]) == 0 and capsys.readouterr().out.startswith("usage: python -m bob ")
    assert main(["--json", "-h"]) == 0 and json.loads(capsys.readouterr().out)["help"].startswith("usage: python")
    # options before the command are its own, in any order, as every command's (--json was taken for a command)
    assert main(["--version"]) == 0 and capsys.readouterr().out == "bob 0.1.0\n"
    assert main(["--json", "--version"]) == 0 and json.loads(capsys.readouterr().out)["command"] == "python -m bob"
    assert main(["--json", "fixture", "--version"]) == 0 and json.loads(capsys.readouterr().out)["version"] == "0.1.0"
    assert main(["--json"]) == 2 and "(no command given)" in capsys.readouterr().err
    # its --json counts after a -- too, for its own answers (the runner's reading stopped at --); the word after
    # a -- is the command, whatever it looks like, as every command takes it for an operand (--version answered)
    assert main(["--", "--version", "--json"]) == 2 and "(unknown command '--version')" in \
        json.loads(capsys.readouterr().out)["error"]["message"]
    assert main(["nope", "--", "--json"]) == 2 and json.loads(capsys.readouterr().out)["exit_code"] == 2
    # an empty word is a command given (it said "no command given"); a -- before the command is the dispatcher's
    # (it went to the command, which then took every word after it for a positional argument)
    assert main([""]) == 2 and "(unknown command '')" in capsys.readouterr().err
    assert main(["--", "fixture", "--version", "--json"]) == 0 and json.loads(capsys.readouterr().out)["command"] \
        == "bob-fixture"
    # a word it does not take before its --version or --help is refused, as every command refuses it
    for asked in ("--version", "--help"):
        assert main(["--jso", asked]) == 2 and "(unrecognized arguments: --jso)" in capsys.readouterr().err
    assert main(["--version", "--jso"]) == 0 and capsys.readouterr().out == "bob 0.1.0\n"
    assert main(["--version", "--help"]) == 0 and capsys.readouterr().out == "bob 0.1.0\n"  # (the first decides)


@pytest.mark.parametrize("prog", ["bob-run", "bob-fixture", "bob-inspect", "bob-qualify", "bob-fuzz"])
def test_a_usage_refusal_shows_argv_bytes_as_every_refusal_shows_a_path(prog: str, capsys) -> None:
    """argparse's words went through one_line, which writes code points: a non-UTF-8 byte and a bidi
    control came out as \\udcff\\u202e, where every other refusal shows a path's bytes as \\xNN."""
    odd = os.fsdecode(b"--\xff\xe2\x80\xae")
    before = {"bob-run": ["--input", "i", "--checkpoint", "c", "--predictions", "p"],
              "bob-fixture": ["--output", "o", "--text", "t"], "bob-inspect": ["checkpoint", "f"], "bob-qualify": [],
              "bob-fuzz": ["targets"]}[prog]  # (what each requires: the odd argument is then the one to name)
    rc, _, err = call(prog, [*before, odd], capsys)
    assert rc == 2 and "unrecognized arguments: --\\xff\\xe2\\x80\\xae (see " in err, err
    rc, _, err = call(prog, [*before, '--"\\xff'], capsys)  # four characters: not the byte above
    assert rc == 2 and "unrecognized arguments: --\\x22\\x5cxff (see " in err, err


RUN_ARGS = ["--input", "i", "--checkpoint", "c", "--predictions", "p"]
FIXTURE_ARGS = ["--text", "t", "--prompt", "a", "--prompt", "b", "--output", "o"]
CHOICE = "usage: invalid choice: '{}' (choose from "
# door: (the program, its argv around the odd value {}, the words the refusal quotes it in)
QUOTED_ARGV = {
    "bob-fixture --prompt-hex": ("bob-fixture", [*FIXTURE_ARGS, "--prompt-hex", "{}"],
                                 "--prompt-hex: {} is not hex (pairs of digits 0-9a-f, as 6162, 61,62 or 0x61 0x62)"),
    "bob-fuzz COMMAND": ("bob-fuzz", ["{}"], CHOICE + "'targets', 'run', "),
    "python -m bob fuzz COMMAND": ("python -m bob", ["fuzz", "{}"], CHOICE + "'targets', 'run', "),
    "bob-fuzz run --engine": ("bob-fuzz", ["run", "input", "--engine", "{}"],
                              "--engine: " + CHOICE + "'atheris', 'loop') (see bob-fuzz run --help)"),
    "bob-fuzz targets --json=": ("bob-fuzz", ["targets", "--json={}"],
                                 "--json: usage: ignored explicit argument '{}' (see bob-fuzz targets --help)"),
    "bob-run --expect-checkpoint": ("bob-run", [*RUN_ARGS, "--expect-checkpoint", "{}"],
                                    "--expect-checkpoint: must be 64 hexadecimal digits (a SHA-256, either case); "
                                    "got str '{}'"),
    "bob-fuzz run TARGET": ("bob-fuzz", ["run", "c{}", "--runs", "1", "--engine", "loop"],
                            "TARGET: usage: unknown target 'c{}'; one of input, "),
    "python -m bob COMMAND": ("python -m bob", ["r{}un"], "[options] (unknown command 'r{}un')"),
    "bob-fuzz run MODULE:F": ("bob-fuzz", ["run", "os{}:sep", "--runs", "1"], "TARGET: usage: No module named 'os{}'"),
    "bob-fuzz run module:F": ("bob-fuzz", ["run", "os:s{}p", "--runs", "1"],
                              "TARGET: usage: module 'os' has no attribute 's{}p'"),
}


@pytest.mark.parametrize("prog, argv, said", QUOTED_ARGV.values(), ids=QUOTED_ARGV)
def test_a_refusal_quoting_a_command_line_value_shows_its_bytes_once(prog, argv, said, capsys, tmp_path,
                                                                     monkeypatch) -> None:
    """A value argparse or bob quoted with repr() came out as code points (\\udcff\\u202e), and one already
    escaped went through shown_argv again (\\x5cxff): each is now argv's bytes, escaped once, text and JSON."""
    from bob.__main__ import main

    monkeypatch.chdir(tmp_path)  # (nothing is written: each is refused before any file is touched)
    for value, shown in [(os.fsdecode(b"\xff\xe2\x80\xae"), "\\xff\\xe2\\x80\\xae"), ('"\\xff', "\\x22\\x5cxff")]:
        for extra in ([], ["--json"]):
            args = [word.replace("{}", value) for word in argv] + extra
            capsys.readouterr()
            rc, (out, err) = (main(args) if prog == "python -m bob" else main_of(prog)(args)), capsys.readouterr()
            assert rc == 2 and said.format(shown) in err and err.count("\\") == shown.count("\\"), err
            if extra:
                error = json.loads(out)["error"]
                assert said.format(shown) in error["text"] and error["text"].count("\\") == shown.count("\\"), out


def test_a_value_that_reads_like_argparse_s_words_or_runs_long_is_refused_as_any_other(capsys, tmp_path,
                                                                                       monkeypatch) -> None:
    """A --prompt-hex value starting "ignored explicit argument " went to ast.literal_eval (argparse's own words
    are read back so): an unexpected SyntaxError, exit 1; a long --expect-checkpoint was echoed whole (70,106
    bytes for 70,000 characters), where every other refusal bounds the value it shows, as shown_kind does."""
    monkeypatch.chdir(tmp_path)
    assert main_of("bob-fixture")([*FIXTURE_ARGS, "--prompt-hex", "ignored explicit argument 00"]) == 2
    assert capsys.readouterr().err == ("bob-fixture: refused: --prompt-hex: ignored explicit argument 00 is not hex "
                                       "(pairs of digits 0-9a-f, as 6162, 61,62 or 0x61 0x62)\n")
    assert main_of("bob-fixture")([*FIXTURE_ARGS, "--prompt-hex", "x" * 70_000]) == 2
    assert capsys.readouterr().err.startswith("bob-fixture: refused: --prompt-hex: " + "x" * 77 + "... is not hex")
    for separators in (",", " ", ",,:"):  # (these were an empty prompt, silently: only '' is one)
        assert main_of("bob-fixture")([*FIXTURE_ARGS, "--prompt-hex", separators]) == 2
        assert capsys.readouterr().err == (f"bob-fixture: refused: --prompt-hex: {separators} is not hex (pairs of "
                                           "digits 0-9a-f, as 6162, 61,62 or 0x61 0x62)\n")
    assert main_of("bob-fixture")(["--text", "tt", *FIXTURE_ARGS[2:], "--prompt-hex", ""]) == 0
    from bob import build_input

    assert (tmp_path / "o").read_bytes() == build_input(b"tt", [b"a", b"b", b""]).to_bytes()
    assert main_of("bob-run")([*RUN_ARGS, "--expect-checkpoint", "a" * 70_000]) == 2
    assert capsys.readouterr().err == ("bob-run: refused: --expect-checkpoint: must be 64 hexadecimal digits (a "
                                       "SHA-256, either case); got str '" + "a" * 72 + "...\n")


def test_a_library_callers_pin_refusal_keeps_its_words() -> None:
    """Only bob-run shows its --expect-checkpoint as argv's bytes: bob.invoke's caller gave a str, shown as one."""
    import bob
    from bob.formats.checkpoint import pin_problem

    odd = os.fsdecode(b"\xff\xe2\x80\xae")
    assert pin_problem(odd) == "must be 64 hexadecimal digits (a SHA-256, either case); got str '\\udcff\\u202e'"
    with pytest.raises(ValueError, match=r"^expect must be 64 .* got str '\\udcff\\u202e'$"):
        bob.invoke(INPUT.read_bytes(), expect=odd)


# --------------------------------------------------------------------------- #
# Numbers
# --------------------------------------------------------------------------- #

VALUES = ["-1", "0", "01", "nan", "inf", "1e309", "1_0", "\uff12", " 1 "]  # (int() reads 1_0 as 10, a full-width 2
# as 2, " 1 " as 1)
# (program, argv that is refused for another reason, the option, the values it accepts).
# A value the option accepts reaches the other refusal (which does not name the option);
# any other value is refused naming the option, before anything runs.
NUMBERS: list[tuple[str, Callable[[Work], list[str]], str, set[str]]] = [
    ("bob-run", lambda w: ["--input", str(w.missing), "--checkpoint", w.fresh("c"), "--predictions", w.fresh("p")],
     "--wait", {"0"}),
    ("bob-inspect", lambda w: ["diff", str(w.missing), str(CHECKPOINT)], "--ulp", {"0"}),
    ("bob-inspect", lambda w: ["diff", str(w.missing), str(CHECKPOINT)], "--atol", {"0"}),
    ("bob-qualify", lambda w: ["--report", "/dev/full"], "--seed", {"0"}),
    ("bob-fuzz", lambda w: ["run", "no-such-target"], "--time", set()),
    ("bob-fuzz", lambda w: ["run", "no-such-target"], "--runs", set()),
    ("bob-fuzz", lambda w: ["run", "no-such-target"], "--jobs", set()),
    ("bob-fuzz", lambda w: ["run", "no-such-target"], "--seed", {"0"}),
    ("bob-fuzz", lambda w: ["minimize", str(w.missing)], "--max-tries", set()),
    ("bob-fuzz", lambda w: ["minimize", str(w.missing)], "--timeout", set()),
    ("bob-fuzz", lambda w: ["check", "--format", "input", "--corpus", str(w.missing)], "--timeout", set()),
]


@pytest.mark.parametrize("prog, argv, option, accepted", NUMBERS,
                         ids=[f"{n[0]}-{n[2]}-{i}" for i, n in enumerate(NUMBERS)])
def test_every_number_is_finite_and_in_range(prog, argv, option, accepted, work, capsys) -> None:
    accepted = accepted | {"01"}  # 1 to every option: zero padded as `seq -w` writes it, read in decimal
    for value in VALUES:
        args = [*argv(work), f"{option}={value}", "--json"]
        if "check" in args:
            args += ["--", "true"]
        rc, out, err = call(prog, args, capsys)
        document = json.loads(out)
        assert rc == 2 and err.count("\n") == 1, (value, err)
        named = document["error"]["option"] == option
        assert named is (value not in accepted), (value, err)
        if named:
            assert f'got "{shown_argv(value)}"' in err  # (quoted: " 1 " shows its blanks)


# --------------------------------------------------------------------------- #
# Paths
# --------------------------------------------------------------------------- #

# (program, argv with P where the path goes, the option, what the path is for):
# "in" a file read, "out" a file written, "outdir" a directory written into
# (created when missing), "indir" a directory read.
PATHS: list[tuple[str, Callable[[Work, str], list[str]], str, str]] = [
    ("bob-run", lambda w, p: ["--input", p, "--checkpoint", w.fresh("c"), "--predictions", w.fresh("p")],
     "--input", "in"),
    ("bob-run", lambda w, p: ["--input", str(INPUT), "--checkpoint", p, "--predictions", w.fresh("p")],
     "--checkpoint", "out"),
    ("bob-run", lambda w, p: ["--input", str(INPUT), "--checkpoint", w.fresh("c"), "--predictions", p],
     "--predictions", "out"),
    ("bob-fixture", lambda w, p: ["--corpus", p, "--prompt", "a", "--prompt", "b", "--prompt", "c", "--output",
                                  w.fresh("r")], "--corpus", "in"),
    ("bob-fixture", lambda w, p: ["--text", "ab", "--prompt", "a", "--prompt", "b", "--prompt", "c", "--output", p],
     "--output", "out"),
    ("bob-inspect", lambda w, p: ["checkpoint", p], None, "in"),
    ("bob-inspect", lambda w, p: ["input", p], None, "in"),
    ("bob-inspect", lambda w, p: ["predictions", p], None, "in"),
    ("bob-inspect", lambda w, p: [p], None, "in"),
    ("bob-inspect", lambda w, p: ["diff", p, str(CHECKPOINT)], "A", "in"),
    ("bob-inspect", lambda w, p: ["diff", str(CHECKPOINT), p], "B", "in"),
    ("bob-fuzz", lambda w, p: ["replay", p, "--target", "input"], "PATH", "in"),
    ("bob-fuzz", lambda w, p: ["minimize", p, "--target", "input"], "PATH", "in"),
    ("bob-fuzz", lambda w, p: ["minimize", str(w.failing), "--target", "convention_targets:always_fails",
                               "--output", p], "--output", "out"),
    ("bob-fuzz", lambda w, p: ["run", "predictions", "--engine", "loop", "--runs", "5", "--artifacts", p],
     "--artifacts", "outdir"),
    # --corpus is checked before --artifacts: a refusal naming --artifacts means --corpus was taken
    ("bob-fuzz", lambda w, p: ["run", "predictions", "--runs", "5", "--corpus", p, "--artifacts", "/dev/full"],
     "--corpus", "outdir-then-artifacts"),
    ("bob-fuzz", lambda w, p: ["check", "--format", "input", "--corpus", p, "--", "true"], "--corpus", "indir"),
    ("bob-fuzz", lambda w, p: ["conformance", p], "OUTDIR", "outdir-slow"),
    # --report is checked before the test hook's variable: a refusal naming it means --report was taken
    ("bob-qualify", lambda w, p: ["--report", p], "--report", "outdir-then-hook"),
]
PATH_CASES = ["missing", "directory", "file-as-directory", "dev-full", "empty"]


def _path(work: Work, case: str) -> str:
    """("empty": refused by name, never taken for the working directory or the option's default.)"""
    return {"missing": str(work.missing), "directory": str(work.adir),
            "file-as-directory": str(work.plain / "x"), "dev-full": "/dev/full", "empty": ""}[case]


def _expected(kind: str, case: str) -> int | str:
    """The exit code, or "other" (the path was taken: the refusal names another option)."""
    if kind.startswith("outdir") and case in ("missing", "directory"):
        return 0 if kind in ("outdir", "outdir-slow") else "other"
    if kind == "in" and case == "directory":
        return 2
    return 2


@pytest.mark.parametrize("prog, argv, option, kind", PATHS, ids=[f"{p[0]}-{p[2]}-{i}" for i, p in enumerate(PATHS)])
@pytest.mark.parametrize("case", PATH_CASES)
def test_every_path_option(prog, argv, option, kind, case, work, capsys, monkeypatch) -> None:
    if kind == "outdir-slow":  # the path's handling is the command line's; the corpus itself takes seconds
        monkeypatch.setattr("bob.fuzz.conformance.write_corpus", lambda outdir: [])
    if kind == "outdir-then-hook":
        monkeypatch.setenv("BOB_QUALIFY_PERTURB", "not-a-kernel-and-threads")
    path = _path(work, case)
    args = argv(work, path)
    rc, out, err = call(prog, _before_dashes(args, "--json") if "--" in args else [*args, "--json"], capsys)
    document = json.loads(out)
    if case == "empty":  # refused as such, never taken for the working directory or the option's default
        assert rc == 2 and document["error"]["message"] == "an empty path", err
        assert (document["error"]["option"], document["error"]["path"]) == (option, ""), err
        return
    want = _expected(kind, case)
    if want == 0:
        assert rc == 0 and document["ok"] is True and err == "", err
        return
    assert rc == 2 and err.count("\n") == 1, err
    named = document["error"]["option"] == option and path in (document["error"]["path"] or "")
    if want == "other":
        assert not named and document["error"]["option"] != option, err
    else:
        assert named or (option is None and document["error"]["path"] == path), err


# --------------------------------------------------------------------------- #
# The slow successes, once each
# --------------------------------------------------------------------------- #


def test_conformance_writes_its_corpus_and_replays_it(work, capsys) -> None:
    out_dir = work.root / "new" / "corpus"
    rc, out, err = call("bob-fuzz", ["conformance", str(out_dir), "--json"], capsys)
    document = json.loads(out)
    shared_keys(document, "bob-fuzz conformance", 0)
    assert document["files"] > 50 and (out_dir / "manifest.json").is_file()
    # its FORMAT/accepted|refused/... layout names each file's target: no --target needed
    rc, out, err = call("bob-fuzz", ["replay", str(out_dir / "input"), str(out_dir / "checkpoint"), "--json"], capsys)
    document = json.loads(out)
    assert rc == 0 and document["failed"] == 0 and document["passed"] > 20
    assert {f["target"] for f in document["files"]} == {"input", "checkpoint"}


# --------------------------------------------------------------------------- #
# The streams: the real commands
# --------------------------------------------------------------------------- #


def _run_real(prog: str, argv: list[str], tmpdir: Path, *, stdout=subprocess.PIPE, env: dict | None = None,
              preexec_fn=None) -> subprocess.CompletedProcess:
    environment = dict(os.environ, TMPDIR=str(tmpdir), **(env or {}))
    return subprocess.run([str(BIN / prog), *argv], stdout=stdout, stderr=subprocess.PIPE, env=environment,
                          preexec_fn=preexec_fn, timeout=120)


# A plain progress line (bob.progress): shown after two seconds of a phase, so present or not as the machine's load
PROGRESS_LINE = re.compile(r"^bob-[a-z]+ [^\n]+: \d+(/\d+)?( \([^)\n]*\))?, \d+ s( \(done\))?\n", re.M)


def _stderr(done: subprocess.CompletedProcess) -> str:
    """A process's stderr without its progress lines: what a test that reads it whole compares."""
    return PROGRESS_LINE.sub("", done.stderr.decode())


STREAM_CASES = [c for i, c in enumerate(SUCCESS) if i not in (3, 4, 7)]  # one file report of inspect is enough


@pytest.mark.parametrize("command, prog, argv, code", STREAM_CASES, ids=[c[0] for c in STREAM_CASES])
@pytest.mark.parametrize("stream", ["closed", "broken-pipe", "ascii"])
def test_stdout_closed_broken_or_ascii(command, prog, argv, code, stream, work, tmpdir_watched) -> None:
    args = argv(work)
    if stream == "closed":
        done = _run_real(prog, args, tmpdir_watched, stdout=None, preexec_fn=lambda: os.close(1))
    elif stream == "broken-pipe":
        read_end, write_end = os.pipe()
        os.close(read_end)  # nobody reads: the first write fails with EPIPE
        try:
            done = _run_real(prog, args, tmpdir_watched, stdout=write_end)
        finally:
            os.close(write_end)
    else:
        done = _run_real(prog, args, tmpdir_watched, env={"PYTHONIOENCODING": "ascii"})
    err = done.stderr.decode("ascii", "backslashreplace")
    assert done.returncode == code and "Traceback" not in err, err
    if stream == "ascii":
        assert err == "" and done.stdout and done.stdout.isascii()
    else:
        assert err.count("\n") == 1 and "could not be printed (stdout is closed or full)" in err, err


@pytest.mark.parametrize("prog", PROGRAMS)
def test_a_json_refusal_stdout_cannot_take_is_said_on_stderr(prog: str, tmp_path: Path) -> None:
    """A refusal's --json object on a full stdout was lost without a word, while a report's was said."""
    with open("/dev/full", "wb") as full:
        done = _run_real(prog, ["--json", "--bogus"], tmp_path, stdout=full)
    refusal, said = done.stderr.decode().splitlines()
    assert done.returncode == 2 and refusal.startswith(f"{prog}: refused: ") and "--bogus" in refusal, refusal
    assert said == f"{prog}: its --json object could not be printed (stdout is closed or full)"


@pytest.mark.parametrize("encoding", ["ascii", "ascii:surrogateescape", "undefined"])  # a C locale's; none at all
@pytest.mark.parametrize("prog", PROGRAMS)
def test_help_in_ascii(prog: str, encoding: str, tmp_path: Path) -> None:
    done = _run_real(prog, ["--help"], tmp_path, env={"PYTHONIOENCODING": encoding})
    assert done.returncode == 0 and done.stderr == b"" and done.stdout.startswith(f"usage: {prog}".encode())


@pytest.mark.parametrize("prog", PROGRAMS)
def test_a_stream_encoding_that_holds_no_text_is_replaced_by_ascii(prog: str, tmp_path: Path) -> None:
    """PYTHONIOENCODING=undefined (a codec that encodes nothing): every word was lost, the refusal and the
    note that its --json object could not be printed too, and the exit code stood alone."""
    done = _run_real(prog, ["--json", "--bogus"], tmp_path, env={"PYTHONIOENCODING": "undefined"})
    assert done.returncode == 2 and "--bogus" in json.loads(done.stdout)["error"]["message"]
    assert done.stderr.decode("ascii").startswith(f"{prog}: refused: ") and "--bogus" in done.stderr.decode()


@pytest.mark.parametrize("stream", ["closed", "full --json"])
def test_qualify_with_stdout_closed_or_full_says_so_once(stream: str, tmp_path: Path) -> None:
    """Its seed line and its summary both fail to print: one line says so; under --json nothing
    but the envelope is written to stdout, and the exit code is the verdict's."""
    env = {"BOB_QUALIFY_PERTURB": ""}
    if stream == "closed":
        done = _run_real("bob-qualify", ["--quick", "--seed", "2"], tmp_path, stdout=None, env=env,
                         preexec_fn=lambda: os.close(1))
    else:
        with open("/dev/full", "wb") as full:
            done = _run_real("bob-qualify", ["--quick", "--seed", "2", "--json"], tmp_path, stdout=full, env=env)
    said = "its output (seed 2: reproduce with --seed 2)" if stream == "closed" else "the summary"  # (its seed line)
    assert (done.returncode, _stderr(done)) == (0, f"bob-qualify: {said} could not be printed (stdout is closed "
                                                          "or full)\n")


@pytest.mark.parametrize("stream", ["closed", "full"])
def test_qualify_with_stdout_closed_still_says_what_it_wrote(tmp_path: Path, stream: str) -> None:
    """With --report, the report's files are named once the seed line's note is said: only "the summary
    could not be printed" was, and a user could not tell whether the report had been written (a full
    stdout, /dev/full, too: the first failure had pointed it at /dev/null, where the later note went)."""
    argv, env = ["--quick", "--seed", "2", "--report", str(tmp_path / "rq")], {"BOB_QUALIFY_PERTURB": ""}
    if stream == "closed":
        done = _run_real("bob-qualify", argv, tmp_path, stdout=None, env=env, preexec_fn=lambda: os.close(1))
    else:
        with open("/dev/full", "wb") as full:
            done = _run_real("bob-qualify", argv, tmp_path, stdout=full, env=env)
    names = ("qualify.json", "loss-curves.png", "us-per-update.png")
    written = ", ".join(str(tmp_path / "rq" / name) for name in names)
    assert (done.returncode, _stderr(done)) == (0, "bob-qualify: its output (seed 2: reproduce with --seed 2) "
                                                          "could not be printed (stdout is closed or full)\n"
                                                          f"bob-qualify: wrote {written}, but its "
                                                          "summary could not be printed (stdout is closed or full)\n")


def test_qualify_out_of_descriptors_is_unexpected_not_a_failed_check(tmp_path: Path) -> None:
    import resource

    done = _run_real("bob-qualify", ["--quick", "--seed", "2", "--json"], tmp_path, env={"BOB_QUALIFY_PERTURB": ""},
                     preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (6, 6)))  # (3.13 starts in 7)
    assert done.returncode == 70, done.stderr
    assert done.stderr == b"bob-qualify: unexpected error: OSError: [Errno 24] Too many open files\n"
    assert json.loads(done.stdout)["error"]["exit_code"] == 70


def test_bob_run_out_of_descriptors_is_unexpected_at_every_limit_never_a_refusal(tmp_path: Path) -> None:
    """Every descriptor limit from where Python starts to where the run succeeds: exit 1 (unexpected, the
    machine's) or 0, never 2 naming a path. Out of descriptors while opening the trace's lock file was
    "refused: --trace …: its lock file … cannot be used: too many open files", exit 2."""
    import resource

    argv = ["--input", "rec.bin", "--checkpoint", "ck.bin", "--predictions", "pred.bin", "--trace", "run.trace",
            "--json"]
    (tmp_path / "rec.bin").write_bytes(INPUT.read_bytes())
    codes = {}
    for limit in range(5, 17):
        for name in ("ck.bin", "pred.bin", "run.trace"):
            (tmp_path / name).unlink(missing_ok=True)
        done = subprocess.run([str(BIN / "bob-run"), *argv], cwd=tmp_path, capture_output=True, timeout=120,
                              preexec_fn=lambda n=limit: resource.setrlimit(resource.RLIMIT_NOFILE, (n, n)))
        codes[limit] = done.returncode
        if done.returncode:
            assert done.returncode == 1 and json.loads(done.stdout)["error"]["exit_code"] == 1, done.stderr
            assert not (tmp_path / "ck.bin").exists()
    assert set(codes.values()) == {0, 1}, codes  # (the sweep reaches both)


def test_a_refusal_the_machine_s_shortage_is_behind_is_unexpected() -> None:
    from bob import commands
    from bob.refusals import the_machine_ran_out

    for errno_, behind in ((errno.EMFILE, True), (errno.ENFILE, True), (errno.ENOMEM, True), (errno.ENOENT, False)):
        try:
            try:
                raise OSError(errno_, "x")
            except OSError:
                raise commands.Refused("its lock file cannot be used", option="--trace") from None
        except commands.Refused as refused:
            assert the_machine_ran_out(refused) is behind
    assert the_machine_ran_out(commands.Refused("plain")) is False


def test_qualify_in_ascii_keeps_its_table_and_verdict(tmp_path: Path) -> None:
    env = {"PYTHONIOENCODING": "ascii"}
    done = _run_real("bob-qualify", ["--quick", "--seed", "2"], tmp_path, env={**env, "BOB_QUALIFY_PERTURB": ""})
    out = done.stdout.decode("ascii")
    assert done.returncode == 0 and "QUALIFIED: this build's native path" in out and "public-vector" in out
    assert "\\u" in out or "\\x" in out  # what ascii cannot hold is escaped, not dropped


@pytest.mark.parametrize("argv", [["--json", "targets"], ["--debug", "--json", "targets"]])
def test_json_before_the_subcommand_is_json(argv: list[str], tmp_path: Path) -> None:
    """The parent parser's flag, which the subcommand's own default would otherwise hide."""
    done = _run_real("bob-fuzz", argv, tmp_path)
    assert done.returncode == 0 and json.loads(done.stdout)["command"] == "bob-fuzz targets"


@pytest.mark.parametrize("flag, said", [("--help", "the help"), ("--version", "the version")])
@pytest.mark.parametrize("prog", ["bob-inspect", "python -m bob"])
@pytest.mark.parametrize("stream", ["full", "closed"])
def test_help_and_version_to_a_full_or_closed_stdout_say_so_in_one_line(flag: str, said: str, prog: str, stream: str,
                                                                         tmp_path: Path) -> None:
    """(A closed stdout got the whole help on stderr, argparse's fallback; python -m bob --help a traceback.)"""
    argv = [sys.executable, "-m", "bob", flag] if prog == "python -m bob" else [str(BIN / prog), flag]
    with open("/dev/full", "wb") as full:
        done = subprocess.run(argv, stdout=full if stream == "full" else None, stderr=subprocess.PIPE, timeout=120,
                              preexec_fn=None if stream == "full" else lambda: os.close(1))
    assert (done.returncode, done.stderr) == (0, f"{prog}: {said} could not be printed (stdout is closed or "
                                                 "full)\n".encode())


@pytest.mark.parametrize("argv", [["replay", str(INPUT), "--target", "convention_targets:prints"],
                                  ["run", "convention_targets:prints", "--format", "input", "--engine", "loop",
                                   "--runs", "3"]])
def test_a_targets_own_prints_go_to_stderr_not_into_the_json(argv, work, tmpdir_watched) -> None:
    """Replay and the seeded loop run a target in bob-fuzz's process: its print() came before the
    one JSON object on stdout."""
    done = _run_real("bob-fuzz", [*argv, "--json"], tmpdir_watched)
    assert done.returncode == 0 and json.loads(done.stdout)["ok"] is True, done
    assert b"a target's own line" in done.stderr


def test_a_target_that_is_no_function_is_a_usage_error(work, capsys) -> None:
    """It ran, and each input's TypeError ('int' object is not callable) was a finding against bob."""
    rc, out, err = call("bob-fuzz", ["run", "convention_targets:not_a_function", "--format", "input", "--engine",
                                     "loop", "--runs", "2", "--json"], capsys)
    assert rc == 2 and err == "bob-fuzz: refused: TARGET: usage: target 'convention_targets:not_a_function' is no function " \
        "(a int)\n"


@pytest.mark.skipif(__import__("importlib.util").util.find_spec("atheris") is None, reason="the fuzz extra")
def test_a_campaign_whose_target_ends_its_process_ends(work, tmpdir_watched) -> None:
    """A worker that exited 0 before its first execution was started again, for ever (--runs never
    reached); then it ended without a finding, and the campaign, in which no input had run, exited 0 as one that
    found nothing. It is no verdict now (exit 70), naming the worker's end."""
    done = _run_real("bob-fuzz", ["run", "convention_targets:exits", "--format", "input", "--runs", "10", "--jobs",
                                  "1", "--artifacts", work.fresh("artifacts"), "--corpus", work.fresh("corpus"),
                                  "--json"], tmpdir_watched)  # (no default corpus in the checkout)
    assert done.returncode == 70 and json.loads(done.stdout)["error"]["message"] == (
        "no verdict: every worker ended before its engine did (worker 1 ended (exit 0) without a finding: "
        ".logs/convention_targets_exits-worker0.log says why)"), done.stdout


@pytest.mark.parametrize("argv, code, said", [
    (["verify", str(CHECKPOINT)], 143, ""),
    (["checkpoint", str(CHECKPOINT), "--export", "{out}"], 0, "; wrote {out}"),
])
def test_a_signal_while_the_output_is_printed_is_said_and_what_was_written_stands(argv, code, said, tmp_path,
                                                                               monkeypatch, capsys) -> None:
    """A SIGTERM while stdout was stalled ended bob-inspect with 143 and nothing on stderr, even after its
    --export had been written."""
    import signal

    from bob import commands, signals
    from bob.inspect import main

    def stalled(*args, **kw):
        raise signals.Interrupted(signal.SIGTERM)

    monkeypatch.setattr(commands, "emit", stalled)
    out = str(tmp_path / "planes.npz")
    assert main([a.format(out=out) for a in argv]) == code
    assert capsys.readouterr().err == \
        f"bob-inspect: interrupted by SIGTERM while its output was printed (cut short){said.format(out=out)}\n"


def test_a_campaigns_findings_reach_the_terminal_escaped(work, capsys) -> None:
    """`bob-fuzz run` printed a target's message and the artifact path raw (a clear-screen, a window
    title), where replay, minimize and check escape them."""
    artifacts = work.root / "art\x1bx"
    rc, out, err = call("bob-fuzz", ["run", "convention_targets:says_escapes", "--format", "input", "--engine",
                                     "loop", "--runs", "1", "--artifacts", str(artifacts)], capsys)
    assert rc == 1 and "\x1b" not in out and "\x07" not in out, out
    assert "ValueError: \\x1b[2J\\x1b]0;title\\x07 planted" in out and "art\\x1bx/" in out


def test_a_report_that_cannot_be_written_after_the_run_still_says_the_verdict(tmp_path: Path, capsys,
                                                                              monkeypatch) -> None:
    """The disk filled during the run: the refusal named --report and nothing else, so the finished
    qualification's verdict was lost with its report."""
    import errno

    from bob.qualify import report

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.delenv("BOB_QUALIFY_PERTURB", raising=False)
    monkeypatch.setattr(report, "write_report", full)
    rc, out, err = call("bob-qualify", ["--quick", "--seed", "2", "--report", str(tmp_path / "rq"), "--json"], capsys)
    assert rc == 2 and json.loads(out)["error"]["message"] == (
        "no space left on device (the qualification itself finished: QUALIFIED, seed 2)"), out


def test_a_stdout_given_back_after_a_closed_start_prints_without_a_note(monkeypatch, capsys) -> None:
    """Once a caller puts a stdout back, what a command commits is printed, with no note that it could not be."""
    import io

    from bob.text import emit

    monkeypatch.setattr(sys, "stdout", None)
    emit("p", "started")
    emit("p", "done", committed="wrote x")
    given_back = io.StringIO()
    monkeypatch.setattr(sys, "stdout", given_back)
    emit("p", "done", committed="wrote y")
    assert given_back.getvalue() == "done\n"
    assert capsys.readouterr().err == ("p: the summary could not be printed (stdout is closed or full)\n"
                                       "p: wrote x, but its summary could not be printed (stdout is closed or full)\n")


def test_a_commit_after_stdout_filled_up_is_said_on_stderr(monkeypatch, capsys) -> None:
    """stdout full (/dev/full): the first printing that failed pointed it at /dev/null, so a later commit's
    summary "printed" there and nobody was told the files were written (bob-qualify's seed line, then its
    report)."""
    from bob.text import emit

    with open("/dev/full", "w", encoding="utf-8") as full:
        monkeypatch.setattr(sys, "stdout", full)
        emit("p", "seed 1")  # (its note covers the summary after it too: one line, unless a commit is to be said)
        emit("p", "done")
        emit("p", "done", committed="wrote x")
    assert capsys.readouterr().err == ("p: the summary could not be printed (stdout is closed or full)\n"
                                       "p: wrote x, but its summary could not be printed (stdout is closed or full)\n")


def test_the_null_put_for_a_closed_stdout_is_no_unclosed_file_at_exit() -> None:
    """A library caller that gives stdout back leaves emit's /dev/null to the interpreter's end: its descriptor
    stays held, and no ResourceWarning ("unclosed file") is printed then."""
    script = ("import sys; from bob.text import emit; sys.stdout = None; emit('p', 'x'); "
              "sys.stdout = sys.__stdout__; emit('p', 'y')")
    done = subprocess.run([sys.executable, "-X", "dev", "-c", script], capture_output=True, text=True,
                          encoding="utf-8", env={**os.environ, "PYTHONPATH": str(ROOT / "python")})
    assert (done.returncode, done.stdout) == (0, "y\n") and "ResourceWarning" not in done.stderr, done.stderr


def test_a_parsers_own_error_before_any_parse_is_its_message() -> None:
    """A library caller's check may call error() before the parser read any words: no unknown option then."""
    from bob.commands import Refused, argument_parser

    with pytest.raises(Refused, match=r"^usage: the following arguments are required: --a \(see x --help\)$"):
        argument_parser(prog="x").error("the following arguments are required: --a")


def test_an_empty_word_is_named_visibly(capsys) -> None:
    rc, out, err = call("bob-run", ["", "-x"], capsys)
    assert rc == 2 and "usage: unrecognized arguments: '' -x; the following arguments are required" in err, err


@pytest.mark.parametrize("value, text", [(0.3, "0.3"), (1e6, "1e+06"), (100000.0, "100000"), (0.01234567, "0.01234567"),
                                         (5e-324, "5e-324"), (1e-323, "1e-323"), (1234567.0, "1234567.0")])
def test_a_number_in_a_message_is_the_very_number_in_its_shortest_text(value: float, text: str) -> None:
    """%g rounds to six digits, and a subnormal's six digits read back as it (4.94066e-324 for 5e-324)."""
    from bob.text import exact_text

    assert exact_text(value) == text and float(text) == value
