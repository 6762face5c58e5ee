"""bob-qualify end to end: a quick run qualifies this build, a perturbed
result is caught and named, --report writes its files, bad command lines are
refused. Each quick run takes ~2 s."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import bob.core
from bob.qualify import cli, kernels
from bob.qualify.verdict import PERTURB_ENV
from bob.formats.constants import UPDATES_PER_INVOCATION as U, cell_name


def run_main(argv, capsys, monkeypatch, perturb=None):
    if perturb is None:
        monkeypatch.delenv(PERTURB_ENV, raising=False)
    else:
        monkeypatch.setenv(PERTURB_ENV, perturb)
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_quick_json_qualifies_this_build_as_a_process():
    env = {k: v for k, v in os.environ.items() if k != PERTURB_ENV}
    done = subprocess.run([sys.executable, "-m", "bob", "qualify", "--quick", "--json", "--seed", "11"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr + done.stdout[-2000:]
    result = json.loads(done.stdout)
    assert result["qualified"] and result["exit_code"] == 0 and result["failures"] == []
    assert (result["command"], result["ok"], result["error"]) == ("bob-qualify", True, None)  # every command's keys
    assert result["seed"] == 11 and result["perturbation"] is None
    checks = {row["check"] for row in result["checks"]}
    assert {"public-vector/record", "public-vector/invoke", "public-vector/bob-run", "public-vector/trace", "formats",
            "kernels", "resume"} <= checks
    # Every kernel this CPU offers, at 1, 2, the CPU count and an odd count, and auto at 0.
    configs = {(row["kernel"], row["threads"]) for row in result["checks"] if row["check"] == "kernels"}
    counts = {1, 2, os.cpu_count()}
    assert set(kernels.thread_counts()) >= counts and any(t % 2 for t in kernels.thread_counts() if t > 1)
    assert configs == {(k, t) for k in bob.core.kernels() for t in kernels.thread_counts()} | {("auto", 0)}
    fp = result["fingerprint"]
    assert fp["kernels"] == bob.core.kernels() and fp["auto_kernel"] in fp["kernels"]
    assert fp["contract"]["seed"] == "bob-seed-v1" and fp["bob_version"]
    speeds = result["performance"]["kernels"]
    assert {(row["kernel"], row["threads"]) for row in speeds} == configs
    assert all(row["us_per_update"]["min"] > 0 for row in speeds)
    assert result["performance"]["process"]["ratio_of_medians"] > 0
    assert len(result["loss_curves"]) == 2 and all(len(c) == 30 for c in result["loss_curves"].values())
    assert result["timings"]["total_seconds"] < 10


@pytest.mark.parametrize("limit", [64 << 10, 0])  # room for a record, not for a checkpoint; for nothing
def test_a_file_size_limit_is_the_machine_s_shortage_not_a_failed_check(limit: int):
    """Under ``ulimit -f`` too small for a checkpoint, every bob-run refuses its write (EFBIG): bob-qualify
    said NOT QUALIFIED (exit 1, "a check failed"), a verdict on bob where the machine could not run the checks.
    With ``ulimit -f 0`` tempfile found no usable temporary directory, said as ENOENT: a failed check too."""
    import resource

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    env = {k: v for k, v in os.environ.items() if k != PERTURB_ENV}
    done = subprocess.run([sys.executable, "-m", "bob", "qualify", "--quick", "--json", "--seed", "11"],
                          capture_output=True, text=True, env=env, timeout=120, preexec_fn=limited)
    assert done.returncode == 70, done.stdout[-2000:]
    error = json.loads(done.stdout)["error"]
    assert error["exit_code"] == 70 and "File too large" in error["message"], error


TEMPORARY_UNDER_NO_FILE_SIZE = """
import os, resource, sys
from bob.scratch import temporary_directory
resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
made = temporary_directory("bob-x-")
print(made)
os.rmdir(made)
"""


@pytest.mark.parametrize("tmpdir", ["/proc", "relative"])
def test_a_scratch_directory_under_ulimit_f_0_is_made_where_one_can_be_made_and_named_whole(tmp_path, tmpdir):
    """tempfile's candidates all fail its test write: the directory is made in the first that takes one (TMPDIR=/proc
    takes none: it named /proc/bob-x-... as missing) and named by its absolute path (a relative TMPDIR's was not)."""
    (tmp_path / "relative").mkdir()
    done = subprocess.run([sys.executable, "-c", TEMPORARY_UNDER_NO_FILE_SIZE], capture_output=True, text=True,
                          cwd=tmp_path, env={**os.environ, "TMPDIR": tmpdir}, timeout=60)
    made = done.stdout.strip()
    assert done.returncode == 0 and os.path.isabs(made) and not made.startswith("/proc/"), done.stderr
    assert tmpdir == "/proc" or made.startswith(f"{tmp_path / 'relative'}/bob-x-"), made


@pytest.mark.parametrize("code", ["ENOSPC", "EDQUOT", "EFBIG"])
def test_a_child_bob_run_out_of_space_is_no_failed_check(code, monkeypatch, tmp_path):
    import errno

    from bob.commands import os_reason
    from bob.qualify import processes

    number = getattr(errno, code)
    reason = os_reason(OSError(number, os.strerror(number)))
    for message in (reason, f"its lock file /t/.model.bob.bob-lock cannot be used: {reason}; nothing was changed"):
        said = json.dumps({"command": "bob-run", "error": {"message": message}, "exit_code": 2, "ok": False})
        monkeypatch.setattr(processes, "finished", lambda *a: subprocess.CompletedProcess(a, 2, said, "bob-run: …"))
        with pytest.raises(OSError) as raised:  # (a full disk meets the lock file first: it was a failed check)
            processes.run_once(processes.RunFiles(tmp_path))
        assert raised.value.errno == number
    refused = json.dumps({"command": "bob-run", "error": {"message": "no such file or directory"}, "exit_code": 2})
    monkeypatch.setattr(processes, "finished", lambda *a: subprocess.CompletedProcess(a, 2, refused, "bob-run: ..."))
    with pytest.raises(processes.ProcessFailed):  # any other refusal stays a failed check
        processes.run_once(processes.RunFiles(tmp_path))


@pytest.mark.parametrize("where", ["commit-kill", "performance"])
def test_a_disk_that_fills_later_is_no_failed_check(where, monkeypatch):
    """Only a check's first bob-run asked whether it failed for want of space: a disk full by the time of the
    commit-kill check's fixed-moment kills, or of the performance processes, was a failed check (exit 1)."""
    import contextlib

    from bob.qualify import kill, perf

    said = json.dumps({"command": "bob-run", "error": {"message": "no space left on device"}, "exit_code": 2})

    class Full:
        returncode = 2

        def communicate(self, timeout: float) -> tuple[str, str]:
            return said, "bob-run: refused: --checkpoint model.bob: no space left on device"

    monkeypatch.setattr(kill, "finished", lambda argv, timeout: subprocess.CompletedProcess(argv, 2,
                                                                                          *Full().communicate(0)))
    monkeypatch.setattr(perf, "started", lambda argv, **kw: contextlib.nullcontext(Full()))
    with pytest.raises(OSError, match="could not write its files"):
        kill.check_commit_kill(seed=1, races=0) if where == "commit-kill" else perf.process_speeds(1)


def test_a_perturbed_kernel_result_fails_naming_check_kernel_threads_plane_and_index(capsys, monkeypatch):
    kernel = bob.core.kernels()[-1]  # the widest this CPU has
    code, out, err = run_main(["--quick", "--seed", "5"], capsys, monkeypatch, perturb=f"{kernel}:3")
    assert code == 1
    assert "NOT QUALIFIED" in out
    failed = [line for line in out.splitlines() if line.startswith("FAILED")]  # one line per failure
    text = " ".join(out.split())  # the table may wrap
    assert failed, out
    assert "FAILED kernels: differs from the scalar transcription on case 0" in text
    assert f"kernel {kernel}, threads 3, plane P, index {kernels.PERTURBED_INDEX}" in text
    assert f"reproduce with: {PERTURB_ENV}={kernel}:3 bob-qualify --seed 5 --quick" in text  # (without it: passes)
    assert PERTURB_ENV in err  # the hook says it is on

    code, out, _ = run_main(["--quick", "--seed", "5", "--json"], capsys, monkeypatch, perturb=f"{kernel}:3")
    result = json.loads(out)
    assert code == 1 and result["exit_code"] == 1 and not result["qualified"]
    (failure,) = result["failures"]  # only the perturbed configuration, nothing else
    assert (failure["check"], failure["kernel"], failure["threads"], failure["plane"], failure["index"]) == \
        ("kernels", kernel, 3, "P", kernels.PERTURBED_INDEX)
    assert failure["expected"] != failure["actual"]
    # traced update by update, the two runs part at the update the hook damages: the last
    details = failure["details"]
    assert (details["first_diverging_update"], details["diverging_planes"]) == (U, ["P"])
    assert f"the runs part at update {U} of {U}" in failure["summary"]


def test_outside_text_is_shown_escaped_and_never_read_as_markup(capsys, monkeypatch):
    """The report went through rich's markup: an install path holding [/x] was a MarkupError (exit 70, where
    --json exits 0), one holding [v2] lost it, ESC and a line break in a path or the CPU's model reached the
    terminal raw, and a FAIL row's [kernel …, index …] vanished from the table."""
    from bob.qualify import machine

    path = "/m[/x]d[v2]\x1b]0;t\x07\n:thumbs_up:/contract.md"
    monkeypatch.setattr(machine, "contract_document", lambda: path)
    monkeypatch.setattr(machine, "_cpuinfo", lambda: ("Evil[bold]CPU\x1b[2J\r\n", {"avx2"}))
    kernel = bob.core.kernels()[-1]
    code, out, _ = run_main(["--quick", "--seed", "5"], capsys, monkeypatch, perturb=f"{kernel}:3")
    assert code == 1 and "\x1b" not in out and "\x07" not in out and "\r" not in out
    text = " ".join(out.split())  # (rich wraps a line at its width)
    assert "machine: Evil[bold]CPU\\x1b[2J\\x0d\\x0a (" in text
    assert "contract bob v1, errata of 2026-11-30 (/m[/x]d[v2]\\x1b]0;t\\x07\\x0a:thumbs_up:/contract.md)" in text
    rows = []  # the table's rows, each cell's lines joined
    for line in out.splitlines():
        cells = [cell.strip() for cell in line.strip("│").split("│")] if line.startswith("│") else None
        if cells and cells[0]:
            rows.append(cells)
        elif cells:
            rows[-1] = [" ".join(filter(None, pair)) for pair in zip(rows[-1], cells)]
    (failed,) = [row for row in rows if row[3] == "FAIL"]
    index = kernels.PERTURBED_INDEX
    assert failed[4].endswith(f"[kernel {kernel}, threads 3, plane P, index {index} ({cell_name(index)})]"), failed


@pytest.mark.parametrize("columns", ["0", "1"])
def test_a_width_too_narrow_for_the_report_is_80_columns(columns, capsys, monkeypatch):
    """At COLUMNS=0 rich renders every line empty: bob-qualify printed its seed line only, and a failed build
    exited 1 with no FAILED line, no verdict; a few columns dropped the table's cells."""
    monkeypatch.setenv("COLUMNS", columns)
    kernel = bob.core.kernels()[-1]
    code, out, _ = run_main(["--quick", "--seed", "5"], capsys, monkeypatch, perturb=f"{kernel}:3")
    text = " ".join(out.split())
    assert code == 1 and "FAILED kernels: differs from the scalar transcription on case 0" in text, out
    assert f"reproduce with: {PERTURB_ENV}={kernel}:3 bob-qualify --seed 5 --quick NOT QUALIFIED: 1 check(s) failed" in text
    assert max(len(line) for line in out.splitlines()) == 80  # (the summary table's)


def test_report_writes_json_and_plots(tmp_path, capsys, monkeypatch):
    pytest.importorskip("matplotlib")
    target = tmp_path / "report\x1b]0;t\x07[bold]"  # escaped as every path bob prints, and no rich markup
    code, out, _ = run_main(["--quick", "--seed", "3", "--report", str(target)], capsys, monkeypatch)
    assert code == 0, out
    assert "\x1b" not in out and "\x07" not in out  # (rich wraps the line at the terminal's width)
    assert f"report: {tmp_path}/report\\x1b]0;t\\x07[bold]/qualify.json, " in out.replace("\n", "")
    assert sorted(p.name for p in target.iterdir()) == ["loss-curves.png", "qualify.json", "us-per-update.png"]
    for png in ("loss-curves.png", "us-per-update.png"):
        data = (target / png).read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 10_000
    result = json.loads((target / "qualify.json").read_text())
    assert result["qualified"] and result["seed"] == 3


def test_a_user_s_matplotlibrc_draws_the_report_and_a_drawing_that_fails_still_says_the_verdict(tmp_path, capsys,
                                                                                                monkeypatch):
    """A matplotlibrc with ``text.usetex: True`` and no LaTeX installed ended a whole qualification with exit 70,
    its verdict unsaid (a deliberate failure hidden); the plots are drawn in matplotlib's own style. Whatever
    else ends the drawing is unexpected (70), said with the verdict and the seed."""
    matplotlib = pytest.importorskip("matplotlib")
    from bob.qualify import report

    monkeypatch.setitem(matplotlib.rcParams, "text.usetex", True)  # (as read from the user's matplotlibrc)
    code, out, err = run_main(["--quick", "--seed", "3", "--report", str(tmp_path / "r")], capsys, monkeypatch)
    assert code == 0 and len(list((tmp_path / "r").iterdir())) == 3, err
    assert matplotlib.rcParams["text.usetex"] is True

    def broken(result):
        raise RuntimeError("a drawing that fails")

    monkeypatch.setattr(report, "plots", broken)
    kernel = bob.core.kernels()[-1]
    code, out, err = run_main(["--quick", "--seed", "4", "--report", str(tmp_path / "s")], capsys, monkeypatch,
                              perturb=f"{kernel}:3")
    assert code == 70 and not (tmp_path / "s").exists(), err
    assert err.endswith("bob-qualify: unexpected error: RuntimeError: a drawing that fails (the qualification "
                        "itself finished: NOT QUALIFIED, seed 4)\n"), err

    def out_of_memory(result):  # (as drawing() says it with too little address space left to draw)
        raise MemoryError("less than 128 MiB of address space left to draw")

    monkeypatch.setattr(report, "plots", out_of_memory)
    code, out, err = run_main(["--quick", "--seed", "5", "--report", str(tmp_path / "t")], capsys, monkeypatch)
    assert code == 70 and err.endswith("bob-qualify: out of memory as the report's plots were drawn (the "
                                       "qualification itself finished: QUALIFIED, seed 5)\n"), err


def test_a_home_matplotlib_cannot_write_puts_no_word_of_it_on_stderr(tmp_path):
    """With HOME where nothing can be made, --report put matplotlib's two lines about its configuration
    directory on stderr; its temporary directory in their place is still removed as the command ends."""
    pytest.importorskip("matplotlib")
    (tmp_path / "tmp").mkdir()
    env = {key: value for key, value in os.environ.items() if key not in (PERTURB_ENV, "MPLCONFIGDIR",
                                                                          "XDG_CONFIG_HOME", "XDG_CACHE_HOME")}
    env.update(HOME="/proc/no-such-home", TMPDIR=str(tmp_path / "tmp"))
    done = subprocess.run([sys.executable, "-m", "bob", "qualify", "--quick", "--seed", "3", "--json", "--report",
                           str(tmp_path / "report")], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0 and all(line.startswith("bob-qualify ") for line in done.stderr.splitlines()), \
        done.stderr  # (a phase that took over two seconds says so)
    assert len(list((tmp_path / "report").iterdir())) == 3 and list((tmp_path / "tmp").iterdir()) == []


def test_the_reports_json_is_what_json_prints(tmp_path, capsys, monkeypatch):
    """qualify.json lacked command, ok, error and report_files: not "the same object" docs/qualify.md says."""
    pytest.importorskip("matplotlib")
    code, out, _ = run_main(["--quick", "--seed", "3", "--json", "--report", str(tmp_path)], capsys, monkeypatch)
    printed = json.loads(out)
    assert code == 0 and json.loads((tmp_path / "qualify.json").read_text()) == printed
    assert (printed["command"], printed["ok"], printed["error"]) == ("bob-qualify", True, None)
    assert printed["report_files"] == [str(tmp_path / name) for name in ("qualify.json", "loss-curves.png",
                                                                         "us-per-update.png")]


@pytest.mark.parametrize("argv, env, message", [
    (["--seed", "x"], None, "--seed: must be an integer from 0 to 18446744073709551615, got \"x\""),
    (["--quick", "--thorough"], None, "not allowed with"),
    (["--quick"], "avx2", "refused: BOB_QUALIFY_PERTURB: must be KERNEL:THREADS (e.g. avx2:2), got \"avx2\""),
    (["--quick"], "scalar:99", "scalar:99 is no configuration the kernels check runs here; one of scalar:1"),
    (["--quick"], "nope:1", "nope:1 is no configuration"),  # (announced as flipping a bit, it flipped none)
    # a byte the OS gave that is no UTF-8 is shown as that byte, as in a path (it was "\\udcff")
    (["--quick"], "\udcff", 'got "\\xff"'),
    (["--quick"], 'a"b', 'got "a\\x22b"'),  # (the quote escaped: it was 'a"b' between single quotes)
    (["--quick"], "scalar:\u0662", 'got "scalar:\\xd9\\xa2"'),  # (an Arabic-Indic two was taken for 2)
    (["--quick"], "\udcff:1", "\\xff:1 is no configuration"),
])
def test_bad_command_lines_are_refused_with_exit_2(argv, env, message, capsys, monkeypatch):
    code, out, err = run_main(argv, capsys, monkeypatch, perturb=env)
    assert code == 2 and message in err and "Traceback" not in err + out


def test_report_on_a_file_is_refused(tmp_path, capsys, monkeypatch):
    pytest.importorskip("matplotlib")
    (tmp_path / "file").write_text("x")
    code, _, err = run_main(["--quick", "--report", str(tmp_path / "file")], capsys, monkeypatch)
    assert code == 2 and "not a directory" in err


def test_report_onto_a_link_to_nothing_names_the_link_s_missing_end(tmp_path, capsys, monkeypatch):
    """A --report DIR that is a symbolic link to a missing directory was "no such file or directory", of a path
    that is there (mkdir's words, of its target): now what it is, through a chain of links too; a loop stays
    the kernel's words."""
    pytest.importorskip("matplotlib")
    (tmp_path / "link").symlink_to("nowhere")
    (tmp_path / "chain").symlink_to(tmp_path / "link")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    for name, said in (("link", "is a symbolic link to {}, which does not exist"),
                       ("chain", "is a symbolic link to {}, which does not exist"),
                       ("loop", "too many levels of symbolic links")):
        code, _, err = run_main(["--quick", "--report", str(tmp_path / name)], capsys, monkeypatch)
        assert (code, err) == (2, f"bob-qualify: refused: --report {tmp_path / name}: "
                                  f"{said.format(tmp_path / 'nowhere')}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chain", "link", "loop"]
    (tmp_path / "deleted").mkdir()
    monkeypatch.chdir(tmp_path / "deleted")
    (tmp_path / "deleted").rmdir()  # (a link's end looked for by realpath: getcwd's error was "no such file")
    code, _, err = run_main(["--quick", "--report", "../link"], capsys, monkeypatch)
    assert (code, err) == (2, "bob-qualify: refused: --report ../link: a relative path, and the working directory "
                              "no longer exists\n")


@pytest.mark.parametrize("existed", [False, True])
def test_a_refused_qualification_leaves_no_empty_directory_it_made(tmp_path, capsys, monkeypatch, existed):
    """--report's directory is made before the run (a bad path is refused at once); refused after that,
    bob-qualify removes what it made and left empty, and keeps a directory that was there."""
    pytest.importorskip("matplotlib")
    report = tmp_path / "new" / "report"
    if existed:
        report.mkdir(parents=True)
    code, _, err = run_main(["--quick", "--report", str(report)], capsys, monkeypatch, perturb="avx2")
    assert code == 2 and PERTURB_ENV in err
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == \
        ([report.parent.relative_to(tmp_path), report.relative_to(tmp_path)] if existed else [])


def test_a_broken_stdout_does_not_change_the_verdict():
    """rich would exit 1 when the reader goes away (`bob-qualify | head -1`);
    the exit status is the verdict, so it stays 0 on a qualified build."""
    env = {k: v for k, v in os.environ.items() if k != PERTURB_ENV}
    proc = subprocess.Popen([sys.executable, "-m", "bob", "qualify", "--quick"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    proc.stdout.readline()
    proc.stdout.close()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and b"Traceback" not in err
    assert b"could not be printed" in err


def test_a_seed_line_stdout_cannot_take_is_said_with_its_seed_on_stderr(monkeypatch, capsys):
    """With stdout closed or full the seed line was lost and stderr said only "the summary could not be printed":
    a run cut short could not be reproduced."""
    from bob import signals
    from bob.qualify import runner

    def cut_short(*args, **kwargs):
        raise signals.Interrupted(15)

    monkeypatch.setattr(runner, "qualify", cut_short)
    monkeypatch.delenv(PERTURB_ENV, raising=False)
    with open("/dev/full", "w", encoding="utf-8") as full:
        monkeypatch.setattr(sys, "stdout", full)
        assert cli.main(["--quick", "--seed", "77"]) == 143
    assert "bob-qualify: its output (seed 77: reproduce with --seed 77) could not be printed (stdout is closed or " \
           "full)" in capsys.readouterr().err


def test_report_files_linked_to_one_file_are_refused_before_the_checks_run(tmp_path, capsys, monkeypatch):
    """qualify.json and loss-curves.png as links to one file: the PNG was written over the JSON, exit 0,
    and the report listed a qualify.json that held an image."""
    pytest.importorskip("matplotlib")
    from bob.qualify import runner

    (tmp_path / "shared").write_bytes(b"mine")
    report = tmp_path / "report"
    report.mkdir()
    for name in ("qualify.json", "loss-curves.png"):
        (report / name).symlink_to("../shared")
    monkeypatch.setattr(runner, "qualify", lambda *a, **k: pytest.fail("the checks ran"))
    code, out, err = run_main(["--quick", "--seed", "3", "--json", "--report", str(report)], capsys, monkeypatch)
    error = json.loads(out)["error"]
    assert code == 2 and (error["option"], error["path"]) == ("--report", str(report / "loss-curves.png")), err
    assert error["message"] == f"names the same file as {report / 'qualify.json'}; each needs its own"
    assert (tmp_path / "shared").read_bytes() == b"mine"


@pytest.mark.parametrize("name", ["qualify.json", "loss-curves.png", "us-per-update.png"])
def test_a_report_file_in_the_way_is_refused_before_the_checks_run(name, tmp_path, capsys, monkeypatch):
    """A directory where qualify.json goes was refused only after every check had run (a minute under
    --thorough), and the verdict was thrown away."""
    pytest.importorskip("matplotlib")
    from bob.qualify import runner

    (tmp_path / name).mkdir()
    monkeypatch.setattr(runner, "qualify", lambda *a, **k: pytest.fail("the checks ran"))
    code, out, err = run_main(["--quick", "--seed", "3", "--json", "--report", str(tmp_path)], capsys, monkeypatch)
    error = json.loads(out)["error"]
    assert code == 2 and (error["option"], error["path"]) == ("--report", str(tmp_path / name)), err


def test_a_json_run_cut_short_has_said_its_seed():
    """Under --json the seed was only in the result, which an interrupted run never prints: a run cut short
    (SIGINT, a full disk) could not be reproduced. Drawn, it is said on stderr as the run starts."""
    import signal

    env = {k: v for k, v in os.environ.items() if k != PERTURB_ENV}
    proc = subprocess.Popen([sys.executable, "-m", "bob", "qualify", "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stderr.readline()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    seed = int(line.split()[2])
    assert line == f"bob-qualify: seed {seed} (reproduce with --seed {seed})\n" and proc.returncode == 130, err
    assert json.loads(out)["error"]["message"] == "interrupted by SIGINT; nothing was qualified"
