"""bob-fuzz's commands: targets, replay, conformance + check (bob's own reader
agrees everywhere, a lax toy reader's disagreements are found and named), and
a campaign that finds a planted bug and writes an artifact that reproduces it."""

from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from bob.fuzz.cli import main
from bob.fuzz.targets import TARGETS
from conftest import GOLDEN, gone, tmpfs

HERE = Path(__file__).resolve().parent
LAX_READER = """
import sys
import time
data = open(sys.argv[1], "rb").read()
# A lax reader: right size and magic is enough (no version, targets or prompt word checks).
sys.exit(0 if len(data) == {size} and data[:8] == {magic!r} else 1)
"""


def test_targets_lists_each_target_with_its_property(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["targets"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == list(TARGETS)
    assert all(len(line.split(None, 1)[1]) > 20 for line in lines)


def test_python_dash_m_bob_fuzz() -> None:
    out = subprocess.run([sys.executable, "-m", "bob", "fuzz", "targets"], capture_output=True, text=True)
    assert out.returncode == 0 and "checkpoint" in out.stdout


def test_replay_passes_golden_files_and_fails_a_broken_one(tmp_path: Path, capsys) -> None:
    assert main(["replay", str(GOLDEN / "input-abracadabra.bin"), "--target", "input"]) == 0
    assert "PASS" in capsys.readouterr().out
    assert main(["replay", str(GOLDEN / "input-abracadabra.bin"), "--target", f"{__name__}:always_fails"]) == 1
    assert "FAIL" in capsys.readouterr().out
    (tmp_path / "x.bin").write_bytes(b"")
    assert main(["replay", str(tmp_path / "x.bin")]) == 2  # no target known for it: a usage error, not a guess


def test_replay_refuses_a_file_it_cannot_read_inside_a_directory_as_one_named(tmp_path: Path, capsys) -> None:
    """Not a failing replay (exit 1 is a finding against bob): a refusal naming the file, before any runs."""
    from bob.fuzz.common import INPUT_LIMIT

    (tmp_path / "a.bin").write_bytes((GOLDEN / "input-abracadabra.bin").read_bytes())
    with open(tmp_path / "huge.bin", "wb") as f:
        f.truncate(INPUT_LIMIT + 1)  # sparse: more than any target reads
    for paths in ([str(tmp_path)], [str(tmp_path / "huge.bin")]):
        assert main(["replay", "--target", "input", *paths]) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and captured.err.startswith(f"bob-fuzz: refused: PATH {tmp_path / 'huge.bin'}: ")


@pytest.mark.parametrize("kind,reason", [("fifo", "not a regular file"), ("dangling", "no such file")])
def test_replay_of_a_directory_refuses_what_it_cannot_replay_never_skips_it(tmp_path: Path, kind: str, reason: str,
                                                                           capsys) -> None:
    """A FIFO or a link that leads nowhere under a directory is named (it was skipped: "1 passed")."""
    (tmp_path / "a.bin").write_bytes((GOLDEN / "input-abracadabra.bin").read_bytes())
    odd = tmp_path / "odd.bin"
    os.mkfifo(odd) if kind == "fifo" else odd.symlink_to("nowhere")
    assert main(["replay", "--target", "input", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"bob-fuzz: refused: PATH {odd}: ") and reason in err, err


def fails_on_bad(data: bytes) -> None:
    assert data != b"bad", "planted"


def test_replay_of_a_directory_follows_a_linked_directory_once(tmp_path: Path, capsys) -> None:
    """A linked directory under the one given was skipped without a word ("1 passed", exit 0, its failing
    file never run). One inside the tree is followed, each directory once and by its own name (a link back
    up is not walked again); one that leads out of the tree (to /, say) is refused by name."""
    (tmp_path / "dir" / "real").mkdir(parents=True)
    (tmp_path / "other").mkdir()
    (tmp_path / "dir" / "a.bin").write_bytes((GOLDEN / "input-abracadabra.bin").read_bytes())
    (tmp_path / "dir" / "real" / "bad.bin").write_bytes(b"bad")
    (tmp_path / "dir" / "a-link").symlink_to("real")
    (tmp_path / "dir" / "real" / "up").symlink_to("..")
    assert main(["--json", "replay", "--target", f"{__name__}:fails_on_bad", str(tmp_path / "dir")]) == 1
    files = json.loads(capsys.readouterr().out)["files"]
    assert [(Path(f["path"]).relative_to(tmp_path / "dir"), f["passed"]) for f in files] == [
        (Path("a.bin"), True), (Path("real/bad.bin"), False)]
    (tmp_path / "dir" / "out").symlink_to("../other")
    assert main(["replay", "--target", "input", str(tmp_path / "dir")]) == 2
    assert capsys.readouterr().err == (f"bob-fuzz: refused: PATH {tmp_path / 'dir' / 'out'}: a link out of the "
                                       "directory given: name where it leads as a PATH\n")


def escapes_then_fails(data: bytes) -> None:
    raise AssertionError("planted \x1b]0;title\x07 \x1b[31mred")


def test_replay_escapes_a_target_s_message_and_refuses_a_file_gone_since_it_was_listed(tmp_path: Path, capsys,
                                                                                         monkeypatch) -> None:
    import bob.fuzz.replay

    golden = str(GOLDEN / "input-abracadabra.bin")
    assert main(["replay", golden, "--target", f"{__name__}:escapes_then_fails"]) == 1
    out = capsys.readouterr().out
    assert out.isprintable() or all(line.isprintable() for line in out.splitlines()), out
    assert "planted \\x1b]0;title\\x07" in out
    listed = bob.fuzz.replay.read_input

    def gone(path):  # read when it is listed; removed by someone else before its replay
        if gone.calls:
            raise FileNotFoundError(2, "No such file or directory", str(path))
        gone.calls += 1
        return listed(path)

    gone.calls = 0
    monkeypatch.setattr(bob.fuzz.replay, "read_input", gone)
    assert main(["replay", golden, "--target", "input"]) == 2  # a refusal, not a failing replay (1)
    assert capsys.readouterr().err == f"bob-fuzz: refused: PATH {golden}: no such file or directory\n"


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no str")


def fails_unprintably(data: bytes) -> None:
    raise _Unprintable()


def test_a_failure_whose_message_cannot_be_made_is_still_a_failure(tmp_path: Path, capsys) -> None:
    """An exception whose ``__str__`` raises ended replay and the seeded loop with "unexpected error" (exit 70),
    the failure lost; it is a failure like any other, said so."""
    golden = str(GOLDEN / "input-abracadabra.bin")
    assert main(["replay", golden, "--target", f"{__name__}:fails_unprintably"]) == 1
    assert "_Unprintable: (its message could not be made: RuntimeError)" in capsys.readouterr().out
    assert main(["run", f"{__name__}:fails_unprintably", "--engine", "loop", "--runs", "3", "--format", "input",
                 "--artifacts", str(tmp_path / "found")]) == 1
    assert "its message could not be made" in capsys.readouterr().out


_CALLS: list[bytes] = []


def fails_then_runs_out(data: bytes) -> None:
    _CALLS.append(data)
    if len(_CALLS) == 1:
        raise AssertionError("planted")
    if len(_CALLS) == 3:
        raise MemoryError


def test_the_seeded_loop_running_out_keeps_what_it_found(tmp_path: Path, capsys) -> None:
    """Out of memory after a finding ended the loop with "out of memory" (exit 70), the finding and its saved
    input unsaid. The machine's shortage stops the loop; what it found is reported (exit 1), the stop noted."""
    _CALLS.clear()
    code = main(["--json", "run", f"{__name__}:fails_then_runs_out", "--engine", "loop", "--runs", "10",
                 "--format", "input", "--artifacts", str(tmp_path / "found")])
    document = json.loads(capsys.readouterr().out)
    assert code == 1 and document["executions"] == 3 and len(document["findings"]) == 1, document
    assert document["findings"][0]["path"] and document["notes"] == ["stopped at execution 3: out of memory"]


@pytest.mark.parametrize("command", [["run", "core", "--engine", "loop", "--runs", "3"],
                                     ["replay", "--target", "run", str(GOLDEN / "input-abracadabra.bin")],
                                     ["minimize", "--target", "core", str(GOLDEN / "input-abracadabra.bin"),
                                      "--output", "min.bin"],
                                     ["run", "inspect", "--runs", "20", "--seed", "1", "--corpus", "c"]])
def test_a_build_without_its_native_core_is_no_verdict_never_a_finding(command: list[str], tmp_path: Path) -> None:
    """Without bob._core, each input failed on its ImportError: run said "1 finding" (exit 1) and wrote it as an
    artifact, replay said FAIL, minimize wrote a "reproducer". A module the build lacks is no verdict; a target that
    needs none (bob-inspect) still runs, its worker's prelude leaving the core out."""
    (tmp_path / "sitecustomize.py").write_text("import sys\nsys.modules['bob._core'] = None\n")  # (every process)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), *sys.path]))
    proc = subprocess.run([sys.executable, "-m", "bob", "fuzz", *command], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    if command[1] == "inspect":
        assert proc.returncode == 0 and "0 finding(s)" in proc.stdout, proc
        return
    assert proc.returncode == 70 and "could not import what it runs" in proc.stderr, proc
    assert "bob._core" in proc.stderr and sorted(p.name for p in tmp_path.iterdir()) == ["sitecustomize.py"], proc


def imports_a_name_bob_lacks(data: bytes) -> None:
    """A lazy import of a name bob's module does not have, on one input's path: bob's bug, which an input reaches."""
    if data[:1] == b"\x01":
        from bob.formats.constants import __no_such_name__  # type: ignore[attr-defined]  # noqa: F401


def test_an_import_of_a_name_bob_lacks_is_a_finding(tmp_path: Path, capsys) -> None:
    (tmp_path / "bad").write_bytes(b"\x01")
    assert main(["replay", str(tmp_path / "bad"), "--target", f"{__name__}:imports_a_name_bob_lacks"]) == 1
    assert "ImportError: cannot import name '__no_such_name__'" in capsys.readouterr().out


def fails_and_removes_the_next(data: bytes) -> None:
    """Fails on b"bad" and, as another process would, removes the file replayed after it."""
    if data == b"bad":
        os.unlink(os.environ["BOB_TEST_REMOVED"])
        raise AssertionError("planted")


@pytest.mark.parametrize("first", [b"bad", b"ok"])
def test_replay_keeps_what_it_found_when_a_later_file_is_gone(first: bytes, tmp_path: Path, capsys,
                                                               monkeypatch) -> None:
    """A file gone since it was listed was refused at once, and the failure already found was dropped (exit 2,
    nothing said of it). The rest is replayed; a failure found is reported, exit 1, with the file not replayed;
    without one, the refusal stands (exit 2)."""
    (tmp_path / "a.bin").write_bytes(first)
    (tmp_path / "b.bin").write_bytes(b"ok")
    (tmp_path / "c.bin").write_bytes(b"bad")
    monkeypatch.setenv("BOB_TEST_REMOVED", str(tmp_path / ("b.bin" if first == b"bad" else "a.bin")))
    code = main(["--json", "replay", "--target", f"{__name__}:fails_and_removes_the_next", str(tmp_path)])
    document = json.loads(capsys.readouterr().out)
    if first == b"ok":  # (c.bin removes a.bin, replayed already: nothing missed)
        assert code == 1 and document["not_replayed"] == [] and document["failed"] == 1
        return
    assert code == 1 and document["failed"] == 2 and document["passed"] == 0, document
    [gone] = document["not_replayed"]
    assert gone["path"] == str(tmp_path / "b.bin") and gone["option"] == "PATH", gone


def test_replay_keeps_every_verdict_when_one_file_runs_the_machine_out_of_memory(tmp_path: Path, monkeypatch,
                                                                                  capsys) -> None:
    """One target's MemoryError ended the replay (exit 70, no file named) and dropped the failure already found."""
    (tmp_path / "greedy.py").write_text('def target(data):\n    if data == b"A":\n        bytearray(1 << 62)\n'
                                        '    if data == b"C":\n        raise ValueError("a real failure")\n')
    for name in "BCA":
        (tmp_path / f"{name}.bin").write_bytes(name.encode())
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert main(["replay", "B.bin", "C.bin", "A.bin", "--target", "greedy:target", "--json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert (document["passed"], document["failed"]) == (1, 1)
    [ran_out] = document["not_replayed"]
    assert (ran_out["path"], ran_out["exit_code"]) == ("A.bin", 70) and "out of memory" in ran_out["message"]
    assert main(["replay", "B.bin", "A.bin", "--target", "greedy:target", "--json"]) == 70  # (no failure: the machine's)
    assert json.loads(capsys.readouterr().out)["error"]["path"] == "A.bin"


def test_check_escapes_the_reader_s_command_and_the_manifest_s_names(corpus: Path, capsys) -> None:
    assert main(["check", "--format", "predictions", "--corpus", str(corpus), "--", "sh", "-c", "exit 0",
                 "\x1b[31mRED\nx", "{}"]) == 1
    head = capsys.readouterr().out.splitlines()[0]
    assert head == "bob-fuzz check predictions: sh -c 'exit 0' '\\x1b[31mRED\\x0ax' '{}'", head


def test_replay_refuses_a_directory_under_it_that_cannot_be_listed(tmp_path: Path) -> None:
    """Not skipped in silence (it held files to replay): refused, naming the directory that cannot be
    listed (it named the directory given, which can)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to act as a second user, who cannot list the directory")
    import shutil
    import tempfile

    corpus = Path(tempfile.mkdtemp(prefix="bob-replay-", dir="/tmp"))  # tmp_path's parents are root's alone
    (corpus / "a.bin").write_bytes((GOLDEN / "input-abracadabra.bin").read_bytes())
    (corpus / "closed").mkdir(mode=0o700)
    os.chmod(corpus, 0o755)
    os.chmod(corpus / "a.bin", 0o644)
    out = tmp_path / "err.txt"
    try:
        code = _as_nobody(lambda: main(["replay", "--target", "input", str(corpus)]), out)
        os.rmdir(corpus / "closed")  # the rest is readable: without it the same user replays it
        assert _as_nobody(lambda: main(["replay", "--target", "input", str(corpus)]), tmp_path / "ok.txt") == 0
    finally:
        shutil.rmtree(corpus, ignore_errors=True)
    assert code == 2
    assert out.read_text() == f"bob-fuzz: refused: PATH {corpus / 'closed'}: permission denied\n"


def _as_nobody(call, err: Path) -> int:
    """``call()`` in a forked child as user nobody, its stderr in ``err``; its exit code."""
    child = os.fork()
    if child == 0:
        code = 99
        try:
            with open(err, "w", encoding="utf-8") as sys.stderr:
                os.setgid(65534)
                os.setuid(65534)
                code = call()
        finally:
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])


def always_fails(data: bytes) -> None:
    raise AssertionError("planted")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("conformance")
    assert main(["conformance", str(out)]) == 0
    return out


def test_check_refuses_a_corpus_file_changed_or_removed_never_calls_it_a_disagreement(corpus: Path, tmp_path: Path,
                                                                                      capsys) -> None:
    """check believed the manifest of a file whose bytes changed since (bob's own reader then "refuses what bob
    accepts", exit 1) or that was removed while it ran. Each entry carries its file's SHA-256, checked before any
    reader runs and after each: refused by name (exit 2)."""
    import shutil

    copy = tmp_path / "c"
    shutil.copytree(corpus, copy)
    reader = [sys.executable, "-m", "bob.fuzz.conformance", "predictions", "{}"]
    (copy / "predictions" / "accepted" / "all-invalid.bin").write_bytes(b"garbage")
    assert main(["check", "--format", "predictions", "--corpus", str(copy), "--", *reader]) == 2
    assert "all-invalid.bin: is not the file manifest.json labels (another SHA-256)" in capsys.readouterr().err
    shutil.rmtree(copy)
    shutil.copytree(corpus, copy)
    removing = ["sh", "-c", f'rm "$1"; exec "$0" -m bob.fuzz.conformance predictions "$1"', sys.executable, "{}"]
    assert main(["check", "--format", "predictions", "--corpus", str(copy), "--", *removing]) == 2
    assert ": no such file" in capsys.readouterr().err


def test_check_refuses_an_already_judged_file_the_reader_changed_meanwhile(corpus: Path, tmp_path: Path,
                                                                              capsys) -> None:
    """After each reader, every file the manifest lists is as it was (docs/fuzzing.md), not only the one read: a
    reader that damaged a file already judged, or another format's, ended the check with an ordinary table."""
    import shutil

    for fmt, damaged in (("predictions", "predictions/accepted/predictions-abracadabra.bin"),
                         ("predictions", "input/accepted/input-abracadabra.bin")):
        copy = tmp_path / "c"
        shutil.copytree(corpus, copy)
        damaging = ["sh", "-c", f'case "$1" in *abracadabra*) exit 0;; esac; printf X >> "{copy / damaged}"; '
                    f'exec "$0" -m bob.fuzz.conformance {fmt} "$1"', sys.executable, "{}"]
        assert main(["check", "--format", fmt, "--corpus", str(copy), "--", *damaging]) == 2
        err = capsys.readouterr().err
        assert f"--corpus {copy / damaged}: is not the file manifest.json labels" in err, err
        shutil.rmtree(copy)
    # a file only touched (its bytes the same) is read again, and agrees
    touching = ["sh", "-c", f'touch "{corpus}/input/accepted/input-abracadabra.bin"; '
                'exec "$0" -m bob.fuzz.conformance predictions "$1"', sys.executable, "{}"]
    assert main(["check", "--format", "predictions", "--corpus", str(corpus), "--", *touching]) == 0


def test_check_escapes_what_the_corpus_and_the_reader_say_in_json_as_in_text(corpus: Path, tmp_path: Path,
                                                                             capsys) -> None:
    """A manifest's field and file name, and the field a reader names, are outside text: in --json they came
    through raw (an escape sequence as \\u001b, a non-UTF-8 name as a lone surrogate no strict parser takes),
    while the table escaped them. A name no file system can hold is refused as no manifest of bob's (it was 70)."""
    import shutil

    copy = tmp_path / "c"
    shutil.copytree(corpus, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    entry = next(e for e in manifest["files"] if e["format"] == "predictions" and e["verdict"] == "refuse")
    del entry["sha256"]  # (a label of bytes no longer there: the test's own edit)
    odd = os.fsdecode(b"predictions/\xff\x1b[2J.bin")
    os.rename(copy / entry["file"], copy / odd)
    title = "\x1b]0;title\x07\\x07"  # (its backslash escaped too: never the same text as a control character)
    entry["file"], entry["field"], entry["fields"] = odd, title, [title]
    (copy / "manifest.json").write_text(json.dumps(manifest))
    naming = ["sh", "-c", 'printf \'{"field": "\\u001b[31m"}\n\'; exit 2', "{}"]
    assert main(["--json", "check", "--format", "predictions", "--corpus", str(copy), "--", *naming]) == 1
    out = capsys.readouterr().out
    report = json.loads(out)
    said = json.dumps([report["disagreements"], report["by_field"]])
    assert out.isascii() and "\\u001b" not in said and "\\u0007" not in said and "\\udc" not in said, said
    wrong = next(d for d in report["disagreements"] if d["field"] == "\\x1b]0;title\\x07\\x5cx07")
    assert (wrong["file"], wrong["reader_field"]) == ("predictions/\\xff\\x1b[2J.bin", "\\x1b[31m")
    assert wrong["problem"] == "names field '\\x1b[31m'" and "\\x1b]0;title\\x07\\x5cx07" in report["by_field"]
    assert main(["check", "--format", "predictions", "--corpus", str(copy), "--", *naming]) == 1
    assert "  predictions/\\xff\\x1b[2J.bin: names field '\\x1b[31m'\n" in capsys.readouterr().out
    entry["file"] = "predictions/\ud800.bin"
    (copy / "manifest.json").write_text(json.dumps(manifest))
    assert main(["check", "--format", "predictions", "--corpus", str(copy), "--", "true"]) == 2
    assert "manifest.json is not a bob-conformance-1 manifest" in capsys.readouterr().err


def test_conformance_corpus_is_labelled_and_grouped_by_field(corpus: Path) -> None:
    from bob.fuzz.conformance import judge

    manifest = json.loads((corpus / "manifest.json").read_text())["files"]
    for e in manifest:
        assert set(e) >= {"file", "format", "verdict", "field", "offset"}
        data = (corpus / e["file"]).read_bytes()
        assert judge(e["format"], data)["field"] == e["field"]
        if e["verdict"] == "refuse":
            assert Path(e["file"]).parts[:3] == (e["format"], "refused", e["field"])
    fields = {(e["format"], e["field"]) for e in manifest if e["verdict"] == "refuse"}
    assert {("input", f) for f in ("magic", "version", "targets", "prompt_words", "file_size")} <= fields
    assert {("predictions", f) for f in ("token", "validity", "file_size")} <= fields
    assert {("checkpoint", f) for f in ("learner", "header_digest", "chunk_table.offset", "padding", "P",
                                        "V")} <= fields
    assert {e["format"] for e in manifest if e["verdict"] == "accept"} == {"input", "checkpoint", "predictions"}
    # Each group holds a file that breaks its rule alone: a reader that skips that rule accepts it, and check
    # says so (the three header_digest files each broke another rule too, which such a reader names).
    alone = {(e["format"], e["field"]) for e in manifest if e["verdict"] == "refuse" and e["fields"] == [e["field"]]}
    assert alone == fields
    # The edges an off-by-one reader passes: each a file of its own, judged as bob judges it.
    edges = {Path(e["file"]).stem: (e["verdict"], e["field"]) for e in manifest
             if Path(e["file"]).stem.startswith("edge-")}
    assert edges == {"edge-prompt-word-vocabulary": ("refuse", "prompt_words"),
                     "edge-prompt-word-empty-less-1": ("refuse", "prompt_words"),
                     "edge-version-high-word": ("refuse", "version"),  # (a reader of a u32 or u8 accepts it)
                     # a reader that takes only NaN for non-finite, -0.0 for negative, M alone at step 0, or
                     # only 2**64 - 1 for a step without room: each disagrees on one of these
                     "edge-P-infinity": ("refuse", "P"), "edge-V-minus-infinity": ("refuse", "V"),
                     "edge-V-minus-zero": ("accept", None), "edge-step0-V-subnormal": ("refuse", "step"),
                     "edge-step0-moments-minus-zero": ("accept", None), "edge-step-room-last": ("accept", None),
                     "edge-step-room-over": ("refuse", "step"), "edge-cut-in-state-string": ("refuse", "state"),
                     "edge-magic-prefix": ("refuse", "file_size"),
                     "edge-token-vocabulary": ("refuse", "token"), "edge-token-without-validity": ("refuse", "token"),
                     "edge-tokens": ("accept", None), "edge-header-bytes-largest": ("accept", None),
                     "edge-header-bytes-over": ("refuse", "header_bytes"), "edge-step0-moment": ("refuse", "step"),
                     "edge-over-the-size-bound": ("refuse", "file_size"), "edge-short-not-bob": ("refuse", "magic")}


@pytest.mark.parametrize("fmt", ["input", "predictions"])
def test_bob_as_an_external_reader_agrees_everywhere(corpus: Path, fmt: str, capsys) -> None:
    code = main(["check", "--format", fmt, "--corpus", str(corpus), "--json", "--",
                 sys.executable, "-m", "bob.fuzz.conformance", fmt, "{}"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["disagreements"] == [] and report["agreements"] == report["files"] > 5


def test_bob_s_reader_takes_the_format_aliases_and_refuses_another_command_line(corpus: Path, capsys) -> None:
    """README's aliases (``ckpt``, ``pred``) name the format here as everywhere (it was an AttributeError:
    every accepted file counted as refused); a command line without a format and one file is exit 64, a
    file it cannot read 66."""
    from bob.fuzz.conformance import reader_main

    code = main(["check", "--format", "ckpt", "--corpus", str(corpus), "--json", "--",
                 sys.executable, "-m", "bob.fuzz.conformance", "ckpt", "{}"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["disagreements"] == [] and report["agreements"] == report["files"] > 5
    for argv in (["trace", "f"], ["checkpoint"], ["input", "a", "b"]):
        assert reader_main(argv) == 64 and "usage: python -m bob.fuzz.conformance" in capsys.readouterr().err
    missing = str(corpus / "missing.bin")  # named, with the reason, never a traceback
    assert reader_main(["input", missing]) == 66
    assert capsys.readouterr().err == f"python -m bob.fuzz.conformance: cannot read {missing!a}: no such file\n"


def test_bob_s_reader_loads_numpy_with_one_blas_thread() -> None:
    """A reader runs once for each file: NumPy loaded bare started OpenBLAS's thread pool, whose start took about
    as much CPU as reading the file. It is loaded as bob's commands load it (:func:`bob.failures.load_numpy`)."""
    probe = ("import os, runpy, sys\n"
             "class Probe:\n"
             "    def find_spec(self, name, path=None, target=None):\n"
             "        if name == 'numpy':\n"
             "            print('as numpy loads:', os.environ.get('OPENBLAS_NUM_THREADS'), file=sys.stderr)\n"
             "sys.meta_path.insert(0, Probe())\n"
             "sys.argv[1:] = ['ckpt', sys.argv[1]]\n"
             "runpy.run_module('bob.fuzz.conformance', run_name='__main__')\n")
    threads = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")  # none named: bob's choice
    env = {name: value for name, value in os.environ.items() if name not in threads}
    proc = subprocess.run([sys.executable, "-c", probe, str(GOLDEN / "checkpoint-abracadabra-step10.bin")],
                          capture_output=True, text=True, env=env, timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "as numpy loads: 1\n"), proc


def test_a_lax_reader_is_caught_and_its_fields_named(corpus: Path, tmp_path: Path, capsys) -> None:
    from bob.formats.constants import INPUT_MAGIC, RECORD_BYTES

    reader = tmp_path / "lax.py"
    reader.write_text(LAX_READER.format(size=RECORD_BYTES, magic=INPUT_MAGIC))
    code = main(["check", "--format", "input", "--corpus", str(corpus), "--", sys.executable, str(reader), "{}"])
    table = capsys.readouterr().out
    assert code == 1
    rows = {line.split()[0]: line.split()[1:] for line in table.splitlines()[2:] if line and line[0] != " "}
    for field in ("version", "targets", "prompt_words"):
        files, agree, disagree = rows[field]
        assert disagree == files != "0" and agree == "0", (field, table)
    for field in ("magic", "file_size", "(accepted)"):
        assert rows[field][2] == "0", (field, table)


def test_a_json_in_the_readers_command_is_the_readers_even_without_dashes(corpus: Path, capsys) -> None:
    """bob-fuzz's own output was JSON when the reader's command, given without ``--``, held ``--json``
    (a reader that accepts every file: exit 1, its disagreements)."""
    code = main(["check", "--format", "predictions", "--corpus", str(corpus), "sh", "-c", "exit 0", "--json", "{}"])
    out = capsys.readouterr().out
    assert code == 1 and out.startswith("bob-fuzz check predictions: sh -c 'exit 0' --json ") and "{\"" not in out
    code = main(["check", "--format", "predictions", "--corpus", str(corpus), "--json", "sh", "-c", "exit 0", "{}"])
    assert code == 1 and json.loads(capsys.readouterr().out)["reader"] == "sh -c 'exit 0' '{}'"
    # refused for a missing option: the reader's --json is still the reader's
    assert main(["check", "sh", "--json", "{}"]) == 2 and capsys.readouterr().out == ""  # (no --format)


CUT = "its first line passes 64 KiB"


@pytest.mark.parametrize("before, pad, problem", [("", 0, "names field 'nonsense'"), ("", 70000, CUT),
                                                  (" " * 70000, 0, CUT), ("\ufeff", 0, "names field 'nonsense'"),
                                                  ("\ufeff", 70000, CUT)])
def test_a_reader_naming_the_wrong_field_disagrees(corpus: Path, tmp_path: Path, before: str, pad: int,
                                                   problem: str) -> None:
    """A first line past the 64 KiB kept was cut, read as no JSON, and its wrong field agreed (blanks before the
    object, the cut keeping them alone, or a UTF-8 byte order mark, which json.loads reads past: judged so too)."""
    from bob.fuzz.conformance import check

    reader = tmp_path / "wrong_field.py"
    reader.write_text(f"import json, sys\nsys.stdout.buffer.write(({before!r} + json.dumps({{'field': 'nonsense', "
                      f"'pad': 'x' * {pad}}})).encode() + b'\\n')\nsys.exit(1)\n")
    report = check("predictions", [sys.executable, str(reader), "{}"], corpus=corpus)
    refused = [d for d in report["disagreements"] if d["bob"] == "refuse"]
    assert refused and all(d["problem"] == problem for d in refused)


def test_a_corpus_named_from_inside_it_is_read(corpus: Path, monkeypatch, capsys) -> None:
    """--corpus . (or a path that comes to it, predictions/..) was refused: "manifest.json is not a bob-conformance-1
    manifest"."""
    monkeypatch.chdir(corpus)
    for named in (".", "predictions/.."):
        assert main(["check", "--format", "predictions", "--corpus", named, "--json", "--", "sh", "-c", "exit 0"]) == 1
        assert json.loads(capsys.readouterr().out)["files"] > 5  # (read, and its refused files disagree)


def test_a_reader_s_long_first_line_that_is_no_json_object_is_judged_by_its_verdicts(corpus: Path, tmp_path: Path) -> None:
    """Only a JSON object cut at 64 KiB names a field unread: a long line of anything else was a disagreement."""
    from bob.fuzz.conformance import check

    reader = tmp_path / "chatty.py"
    reader.write_text("import subprocess, sys\nprint('0' * 70000)\nsys.exit(subprocess.run([sys.executable, '-m', "
                      "'bob.fuzz.conformance', 'predictions', sys.argv[1]], stdout=subprocess.DEVNULL).returncode)\n")
    assert check("predictions", [sys.executable, str(reader), "{}"], corpus=corpus)["disagreements"] == []


def test_a_check_over_its_temporary_corpus_names_a_reader_that_changes_it(tmp_path: Path, capsys) -> None:
    """The refusal named --corpus, which was not given, and a path in bob's own temporary directory, gone since."""
    assert main(["check", "--format", "predictions", "--json", "--", "sh", "-c", ': > "$1"', "_", "{}"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert (error["option"], error["path"]) == ("COMMAND", "sh") and "of the temporary corpus it read" in error["message"]


def test_a_reader_s_line_nested_past_python_s_stack_is_no_field_named(corpus: Path, tmp_path: Path) -> None:
    """The reader's first line is the reader's: JSON nested 6,000 deep (60,000 bytes, within the 64 KiB kept) judges
    it by its exit, as any line that is not a JSON object, and ends nothing (it was an unexpected RecursionError)."""
    from bob.fuzz.conformance import check

    reader = tmp_path / "deep.py"
    reader.write_text("import sys\nprint('{\"field\": ' * 6000)\nsys.exit(1)\n")
    report = check("predictions", [sys.executable, str(reader), "{}"], corpus=corpus)
    assert report["disagreements"] and {d["reader_field"] for d in report["disagreements"]} == {None}
    assert {d["problem"] for d in report["disagreements"]} == {"refuses what bob accepts"}


def test_a_campaign_finds_a_planted_bug_and_writes_a_reproducing_artifact(tmp_path: Path) -> None:
    pytest.importorskip("atheris", reason="atheris is the optional fuzz extra (scripts/bootstrap.sh test,fuzz)")
    env = dict(os.environ, PYTHONPATH=f"{HERE}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    artifacts = tmp_path / "artifacts"
    run = subprocess.run(  # (seed 3 finds it within about 200 executions)
        [sys.executable, "-m", "bob", "fuzz", "run", "planted:target", "--format", "predictions", "--runs", "1000",
         "--seed", "3", "--corpus", str(tmp_path / "corpus"), "--artifacts", str(artifacts)],
        capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 1, run.stdout + run.stderr
    found = sorted(artifacts.glob("planted_target-*.bin"))
    assert found, run.stdout
    assert f"bob-fuzz replay {found[0]} --target planted:target" in run.stdout
    replay = subprocess.run([sys.executable, "-m", "bob", "fuzz", "replay", str(found[0]), "--target",
                             "planted:target"], capture_output=True, text=True, env=env)
    assert replay.returncode == 1 and "the copy accepts" in replay.stdout
    data = found[0].read_bytes()
    assert len(data) == 24 and 2 in [int.from_bytes(data[8 * i + 4:8 * i + 8], "little") for i in range(3)]


@pytest.mark.parametrize("command", [["replay", "IN", "--target", "chatty:target"],
                                     ["run", "chatty:target", "--engine", "loop", "--runs", "2", "--artifacts", "A"]])
def test_a_target_module_that_prints_as_it_is_imported_leaves_stdout_one_object(tmp_path: Path,
                                                                                command: list[str]) -> None:
    """What a module:function target's module printed as bob-fuzz imported it came before the --json object."""
    (tmp_path / "chatty.py").write_text('print("imported chatty")\ndef target(data):\n    pass\n')
    (tmp_path / "IN").write_bytes(b"abc")
    run = subprocess.run([sys.executable, "-m", "bob", "fuzz", *command, "--json"], capture_output=True, text=True,
                         cwd=tmp_path, env=dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}"
                                                                    f"{os.environ.get('PYTHONPATH', '')}"), timeout=120)
    assert run.returncode == 0 and json.loads(run.stdout)["exit_code"] == 0, run.stdout + run.stderr
    assert "imported chatty" in run.stderr


@pytest.mark.parametrize("code", [0, 3])
@pytest.mark.parametrize("command", [["replay", "IN", "--target", "quits:target"],
                                     ["run", "quits:target", "--engine", "loop", "--runs", "2", "--artifacts", "A"]])
def test_a_target_module_that_exits_as_it_is_imported_is_refused(tmp_path: Path, monkeypatch, capsys, code: int,
                                                                 command: list[str]) -> None:
    """A script's sys.exit (or argparse) run as bob-fuzz imported its target ended bob-fuzz silently: exit 0,
    "every replay passed", with nothing replayed and no --json object."""
    (tmp_path / "quits.py").write_text(f"import sys\nsys.exit({code})\ndef target(data):\n    pass\n")
    (tmp_path / "IN").write_bytes(b"abc")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "quits", raising=False)
    assert main([*command, "--json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["option"] in ("--target", "TARGET") and error["message"] == (
        f"usage: importing 'quits' ended it (SystemExit {code}); a target's module must not exit as it is imported")


@pytest.mark.parametrize("module, said", [("broken", "raised SyntaxError: "), (".relative", "raised TypeError: "),
                                          ("raising", "raised RuntimeError: at import")])
def test_a_target_module_whose_import_fails_is_refused_naming_the_target(tmp_path: Path, monkeypatch, capsys,
                                                                         module: str, said: str) -> None:
    """A SyntaxError, a relative module name or any exception as the target's module was imported: exit 70, an
    "unexpected error" for the user's own module."""
    (tmp_path / "broken.py").write_text("def target(:\n")
    (tmp_path / "raising.py").write_text("raise RuntimeError('at import')\n")
    (tmp_path / "IN").write_bytes(b"abc")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert main(["replay", "IN", "--target", f"{module}:target", "--json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["option"] == "--target" and error["message"].startswith(f"usage: importing '{module}' {said}")


@pytest.mark.parametrize("raised", ["MemoryError()", "OSError(errno.EMFILE, 'too many open files')"])
def test_a_target_module_that_runs_the_machine_out_as_it_is_imported_is_the_machine_s(tmp_path: Path, monkeypatch,
                                                                                     capsys, raised: str) -> None:
    """Out of memory or descriptors as the target's module was imported: the machine's (exit 70), not the user's
    usage (exit 2, "importing 'hog' raised MemoryError: ")."""
    (tmp_path / "hog.py").write_text(f"import errno\nraise {raised}\n")
    (tmp_path / "IN").write_bytes(b"abc")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert main(["replay", "IN", "--target", "hog:target", "--json"]) == 70
    assert "usage" not in json.loads(capsys.readouterr().out)["error"]["message"]


def test_replay_passes_over_no_file_it_is_given_and_follows_no_link_out(tmp_path: Path, monkeypatch, capsys) -> None:
    """A file in a directory that happened to be named like a Rust target (cases/predict) was dropped unsaid,
    and a file's link out of the directory given was replayed (only a directory's was refused)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cases" / "predict").mkdir(parents=True)
    (tmp_path / "cases" / "predict" / "case.bin").write_bytes(b"junk")
    assert main(["replay", "cases/predict/case.bin", "--json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]  # the file's refusal, never said as --target's value
    assert "no target for this file" in error["message"] and (error["option"], error["path"]) == (
        "PATH", "cases/predict/case.bin")
    assert main(["minimize", "cases/predict/case.bin", "--json"]) == 2  # (minimize's PATH too)
    error = json.loads(capsys.readouterr().out)["error"]
    assert "no target for this file" in error["message"] and error["option"] == "PATH"
    rust = tmp_path / "fuzz" / "regressions" / "kernels"
    rust.mkdir(parents=True)
    (rust / "case.bin").write_bytes(b"junk")
    assert main(["replay", str(rust / "case.bin"), "--json"]) == 2
    assert "cargo test" in json.loads(capsys.readouterr().out)["error"]["message"]
    assert main(["replay", str(tmp_path / "fuzz"), "--json"]) == 2  # (in a directory: left for cargo, and said so)
    assert json.loads(capsys.readouterr().out)["error"]["message"] == (
        "no files to replay; those there are the Rust targets' (`cargo test -p bob-core --test fuzz_replay` replays "
        "them, or name a --target)")
    (tmp_path / "empty").mkdir()
    assert main(["replay", str(tmp_path / "empty"), "--json"]) == 2  # (none at all: nothing more to say)
    assert json.loads(capsys.readouterr().out)["error"]["message"] == "no files to replay"
    assert main(["replay", str(tmp_path / "empty"), str(tmp_path / "fuzz"), "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["error"]["path"] == str(tmp_path / "fuzz")  # (where they are)
    (tmp_path / "fuzz" / "regressions" / "input").mkdir()  # beside others, counted: never read as all replayed
    (tmp_path / "fuzz" / "regressions" / "input" / "case.bin").write_bytes(b"junk")
    assert main(["replay", str(tmp_path / "fuzz")]) == 0
    assert capsys.readouterr().out.endswith("1 passed, 0 failed, 1 passed over (the Rust targets': `cargo test -p "
                                            "bob-core --test fuzz_replay` replays them)\n")
    assert main(["replay", str(tmp_path / "fuzz"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["passed_over"] == 1
    tree = tmp_path / "tree" / "input" / "accepted"
    tree.mkdir(parents=True)
    (tree / "out.bin").symlink_to(tmp_path / "cases" / "predict" / "case.bin")
    assert main(["replay", "tree", "--json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["path"] == "tree/input/accepted/out.bin" and "a link out of the directory" in error["message"]


def test_the_reproduce_lines_paste_into_a_shell(tmp_path: Path, monkeypatch, capsys) -> None:
    """An artifacts directory starting with - or a path with a space: the line printed was no command a shell runs."""
    (tmp_path / "fails.py").write_text("def target(data):\n    raise ValueError('found')\n")
    (tmp_path / "IN").write_bytes(b"abc")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert main(["run", "fails:target", "--format", "input", "--engine", "loop", "--runs", "1", "--artifacts=-a"]) == 1
    line = next(x for x in capsys.readouterr().out.splitlines() if "reproduce:" in x).split("reproduce: ")[1]
    assert shlex.split(line)[:3] == ["bob-fuzz", "replay", "./-a/" + os.listdir(tmp_path / "-a")[0].split(".")[0]
                                     + ".bin"] and shlex.split(line)[3:] == ["--target", "fails:target"]
    assert main(["minimize", "IN", "--target", "fails:target", "--output", "my out.bin"]) == 0
    line = capsys.readouterr().out.split("reproduce: ")[1].strip()
    assert shlex.split(line) == ["bob-fuzz", "replay", "my out.bin", "--target", "fails:target"]
    name = "donn\xe9es 'q' \\ \udcff.bin"  # (UTF-8, a quote, a backslash, a byte that is no UTF-8)
    assert main(["minimize", "IN", "--target", "fails:target", "--output", name]) == 0
    line = capsys.readouterr().out.split("reproduce: ")[1].strip()
    said = subprocess.run(["bash", "-c", f"printf '%s\\0' {line}"], capture_output=True, check=True).stdout
    assert line.isascii() and said.split(b"\0")[:5] == [b"bob-fuzz", b"replay", os.fsencode(name), b"--target",
                                                          b"fails:target"]


def test_minimize_refuses_an_output_it_cannot_write_before_any_candidate_runs(tmp_path: Path, monkeypatch,
                                                                               capsys) -> None:
    """The candidates ran first (hours, at the defaults), then the write was refused and the result lost."""
    (tmp_path / "counts.py").write_text("import os\ndef target(data):\n    open(os.environ['RAN'], 'a').write('x')\n"
                                        "    raise ValueError('found')\n")
    (tmp_path / "IN").write_bytes(b"abc")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAN", str(tmp_path / "ran"))
    assert main(["minimize", "IN", "--target", "counts:target", "--output", "/sys/kernel/IN.min", "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["error"]["option"] == "--output" and not (tmp_path / "ran").exists()


def test_minimize_says_the_machine_ran_out_of_memory_rather_than_minimize_a_crash(tmp_path: Path) -> None:
    """A target out of memory ended minimize's worker (exit 1): "crash: exit 1" was minimized and written."""
    (tmp_path / "greedy.py").write_text('def target(data):\n    if b"A" in data:\n        bytearray(1 << 40)\n')
    (tmp_path / "IN").write_bytes(b"xxAxx")
    run = subprocess.run([sys.executable, "-m", "bob", "fuzz", "minimize", "IN", "--target", "greedy:target"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120,
                         env=dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"),
                         preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30)))
    assert run.returncode == 70, run.stdout + run.stderr
    assert run.stderr == "bob-fuzz: the machine ran out of memory while the target ran; no verdict\n"
    assert not (tmp_path / "IN.min").exists()  # (nothing written)


def test_a_candidate_out_of_memory_is_not_the_inputs_failure_and_minimize_goes_on(tmp_path: Path) -> None:
    """Only the input's own MemoryError is the machine's: a shrunk candidate that asks the target for an
    impossible size is a different outcome, and minimize keeps the last candidate that failed as the input did."""
    (tmp_path / "sized.py").write_text('def target(data):\n    if len(data) < 40:\n        bytearray(1 << 60)\n'
                                       '    raise ValueError("boom")\n')
    (tmp_path / "IN").write_bytes(bytes(range(1, 101)))
    run = subprocess.run([sys.executable, "-m", "bob", "fuzz", "minimize", "IN", "--target", "sized:target", "--json"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300,
                         env=dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"))
    assert run.returncode == 0, run.stdout + run.stderr
    assert len((tmp_path / "IN.min").read_bytes()) == 40 and json.loads(run.stdout)["failure"].startswith("ValueError")


def test_a_disk_that_fills_while_minimize_runs_is_the_machines_not_a_different_outcome(tmp_path: Path) -> None:
    """Only a candidate's MemoryError is its own: a full disk from the fourth run on is still exit 70 (it
    was taken for "fails differently": exit 0, the input written back unshrunk)."""
    (tmp_path / "filling.py").write_text(
        "import errno, os\n"
        "def target(data):\n"
        "    runs = os.path.join(os.environ['RUNS_DIR'], 'runs')\n"
        "    done = int(open(runs).read()) if os.path.exists(runs) else 0\n"
        "    open(runs, 'w').write(str(done + 1))\n"
        "    if done >= 3:\n"
        "        raise OSError(errno.ENOSPC, 'No space left on device')\n"
        "    if b'X' in data:\n"
        "        raise ValueError('x')\n")
    (tmp_path / "IN").write_bytes(b"abcX" * 20)
    run = subprocess.run([sys.executable, "-m", "bob", "fuzz", "minimize", "IN", "--target", "filling:target"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300,
                         env=dict(os.environ, RUNS_DIR=str(tmp_path),
                                  PYTHONPATH=f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"))
    assert run.returncode == 70 and "(no space left on device); no verdict" in run.stderr, run.stdout + run.stderr
    assert not (tmp_path / "IN.min").exists()


def test_the_seeded_loop_seeds_a_module_target_with_its_formats_files(tmp_path: Path, monkeypatch) -> None:
    """--engine loop gave a module:function target only b"" to start from, --format checkpoint or not (the
    atheris campaign gives it the format's files): a bug only a checkpoint's size reaches went unfound."""
    from bob.fuzz.loop import seeded_loop

    (tmp_path / "size_bug.py").write_text('def target(data):\n    assert len(data) < 20000, "big"\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    assert [f.message for f in seeded_loop("size_bug:target", 30, fmt="checkpoint").findings] == ["AssertionError: big"]


@pytest.mark.parametrize("target, fmt", [("checkpoint", "input"), ("core", "input"), ("run", "predictions")])
def test_a_named_target_given_another_format_is_refused(target: str, fmt: str, capsys, tmp_path, monkeypatch) -> None:
    """The checkpoint target was fuzzed with input records' seeds and mutations, its summary still "checkpoint"."""
    monkeypatch.chdir(tmp_path)  # (its default --artifacts, never in the checkout)
    assert main(["run", target, "--format", fmt, "--engine", "loop", "--runs", "3", "--json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["option"] == "--format" and error["message"].startswith(f"usage: target {target} reads "), error
    assert main(["run", "checkpoint", "--format", "ckpt", "--engine", "loop", "--runs", "3"]) == 0  # (its own)
    from bob.fuzz.loop import seeded_loop

    assert seeded_loop("checkpoint", 3, fmt="ckpt").executions == 3  # (a library caller's alias too)
    from bob.fuzz.common import load_target

    assert load_target("bob.fuzz.targets:input_target", "pred")[1] == "predictions"  # (a module's, as the command's)


def test_a_finding_whose_input_cannot_be_saved_is_still_reported(tmp_path: Path) -> None:
    """Under ulimit -f (or on a full disk) the finding's .txt could not be written: exit 70, "unexpected
    error: OSError: [Errno 27] File too large", the finding gone from the report and its .bin left alone."""
    (tmp_path / "long_message.py").write_text('def target(data):\n    raise ValueError("x" * 5000)\n')
    artifacts = tmp_path / "artifacts"
    run = subprocess.run([sys.executable, "-m", "bob", "fuzz", "run", "long_message:target", "--engine", "loop",
                          "--runs", "3", "--artifacts", str(artifacts), "--json"], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"),
                         preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096)), timeout=120)
    report = json.loads(run.stdout)
    assert run.returncode == 1 and [f["path"] for f in report["findings"]] == [""], run.stdout + run.stderr
    assert report["notes"][0].startswith(f"a finding's input was not saved: --artifacts {artifacts}/long_message_target-")
    assert report["notes"][0].endswith(": file too large (the file-size limit, ulimit -f, or the largest file its "
                                       "file system holds)") and not list(tmp_path.glob("artifacts/*"))


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_check_over_its_own_temporary_corpus_ends_on_a_signal(tmp_path: Path, signum: int) -> None:
    """Once its temporary corpus was written (through the writer that marks a command's files as its
    outcome), bob-fuzz check only recorded SIGINT, SIGTERM and SIGHUP: it read on to the end, exit 1."""
    scratch, started = tmp_path / "tmp", tmp_path / "started"
    scratch.mkdir()
    proc = subprocess.Popen([str(Path(sys.executable).parent / "bob-fuzz"), "check", "--format", "predictions", "--json",
                             "--", "sh", "-c", f"touch {started}; sleep 0.2; exit 1", "x", "{}"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, TMPDIR=str(scratch)))
    deadline = time.monotonic() + 60
    while not started.exists() and time.monotonic() < deadline:  # the corpus written, the reader run
        time.sleep(0.02)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum and json.loads(out)["exit_code"] == 128 + signum, (out, err)
    assert list(scratch.iterdir()) == []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_seeded_loop_ended_by_a_signal_says_the_findings_it_wrote(tmp_path: Path, signum: int) -> None:
    """Its findings' inputs were written to --artifacts, and the run said only that it was interrupted."""
    (tmp_path / "slow.py").write_text("import time\ndef target(data):\n    time.sleep(0.01)\n"
                                      "    raise ValueError('found')\n")
    proc = subprocess.Popen([sys.executable, "-m", "bob", "fuzz", "run", "slow:target", "--format", "input", "--engine",
                             "loop", "--runs", "100000", "--artifacts", "arts", "--json"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"))
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob("arts/*.txt")) and time.monotonic() < deadline:  # the finding written whole
        time.sleep(0.02)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    [found] = tmp_path.glob("arts/*.bin")
    assert proc.returncode == 128 + signum and json.loads(out)["exit_code"] == 128 + signum, (out, err)
    assert f"bob-fuzz: found before the stop: arts/{found.name} (ValueError: found)\n" in err


SIGNAL_AS_THE_SCRATCH_IS_MADE = """
import os, signal, sys, tempfile
from bob import signals
import bob.fuzz.targets as targets
real = tempfile.mkdtemp
def mkdtemp(**kw):
    made = real(**kw)
    os.kill(os.getpid(), signal.SIGTERM)  # bob's handler runs as this call returns
    return made
tempfile.mkdtemp = mkdtemp
signals.install()
try:
    targets._scratch()
except signals.Interrupted:
    sys.exit(143)
"""


def test_a_signal_as_the_targets_scratch_directory_is_made_leaves_nothing(tmp_path: Path) -> None:
    """A Ctrl-C between the scratch directory's making and the registration of its removal left
    $TMPDIR/bob-fuzz-* behind (bob-fuzz replay --target inspect)."""
    proc = subprocess.run([sys.executable, "-c", SIGNAL_AS_THE_SCRATCH_IS_MADE], capture_output=True, text=True,
                          env=dict(os.environ, TMPDIR=str(tmp_path)), timeout=60)
    assert proc.returncode == 143 and proc.stderr == "", proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_replay_ended_by_sigterm_says_so_and_leaves_no_scratch_directory(tmp_path: Path) -> None:
    """docs/fuzzing.md: in one process the targets' scratch directory goes when the process exits,
    SIGTERM and SIGHUP included."""
    import signal
    import time

    corpus, scratch = tmp_path / "corpus", tmp_path / "tmp"
    corpus.mkdir()
    scratch.mkdir()
    for i in range(2000):
        (corpus / f"r{i}.bin").write_bytes((GOLDEN / "input-abracadabra.bin").read_bytes())
    proc = subprocess.Popen([str(Path(sys.executable).parent / "bob-fuzz"), "replay", "--json", "--target", "run",
                             str(corpus)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, TMPDIR=str(scratch)))
    deadline = time.monotonic() + 60
    while not any(scratch.iterdir()) and time.monotonic() < deadline:  # until it replays: its scratch made
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert json.loads(out)["exit_code"] == 143 and "interrupted by SIGTERM" in err
    assert list(scratch.iterdir()) == []


@pytest.mark.parametrize("existing", [False, True])
def test_a_conformance_corpus_cut_short_leaves_nothing_it_made(tmp_path: Path, existing: bool) -> None:
    """ulimit -f below a checkpoint's size: the input and predictions files were written, the first
    checkpoint cannot be; what the command made goes again, and what was there before stays."""
    out = tmp_path / "out"
    if existing:
        out.mkdir()
        (out / "mine.txt").write_bytes(b"the user's")
    limit = (512 << 10, resource.getrlimit(resource.RLIMIT_FSIZE)[1])
    proc = subprocess.run([str(Path(sys.executable).parent / "bob-fuzz"), "conformance", str(out)],
                          capture_output=True, text=True, preexec_fn=lambda: resource.setrlimit(
                              resource.RLIMIT_FSIZE, limit))
    assert proc.returncode == 2 and "file too large" in proc.stderr, proc.stderr
    assert f"OUTDIR {out}/checkpoint/accepted/checkpoint-" in proc.stderr  # the file it could not write
    assert sorted(p.name for p in tmp_path.rglob("*")) == (["mine.txt", "out"] if existing else [])


@pytest.mark.parametrize("in_the_way,named", [("manifest.json/", "manifest.json: a directory, not a regular file"),
                                               ("input", "input/accepted: not a directory")])
def test_a_conformance_corpus_names_what_is_in_its_way(tmp_path: Path, in_the_way: str, named: str, capsys) -> None:
    """A directory or file inside OUTDIR in the corpus's way is named, not OUTDIR, a good directory."""
    out = tmp_path / "out"
    out.mkdir()
    (out / in_the_way.rstrip("/")).mkdir() if in_the_way.endswith("/") else (out / in_the_way).write_bytes(b"")
    assert main(["conformance", str(out)]) == 2
    assert capsys.readouterr().err == f"bob-fuzz: refused: OUTDIR {out}/{named}\n"
    assert [p.name for p in out.iterdir()] == [in_the_way.rstrip("/")]  # nothing else left


def test_a_conformance_corpus_is_never_written_through_a_link_nor_half_replaced(tmp_path: Path, monkeypatch,
                                                                               capsys) -> None:
    """A link inside OUTDIR was written through: a file outside the corpus replaced (exit 0), or the manifest,
    the corpus then not what its manifest lists; and a corpus cut short kept the files it had replaced. Now
    a link is refused by name, and no file is replaced before every one is staged."""
    import errno

    from bob import fileio

    home = tmp_path / "c" / "input" / "accepted"
    home.mkdir(parents=True)
    (tmp_path / "outside.txt").write_bytes(b"mine")
    for link in (home / "built-all-bytes.bin", tmp_path / "c" / "manifest.json"):
        link.symlink_to(tmp_path / "outside.txt")
        assert main(["conformance", str(tmp_path / "c")]) == 2
        assert capsys.readouterr().err.startswith(f"bob-fuzz: refused: OUTDIR {link}: is a symbolic link")
        assert (tmp_path / "outside.txt").read_bytes() == b"mine"
        link.unlink()
    import bob.fuzz.conformance  # a link planted while the corpus is made (once every file is queued)

    dumps = bob.fuzz.conformance.json.dumps
    with monkeypatch.context() as patched:
        patched.setattr(bob.fuzz.conformance.json, "dumps", lambda *a, **k: (home / "built-all-bytes.bin").symlink_to(
            tmp_path / "outside.txt") or dumps(*a, **k))
        assert main(["conformance", str(tmp_path / "c")]) == 2
    assert capsys.readouterr().err.startswith(f"bob-fuzz: refused: OUTDIR {home / 'built-all-bytes.bin'}: is a symb")
    assert (tmp_path / "outside.txt").read_bytes() == b"mine"
    (home / "built-all-bytes.bin").unlink()
    (home / "built-all-bytes.bin").write_bytes(b"the user's")
    real = fileio.stage

    def full_disk(target: str, *args: Any, **kwargs: Any) -> Any:
        if "checkpoint" in target:
            raise OSError(errno.ENOSPC, "No space left on device", target)
        return real(target, *args, **kwargs)

    monkeypatch.setattr(fileio, "stage", full_disk)
    assert main(["conformance", str(tmp_path / "c")]) == 2
    assert (home / "built-all-bytes.bin").read_bytes() == b"the user's"
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == [
        "c", "c/input", "c/input/accepted", "c/input/accepted/built-all-bytes.bin", "outside.txt"]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def terminal(monkeypatch) -> _Terminal:
    """Progress shown at once, on a terminal, where its line is rewritten in place."""
    import bob.progress

    shown = _Terminal()

    class AtOnce(bob.progress.Progress):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **{**kwargs, "after": 0.0, "stream": shown})

    monkeypatch.setattr(bob.progress, "Progress", AtOnce)  # (the commands import it when they run)
    monkeypatch.setenv("TERM", "xterm")  # (a terminal that moves its cursor, whatever runs the suite)
    return shown


def test_a_dumb_terminal_gets_plain_progress_lines(monkeypatch, terminal: _Terminal) -> None:
    """TERM=dumb (an editor's shell buffer) showed the line rewritten in place, its erase code raw (bob-qualify's
    progress, rich's, did not): plain lines there, as in a pipe."""
    import bob.progress

    monkeypatch.setenv("TERM", "dumb")
    with bob.progress.Progress("bob-fuzz", "check", 2) as progress:
        progress.advance()
        progress.advance()
    assert terminal.getvalue() == "bob-fuzz check: 1/2, 0 s\nbob-fuzz check: 2/2, 0 s (done)\n", terminal.getvalue()


def test_a_conformance_corpus_cut_short_on_a_terminal_ends_its_progress_line(tmp_path: Path, monkeypatch,
                                                                              terminal: _Terminal) -> None:
    """The progress line is ended when the corpus is cut short, so the refusal that follows is not
    printed at the end of it."""
    import errno

    import bob.fuzz.conformance
    from bob.commands import Refused
    from bob.fuzz.conformance import write_corpus

    real = bob.fuzz.conformance.make_directory

    def full_disk(path: object, into: "list[str] | None" = None) -> list[str]:  # once the input's and
        if "checkpoint" in str(path):  # predictions' directories are made
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, into)

    monkeypatch.setattr(bob.fuzz.conformance, "make_directory", full_disk)
    with pytest.raises(Refused, match="checkpoint/accepted: no space left on device"):
        write_corpus(tmp_path / "c")
    assert not (tmp_path / "c").exists()  # the directories it made, removed
    assert terminal.getvalue().startswith("\rbob-fuzz conformance: 1/") and terminal.getvalue().endswith("\x1b[K\n")


def test_a_seeded_loop_ended_on_a_terminal_ends_its_progress_line(monkeypatch, terminal: _Terminal) -> None:
    import bob.fuzz.loop

    def interrupted_at_the_third(data: bytes, calls: list[int] = []) -> None:  # noqa: B006 - the count
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(bob.fuzz.loop, "load_target", lambda target, fmt: (interrupted_at_the_third, "predictions"))
    with pytest.raises(KeyboardInterrupt):
        bob.fuzz.loop.seeded_loop("predictions", 10, progress=True)
    assert terminal.getvalue().startswith("\rbob-fuzz run predictions: 1/10") and terminal.getvalue().endswith("\n")


def test_check_ends_what_a_reader_leaves_running_and_judges_it_by_its_exit(tmp_path: Path) -> None:
    """A reader that exits at once but leaves a child holding its stdout is judged by its exit (accept),
    not as a timeout; one that hangs is a timeout; neither leaves a process behind."""
    from bob.fuzz.conformance import _reader_verdict

    leaves = ["sh", "-c", "(sleep 301.25) & exit 0"]
    hangs = ["sh", "-c", "sleep 302.25"]
    started = time.monotonic()
    assert _reader_verdict(leaves, tmp_path / "f", timeout=30) == ("accept", None)
    assert time.monotonic() - started < 20  # (it waited for the child's end of the pipe: the timeout)
    assert _reader_verdict(hangs, tmp_path / "f", timeout=0.5) == ("timeout", None)
    time.sleep(0.2)
    left = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            left += [cmdline] if b"sleep\x0030" in cmdline.read_bytes() and b".25" in cmdline.read_bytes() else []
    assert left == [], left


def test_replay_of_directories_nested_too_deep_to_walk_is_a_refusal(tmp_path, capsys, monkeypatch) -> None:
    """A file 100 directory levels down is replayed, one 101 levels down refused, on every Python: 3.11's
    os.walk recursed out near 1,000 levels (RecursionError, exit 70, then a refusal) where 3.12's walked on."""
    for depth, code in ((100, 0), (101, 2)):
        top = tmp_path / f"deep{depth}"
        top.mkdir()
        monkeypatch.chdir(top)
        for _ in range(depth):
            os.mkdir("a")
            os.chdir("a")
        Path("x.bin").write_bytes(b"\0" * 24)  # a predictions file: the target passes it
        monkeypatch.chdir(tmp_path)
        assert main(["replay", str(top), "--target", "predictions"]) == code, depth
        if code:
            assert "directories nested more than 100 levels deep" in capsys.readouterr().err


def test_a_campaign_goes_on_whatever_its_stderr_is(monkeypatch) -> None:
    """Progress is a side channel: a closed stderr (None) was an AttributeError at the start of every
    campaign, and a full one an OSError at its first plain line (both exit 70)."""
    from bob.fuzz.common import CampaignDisplay, CampaignResult

    result = CampaignResult("predictions")
    result.seconds = 11.0  # past the first plain line
    with open(os.devnull if not os.path.exists("/dev/full") else "/dev/full", "w") as full:
        for stream in (None, full):
            monkeypatch.setattr(sys, "stderr", stream)
            display = CampaignDisplay("predictions", None)
            display.update(result)
            display.close()


def test_a_campaign_s_rate_is_its_executions_over_its_time(monkeypatch) -> None:
    """The rate shown was the sum of libFuzzer's per-generation exec/s: "2342 execs (0/s)" in a campaign whose
    workers each start a generation after each finding (0 in its first second)."""
    import io

    from bob.fuzz.common import CampaignDisplay, CampaignResult

    result, err = CampaignResult("predictions"), io.StringIO()
    result.executions, result.seconds = 2342, 11.0
    monkeypatch.setattr(sys, "stderr", err)
    CampaignDisplay("predictions", False).update(result)
    assert err.getvalue().startswith("bob-fuzz predictions: 2342 execs (213/s), ")


def test_check_s_own_temporary_corpus_that_cannot_be_written_is_the_machine_s(monkeypatch, capsys) -> None:
    """A full TMPDIR (or ulimit -f) was a refusal naming OUTDIR, an option check does not have (exit 2)."""
    import errno

    from bob import fileio

    def too_large(path, *args, **kwargs):
        raise OSError(errno.EFBIG, "File too large", str(path))

    monkeypatch.setattr(fileio, "stage", too_large)
    assert main(["check", "--format", "predictions", "--json", "--", "/bin/cat", "{}"]) == 70
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["option"] is None and error["message"].startswith("its temporary corpus: ")


@pytest.mark.parametrize("argv, option", [(["run", "no-such-target", "--engine", "loop", "--runs", "1"], "TARGET"),
                                          (["replay", "IN", "--target", "no-such-target"], "--target"),
                                          (["minimize", "IN", "--target", "no_such_module:f"], "--target"),
                                          (["minimize", "IN", "--target", ""], "--target")])  # ('' was no target)
def test_an_unknown_target_is_a_usage_error_naming_its_option(tmp_path: Path, capsys, argv: list[str],
                                                              option: str) -> None:
    """It named none (README: a usage error names the option it is about)."""
    (tmp_path / "in.bin").write_bytes(b"x")
    assert main(["--json", *(str(tmp_path / "in.bin") if a == "IN" else a for a in argv)]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["option"] == option and error["message"].startswith("usage: ")


def test_a_failure_message_and_a_reader_s_words_are_escaped_in_json(tmp_path: Path, capsys) -> None:
    """Bytes from outside reached the JSON raw (README: escaped everywhere): a target's failure message in
    `replay`, a reader's command line in `check`."""
    (tmp_path / "in.bin").write_bytes(b"raise ValueError(chr(27) + '[31m' + chr(0xdcff))")
    assert main(["--json", "replay", str(tmp_path / "in.bin"), "--target", "builtins:exec"]) == 1
    out = capsys.readouterr().out
    assert json.loads(out)["files"][0]["message"] == "ValueError: \\x1b[31m\\udcff" and out.isascii()
    from bob.fuzz.conformance import check, write_corpus

    write_corpus(tmp_path / "c")
    report = check("predictions", ["/bin/true", "\x1b[31m", "{}"], corpus=tmp_path / "c")
    assert report["reader"] == "/bin/true '\\x1b[31m' '{}'"


def test_a_reader_that_prints_without_end_is_ended_by_the_output_limit(corpus: Path, monkeypatch) -> None:
    """Its output went to a temporary file without a bound: `yes` wrote about 1.4 GB in 2.5 s, for each file,
    until --timeout. Now the file-size limit ends it (a crash, a disagreement) long before."""
    from bob.fuzz import conformance

    monkeypatch.setattr(conformance, "OUTPUT_LIMIT", 1 << 20, raising=False)
    report = conformance.check("predictions", ["sh", "-c", "exec yes", "{}"], corpus=corpus, timeout=3)
    assert report["files"] > 0 and len(report["disagreements"]) == report["files"]
    assert {d["problem"] for d in report["disagreements"]} == {"crash"}  # (not "timeout": ended by the limit)


def test_a_signal_as_a_reader_is_spawned_leaves_no_reader_running(corpus: Path, monkeypatch) -> None:
    """SIGTERM while subprocess spawned check's reader: the exception left before its process group was known,
    and the reader (in a session of its own, out of a terminal's reach) ran on after bob-fuzz exited 143."""
    from bob.fuzz import conformance
    from conftest import signalled_as_spawned

    child = signalled_as_spawned(monkeypatch, lambda: conformance.check("predictions", ["cat", "{}"], corpus=corpus))
    assert child.returncode == -signal.SIGKILL  # its group killed, and reaped, by check


def _killed_with_a_child(argv: list[str], pid_file: Path, env: "dict[str, str] | None" = None) -> tuple[int, int, int]:
    """``argv`` started, then SIGKILLed once the child it starts wrote its pid into ``pid_file`` (60 s at most):
    (that child's pid, its parent's pid as it ran, the killed process's pid)."""
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        child = int(pid_file.read_text())
        with open(f"/proc/{child}/stat", "rb") as f:
            parent = int(f.read().rsplit(b")", 1)[1].split()[1])
    finally:
        proc.kill()
        proc.wait()
    return child, parent, proc.pid


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_reader_ends_when_check_is_killed(corpus: Path, tmp_path: Path) -> None:
    """SIGKILL of ``bob-fuzz check``, which no handler sees, left its reader running (a session of its own, out of a
    terminal's reach) for as long as the reader lived. The reader now gets SIGKILL as check ends, however it ends."""
    pid_file = tmp_path / "reader.pid"
    reader = [sys.executable, "-c", f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); "
              "time.sleep(120)", "{}"]
    child, parent, check = _killed_with_a_child([sys.executable, "-m", "bob", "fuzz", "check", "--format",
                                                 "predictions", "--corpus", str(corpus), "--", *reader], pid_file)
    try:
        assert parent == check  # (check's own child: the one it must take with it)
        assert gone(child, 10), "the reader outlived the check killed by SIGKILL"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_hanging_candidate_s_worker_ends_when_minimize_is_killed(tmp_path: Path) -> None:
    """SIGKILL of ``bob-fuzz minimize`` while its worker runs a candidate that hangs: the worker (a session of its
    own) gets SIGKILL as minimize ends, as check's readers and the campaign's workers do (bob.children)."""
    pid_file = tmp_path / "worker.pid"
    (tmp_path / "hangs.py").write_text(f"import os, time\ndef run(data):\n    open({str(pid_file)!r}, 'w')"
                                       ".write(str(os.getpid()))\n    time.sleep(120)\n", encoding="utf-8")
    (tmp_path / "in.bin").write_bytes(b"x")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
               TMPDIR=str(tmp_path))  # (the scratch a SIGKILL leaves: the test's)
    child, parent, minimize = _killed_with_a_child([sys.executable, "-m", "bob", "fuzz", "minimize",
                                                    str(tmp_path / "in.bin"), "--target", "hangs:run",
                                                    "--timeout", "100"], pid_file, env)
    try:
        assert parent == minimize  # (a worker of its own, not the target run in minimize)
        assert gone(child, 10), "the worker outlived minimize killed by SIGKILL"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)


@contextlib.contextmanager
def _past_descriptor_1023():
    """Over a thousand descriptors open, so that the next pipe lies past select's FD_SETSIZE."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1100:
        pytest.skip(f"ulimit -n allows {hard} descriptors")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1100) if hard == resource.RLIM_INFINITY else hard, hard))
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1030)]
    try:
        yield
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_pipes_past_descriptor_1023_are_read(tmp_path: Path) -> None:
    """Started with over a thousand descriptors open, check's pipe to its reader and minimize's to its worker lay
    past select's FD_SETSIZE: "unexpected error: ValueError: filedescriptor out of range in select()" (exit 70)."""
    from bob.fuzz.conformance import _reader_verdict
    from bob.fuzz.replay import _Runner

    with _past_descriptor_1023():
        assert _reader_verdict(["sh", "-c", "echo '{\"field\": \"magic\"}'; exit 2"], tmp_path / "f", 30) == \
            ("refuse", "magic")
        runner = _Runner("input", 60, str(tmp_path))
        try:
            assert runner.signature(b"no input record") is None  # (refused well: the target's property holds)
        finally:
            runner.close()


def test_output_past_the_limit_after_the_reader_exited_is_no_refusal(tmp_path: Path, monkeypatch) -> None:
    """What comes once the reader has exited is a child's that left its group: past the limit, bob killed the
    reader's group, gone by then (ESRCH), and refused the reader ("cannot run the reader: no such process")."""
    import contextlib

    from bob.fuzz import conformance

    real = conformance.spawned

    @contextlib.contextmanager
    def exited_first(argv, **kwargs):  # (the reader has exited, its output still in the pipe, as bob looks)
        with real(argv, **kwargs) as proc:
            proc.wait()
            yield proc

    monkeypatch.setattr(conformance, "spawned", exited_first)
    monkeypatch.setattr(conformance, "OUTPUT_LIMIT", 10)
    assert conformance._reader_verdict(["sh", "-c", "head -c 100 /dev/zero"], tmp_path / "f", 30) == ("accept", None)


def test_a_full_tmpdir_never_makes_a_correct_reader_wrong(corpus: Path, tmp_path: Path, monkeypatch) -> None:
    """The reader printed into a temporary file: in a full TMPDIR a correct reader that printed after its verdict
    failed (ENOSPC) and was said to refuse what bob accepts. What it prints is read from a pipe now."""
    import tempfile

    from bob.fuzz import conformance

    with tmpfs(tmp_path / "disk", "256k", full=True) as disk:
        monkeypatch.setattr(tempfile, "tempdir", str(disk))
        reader = [sys.executable, "-c", "import subprocess, sys; code = subprocess.call([sys.executable, '-m', "
                  "'bob.fuzz.conformance', 'predictions', sys.argv[1]]); sys.stdout.write('x' * 100_000); "
                  "sys.stdout.flush(); sys.exit(code)", "{}"]  # (bob's verdict, then 100 KB printed)
        report = conformance.check("predictions", reader, corpus=corpus)
        assert report["disagreements"] == [] and report["files"] > 5


def test_a_corpus_path_that_starts_with_a_dash_reaches_the_reader_as_a_path(corpus: Path, tmp_path: Path,
                                                                             monkeypatch) -> None:
    """--corpus=-n (relative) gave the reader -n/predictions/…, which cat took for options: a correct reader
    called wrong on every file bob accepts."""
    import shutil

    from bob.fuzz import conformance

    shutil.copytree(corpus, tmp_path / "-n")
    monkeypatch.chdir(tmp_path)
    reader = ["sh", "-c", 'cat "$1" > /dev/null && exec "$0" -m bob.fuzz.conformance predictions "$1"',
              sys.executable, "{}"]
    report = conformance.check("predictions", reader, corpus="-n")
    assert report["disagreements"] == [] and report["files"] > 5


def test_the_table_says_how_many_disagreements_it_does_not_list(corpus: Path, monkeypatch) -> None:
    """Past the 50 it names, the table stopped without a word: a reader failing 300 files looked like one
    failing 50."""
    from bob.fuzz import conformance

    monkeypatch.setattr(conformance, "LISTED", 2)
    report = conformance.check("predictions", ["true", "{}"], corpus=corpus)  # (accepts what bob refuses)
    lines, disagreeing = conformance.render_table(report).splitlines(), len(report["disagreements"])
    assert disagreeing > 3
    assert lines[-1] == f"  and {disagreeing - 2} more (--json lists every one)"
    assert len([line for line in lines if line.startswith("  ") and ": " in line]) == 2


@pytest.mark.parametrize("command", ["replay", "minimize"])
def test_a_target_the_machine_ran_out_under_is_no_finding(tmp_path: Path, capsys, monkeypatch, command: str) -> None:
    """A full TMPDIR (or ulimit -f) under a target was its failure: a failing replay (exit 1), and a
    "minimized" finding written (exit 0). README: running out is never a failing replay; exit 70."""
    commands = HERE.parent / "commands"  # convention_targets, for the minimizer's worker too
    monkeypatch.syspath_prepend(str(commands))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(commands), os.environ.get("PYTHONPATH", "")]))
    (tmp_path / "in.bin").write_bytes(b"x" * 64)
    assert main(["--json", command, str(tmp_path / "in.bin"), "--target", "convention_targets:out_of_room"]) == 70
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["exit_code"] == 70 and "no space left on device" in error["message"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.bin"]


@pytest.mark.parametrize("argv", [["minimize", "x.bin", "--timeout", "0.05"],
                                  ["check", "--format", "input", "--timeout", "0.05", "--", "true"]])
def test_a_timeout_below_a_tenth_of_a_second_is_refused(argv: list[str], capsys) -> None:
    """--timeout 1e-300 was taken: every candidate "timed out" as it started, and minimize wrote a file of zeros
    that passes its target as the input's minimized failure."""
    assert main(argv) == 2
    assert "--timeout: must be a finite number of seconds >= 0.1" in capsys.readouterr().err


def test_a_minimized_hang_is_reproduced_by_a_command_that_ends(tmp_path: Path, monkeypatch, capsys) -> None:
    """minimize said a hang's failure, "timeout", and printed a bare replay of it, which never ended; then one
    under --timeout alone (0.5 s), which a replay's own start-up outlasts: 124 for an input that does not hang."""
    (tmp_path / "hangs.py").write_text("import time\ndef target(data):\n    time.sleep(600)\n")
    (tmp_path / "spins.py").write_text("def target(data):\n    sum(range(10 ** 12))  # (in C: no signal handler)\n")
    (tmp_path / "IN").write_bytes(b"abc")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.chdir(tmp_path)
    assert main(["minimize", "IN", "--target", "hangs:target", "--timeout", "0.5", "--max-tries", "1"]) == 0
    line = capsys.readouterr().out.split("reproduce: ")[1].strip()
    assert shlex.split(line) == ["timeout", "-k", "5", "120", "bob-fuzz", "replay", "IN.min", "--target",
                                 "hangs:target"], line  # (the campaign's limit for a replay: OUTSIDE_SECONDS)
    spins = line.replace("hangs:target", "spins:target").replace("-k 5 120 ", "-k 1 3 ")  # (its start-up over)
    native = subprocess.run(["bash", "-c", f"{spins}; exit $?"], capture_output=True,  # ($?, as a shell says it)
                            timeout=60, env=dict(os.environ, PATH=os.pathsep.join([os.path.dirname(sys.executable),
                                                                                    os.environ["PATH"]])))
    assert native.returncode in (124, 137), native  # (a hang in native code: killed 1 s after its SIGTERM)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_a_target_swallows_still_ends_replay(tmp_path: Path, signum: int) -> None:
    """A target with a bare except caught the signal bob raised in it: replay went on and said PASS, exit 0. A
    signal taken while a target ran ends the command, whatever the target did with it."""
    (tmp_path / "swallows.py").write_text("import time\ndef target(data):\n    try:\n        time.sleep(20)\n"
                                          "    except BaseException:\n        pass\n")
    (tmp_path / "x.bin").write_bytes(b"x")
    proc = subprocess.Popen([sys.executable, "-m", "bob", "fuzz", "replay", str(tmp_path / "x.bin"), "--target",
                             "swallows:target", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path),
                                                                              os.environ.get("PYTHONPATH", "")])))
    time.sleep(3)  # (the target is sleeping)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum and not json.loads(out)["ok"], (proc.returncode, out, err)


MISBEHAVING = """
import os, time
calls = []
def fork_then_exit(data):
    child = os.fork()
    if child == 0:
        time.sleep(60)
        os._exit(0)
    with open(os.environ["BOB_TEST_PIDS"], "a") as pids:
        pids.write(f"{child}\\n")
    os._exit(3)
def closes_its_output_then_hangs(data):
    os.closerange(3, 256)
    time.sleep(120)
def stateful(data):
    calls.append(data)
    if b"X" in data or len(calls) > 5:
        raise ValueError("x")
"""


def _minimize(tmp_path: Path, target: str, *more: str) -> "subprocess.CompletedProcess[str]":
    (tmp_path / "misbehaving.py").write_text(MISBEHAVING)
    (tmp_path / "x.bin").write_bytes(b"aXb" * 60)
    return subprocess.run([sys.executable, "-m", "bob", "fuzz", "minimize", str(tmp_path / "x.bin"), "--target",
                           f"misbehaving:{target}", "--output", str(tmp_path / "x.min"), "--json", *more],
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, BOB_TEST_PIDS=str(tmp_path / "pids"), PYTHONPATH=os.pathsep.join(
                              [str(tmp_path), os.environ.get("PYTHONPATH", "")])))


def test_minimize_of_a_target_that_forks_then_crashes_says_the_crash_and_ends_the_child(tmp_path: Path) -> None:
    """The forked child held the worker's results pipe: each candidate waited out --timeout and was called a hang
    ("timeout"), and every child outlived minimize. The worker's end is the answer; its group ends with it."""
    started = time.monotonic()
    run = _minimize(tmp_path, "fork_then_exit", "--timeout", "20", "--max-tries", "3")
    report = json.loads(run.stdout)
    assert run.returncode == 0 and report["failure"] == "crash: exit 3", report
    assert time.monotonic() - started < 40, "a candidate waited out --timeout"
    for pid in map(int, (tmp_path / "pids").read_text().split()):
        with contextlib.suppress(FileNotFoundError):  # (gone, or a zombie its new parent has not reaped yet)
            assert Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z", pid


def test_minimize_of_a_target_that_closes_its_output_then_hangs_ends_at_its_timeout(tmp_path: Path) -> None:
    """The worker's output ended but the worker lived on: minimize waited for its end with no limit (a target that
    sleeps for ever held minimize for ever). It is a hang past --timeout, as any."""
    started = time.monotonic()
    run = _minimize(tmp_path, "closes_its_output_then_hangs", "--timeout", "2", "--max-tries", "2")
    assert json.loads(run.stdout)["failure"] == "timeout" and time.monotonic() - started < 60, run


def test_minimize_of_a_target_that_keeps_state_writes_nothing_that_passes_alone(tmp_path: Path) -> None:
    """Candidates run one after another in a worker: a target failing on its sixth call whatever the input made
    the empty file "fail the same way", written, though it passes alone. The result is run alone, as the input
    was: it must fail so, or nothing is written (exit 2)."""
    run = _minimize(tmp_path, "stateful", "--max-tries", "50")
    error = json.loads(run.stdout)["error"]
    assert run.returncode == 2 and error["option"] == "PATH" and error["message"].startswith(
        "the minimized input does not fail its target alone, in a fresh worker"), error
    assert not (tmp_path / "x.min").exists()


def test_a_checkpoint_is_shrunk_with_its_digests_made_its_own() -> None:
    """Every zeroed chunk of a checkpoint broke a digest, so a failure that needs a valid checkpoint kept none:
    786,880 bytes in, 786,880 out, unchanged. A candidate is tried again with its digests refreshed."""
    import bob
    from bob.fuzz.replay import shrink
    from bob.fuzz.structural import refresh_digests

    checkpoint = (GOLDEN / "checkpoint-abracadabra-step10.bin").read_bytes()

    def same(data: bytes) -> bool:  # a failure that needs a checkpoint bob reads, with P's first value as it is
        try:
            return bob.load_checkpoint(data).planes["P"][0] == bob.load_checkpoint(checkpoint).planes["P"][0]
        except bob.FormatError:
            return False

    assert shrink(checkpoint, same, 60) == (checkpoint, 60)
    small, _ = shrink(checkpoint, same, 60, refresh_digests)
    assert same(small) and len(small) - small.count(0) < (len(checkpoint) - checkpoint.count(0)) // 2


def test_a_reader_the_process_limit_cannot_start_is_the_machine_s(tmp_path: Path, monkeypatch) -> None:
    """`ulimit -u` reached (fork: EAGAIN) was exit 2, a refusal of the reader; a descriptor limit was exit 70. Both
    are the machine's."""
    import errno

    from bob.commands import Refused
    from bob.fuzz import conformance

    def no_process(*args, **kwargs):
        raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")

    monkeypatch.setattr(conformance.subprocess, "Popen", no_process)
    with pytest.raises(Refused) as refused:
        conformance._reader_verdict(["true", "{}"], tmp_path / "f", 30)
    assert refused.value.code == 70 and refused.value.option == "COMMAND", refused.value


def test_check_shows_a_reader_s_bytes_as_every_command_line_value_is_shown(corpus: Path, tmp_path: Path,
                                                                          capsys) -> None:
    """A reader named with a byte that is no UTF-8 was shown as \\udcff, in the table and in JSON; quotes and
    backslashes stay as typed, so the line pastes into a shell."""
    reader = os.path.join(os.fsencode(tmp_path), b"r\xff")
    with open(reader, "w") as script:
        script.write("#!/bin/sh\nexit 0\n")
    os.chmod(reader, 0o755)
    for extra in ([], ["--json"]):
        main(["check", "--format", "predictions", "--corpus", str(corpus), *extra, "--", os.fsdecode(reader), "{}",
              'say "q\\"'])
        out = capsys.readouterr().out
        shown = json.loads(out)["reader"] if extra else out
        assert "udcff" not in shown and "r\\xff" in shown and """'say "q\\"'""" in shown, out


def test_a_reader_s_first_line_of_64_kib_is_read_whole(tmp_path: Path) -> None:
    """A first line of exactly 65,536 bytes, then its end, was "its first line passes 64 KiB"; 65,535 was read."""
    from bob.fuzz import conformance

    line = '{"field": "token", "pad": "' + "a" * (65_536 - len('{"field": "token", "pad": ""}')) + '"}'
    assert len(line) == 65_536
    (tmp_path / "line").write_text(line + "\n")
    assert conformance._reader_verdict(["sh", "-c", f"cat {tmp_path / 'line'}; exit 1", "{}"], tmp_path / "f",
                                       30) == ("refuse", "token")
    (tmp_path / "line").write_text(line[:-2] + "aa\"}\n")  # (65,537 bytes: past it, cut)
    assert conformance._reader_verdict(["sh", "-c", f"cat {tmp_path / 'line'}; exit 1", "{}"], tmp_path / "f",
                                       30) == ("refuse", conformance.LINE_CUT)


def test_a_file_too_large_to_replay_is_not_said_to_be_a_write_past_a_limit(tmp_path: Path, capsys) -> None:
    """A PATH over 64 MiB was refused "(the file-size limit, ulimit -f, or the largest file its file system
    holds)": the words of a failed write, for a file bob would not read."""
    big = tmp_path / "big.bin"
    with open(big, "wb") as f:
        f.truncate((64 << 20) + 1)
    assert main(["replay", str(big), "--target", "input"]) == 2
    err = capsys.readouterr().err
    assert "more than any target reads" in err and "ulimit" not in err, err


def test_replay_reads_each_file_where_it_was_listed_whatever_the_target_does(tmp_path: Path) -> None:
    """A target that changed the working directory made replay read the next relative path from there."""
    for where, byte in (("here", b"A"), ("elsewhere", b"X")):
        (tmp_path / where / "cd1").mkdir(parents=True)
        for name in ("1.bin", "2.bin"):
            (tmp_path / where / "cd1" / name).write_bytes(byte)
    (tmp_path / "moves.py").write_text(f"import os\ndef target(data):\n    os.chdir({str(tmp_path / 'elsewhere')!r})\n"
                                       "    if data == b'X':\n        raise ValueError('an X')\n")
    run = subprocess.run([sys.executable, "-m", "bob", "fuzz", "replay", "cd1", "--target", "moves:target"],
                         cwd=tmp_path / "here", capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path),
                                                                           os.environ.get("PYTHONPATH", "")])))
    assert run.returncode == 0 and "2 passed, 0 failed" in run.stdout, run
    # and as the kernel reads it: link/../x.bin is the file beside where the link leads (as os.path.abspath has it,
    # the one beside the link), in a working directory of any depth
    (tmp_path / "real" / "sub").mkdir(parents=True)
    (tmp_path / "real" / "x.bin").write_bytes(b"X")
    (tmp_path / "here" / "x.bin").write_bytes(b"A")
    (tmp_path / "here" / "link").symlink_to(tmp_path / "real" / "sub")
    run = subprocess.run([sys.executable, "-m", "bob", "fuzz", "replay", "link/../x.bin", "--target", "moves:target"],
                         cwd=tmp_path / "here", capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path),
                                                                           os.environ.get("PYTHONPATH", "")])))
    assert run.returncode == 1 and "FAIL  moves:target  link/../x.bin  ValueError: an X" in run.stdout, run


def test_a_target_printing_with_stderr_closed_does_not_fail(tmp_path: Path) -> None:
    """With stderr closed, a target's print went to sys.stderr, None: "AttributeError: 'NoneType' object has no
    attribute 'write'", a failure of the target's own."""
    (tmp_path / "prints.py").write_text("import sys\ndef target(data):\n    sys.stdout.write('hello\\n')\n")
    (tmp_path / "x.bin").write_bytes(b"x")
    run = subprocess.run([sys.executable, "-m", "bob", "fuzz", "replay", str(tmp_path / "x.bin"), "--target",
                          "prints:target", "--json"], capture_output=True, text=True, timeout=120,
                         preexec_fn=lambda: os.close(2),
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path),
                                                                           os.environ.get("PYTHONPATH", "")])))
    assert run.returncode == 0 and json.loads(run.stdout)["passed"] == 1, run
