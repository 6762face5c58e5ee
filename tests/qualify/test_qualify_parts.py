"""bob-qualify's pieces: the comparisons, the seeded states, the commit-kill
smoke test, and that bob-run stays free of bob-qualify's dependencies."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys

import numpy as np
import pytest

import bob
from bob.qualify import checks, kernels, kill, processes, vector
from bob.qualify.verdict import PERTURB_ENV, first_plane_difference, losses_agree, perturbation


def test_plane_comparison_is_of_bits():
    a = np.zeros(8, dtype=np.float32)
    b = a.copy()
    assert first_plane_difference([a, a, a], [b, b, b]) is None
    b[5] = -0.0  # equal as numbers, not as bits
    diff = first_plane_difference([a, a, a], [a, b, a])
    assert (diff.plane, diff.index) == ("M", 5)
    assert diff.expected.startswith("0x00000000") and diff.actual.startswith("0x80000000")


def test_locate_names_plane_and_index_of_a_checkpoint_byte():
    data = bytearray(bob.invoke(checks.section8_record()).checkpoint_bytes())
    index = 300 * 1 + 256 * 7  # context 8, next 44 of plane V
    data[448 + 2 * 262_144 + 4 * index + 1] ^= 0x10
    spot = checks.locate(bob.invoke(checks.section8_record()).checkpoint_bytes(), bytes(data))
    assert (spot["plane"], spot["index"]) == ("V", index)
    assert checks.locate(bytes(data), bytes(data)) == {}
    assert checks.locate(b"BOB-CKPT" + bytes(10), b"BOB-CKPX" + bytes(10)) == {"offset": 7}


def test_losses_agree_within_tolerance_only():
    assert losses_agree([1.0, float("inf")], [1.0, float("inf")])
    assert not losses_agree([1.0], [1.0 + 1e-9])
    assert not losses_agree([1.0], [1.0, 2.0])
    nan, inf = float("nan"), float("inf")  # a NaN or an infinity against a number agreed (a tolerance of inf)
    assert losses_agree([nan, -inf], [nan, -inf])
    for expected, actual in ((5.5, nan), (nan, 5.5), (5.5, inf), (inf, 5.5), (5.5, -inf), (inf, -inf), (inf, nan)):
        assert not losses_agree([expected], [actual]), (expected, actual)


@pytest.mark.parametrize("loss", [float("nan"), float("inf"), float("-inf")])
def test_a_section8_series_with_a_loss_that_is_no_number_misses_it(loss) -> None:
    """A NaN loss passed §8's loss check (`abs(nan - first) > tolerance` is False)."""
    record = checks.section8_record()
    files, predictions, losses = checks.scalar_series(record, 2)
    assert checks._vector_series("public-vector/invoke", files, predictions, losses, files) is None
    for at in (0, -1):
        bad = [list(series) for series in losses]
        bad[1][at] = loss
        verdict = checks._vector_series("public-vector/invoke", files, predictions, bad, files)
        assert verdict is not None and not verdict.ok and "losses of the invocation ending at step 20" in verdict.summary


def test_a_bob_run_summary_s_non_finite_losses_are_read_as_numbers(tmp_path, monkeypatch) -> None:
    """bob-run --json spells a NaN loss "nan": the §8 comparison failed as "the check could not run: TypeError"."""
    summary = '{"losses": ["nan", "inf", 5.5], "step": 10}'
    monkeypatch.setattr(processes, "finished", lambda argv, timeout: subprocess.CompletedProcess(argv, 0, summary, ""))
    losses = processes.run_once(processes.RunFiles(tmp_path), ["bob-run"])["losses"]
    assert [repr(x) for x in losses] == ["nan", "inf", "5.5"]
    for no_loss in ('"5.5"', "true", '"1_0"', "null"):  # (float() took a string of digits and a bool)
        summary = '{"losses": [%s], "step": 10}' % no_loss
        with pytest.raises(processes.ProcessFailed, match="no JSON summary with its losses"):
            processes.run_once(processes.RunFiles(tmp_path), ["bob-run"])


def test_the_perturbation_hook_is_off_unless_set():
    assert perturbation({}) is None
    assert perturbation({PERTURB_ENV: "avx2:3"}) == ("avx2", 3)
    assert os.environ.get(PERTURB_ENV) is None  # and the suite never sets it globally


def test_states_are_seeded_and_stress_the_kernels():
    a, b = kernels.draw_state(7, 1), kernels.draw_state(7, 1)
    assert a.p.tobytes() == b.p.tobytes() and a.contexts.tobytes() == b.contexts.tobytes()
    assert kernels.draw_state(8, 1).p.tobytes() != a.p.tobytes()
    states = [kernels.draw_state(7, case) for case in range(len(kernels.KINDS))]
    extreme = next(s for s in states if s.kind == "extreme")
    assert set(np.array([80.0, -80.0, 1e30, -1e30], dtype=np.float32).tolist()) <= set(extreme.p.tolist())
    assert ((extreme.p != 0) & (np.abs(extreme.p) < np.finfo(np.float32).tiny)).any()  # subnormals
    assert any(np.unique(s.contexts).size < 256 for s in states)  # rows with count 0
    assert any(np.unique(s.contexts).size == 256 for s in states)  # and all rows live
    assert any(s.step == 0 for s in states) and any(s.step > 1 << 63 for s in states)
    assert any(np.any(s.m != 0) for s in states)


def test_vector_holds_the_contract_values():
    record = checks.section8_record()
    first = bob.invoke(record)
    assert checks.sha256(record) == vector.RECORD_SHA256
    assert checks.sha256(first.checkpoint_bytes()) == vector.CHECKPOINT_SHA256[10]
    assert first.predictions_bytes().hex() == vector.PREDICTIONS_HEX


def test_commit_kill_leaves_old_or_new_and_reruns_continue():
    (verdict,) = kill.check_commit_kill(seed=1, races=2)
    assert verdict.ok, verdict
    assert verdict.details["races_left"]["old"] + verdict.details["races_left"]["new"] == 2


def test_bob_run_does_not_import_rich(tmp_path):
    (tmp_path / "r.bin").write_bytes(checks.section8_record())
    code = ("import sys; from bob.run import main; "
            f"rc = main(['--input', {str(tmp_path / 'r.bin')!r}, '--checkpoint', {str(tmp_path / 'c')!r}, "
            f"'--predictions', {str(tmp_path / 'p')!r}]); "
            "print(rc, 'rich' in sys.modules, 'bob.qualify' in sys.modules, 'matplotlib' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split()[-4:] == ["0", "False", "False", "False"]


def test_the_packaged_section8_vector_is_the_contracts():
    """bob.qualify.vector (shipped, used by bob-qualify and make_golden.py)
    against the tests' own copy of contract §8 (tests/conftest.py)."""
    import conftest
    from bob.qualify import vector

    assert vector.CORPUS == conftest.CORPUS and list(vector.PROMPTS) == conftest.PROMPTS
    assert vector.RECORD_SHA256 == conftest.RECORD_SHA256 and vector.PREDICTIONS_HEX == conftest.PRED_HEX
    assert vector.CHECKPOINT_SHA256 == {10: conftest.CKPT_10_SHA256, 20: conftest.CKPT_20_SHA256}
    assert vector.LOSSES == {10: conftest.LOSSES_10, 20: conftest.LOSSES_20}


def test_the_formats_check_imports_the_golden_exports(tmp_path, monkeypatch):
    """golden/interop/ was shipped and never checked ("every golden file"): an export that imports as another
    checkpoint, or is refused, fails the check by name."""
    import shutil

    from bob.qualify import checks

    golden = tmp_path / "golden"
    shutil.copytree(checks.golden_directory(), golden)
    monkeypatch.setattr(checks, "golden_directory", lambda: golden)
    [verdict] = checks.check_golden()
    assert verdict.ok and verdict.details["accepted"] == len(list(golden.glob("*.bin"))) + 2
    npz = golden / "interop" / "checkpoint-abracadabra-step10-deflated.npz"
    npz.write_bytes(npz.read_bytes()[:-1])
    [verdict] = checks.check_golden()
    assert not verdict.ok and verdict.details["problems"][0] == (
        f"interop/{npz.name} is not the file the package shipped (its SHA-256 is not SHA256SUMS's)")
    assert verdict.details["problems"][1].startswith(f"interop/{npz.name}: refused: ")


def test_a_package_missing_golden_files_is_not_qualified_on_the_ones_left(tmp_path, monkeypatch):
    """Three golden pairs and the safetensors export deleted: "5 golden files load ...; 3 refused ones", QUALIFIED.
    SHA256SUMS lists what the package ships; an export not imported for want of the extra is said."""
    import shutil

    from bob.interop import MissingExtra

    golden, shipped = tmp_path / "golden", checks.golden_directory()
    shutil.copytree(shipped, golden)
    monkeypatch.setattr(checks, "golden_directory", lambda: golden)
    gone = ["interop/checkpoint-abracadabra-step10.safetensors", "predictions-mixed.bin", "predictions-mixed.json"]
    for name in gone:
        (golden / name).unlink()
    [verdict] = checks.check_golden()
    assert not verdict.ok and [p.split(",")[0] for p in verdict.details["problems"]] == sorted(gone)
    (golden / "SHA256SUMS").unlink()
    [verdict] = checks.check_golden()
    assert verdict.summary == "SHA256SUMS, the list of the golden files the package ships, is missing"

    shutil.rmtree(golden)
    shutil.copytree(shipped, golden)

    def no_extra(*_args, **_kwargs):
        raise MissingExtra("safetensors")

    monkeypatch.setattr(bob.Checkpoint, "from_safetensors", no_extra)
    [verdict] = checks.check_golden()
    assert verdict.ok and verdict.summary.endswith(
        "; not imported without the interop extra: interop/checkpoint-abracadabra-step10.safetensors")


@pytest.mark.parametrize("name", ["predictions-mixed.bin", "refused/{refused}", "interop/{export}"],
                         ids=["golden", "refused", "interop"])
def test_a_golden_file_that_is_a_fifo_fails_the_formats_check_and_is_never_read(tmp_path, monkeypatch, name):
    """A FIFO among the shipped golden files (a damaged install, which bob-qualify is there to judge) hung the
    formats check for ever at its read: no verdict at all. Any entry that is no regular file fails it, unread."""
    import shutil
    import signal

    golden = tmp_path / "golden"
    shutil.copytree(checks.golden_directory(), golden)
    monkeypatch.setattr(checks, "golden_directory", lambda: golden)
    name = name.format(refused=sorted(p.name for p in (golden / "refused").glob("*.bin"))[0],
                       export=sorted(p.name for p in (golden / "interop").iterdir())[0])
    (golden / name).unlink()
    os.mkfifo(golden / name)

    def hung(*_args):
        raise AssertionError("the check read the FIFO")

    before = signal.signal(signal.SIGALRM, hung)
    signal.alarm(60)
    try:
        [verdict] = checks.check_golden()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before)
    assert not verdict.ok and verdict.summary == (
        f"{name} is no regular file (a FIFO, a device, a directory): not read, as reading a FIFO would never end")


RESULT = {"qualified": False, "exit_code": 1,
          "fingerprint": {"auto_kernel": "scalar", "cpu_model": "a CPU", "cpu_count": 2},
          "loss_curves": {"vector": [5.5, 5.4, 5.3]},
          "performance": {"kernels": [{"kernel": "scalar", "threads": 1, "us_per_update": {"median": 9.0, "min": 8.0}},
                                      {"kernel": "auto", "threads": 0, "us_per_update": {"median": 9.0, "min": 8.0}}]}}


@pytest.mark.parametrize("fails_at", [1, 2, 3])
def test_a_failed_report_write_leaves_the_old_report_whole(tmp_path, monkeypatch, fails_at):
    """The disk fills as the k-th of the three files is flushed: none of the old files is replaced
    (the JSON and the plots stay one report), and no temporary file is left."""
    import errno

    import bob.fileio
    from bob.qualify import report

    old = {name: f"the old {name}".encode() for name in (report.REPORT_JSON, report.LOSS_PLOT, report.SPEED_PLOT)}
    for name, data in old.items():
        (tmp_path / name).write_bytes(data)
    flushed = []

    def full(fd):
        flushed.append(fd)
        if len(flushed) == fails_at:
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(bob.fileio.os, "fsync", full)
    from bob.commands import Refused

    with pytest.raises(Refused, match="no space left on device") as refused:  # naming the file it could not write
        report.write_report(tmp_path, RESULT)
    assert refused.value.path == str(tmp_path / list(old)[fails_at - 1])
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == old
    monkeypatch.undo()
    written = report.write_report(tmp_path, RESULT)  # and whole when the disk has room
    assert sorted(p.name for p in written) == sorted(p.name for p in tmp_path.iterdir()) == sorted(old)
    assert all((tmp_path / name).read_bytes() != data for name, data in old.items())


@pytest.mark.parametrize("in_the_way", ["directory", "fifo", "second link"])
def test_a_report_file_bob_would_not_replace_is_refused_by_its_path_before_any_is(tmp_path, in_the_way):
    """A directory in the way of a plot was refused after the JSON and the other plot had been
    replaced, naming --report's directory; a FIFO was replaced by a file, a hard link split."""
    from bob.commands import Refused
    from bob.qualify import report

    old = {name: f"the old {name}".encode() for name in (report.REPORT_JSON, report.LOSS_PLOT)}
    for name, data in old.items():
        (tmp_path / name).write_bytes(data)
    blocked = tmp_path / report.SPEED_PLOT
    if in_the_way == "directory":
        blocked.mkdir()
    elif in_the_way == "fifo":
        os.mkfifo(blocked)
    else:
        blocked.write_bytes(b"shared")
        os.link(blocked, tmp_path / "elsewhere")
    with pytest.raises(Refused) as refused:
        report.write_report(tmp_path, RESULT)
    assert (refused.value.option, refused.value.path) == ("--report", str(blocked))
    assert {name: (tmp_path / name).read_bytes() for name in old} == old
    assert not [p for p in tmp_path.iterdir() if ".bob-tmp-" in p.name]


@pytest.mark.parametrize("cut_short", [False, True])
def test_a_plain_progress_phase_is_called_done_only_when_it_ended(cut_short, capsys):
    """In a log, a phase's last line says "(done)" when it ran to its end, and not when a signal cut it."""
    from rich.console import Console

    from bob.qualify.report import LiveProgress

    with contextlib.suppress(KeyboardInterrupt), LiveProgress(Console(file=io.StringIO())) as progress:
        advance = progress.phase("kernels x threads", 10)
        progress.current.after = 0.0  # shown from the first step
        advance()
        if cut_short:
            raise KeyboardInterrupt
    assert ("(done)" in capsys.readouterr().err) is not cut_short


def test_a_signal_while_the_report_is_renamed_into_place_leaves_it_whole(tmp_path, monkeypatch):
    """SIGTERM between two of the three renames: recorded, and every file is the new report's."""
    import signal

    from bob import signals
    from bob.qualify import report

    renames = []

    def replace(tmp, path, real=os.replace, **at):
        real(tmp, path, **at)
        renames.append(path)
        if len(renames) == 1:
            os.kill(os.getpid(), signal.SIGTERM)  # bob's handler runs as this call returns

    monkeypatch.setattr(report.os, "replace", replace)
    replaced = signals.install()
    try:
        written = report.write_report(tmp_path, RESULT)
    except signals.Interrupted:
        pytest.fail(f"the signal cut the renames after {len(renames)} of 3")
    finally:
        signals.restore(replaced)
    assert len(renames) == len(written) == 3 and signals.taken()[-1] == signal.SIGTERM


def test_a_signal_during_a_racing_kill_ends_the_racing_run_too(monkeypatch) -> None:
    """SIGTERM while bob-qualify waited to kill a racing bob-run: the run went on, unkilled and unreaped,
    writing into a directory being removed."""
    from bob import signals

    started = []

    class Run:
        def __init__(self, argv, **kwargs) -> None:
            self.events = []
            started.append(self)

        def send_signal(self, signum) -> None:
            self.events.append(("signal", signum))

        def wait(self) -> int:
            self.events.append(("wait", None))
            return -9

        def kill(self) -> None:
            self.send_signal(9)

        def __enter__(self) -> "Run":
            return self

        def __exit__(self, *exc) -> None:  # (as Popen's: its pipes closed, and waited for)
            self.wait()

    def interrupted(seconds) -> None:
        raise signals.Interrupted(15)

    monkeypatch.setattr(kill, "POINTS", {})  # the racing kills only
    monkeypatch.setattr(kill, "_one_run_seconds", lambda record, command: 0.1)
    monkeypatch.setattr(processes.subprocess, "Popen", Run)  # (the child is started there, for every check)
    monkeypatch.setattr(kill.time, "sleep", interrupted)
    with pytest.raises(signals.Interrupted):
        kill.check_commit_kill(seed=1, races=1)
    assert [run.events for run in started] == [[("signal", 9), ("wait", None)]]


def test_a_relative_report_path_after_the_working_directory_was_deleted_is_refused_in_words(tmp_path, monkeypatch):
    """It read "no such file or directory", as if the report directory itself were missing."""
    from pathlib import Path

    from bob.qualify import report

    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    with pytest.raises(FileNotFoundError, match="a relative path, and the working directory no longer exists"):
        report.write_report(Path("rq"), dict(RESULT), images={})


def test_a_signal_as_a_child_bob_run_is_spawned_leaves_no_child_running(monkeypatch, tmp_path) -> None:
    """SIGTERM while subprocess spawned a bob-run (bob-qualify signalled as its first temporary directory
    appeared): the exception left subprocess before it knew the child, which went on writing into the
    directory bob-qualify was removing (a CI run found the directory left). It acts once the child is known."""
    import signal

    from conftest import signalled_as_spawned

    child = signalled_as_spawned(monkeypatch, lambda: processes.run_once(processes.RunFiles(tmp_path)))
    assert child.returncode == -signal.SIGKILL  # killed and reaped by bob-qualify


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_child_bob_run_ends_when_bob_qualify_is_killed() -> None:
    """SIGKILL of bob-qualify, which no handler sees, left its child running (writing into a directory nobody
    would remove). A child now gets SIGKILL as bob-qualify ends, however it ends."""
    import signal

    from bob.children import readable
    from conftest import gone

    script = ("import sys, time\nfrom bob.qualify import processes\n"
              "with processes.started([sys.executable, '-c', 'import time; time.sleep(120)'], output=False) as p:\n"
              "    print(p.pid, flush=True)\n    time.sleep(120)\n")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    child = None
    try:
        assert readable(parent.stdout, 60), "no child started"
        child = int(parent.stdout.readline())  # type: ignore[union-attr]
        parent.kill()
        parent.wait()
        assert gone(child, 10), "the child outlived bob-qualify killed by SIGKILL"
    finally:
        parent.kill()
        parent.wait()
        parent.stdout.close()  # type: ignore[union-attr]
        if child is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)


def test_a_child_bob_run_is_the_bob_being_qualified_not_one_its_own_path_finds_first(tmp_path) -> None:
    """`python -m bob qualify` run in another copy of bob ran the installed bob-run, which imported the installed
    bob: a build whose bob-run wrote zero predictions was QUALIFIED, and the fingerprint named the installed
    distribution. A child now imports this process's bob; the fingerprint says where it came from."""
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(os.path.dirname(bob.__file__), copy / "bob", ignore=shutil.ignore_patterns("__pycache__"))
    run_py = copy / "bob" / "run.py"
    run_py.write_text(run_py.read_text(encoding="utf-8") + "\nprint('the copy')\n", encoding="utf-8")
    script = ("import json; from bob.qualify import machine, processes as p; "
              "print(json.dumps([p.finished(p.bob_run_command() + ['--version'], 60).stdout, "
              "p.finished([p.sys.executable, '-m', 'bob', 'run', '--version'], 60).stdout, "
              "machine._core_build()['installed_from']]))")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH")}
    done = subprocess.run([sys.executable, "-c", script], cwd=copy, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    installed, as_module, installed_from = __import__("json").loads(done.stdout)
    assert installed.startswith("the copy\n") and as_module.startswith("the copy\n")
    assert installed_from == f"not an installed distribution: bob imported from {copy}"


def test_the_public_vector_s_trace_check_names_where_this_build_parts_from_the_golden_trace(tmp_path, monkeypatch):
    """A build whose trace digests differ passed every check (the formats check only reads the golden trace): the
    traced §8 invocation is compared with it as bob-inspect trace compares, and a missing one is said."""
    import hashlib
    import shutil

    golden = tmp_path / "golden"
    shutil.copytree(checks.golden_directory(), golden)
    monkeypatch.setattr(checks, "golden_directory", lambda: golden)
    record = checks.section8_record()
    assert checks._vector_by_trace(record, ([], [], [])).ok
    trace = golden / "trace-abracadabra-step10.bin"
    data = bytearray(trace.read_bytes())
    data[4 * 64 + 176] ^= 1  # (entry 4's M digest, the trace sealed again: a valid trace of another state)
    data[784:] = hashlib.sha256(data[:784]).digest()
    trace.write_bytes(bytes(data))
    verdict = checks._vector_by_trace(record, ([], [], []))
    assert not verdict.ok and verdict.summary == "the traced §8 invocation parts from the golden trace: the runs part " \
                                                 "at update 5 (the update to step 5): M differs after it"
    trace.unlink()
    verdict = checks._vector_by_trace(record, ([], [], []))
    assert not verdict.ok and verdict.summary.startswith("the golden §8 trace cannot be compared: ")
    os.mkfifo(trace)  # (refused unread by bob's bounded reader, never waited on)
    verdict = checks._vector_by_trace(record, ([], [], []))
    assert not verdict.ok and "a FIFO (named pipe), not a regular file" in verdict.summary
