"""bob-inspect's command line: kind detection, refusals (missing, foreign,
directories, FIFOs), usage errors — in-process — and a few runs of the real
command (the entry point, ``python -m``, a closed or broken stdout)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from bob.formats.kinds import detect_kind

BIN = Path(sys.executable).parent


def _real(*cmd: str, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
    out = subprocess.run(list(cmd), capture_output=True, timeout=timeout, **kw)
    assert b"Traceback" not in out.stderr, out.stderr
    return out


@contextmanager
def deadline(seconds: int):
    """Fail (instead of hanging the suite) if the block takes longer than ``seconds``."""
    def expired(signum, frame):
        raise TimeoutError(f"took longer than {seconds} s")

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


# --------------------------------------------------------------------------- #
# auto-detection
# --------------------------------------------------------------------------- #


def test_detect_kind_from_the_first_bytes_and_the_size():
    assert detect_kind(b"BOB-CKPT\x01", 786_880) == "checkpoint"
    assert detect_kind(b"", 0) == "checkpoint"  # a fresh run's checkpoint
    assert detect_kind(b"BOB-INPT", 1564) == "input"
    assert detect_kind(b"BOB-INPT", 24) == "input"  # the magic decides first
    assert detect_kind(bytes(8), 24) == "predictions"
    assert detect_kind(b"\x89PNG\r\n\x1a\n", 48) is None
    assert detect_kind(b"BOB-CK", 6) == "checkpoint"  # cut short: its report names the cut
    assert detect_kind(b"BOB-CKX", 7) is None


def test_auto_detects_the_kind(cli, files):
    for name, kind in (("ck2.bin", "checkpoint"), ("rec.bin", "input"), ("pred.bin", "predictions"), ("empty.bin", "checkpoint")):
        r = cli.json(str(files / name))
        assert (r["command"], r["kind"], r["auto"], r["ok"]) == (f"bob-inspect {kind}", kind, True, True), name
    out = cli.text(str(files / "pred.bin"))
    assert out.startswith(f"bob-inspect predictions: {files / 'pred.bin'}")
    r = cli.strict_json(cli.run("--json", "ckpt", str(files / "ck1.bin")).stdout)  # options before the command
    assert r["command"] == "bob-inspect checkpoint" and r["auto"] is False


@pytest.mark.parametrize("first, then", [("rec.bin", "ck2.bin"), ("ck2.bin", "rec.bin"), ("pred.bin", "rec.bin")])
def test_the_kind_is_told_from_the_bytes_the_report_is_made_of(cli, files, tmp_path, monkeypatch, first, then):
    """``bob-inspect FILE`` read the file to tell its kind, then again for the report: a file renamed over
    the path in between (another kind's) was reported as the first kind with a magic problem, exit 2."""
    import shutil

    import bob.inspect.cli

    path = tmp_path / "alt.bin"
    shutil.copyfile(files / first, path)
    real = bob.inspect.cli.peek

    def peek_then_rename(given):
        seen = real(given)
        shutil.copyfile(files / then, tmp_path / "next")
        os.replace(tmp_path / "next", path)
        return seen

    monkeypatch.setattr(bob.inspect.cli, "peek", peek_then_rename)
    r = cli.json(str(path))
    assert (r["kind"], r["ok"], r["size"]) == (detect_kind((files / first).read_bytes(), os.path.getsize(files / first)),
                                               True, os.path.getsize(files / first))


# --------------------------------------------------------------------------- #
# refusals
# --------------------------------------------------------------------------- #


def test_missing_and_foreign_files_are_one_line_errors(cli, files, tmp_path):
    for args in (("ckpt", str(tmp_path / "nope")), (str(tmp_path / "nope"),), ("diff", str(tmp_path / "nope"),
                 str(files / "ck1.bin")), ("input", str(tmp_path))):
        out = cli.run(*args, code=2)
        assert out.stdout == b"" and out.stderr.count(b"\n") == 1, out.stderr
    assert cli.run(str(tmp_path / "nope"), code=2).stderr.decode().endswith("nope: no such file\n")
    r = cli.json("ckpt", str(tmp_path / "nope"), code=2)
    assert r["ok"] is False and r["exit_code"] == 2 and r["error"]["message"] == "no such file"
    assert r["error"]["exit_code"] == 2 and r["error"]["path"] == str(tmp_path / "nope")

    png = tmp_path / "x.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(40))
    err = cli.run(str(png), code=2).stderr.decode()
    assert "not a bob file" in err and "\\x89PNG\\x0d\\x0a\\x1a\\x0a" in err
    r = cli.json("ckpt", str(png), code=2)
    assert r["magic"]["ok"] is False and [p["kind"] for p in r["problems"]] == ["not-a-bob-file"]

    big = tmp_path / "big.bin"
    with open(big, "wb") as f:
        f.write(b"BOB-CKPT")
        f.truncate(1 << 20)
    r = cli.json("ckpt", str(big), code=2)
    assert r["size"] == 1 << 20 and r["sha256"] is None and [p["field"] for p in r["problems"]] == ["file_size"]
    assert "was not read" in r["problems"][0]["message"]


def test_a_foreign_files_size_is_said_as_it_is_known(cli, tmp_path):
    """One byte is "1 byte"; a file whose size fstat does not know (/proc, 0) is read to its end (it is
    read once, up to the largest file of any kind) and said with the size read."""
    import re

    one = tmp_path / "one.bin"
    one.write_bytes(b"x")
    assert 'not a bob file (1 byte starting "x";' in cli.run(str(one), code=2).stderr.decode()
    if os.path.exists("/proc/self/status"):
        assert re.search(r'not a bob file \([1-9][0-9]{2,} bytes starting "Name:\\x09',
                         cli.run("/proc/self/status", code=2).stderr.decode())


def _commands(path: str, other: str) -> list[tuple[tuple[str, ...], str]]:
    """Each command line reading ``path``, and how its refusal names the path (diff: by its side)."""
    return [(("ckpt", path), ""), (("input", path), ""), (("pred", path), ""), ((path,), ""),
            (("diff", path, other), "A "), (("diff", other, path), "B ")]


def test_a_directory_is_refused_naming_the_path(cli, files, tmp_path):
    d = tmp_path / "a dir"
    d.mkdir()
    for args, side in _commands(str(d), str(files / "ck1.bin")):
        out = cli.run(*args, code=2)
        err = out.stderr.decode()
        assert out.stdout == b"" and err.count("\n") == 1, err
        assert err.startswith(f"bob-inspect: refused: {side}{d}: a directory, not a regular file"), err
    r = cli.json("input", str(d), code=2)
    assert r == {"command": "bob-inspect input", "ok": False, "exit_code": 2,
                 "error": {"option": None, "path": str(d), "field": None, "exit_code": 2,
                           "message": "a directory, not a regular file",
                           "text": f"{d}: a directory, not a regular file"}}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_without_a_writer_is_refused_without_hanging(cli, files, tmp_path):
    fifo = tmp_path / "pipe\x1b.bin"
    os.mkfifo(fifo)
    shown = str(fifo).replace("\x1b", "\\x1b")
    with deadline(20):
        for args, side in _commands(str(fifo), str(files / "ck1.bin")):
            out = cli.run(*args, code=2)
            err = out.stderr.decode()
            assert out.stdout == b"" and err.count("\n") == 1, err
            assert err.startswith(f"bob-inspect: refused: {side}{shown}: a FIFO (named pipe), not a regular file"), err
        r = cli.json(str(fifo), code=2)
        assert r["ok"] is False and r["exit_code"] == 2 and r["error"]["path"] == shown and "FIFO" in r["error"]["message"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_by_the_real_command_too(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    out = _real(sys.executable, "-m", "bob.inspect", str(fifo), timeout=30)
    assert out.returncode == 2 and out.stdout == b""
    assert out.stderr.decode() == f"bob-inspect: refused: {fifo}: a FIFO (named pipe), not a regular file\n"


def test_a_device_is_refused(cli):
    if not os.path.exists(os.devnull):
        pytest.skip("no null device")
    err = cli.run("ckpt", os.devnull, code=2).stderr.decode()
    assert err == f"bob-inspect: refused: {os.devnull}: a character device, not a regular file\n"


def test_usage_errors_exit_2(cli, files):
    cli.run(code=2)
    cli.run("ckpt", str(files / "ck1.bin"), "--rows-hex", "zz", code=2)
    for not_hex in ("60x1", "0x0x61", "61x", "6,1", "0x6 0x1", "616 2", "61 0x 62", ",", " ", ",,:"):  # (60x1 and
        # 6,1: row 0x61; separators only: no bytes, as '' is for --prompt-hex, a typo as likely)
        err = cli.run("ckpt", str(files / "ck1.bin"), "--rows-hex", not_hex, code=2).stderr.decode()
        assert f"--rows-hex: {not_hex} is not hex" in err, err
    assert cli.json("ckpt", str(files / "ck1.bin"), "--rows-hex", "0X61, 0x62:63")["rows"][2]["context"] == 0x63
    err = cli.run(str(files / "rec.bin"), "--rows", "a", code=2).stderr.decode()
    assert f"refused: {files / 'rec.bin'}: not a checkpoint (it is an input record); --rows applies" in err
    cli.run("schema", "bogus", code=2)
    cli.run("ckpt", code=2)
    assert cli.run("--help").stdout.startswith(b"usage: bob-inspect")


def test_no_command_and_no_file_is_one_usage_error_with_or_without_json(cli):
    """``bob-inspect --json`` alone said "the following arguments are required: FILE", bob-inspect alone
    "give a command or a FILE" (README: one refusal, in text and in JSON alike)."""
    said = "usage: give a command or a FILE (see bob-inspect --help)"
    assert cli.run(code=2).stderr.decode() == f"bob-inspect: refused: {said}\n"
    for flags in (["--json"], ["--debug", "--json"]):
        assert cli.run(*flags, code=2).stderr.decode() == f"bob-inspect: refused: {said}\n"
    assert cli.json(code=2)["error"]["message"] == said


def test_a_mistyped_command_is_named_never_the_file_after_it(cli, files, tmp_path, monkeypatch):
    """``bob-inspect chekpoint FILE`` took the typo for FILE and said "unrecognized arguments: FILE", blaming the
    file. A first word that names no file, with another operand after it, is said as no command."""
    monkeypatch.chdir(tmp_path)
    ck = str(files / "ck1.bin")
    said = ("usage: chekpoint is no command (checkpoint, input, predictions, diff, trace, verify, schema) and names "
            "no file (see bob-inspect --help)")
    assert cli.run("chekpoint", ck, code=2).stderr.decode() == f"bob-inspect: refused: {said}\n"
    assert cli.json("chekpoint", "--rows", "a", ck, code=2)["error"]["message"] == said
    assert "unrecognized arguments: x " in cli.run(ck, "x", code=2).stderr.decode()  # FILE there: x is the extra
    (tmp_path / "chekpoint").write_bytes(b"")  # a file of that name: the word after it is the extra one
    assert "unrecognized arguments: " + ck in cli.run("chekpoint", ck, code=2).stderr.decode()
    assert cli.run("nothing-here", code=2).stderr.decode() == "bob-inspect: refused: nothing-here: no such file\n"
    for argv in (["--", "diff", ck, ck], ["--ulp", "3", ck, ck], ["chekpoint", "nor-this"], ["", ck]):
        assert "is no command" not in cli.run(*argv, code=2).stderr.decode(), argv  # (argparse's, as before)


def test_the_last_guard_escapes_only_lines_a_terminal_would_not_print():
    from bob.inspect.cli import _guard

    assert _guard("256 \u00d7 u32 (\u00a72)") == "256 \u00d7 u32 (\u00a72)"
    assert _guard("verdict\x1b[2J\r\nOK") == "verdict\\x1b[2J\\x0d\\x0aOK"
    assert _guard("a\u202eb") == "a\\u202eb"


# --------------------------------------------------------------------------- #
# the real command
# --------------------------------------------------------------------------- #


def test_the_entry_point_and_python_m_run_the_same_command(cli, files):
    path = str(files / "pred.bin")
    runs = [_real(str(BIN / "bob-inspect"), path, "--json"),
            _real(sys.executable, "-m", "bob", "inspect", path, "--json"),
            _real(sys.executable, "-m", "bob.inspect", path, "--json")]
    for out in runs:
        assert out.returncode == 0 and out.stderr == b""
    assert runs[0].stdout == runs[1].stdout == runs[2].stdout
    assert cli.strict_json(runs[0].stdout)["command"] == "bob-inspect predictions"
    missing = _real(str(BIN / "bob-inspect"), "ckpt", str(files / "nope"))
    assert missing.returncode == 2 and missing.stderr.decode().endswith("nope: no such file\n")


def test_a_broken_pipe_keeps_the_exit_status_without_a_traceback(files):
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will read: the first write fails with EPIPE
    try:
        proc = subprocess.run([sys.executable, "-m", "bob.inspect", "schema"], stdout=write_end,
                              stderr=subprocess.PIPE, timeout=60)
    finally:
        os.close(write_end)
    # as bob-run: the report's exit status stands, one line on stderr says it was not printed
    assert proc.returncode == 0 and proc.stderr == NOT_PRINTED, proc.stderr


NOT_PRINTED = b"bob-inspect: the summary could not be printed (stdout is closed or full)\n"


def test_a_closed_stdout_keeps_the_exit_status_without_a_traceback(files):
    # closed while running: the write fails (EBADF)
    proc = _real(sys.executable, "-c", "import os, sys; os.close(1); from bob.inspect import main; "
                 "sys.exit(main(sys.argv[1:]))", "pred", str(files / "pred.bin"))
    assert proc.returncode == 0 and proc.stderr == NOT_PRINTED
    # closed from the start: Python has no sys.stdout at all
    proc = _real(str(BIN / "bob-inspect"), "pred", str(files / "pred.bin"), preexec_fn=lambda: os.close(1))
    assert proc.returncode == 0 and proc.stderr == NOT_PRINTED


@pytest.mark.parametrize("option", ["--export", "--heatmap"])
def test_an_empty_output_path_is_refused_not_taken_for_no_output(tmp_path: Path, option: str, capsys) -> None:
    """``--export "$OUT"`` with OUT unset: refused naming the option (it was exit 0, nothing written)."""
    import json

    from bob.inspect import main
    from conftest import GOLDEN

    if option == "--heatmap":
        pytest.importorskip("matplotlib")
    before = sorted(tmp_path.iterdir())
    assert main([str(GOLDEN / "checkpoint-abracadabra-step10.bin"), option, "", "--json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert (error["option"], error["path"]) == (option, "") and sorted(tmp_path.iterdir()) == before


@pytest.mark.parametrize("backend", ["module://matplotlib_inline.backend_inline", "garbage"])
def test_a_heatmap_is_drawn_whatever_backend_the_environment_names(tmp_path: Path, backend: str) -> None:
    """MPLBACKEND naming a backend matplotlib has not (Jupyter's inline one without matplotlib-inline): its import
    raised ValueError, and --heatmap (and bob-qualify --report) ended 70, unexpected. bob draws into files."""
    from conftest import GOLDEN

    pytest.importorskip("matplotlib")
    run = subprocess.run([sys.executable, "-m", "bob", "inspect", str(GOLDEN / "checkpoint-abracadabra-step10.bin"),
                          "--heatmap", str(tmp_path / "h.png"), "--json"], capture_output=True, text=True,
                         env={**os.environ, "MPLBACKEND": backend}, timeout=120)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "h.png").read_bytes().startswith(b"\x89PNG")


def test_the_notes_of_a_heatmap_and_an_export_not_made_are_both_kept(cli, tmp_path) -> None:
    """A checkpoint cut short with --heatmap and --export: the export's note replaced the heatmap's, and
    said "nothing was written" also where the heatmap was written."""
    from conftest import GOLDEN

    pytest.importorskip("matplotlib")
    cut = tmp_path / "cut.bob"
    cut.write_bytes((GOLDEN / "checkpoint-abracadabra-step10.bin").read_bytes()[:300_000])
    r = cli.json(str(cut), "--heatmap", str(tmp_path / "h.png"), "--export", str(tmp_path / "e.npz"), code=2)
    assert r["note"] == ("no heatmap: the P plane could not be read; no export: bob-run refuses this checkpoint "
                         "(the problems are listed), so none was written")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cut.bob"]


def test_a_heatmap_and_an_export_are_written_both_or_neither(tmp_path: Path, monkeypatch, capsys) -> None:
    """The export failed (a full disk) after the heatmap had replaced the old one; the refusal did
    not say so."""
    import errno

    import bob.fileio
    from bob.inspect import main
    from conftest import GOLDEN

    pytest.importorskip("matplotlib")
    (tmp_path / "heat.png").write_bytes(b"the old heatmap")
    real = bob.fileio.stage

    def full_for_the_export(target, data, *args, **kwargs):
        if target.endswith(".npz"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(target, data, *args, **kwargs)

    monkeypatch.setattr(bob.fileio, "stage", full_for_the_export)
    assert main([str(GOLDEN / "checkpoint-abracadabra-step10.bin"), "--heatmap", str(tmp_path / "heat.png"),
                 "--export", str(tmp_path / "x.npz")]) == 2
    assert capsys.readouterr().err == f"bob-inspect: refused: --export {tmp_path / 'x.npz'}: no space left on device\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["heat.png"]
    assert (tmp_path / "heat.png").read_bytes() == b"the old heatmap"


def test_a_heatmap_and_an_export_into_one_file_are_refused(tmp_path: Path, capsys) -> None:
    """Through a link, --heatmap named the export's file: both were reported written, and the
    "heatmap" was the export's zip."""
    from bob.inspect import main
    from conftest import GOLDEN

    pytest.importorskip("matplotlib")
    (tmp_path / "same.png").symlink_to("x.npz")
    assert main([str(GOLDEN / "checkpoint-abracadabra-step10.bin"), "--export", str(tmp_path / "x.npz"),
                 "--heatmap", str(tmp_path / "same.png")]) == 2
    assert capsys.readouterr().err == (f"bob-inspect: refused: --heatmap {tmp_path / 'same.png'}: names the same file "
                                       "as --export; each needs its own\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["same.png"]


def test_a_link_to_the_inspected_file_planted_while_the_output_is_made_is_refused(tmp_path: Path, monkeypatch,
                                                                                  capsys) -> None:
    """--export checked once at the start: a link to the checkpoint planted at the export's path while
    the export was made (a heatmap takes a second) was followed, and the checkpoint became the .npz."""
    import bob.inspect.cli
    from bob.inspect import main
    from conftest import GOLDEN

    checkpoint = tmp_path / "ck.bin"
    checkpoint.write_bytes((GOLDEN / "checkpoint-abracadabra-step10.bin").read_bytes())
    real = bob.inspect.cli.export_checkpoint

    def planting(report, data, out):
        (tmp_path / "x.npz").symlink_to("ck.bin")
        return real(report, data, out)

    monkeypatch.setattr(bob.inspect.cli, "export_checkpoint", planting)
    assert main([str(checkpoint), "--export", str(tmp_path / "x.npz")]) == 2
    assert capsys.readouterr().err == (f"bob-inspect: refused: --export {tmp_path / 'x.npz'}: that is a file this "
                                       "command read; bob never replaces what it reads\n")
    assert checkpoint.read_bytes() == (GOLDEN / "checkpoint-abracadabra-step10.bin").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck.bin", "x.npz"]


@pytest.mark.parametrize("option", ["--heatmap", "--export", "--rows", "--rows-hex"])
def test_a_checkpoint_option_given_empty_on_another_kind_is_refused(cli, files, option):
    """`bob-inspect rec.bin --heatmap ''` was exit 0: an empty value was taken for no option at all.
    The refusal names the option given (it named all four), and FILE as its path."""
    r = cli.json(str(files / "rec.bin"), option, "", code=2)
    if option.startswith("--rows"):  # (refused as it is read, before --help too: an empty list of rows is none)
        assert (r["error"]["option"], r["error"]["message"]) == (option, "no context bytes given (an empty value is "
                                                                 "not \"no rows\": leave the option out)")
        return
    assert (r["error"]["path"], r["error"]["message"]) == (str(files / "rec.bin"), "not a checkpoint (it is an "
                                                           f"input record); {option} applies to checkpoints")


def test_a_refusal_once_the_kind_is_detected_names_its_subcommand_and_the_file(cli, files, tmp_path):
    """`bob-inspect rec.bin --rows a --json` said command "bob-inspect" and path null, the path only
    inside the message; a detected checkpoint's refusal (a --heatmap into a directory) the same."""
    r = cli.json(str(files / "rec.bin"), "--rows", "a", code=2)
    assert (r["command"], r["error"]["path"], r["error"]["option"]) == ("bob-inspect input", str(files / "rec.bin"),
                                                                        None)
    (tmp_path / "adir").mkdir()
    r = cli.json(str(files / "ck1.bin"), "--heatmap", str(tmp_path / "adir"), code=2)
    assert (r["command"], r["error"]["option"]) == ("bob-inspect checkpoint", "--heatmap")
    assert cli.json(str(tmp_path / "nope.bob"), code=2)["command"] == "bob-inspect"  # no kind: none detected


@pytest.mark.parametrize("raised, code", [(KeyboardInterrupt, 130), (ValueError, 70)])
def test_an_interruption_or_error_once_the_kind_is_detected_names_its_subcommand(cli, files, tmp_path, monkeypatch,
                                                                                raised, code) -> None:
    """As a refusal does: `bob-inspect ck.bin --heatmap h.png --json` interrupted said "bob-inspect"."""
    import bob.inspect.heatmap

    pytest.importorskip("matplotlib")

    def cut_short(*args: object) -> None:
        raise raised()

    monkeypatch.setattr(bob.inspect.heatmap, "draw_heatmap", cut_short)
    r = cli.json(str(files / "ck1.bin"), "--heatmap", str(tmp_path / "h.png"), code=code)
    assert r["command"] == "bob-inspect checkpoint"


@pytest.mark.parametrize("argv", [["nope.bob", "--rows", "pred"], ["--rows", "input", "nope.bob"]])
def test_the_command_key_is_not_an_options_value(cli, argv):
    """An option's value that is also a subcommand's name (pred, input) named the command key."""
    assert cli.json(*argv, code=2)["command"] == "bob-inspect"


@pytest.mark.parametrize("argv", [["--help", "diff"], ["--version", "ckpt"], ["-h", "trace"]])
def test_a_subcommand_after_the_answering_option_is_not_the_command_key(cli, argv):
    """bob-inspect answers --help or --version before it reads a subcommand: the answer is bob-inspect's (its
    key said "bob-inspect diff" over bob-inspect's own usage)."""
    r = cli.json(*argv)
    assert r["command"] == "bob-inspect" and r["exit_code"] == 0


@pytest.mark.parametrize("option", ["--rows", "--rows-hex"])
def test_an_empty_rows_option_on_a_checkpoint_is_refused_too(cli, files, option):
    """On a checkpoint an empty --rows was taken for no option (exit 0), where another kind of file refused it."""
    r = cli.json("checkpoint", str(files / "ck1.bin"), option, "", code=2)
    assert r["error"]["option"] == option and r["error"]["message"].startswith("no context bytes given")
