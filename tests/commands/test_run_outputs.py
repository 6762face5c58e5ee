"""What bob-run shows, whole (issue 13): the --help text, the usage errors,
the JSON and human summaries of the §8 run, and the lock's messages. Each
test compares the entire output, so a changed word, field or value fails."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import threading
import time
from pathlib import Path

import pytest

import bob
from bob.run import lock_path_for, main
from bob.formats.constants import UPDATES_PER_INVOCATION as U
from conftest import CKPT_10_SHA256, CKPT_20_SHA256, CORPUS, PRED_HEX, PROMPTS

HELP = """\
usage: bob-run [-h] --input RECORD --checkpoint CKPT --predictions PRED
               [--trace TRACE] [--wait SECONDS] [--expect-checkpoint SHA256]
               [--json] [--debug] [--version]

One bob invocation: {U} AdamW updates from CKPT (missing or empty: fresh), then
CKPT and PRED replaced atomically.

options:
  -h, --help            show this help message and exit
  --input RECORD        the input record (bob-input v1)
  --checkpoint CKPT     read, then replaced atomically
  --predictions PRED    written atomically (24 bytes)
  --trace TRACE         also write the trace of the updates
                        (formats/trace.md), committed with the pair
  --wait SECONDS        wait this long for files another bob-run holds
                        (default: refuse at once, exit 75)
  --expect-checkpoint SHA256
                        refuse (exit 2), training nothing, unless CKPT's
                        SHA-256 is this one (64 hex digits, either case: the
                        checkpoint_sha256 of the last run's --json); a missing
                        or empty CKPT never is
  --json                print the summary (or the refusal) as one JSON object
  --debug               show a traceback for unexpected errors
  --version             print bob's version and exit

exit codes: 0 done, 1 unexpected, 2 refused, 75 a file in use, 130 interrupted
(SIGINT), 143 SIGTERM, 129 SIGHUP
""".replace("{U}", str(U))


@pytest.fixture
def work(tmp_path: Path) -> Path:
    bob.build_input(CORPUS, PROMPTS).write(tmp_path / "rec.bin")
    return tmp_path


def argv(work: Path, *extra: str) -> list[str]:
    return ["--input", str(work / "rec.bin"), "--checkpoint", str(work / "ck.bin"), "--predictions",
            str(work / "pred.bin"), *extra]


def test_help(capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["--help"]) == 0
    out = capsys.readouterr()
    assert out.out == HELP and out.err == ""


@pytest.mark.parametrize("missing", ["--input", "--checkpoint", "--predictions"])
def test_a_missing_option_is_a_usage_error_naming_it(work: Path, capsys, monkeypatch, missing: str) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    args = argv(work)
    del args[args.index(missing):args.index(missing) + 2]
    assert main(args) == 2
    err = capsys.readouterr().err
    message = f"usage: the following arguments are required: {missing} (see bob-run --help)"
    assert err == f"bob-run: refused: {message}\n"  # one line, as every refusal
    assert main([*args, "--json"]) == 2
    out = capsys.readouterr()
    assert json.loads(out.out) == {"command": "bob-run", "ok": False, "exit_code": 2, "error": {
        "option": None, "path": None, "field": None, "exit_code": 2, "message": message, "text": message}}
    assert not (work / "ck.bin").exists() and not (work / "pred.bin").exists()


def summary(step_before: int, sha: str, work: Path) -> dict:
    return {
        "step_before": step_before,
        "step_after": step_before + U,
        "fresh": step_before == 0,
        "predictions": [
            {"prompt": 0, "last_byte": ord("a"), "token": ord("c"), "valid": True},
            {"prompt": 1, "last_byte": ord("d"), "token": ord("a"), "valid": True},
            {"prompt": 2, "last_byte": None, "token": 0, "valid": False},
        ],
        "checkpoint": str(work / "ck.bin"),
        "checkpoint_sha256": sha,
        "predictions_file": str(work / "pred.bin"),
        "predictions_hex": PRED_HEX,
        "stale_temporaries_removed": [],
        "signals_after_commit": [],
        "problems_after_commit": [],
    }


def test_the_json_summary_of_the_section8_runs(work: Path, capsys) -> None:
    for step_before, sha, losses in ((0, CKPT_10_SHA256, (5.548397, 4.663767)),
                                     (10, CKPT_20_SHA256, (4.566657, 3.710753))):
        assert main(argv(work, "--json")) == 0
        out = capsys.readouterr()
        result = json.loads(out.out)
        got_losses = result.pop("losses")
        shared = {key: result.pop(key) for key in ("command", "ok", "exit_code", "error")}  # every command's keys
        assert shared == {"command": "bob-run", "ok": True, "exit_code": 0, "error": None}
        assert result == summary(step_before, sha, work) and out.err == ""
        assert len(got_losses) == 10 and (round(got_losses[0], 6), round(got_losses[-1], 6)) == losses


def test_the_human_summary_of_the_section8_run(work: Path, capsys) -> None:
    assert main(argv(work)) == 0
    out = capsys.readouterr()
    losses = bob.invoke(bob.read_input_file(work / "rec.bin")).losses
    assert out.out == (
        "bob-run: step 0 -> 10 (fresh start)\n"
        "  loss " + " ".join(f"{x:.6f}" for x in losses) + "\n"
        "  prompt 0 (last byte 'a'): next 'c' (valid)\n"
        "  prompt 1 (last byte 'd'): next 'a' (valid)\n"
        "  prompt 2 (empty): no prediction (validity 0)\n"
        f"  checkpoint {work / 'ck.bin'} sha256 {CKPT_10_SHA256}\n")
    assert out.err == ""
    assert main(argv(work)) == 0
    assert capsys.readouterr().out.startswith("bob-run: step 10 -> 20\n  loss ")


def test_a_row_that_is_not_finite_is_shown_as_no_prediction(work: Path, capsys) -> None:
    """A prompt whose row is not finite after the run: 'no prediction'. Such a
    state cannot be written (D14), so this goes through the summary maker."""
    from bob.run import _human_summary

    result = {"step_before": 10, "step_after": 20, "fresh": False, "losses": [1.0],
              "predictions": [{"prompt": 0, "last_byte": 0x41, "token": 0, "valid": False}],
              "checkpoint": "ck", "checkpoint_sha256": "00"}
    assert _human_summary(result) == ("bob-run: step 10 -> 20\n  loss 1.000000\n"
                                      "  prompt 0 (last byte 'A'): no prediction (row not finite)\n"
                                      "  checkpoint ck sha256 00")


def lock_refusal(lock: str, reason: str) -> str:
    """bob-run's one line when its lock file, not the checkpoint (``ck.bin`` beside it), cannot be used."""
    ck = os.path.join(os.path.dirname(lock), "ck.bin")
    return f"bob-run: refused: --checkpoint {ck}: its lock file {lock} cannot be used: {reason}; nothing was changed\n"


def hold_lock(work: Path, pid_text: bytes) -> int:
    fd = os.open(lock_path_for(str(work / "ck.bin")), os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.ftruncate(fd, 0)
    os.pwrite(fd, pid_text, 0)
    return fd


def test_a_held_lock_names_its_holder_and_the_way_out(work: Path, capsys) -> None:
    fd = hold_lock(work, b"%d\n" % os.getpid())  # (a live process: a dead holder's pid is not named)
    try:
        started = time.monotonic()
        assert main(argv(work, "--wait", "0.3")) == 75
        assert time.monotonic() - started >= 0.3  # it waited as long as asked, then gave up
        err = capsys.readouterr().err
        assert err == (f"bob-run: --checkpoint {work / 'ck.bin'}: in use by another bob-run (pid {os.getpid()}); nothing was "
                       "changed (still in use after --wait 0.3)\n")  # (not "use --wait": it was used)
        assert main(argv(work, "--wait", "0.01234567")) == 75  # the seconds given, not six digits of them
        assert "(still in use after --wait 0.01234567)" in capsys.readouterr().err
        os.ftruncate(fd, 0)  # a holder that has not written its pid yet is not named
        assert main(argv(work)) == 75
        assert "another bob-run; nothing was changed (use --wait SECONDS to wait for it)" in capsys.readouterr().err
    finally:
        os.close(fd)
    assert not (work / "ck.bin").exists()


def test_wait_gets_the_lock_once_it_is_released(work: Path, capsys) -> None:
    fd = hold_lock(work, b"1\n")
    threading.Timer(0.3, os.close, [fd]).start()
    started = time.monotonic()
    assert main(argv(work, "--wait", "30")) == 0
    assert 0.25 <= time.monotonic() - started < 20
    # The holder that released it removed the lock file; this run removed its own.
    assert not os.path.lexists(lock_path_for(str(work / "ck.bin")))


def test_the_lock_file_is_never_followed_through_a_link(work: Path, capsys) -> None:
    elsewhere = work / "elsewhere"
    lock = lock_path_for(str(work / "ck.bin"))
    os.symlink(elsewhere, lock)
    assert main(argv(work)) == 2
    assert capsys.readouterr().err == lock_refusal(lock, "it is a symbolic link (bob never follows one to a lock file)")
    assert not elsewhere.exists() and not (work / "ck.bin").exists()
    os.unlink(lock)
    os.mkdir(lock)
    assert main(argv(work)) == 2
    assert capsys.readouterr().err == lock_refusal(lock, "a directory, not a regular file")


def test_a_lock_file_that_is_a_link_to_a_directory_is_refused_as_a_link(work: Path, capsys) -> None:
    lock = lock_path_for(str(work / "ck.bin"))
    (work / "a-directory").mkdir()
    os.symlink(work / "a-directory", lock)
    assert main(argv(work)) == 2
    assert capsys.readouterr().err == lock_refusal(lock, "it is a symbolic link (bob never follows one to a lock file)")


def test_new_files_and_the_lock_file_get_0o666_minus_the_umask(work: Path, umask: int, monkeypatch) -> None:
    import bob.lock

    modes = []
    real_exit = bob.lock.TargetLock.__exit__

    def look_then_release(self, *exc):  # the lock file exists while it is held, and is removed after
        modes.append(os.stat(self.path).st_mode & 0o7777)
        real_exit(self, *exc)

    monkeypatch.setattr(bob.lock.TargetLock, "__exit__", look_then_release)
    assert main(argv(work)) == 0
    for name in ("ck.bin", "pred.bin"):
        assert os.stat(work / name).st_mode & 0o7777 == 0o666 & ~umask, name
    assert modes == [0o666 & ~umask] * 2  # the checkpoint's lock and the predictions'
    assert not (work / ".ck.bin.bob-lock").exists() and not (work / ".pred.bin.bob-lock").exists()


@pytest.mark.parametrize("kind, words", [("fifo", "a FIFO (named pipe)"), ("socket", "a socket"),
                                         ("char-device", "a character device")])
def test_a_lock_file_that_is_not_a_regular_file_is_named_for_what_it_is(work: Path, capsys, kind: str,
                                                                         words: str) -> None:
    # The same opening as every path bob reads (bob.fileio.open_regular):
    # never blocking on a FIFO, never taking a terminal as bob's own.
    from conftest import make_special

    lock = lock_path_for(str(work / "ck.bin"))
    make_special(kind, Path(lock))
    assert main(argv(work)) == 2
    assert capsys.readouterr().err == lock_refusal(lock, f"{words}, not a regular file")
    assert sorted(p.name for p in work.iterdir()) == sorted([".ck.bin.bob-lock", "rec.bin"])


@pytest.mark.parametrize("failing", ["ftruncate", "pwrite"])
def test_a_lock_file_that_cannot_take_the_pid_is_named_and_released(work: Path, capsys, monkeypatch,
                                                                    failing: str) -> None:
    # A full disk can refuse even the lock file's few bytes: the refusal
    # names the lock file, not the checkpoint, and the lock is let go.
    def full(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, failing, full)
    assert main(argv(work)) == 2
    lock = lock_path_for(str(work / "ck.bin"))
    assert capsys.readouterr().err == lock_refusal(lock, "no space left on device")
    # the lock file it had locked is removed with the lock, as after every run
    assert sorted(p.name for p in work.iterdir()) == ["rec.bin"]
    monkeypatch.undo()
    assert main(argv(work)) == 0


def test_refusals_under_json_are_one_whole_error_object(work: Path, capsys) -> None:
    record = work / "rec.bin"
    data = bytearray(record.read_bytes())
    data[:8] = b"NOT-BOB!"
    record.write_bytes(data)
    assert main(argv(work, "--json")) == 2
    out = capsys.readouterr()
    error = json.loads(out.out)["error"]
    finding = error.pop("finding")
    message = error["message"]
    assert message.startswith("input record: ") and "magic" in message
    assert error == {"option": "--input", "path": str(record), "field": "magic", "message": message,
                     "exit_code": 2, "text": f"--input {record}: {message}"}
    assert finding["field"] == "magic" and finding["offset"] == 0
    assert out.err == f"bob-run: refused: --input {record}: {message}\n"

    bob.build_input(CORPUS, PROMPTS).write(record)
    missing = work / "no-such-dir" / "ck.bin"
    args = ["--input", str(record), "--checkpoint", str(missing), "--predictions", str(work / "pred.bin"), "--json"]
    assert main(args) == 2
    out = capsys.readouterr()
    error = json.loads(out.out)["error"]
    assert error["option"] == "--checkpoint" and error["path"] == str(missing) and error["field"] is None
    assert error["text"] == f"--checkpoint {missing}: {error['message']}" and "finding" not in error
    assert out.err == f"bob-run: refused: {error['text']}\n"


def test_an_os_error_without_a_reason_is_still_said_in_words() -> None:
    from bob.commands import os_reason

    assert os_reason(FileNotFoundError(2, "No such file or directory")) == "no such file or directory"
    assert os_reason(OSError("Disk says No")) == "disk says No"
    assert os_reason(OSError()) == "oSError"  # the type's name, first letter lowered like any reason


def test_a_short_name_in_a_working_directory_past_path_max_is_said_so(work: Path, capsys, monkeypatch) -> None:
    """``ck.bin`` refused as "file name too long" would be a riddle: the reason gives the whole path's length."""
    monkeypatch.chdir(work)  # (and back afterwards)
    for _ in range(17):  # 17 × 251 bytes: past Linux's 4,096 from /, reached one name at a time
        os.mkdir("d" * 250)
        os.chdir("d" * 250)
    assert main(["--input", str(work / "rec.bin"), "--checkpoint", "ck.bin", "--predictions", "pred.bin"]) == 2
    said = re.fullmatch(r"bob-run: refused: --checkpoint ck\.bin: file name too long "
                        r"\(a path of (\d+) bytes from /; the system allows 4095\)\n", capsys.readouterr().err)
    assert said and int(said[1]) >= len(os.fsencode(os.getcwd())) > 4096
    assert os.listdir(".") == []


def test_an_output_path_too_long_is_said_by_its_own_length(work: Path, capsys) -> None:
    """The error of an output path names its directory, which the refusal measured: a path of 5,038 bytes was said
    to be one of 5,032."""
    long = str(work / "/".join(["d" * 200] * 25) / "pred.bin")
    assert main(["--input", str(work / "rec.bin"), "--checkpoint", str(work / "ck.bin"), "--predictions", long]) == 2
    assert capsys.readouterr().err == (f"bob-run: refused: --predictions {long}: file name too long (a path of "
                                       f"{len(os.fsencode(long))} bytes from /; the system allows 4095)\n")


def test_a_lock_file_holding_other_bytes_is_no_lock_file(work: Path, capsys) -> None:
    """Held or not, a file at the lock path that holds more than a pid is refused, its bytes kept."""
    fd = hold_lock(work, b"\xff\xfe 12\n")
    try:
        assert main(argv(work)) == 2
        assert capsys.readouterr().err.endswith("cannot be used: it holds 6 bytes that are not a pid (a lock file "
                                                "holds at most its holder's pid; bob never truncates or removes "
                                                "another file); nothing was changed\n")
    finally:
        os.close(fd)
    assert main(argv(work)) == 2
    assert Path(lock_path_for(str(work / "ck.bin"))).read_bytes() == b"\xff\xfe 12\n"


def test_a_temporary_of_someone_elses_live_process_is_left_alone(work: Path, monkeypatch) -> None:
    """os.kill(pid, 0) answers EPERM for a live process of another user: alive."""
    import bob.commit

    def not_yours(pid: int, sig: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    target = work / "ck.bin"
    target.write_bytes(b"x")
    theirs = work / ".ck.bin.bob-tmp-999999-0123456789ab"
    theirs.write_bytes(b"someone else's")
    monkeypatch.setattr(bob.commit.os, "kill", not_yours)
    assert bob.commit.clean_stale_temporaries(target) == [] and theirs.exists()


def test_refusals_of_a_file_name_the_option_path_and_what_it_should_be(work: Path, capsys) -> None:
    ck = work / "ck.bin"
    ck.write_bytes(b"NOT-BOB!" + bytes(100))
    assert main(argv(work)) == 2
    assert capsys.readouterr().err == (
        f"bob-run: refused: --checkpoint {ck}: checkpoint: magic at offset 0: not a checkpoint (bob-envelope): "
        'wrong magic (expected "BOB-CKPT", got "NOT-BOB!")\n')
    missing = work / "nothing"
    args = argv(work)
    args[1] = str(missing)
    assert main(args) == 2
    assert capsys.readouterr().err == f"bob-run: refused: --input {missing}: no such file\n"


def test_only_well_formed_temporary_names_are_cleaned(work: Path) -> None:
    """A name that merely starts like bob's temporaries (no random part, or no
    pid) is someone else's file: never removed."""
    from bob.commit import clean_stale_temporaries

    target = work / "ck.bin"
    target.write_bytes(b"x")
    dead = 999_999_999
    lookalikes = [work / f".ck.bin.bob-tmp-{dead}-", work / ".ck.bin.bob-tmp-x1-0123456789ab",
                  work / f".ck.bin.bob-tmp-{dead}"]
    stale = work / f".ck.bin.bob-tmp-{dead}-0123456789ab"
    for path in [*lookalikes, stale]:
        path.write_bytes(b"?")
    assert clean_stale_temporaries(target) == [str(stale)]
    assert all(p.exists() for p in lookalikes)


@pytest.mark.parametrize("lock", ["none", "held", "fifo", "directory", "link"])
def test_the_clean_up_asks_the_lock_without_making_or_keeping_it(work: Path, lock: str) -> None:
    """The library's clean-up took the target's lock as a bob-run does: it made a lock file where none was
    (left behind where it could not remove it), held it while it removed (a bob-run without --wait then said
    "in use by another bob-run", naming the clean-up), and where the lock could not be taken (another user's
    unreadable lock file) judged by pid alone, removing a live bob-run's backup from another PID namespace.
    Now a stale temporary is removed only while the lock file is absent or free; one that cannot be examined
    counts as held."""
    import fcntl

    from bob.lock import lock_path_for
    from bob.temporaries import clean_stale_temporaries

    target = work / "ck.bin"
    target.write_bytes(b"x")
    stale = work / ".ck.bin.bob-tmp-999999999-0123456789ab"
    stale.write_bytes(b"?")
    path = Path(lock_path_for(str(target)))
    held = None
    if lock == "held":
        path.write_bytes(b"")
        held = os.open(path, os.O_RDONLY)
        fcntl.flock(held, fcntl.LOCK_EX)
    elif lock == "fifo":
        os.mkfifo(path)
    elif lock == "directory":
        path.mkdir()
    elif lock == "link":
        path.symlink_to(work / "nowhere")
    try:
        removed = clean_stale_temporaries(target)
    finally:
        if held is not None:
            os.close(held)
    assert removed == ([str(stale)] if lock == "none" else []) and stale.exists() is (lock != "none")
    assert os.path.lexists(path) is (lock != "none")  # (never made)


def test_the_clean_up_of_an_empty_path_is_refused(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``clean_stale_temporaries("")`` took the empty path for the working directory, and removed a dead
    writer's temporary of the directory itself (``.sub.bob-tmp-…`` beside it); the writers refuse ""."""
    from bob.commit import clean_stale_temporaries

    (work / "sub").mkdir()
    theirs = work / ".sub.bob-tmp-999999999-0123456789ab"
    theirs.write_bytes(b"?")
    monkeypatch.chdir(work / "sub")
    with pytest.raises(FileNotFoundError):
        clean_stale_temporaries("")
    assert theirs.exists()


@pytest.mark.parametrize("raised, code, message", [
    (ImportError("bob._core is not built"), 1, "bob._core is not built"),
    (RuntimeError("disk on fire"), 1, "unexpected error: RuntimeError: disk on fire"),
    (KeyboardInterrupt(), 130, "interrupted; nothing was changed"),
], ids=["no-core", "unexpected", "interrupted"])
def test_what_goes_wrong_outside_bobs_checks_is_one_line_or_one_error_object(
        work: Path, capsys, monkeypatch, raised: BaseException, code: int, message: str) -> None:
    def run_files(*args: object, **kwargs: object) -> dict:
        raise raised

    monkeypatch.setattr("bob.run.run_files", run_files)
    assert main(argv(work)) == code
    out = capsys.readouterr()
    assert (out.out, out.err) == ("", f"bob-run: {message}\n")
    assert main(argv(work, "--json")) == code
    out = capsys.readouterr()
    assert json.loads(out.out) == {"command": "bob-run", "ok": False, "exit_code": code,
                                   "error": {"option": None, "path": None, "field": None, "exit_code": code,
                                             "message": message, "text": message}}
    assert out.err == f"bob-run: {message}\n"


def test_the_json_summary_lists_its_keys_in_order(work: Path, capsys) -> None:
    # One object per line, keys sorted: a reader diffing two runs' output
    # sees only the values that changed.
    assert main(argv(work, "--json")) == 0
    text = capsys.readouterr().out
    assert text.count("\n") == 1
    keys = list(json.loads(text))
    assert keys == sorted(keys)
    assert keys[0] == "checkpoint" and keys[-1] == "step_before"


class BrokenStdout:
    """A stdout that takes nothing (closed, full, or a reader gone)."""

    def write(self, text: str) -> int:
        raise OSError(28, "No space left on device")

    def flush(self) -> None:
        raise OSError(28, "No space left on device")


@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["human", "json"])
def test_a_committed_run_whose_summary_cannot_be_printed_says_so_once(work: Path, capsys, monkeypatch,
                                                                       json_flag: list[str]) -> None:
    with monkeypatch.context() as patch:
        patch.setattr("sys.stdout", BrokenStdout())
        assert main(argv(work, *json_flag)) == 0
    assert capsys.readouterr().err == (f"bob-run: the invocation committed step {U} to {work / 'ck.bin'}, but its "
                                       "summary could not be printed (stdout is closed or full)\n")
    assert bob.read_checkpoint_file(work / "ck.bin").step == U


def test_emit_without_a_commit_says_only_that_the_summary_was_lost(capsys, monkeypatch) -> None:
    from bob.text import emit

    with monkeypatch.context() as patch:
        patch.setattr("sys.stdout", BrokenStdout())
        emit("bob-inspect", "a report")
    assert capsys.readouterr().err == "bob-inspect: the summary could not be printed (stdout is closed or full)\n"


@pytest.mark.parametrize("value", ["-0e0", "-1e-400", "-1", "-.5", "-h", "-x", "-"])
@pytest.mark.parametrize("joined", [False, True])
def test_the_quick_reader_and_argparse_give_a_value_that_starts_with_a_dash_one_verdict(
        work: Path, capsys, monkeypatch, value: str, joined: bool) -> None:
    """--wait -0e0 ran on the quick reader where argparse (after any option it alone reads) refused it as no value;
    --wait -h was "must be a finite number" on one, "expected one argument" on the other."""
    said = []
    for quick in (True, False):
        if not quick:
            monkeypatch.setattr("bob.run.quick_args", lambda argv: None)
        code = main(argv(work, *([f"--wait={value}"] if joined else ["--wait", value])))
        said.append((code, capsys.readouterr().err))
    assert said[0] == said[1], said


def test_command_line_refusals_in_words(work: Path, capsys) -> None:
    assert main(argv(work, "--wait", "-1")) == 2
    assert capsys.readouterr().err == "bob-run: refused: --wait: must be a finite number of seconds >= 0, got \"-1\"\n"
    args = argv(work)
    args[args.index("--predictions") + 1] = str(work / "nowhere" / "pred.bin")
    assert main(args) == 2
    assert capsys.readouterr().err == (f"bob-run: refused: --predictions {work / 'nowhere' / 'pred.bin'}: "
                                       "its directory does not exist\n")
    # Not an option, though it ends like one: argparse's usage error, not a run.
    args = argv(work)
    args[args.index("--input")] = "xxinput"
    assert main(args) == 2
    assert capsys.readouterr().err == (f"bob-run: refused: usage: unrecognized arguments: xxinput {work / 'rec.bin'}; "
                                       "the following arguments are required: --input (see bob-run --help)\n")
    assert not (work / "ck.bin").exists()


SIGNAL_AS_THE_SUMMARY_IS_WRITTEN = """
import os, signal, sys
import bob.run as run
made = run._human_summary
def summary(result):  # the result's signals_after_commit taken: this one comes after it
    os.kill(os.getpid(), signal.SIGTERM)
    return made(result)
run._human_summary = summary
sys.exit(run.main(sys.argv[1:], until_exit=True))
"""


def test_a_signal_after_the_summary_is_taken_is_only_recorded_on_stderr_as_in_json(work: Path) -> None:
    """stderr said "SIGTERM arrived during the commit" where the JSON's signals_after_commit, taken a moment
    before, was empty (README: a signal after that is only recorded)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", SIGNAL_AS_THE_SUMMARY_IS_WRITTEN, *argv(work, "--json")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and json.loads(done.stdout)["signals_after_commit"] == [], done.stdout
    assert done.stderr == ""


# (the program, its argv with {ck} where a checkpoint's path goes, the option that names it)
CHECKPOINT_NAMED_AS_ANOTHER_OUTPUT = {
    "bob-run --predictions": ("bob-run", ["--input", "{rec}", "--checkpoint", "{new}", "--predictions", "{ck}"],
                              "--predictions"),
    "bob-run --trace": ("bob-run", ["--input", "{rec}", "--checkpoint", "{new}", "--predictions", "{new}.p",
                                    "--trace", "{ck}"], "--trace"),
    "bob-fixture --output": ("bob-fixture", ["--text", "abc", "--prompt", "a", "--prompt", "b", "--prompt", "",
                                             "--output", "{ck}"], "--output"),
    "bob-inspect --export": ("bob-inspect", ["checkpoint", "{new}.bin", "--export", "{ck}"], "--export"),
}


@pytest.mark.parametrize("door", CHECKPOINT_NAMED_AS_ANOTHER_OUTPUT)
def test_a_checkpoint_named_as_another_output_is_refused_and_kept(door: str, tmp_path: Path, capsys) -> None:
    """--predictions, --trace, --output or --export naming a checkpoint (a slip of the argv) replaced the trained
    state with predictions, a trace, a record or an export, exit 0 and nothing said; only a checkpoint replaces one."""
    from conftest import GOLDEN, main_of

    prog, words, option = CHECKPOINT_NAMED_AS_ANOTHER_OUTPUT[door]
    ck = tmp_path / ("ck.npz" if option == "--export" else "ck.bob")
    ck.write_bytes(golden := (GOLDEN / "checkpoint-abracadabra-step10.bin").read_bytes())
    (tmp_path / "new.bin").write_bytes(golden)  # (what --export reads)
    fill = {"rec": str(GOLDEN / "input-abracadabra.bin"), "new": str(tmp_path / "new"), "ck": str(ck)}
    before = sorted(os.listdir(tmp_path))
    capsys.readouterr()
    assert main_of(prog)([w.format(**fill) for w in words] + ["--json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert (error["option"], error["path"]) == (option, str(ck)), error
    assert error["message"] == ('holds a bob checkpoint (it starts "BOB-CKPT"), which only a checkpoint replaces; '
                                "nothing was changed (name another path, or remove that file first)")
    assert ck.read_bytes() == golden and sorted(os.listdir(tmp_path)) == before


def test_a_checkpoint_is_refused_before_the_work_where_what_is_written_comes_after_it(tmp_path: Path, capsys,
                                                                                      monkeypatch) -> None:
    """bob-fuzz minimize and bob-qualify --report were refused only once every try, or the whole qualification,
    had run (minimize's result then written nowhere; a checkpoint finding's too, its --output a checkpoint): both are
    refused before it now."""
    import bob.fuzz.replay
    import bob.qualify.runner
    from conftest import GOLDEN, main_of

    golden = (GOLDEN / "checkpoint-abracadabra-step10.bin").read_bytes()
    (tmp_path / "finding.bin").write_bytes(golden[8:2000])  # (no checkpoint: nor will its minimization be one)
    (tmp_path / "finding.bin.min").write_bytes(golden)
    (tmp_path / "ck-finding.bin").write_bytes(golden)  # (a checkpoint finding: its minimization may be none)
    (tmp_path / "ck.bin").write_bytes(golden)
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "qualify.json").write_bytes(golden)

    def never(*args, **kwargs):
        raise AssertionError("the work began")

    monkeypatch.setattr(bob.fuzz.replay, "minimize_out_of_process", never)
    monkeypatch.setattr(bob.qualify.runner, "qualify", never)
    for prog, words, option, path in (
            ("bob-fuzz", ["minimize", str(tmp_path / "finding.bin"), "--target", "checkpoint"], "--output",
             tmp_path / "finding.bin.min"),
            ("bob-fuzz", ["minimize", str(tmp_path / "ck-finding.bin"), "--target", "checkpoint", "--output",
                          str(tmp_path / "ck.bin")], "--output", tmp_path / "ck.bin"),
            ("bob-qualify", ["--quick", "--report", str(tmp_path / "report")], "--report",
             tmp_path / "report" / "qualify.json")):
        capsys.readouterr()
        assert main_of(prog)([*words, "--json"]) == 2, prog
        error = json.loads(capsys.readouterr().out)["error"]
        assert (error["option"], error["path"]) == (option, str(path)) and "holds a bob checkpoint" in error["message"]
        assert path.read_bytes() == golden


def test_a_checkpoint_finding_minimized_again_is_refused_before_its_tries(tmp_path: Path, capsys, monkeypatch) -> None:
    """A finding that starts BOB-CKPT, minimized twice into its PATH.min (the first result held the magic): judged by
    the input, the second run went on, to be refused after every try when its result held none (the result lost), and
    --output PATH.min spelled out was refused where the default was not. What the tries make is unknown until they
    end: a checkpoint where they would write is refused before them, however its path was given."""
    import bob.fuzz.replay
    from conftest import GOLDEN, main_of

    golden = (GOLDEN / "checkpoint-abracadabra-step10.bin").read_bytes()
    (tmp_path / "finding.bin").write_bytes(golden)
    (tmp_path / "finding.bin.min").write_bytes(golden)

    def never(*args, **kwargs):
        raise AssertionError("the tries began")

    monkeypatch.setattr(bob.fuzz.replay, "minimize_out_of_process", never)
    for output in ([], ["--output", str(tmp_path / "finding.bin.min")]):
        capsys.readouterr()
        assert main_of("bob-fuzz")(["minimize", str(tmp_path / "finding.bin"), "--target", "checkpoint", *output,
                                    "--json"]) == 2
        error = json.loads(capsys.readouterr().out)["error"]
        assert (error["option"], error["path"]) == ("--output", str(tmp_path / "finding.bin.min"))
        assert "holds a bob checkpoint" in error["message"] and (tmp_path / "finding.bin.min").read_bytes() == golden


def test_a_checkpoint_that_cannot_be_told_is_not_judged_and_a_failed_look_is_said(tmp_path: Path, capsys,
                                                                                monkeypatch) -> None:
    """The look at a file in the way: one this user may not open for reading is not judged (replaced, as before);
    any other failure (EIO; EAGAIN, another process's lease, which a review found replaced) is a refusal saying
    what it was looking for, the file kept."""
    import errno

    import bob.commit
    from conftest import GOLDEN

    record, pred = str(GOLDEN / "input-abracadabra.bin"), tmp_path / "pred.bin"
    argv = ["--input", record, "--checkpoint", str(tmp_path / "ck.bob"), "--predictions", str(pred), "--json"]
    real_open = os.open
    for err, code in ((errno.EIO, 2), (errno.EACCES, 0), (errno.EAGAIN, 2)):
        pred.write_bytes(b"BOB-CKPT" + bytes(100))
        (tmp_path / "ck.bob").unlink(missing_ok=True)

        def look(path, flags, *rest, **kw):
            if os.fspath(path) == str(pred) and flags & os.O_NONBLOCK:
                raise OSError(err, os.strerror(err), path)
            return real_open(path, flags, *rest, **kw)

        monkeypatch.setattr(bob.commit.os, "open", look)
        capsys.readouterr()
        assert main(argv) == code, err
        out = json.loads(capsys.readouterr().out)
        if code:
            said = "input/output error" if err == errno.EIO else \
                "resource temporarily unavailable: another process holds a lease on it"
            assert out["error"]["message"] == (f"could not be read to tell whether it holds a checkpoint ({said}); "
                                               "nothing was changed")
        assert len(pred.read_bytes()) == (24 if code == 0 else 108)
        monkeypatch.undo()


def test_a_checkpoint_still_replaces_a_checkpoint_and_a_file_of_another_kind_is_replaced(tmp_path: Path) -> None:
    """The rule is the checkpoint's alone: bob-run replaces its own checkpoint, and predictions over a record or
    an empty file as before."""
    from conftest import GOLDEN

    ck, pred = tmp_path / "ck.bob", tmp_path / "pred.bin"
    ck.write_bytes((GOLDEN / "checkpoint-abracadabra-step10.bin").read_bytes())
    pred.write_bytes((GOLDEN / "input-abracadabra.bin").read_bytes())
    assert main(["--input", str(GOLDEN / "input-abracadabra.bin"), "--checkpoint", str(ck), "--predictions",
                 str(pred)]) == 0
    assert hashlib.sha256(ck.read_bytes()).hexdigest() == CKPT_20_SHA256 and len(pred.read_bytes()) == 24
