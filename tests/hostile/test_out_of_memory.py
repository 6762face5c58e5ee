"""Out of memory is never mistaken for a finding: under a tight address-space
limit (RLIMIT_AS, ``ulimit -v``) each command exits with its unexpected code
(70 where 1 means "found something"; 1 for bob-run) and keeps its ``--json``
envelope; the runner re-raises a MemoryError of a command run inside another.

The limits are set from what this machine's interpreter takes once started
(its peak address space after importing ``bob.failures``), so they let the
interpreter start and not the work, whatever the machine's memory and cores.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

import bob
from bob import commands, failures
from conftest import GOLDEN, ROOT

MiB = 1 << 20
BOB_RUN = ROOT / "python" / "bob.data" / "scripts" / "bob-run"  # the checkout's script, as installed
ENV = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}


def _peak(code: str) -> int:
    """The peak address space (bytes) of an interpreter that ran ``code``."""
    probe = code + "\nprint([l for l in open('/proc/self/status') if l.startswith('VmPeak')][0].split()[1])"
    return int(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                              env=ENV).stdout) * 1024


@pytest.fixture(scope="module")
def started() -> int:
    """What a started interpreter that can report running out takes."""
    if not os.path.exists("/proc/self/status"):
        pytest.skip("reads /proc/self/status (Linux)")
    return _peak("import sys\nfrom bob.failures import LastWords\nLastWords('p', 'p', 1, True)")


def limited(argv: list[str], limit: int, cwd: Path) -> subprocess.CompletedProcess:
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return subprocess.run(argv, capture_output=True, text=True, preexec_fn=cap, cwd=cwd, env=ENV, timeout=300)


def envelope(done: subprocess.CompletedProcess, command: str, code: int) -> dict:
    assert done.returncode == code, (done.returncode, done.stdout[-300:], done.stderr[-600:])
    assert "Traceback" not in done.stderr, done.stderr[-600:]
    document = json.loads(done.stdout)
    assert document["command"] == command and document["exit_code"] == code and document["ok"] is False
    assert document["error"]["exit_code"] == code and document["error"]["message"]
    return document


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("oom")
    data = (GOLDEN / "checkpoint-abracadabra-step10.bin").read_bytes()
    (where / "a.bob").write_bytes(data)
    (where / "b.bob").write_bytes(data)  # equal: a diff that exits 1 would be a false finding
    return where


COMMANDS = {
    "bob-inspect diff": ["-m", "bob", "inspect", "diff", "--json", "a.bob", "b.bob"],
    "bob-qualify": ["-m", "bob", "qualify", "--quick", "--json"],
    "bob-fuzz replay": ["-m", "bob", "fuzz", "replay", "--json",
                        str(ROOT / "fuzz" / "regressions" / "inspect")],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_without_the_memory_numpy_needs_the_command_exits_70_with_its_envelope(command, started, pair) -> None:
    for room in (8 * MiB, failures.NUMPY_HEADROOM // 2):
        done = limited([sys.executable, *COMMANDS[command]], started + room, pair)
        document = envelope(done, command, commands.EXIT_SOFTWARE)
        assert document["error"]["message"].startswith(failures.OUT_OF_MEMORY), document


def test_the_work_out_of_memory_is_70_at_every_limit_never_a_difference(started, pair) -> None:
    """Above NumPy's headroom the work itself runs out (or not): 70 or 0, never 1."""
    codes = set()
    for extra in range(0, 120 * MiB, 20 * MiB):
        done = limited([sys.executable, *COMMANDS["bob-inspect diff"]], started + failures.NUMPY_HEADROOM + extra,
                       pair)
        codes.add(done.returncode)
        if done.returncode:
            envelope(done, "bob-inspect diff", commands.EXIT_SOFTWARE)
    assert codes <= {0, commands.EXIT_SOFTWARE}, codes


def test_a_heatmap_out_of_memory_is_70_never_openblas_ending_the_process(started, pair) -> None:
    """OpenBLAS maps its work buffer at its first call (matplotlib inverting a transform) and exit(1)s where
    it cannot: just above NumPy's headroom --heatmap ended with exit 1 ("the files differ") and no envelope."""
    pytest.importorskip("matplotlib", reason="the optional extra plot")
    argv = [sys.executable, "-m", "bob", "inspect", "checkpoint", "a.bob", "--heatmap", "h.png", "--json"]
    codes = set()
    for extra in range(-4 * MiB, 12 * MiB, MiB):
        done = limited(argv, started + failures.NUMPY_HEADROOM + extra, pair)
        codes.add(done.returncode)
        assert "OpenBLAS" not in done.stderr
        if done.returncode:
            envelope(done, "bob-inspect checkpoint", commands.EXIT_SOFTWARE)
    assert codes <= {0, commands.EXIT_SOFTWARE}, codes


def test_bob_run_json_keeps_its_envelope_out_of_memory(started, tmp_path) -> None:
    record = bob.build_input(b"abracadabra", [b"abra", b"cad", b""]).to_bytes()
    (tmp_path / "record.bin").write_bytes(record)
    argv = [sys.executable, str(BOB_RUN), "--json", "--input", "record.bin", "--checkpoint", "model.bob",
            "--predictions", "pred.bin"]
    reports = 0
    for room in range(MiB // 4, 12 * MiB, MiB // 4):  # from bob's first import to a finished run
        done = limited(argv, started + room, tmp_path)
        if done.returncode == 0:
            break
        document = envelope(done, "bob-run", commands.EXIT_UNEXPECTED)
        # never anything else (an extension module that cannot be mapped is not a missing build)
        message = document["error"]["message"]
        assert message.startswith(failures.OUT_OF_MEMORY) or "[Errno 12]" in message, (room, document)
        reports += 1
    assert reports, "no limit ran bob-run out of memory"


@pytest.mark.parametrize("bad", ["--input", "--checkpoint"])
def test_bob_run_reading_a_file_by_the_schemas_out_of_memory_keeps_its_envelope(started, tmp_path, bad) -> None:
    """A file off the fast path is read by the schemas, which need NumPy: at every limit below NumPy's
    headroom, out of memory (exit 1, the envelope), never OpenBLAS's own abort, a traceback or an
    ImportError's last line (they were, between about 20 and 150 MB)."""
    record = bob.build_input(b"abracadabra", [b"abra", b"cad", b""]).to_bytes()
    checkpoint = (GOLDEN / "checkpoint-abracadabra-step10.bin").read_bytes()
    (tmp_path / "record.bin").write_bytes(record[:-1] if bad == "--input" else record)
    (tmp_path / "model.bob").write_bytes(checkpoint[:2000] if bad == "--checkpoint" else checkpoint)
    argv = [sys.executable, str(BOB_RUN), "--json", "--input", "record.bin", "--checkpoint", "model.bob",
            "--predictions", "pred.bin"]
    for room in (2 * MiB, 24 * MiB, 64 * MiB, failures.NUMPY_HEADROOM // 2):
        document = envelope(limited(argv, started + room, tmp_path), "bob-run", commands.EXIT_UNEXPECTED)
        assert document["error"]["message"].startswith(failures.OUT_OF_MEMORY), (room, document)
    refused = limited(argv, started + failures.NUMPY_HEADROOM + 64 * MiB, tmp_path)
    assert refused.returncode == 2 and json.loads(refused.stdout)["error"]["option"] == bad, refused.stderr


@pytest.mark.parametrize("pairs, room, kernel, vocabulary", [
    (10, 512 << 10, "auto", 256),
    (4_000_000, 400 << 20, "auto", 256),  # the losses' table, 8 bytes per pair and update of a block
    (1, 12 << 20, "scalar", 1024),  # the scalar reference's tables, 16 bytes per value
])
def test_the_core_short_of_address_space_raises_memory_error_not_an_abort(pairs, room, kernel, vocabulary) -> None:
    """Under ulimit -v the kernels' own allocations (their scratch, the pool's threads) would fail inside
    Rust, which aborts the process (SIGABRT, no report): train looks for its headroom first (it counted
    64 bytes a pair and no table: 4 M pairs and the scalar kernel on 1024 rows aborted)."""
    probe = ("import resource\nimport numpy as np\nimport bob.core as core\n"
             f"p, m, v = (np.zeros({vocabulary} ** 2, np.float32) for _ in range(3))\n"
             f"pairs = np.arange({pairs}, dtype=np.uint32) % {vocabulary}\n"
             "size = int([l for l in open('/proc/self/status') if l.startswith('VmSize')][0].split()[1]) * 1024\n"
             f"resource.setrlimit(resource.RLIMIT_AS, (size + {room}, resource.RLIM_INFINITY))\n"
             f"try:\n    core.train(p, m, v, pairs, pairs[::-1], 0, 16, threads=2, kernel={kernel!r})\n"
             "except MemoryError as exc:\n    print(exc, p.any(), m.any(), v.any())\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=ENV, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("less than") and "False False False" in done.stdout, \
        (done.returncode, done.stdout, done.stderr[-500:])


def test_memory_that_runs_out_between_two_chunks_of_a_train_says_how_many_updates_were_made() -> None:
    """A long train is made in chunks, each looking for its headroom: another thread that took the address
    space meanwhile made a later chunk's MemoryError say "nothing was changed", without updates_done, though
    the planes held thousands of updates."""
    probe = ("import resource, threading, time\nimport numpy as np\nimport bob.core as core\n"
             "pairs = bytes(range(256))\np, m, v = core.initial_planes()\nstart = (p.copy(), m.copy(), v.copy())\n"
             "size = int([l for l in open('/proc/self/status') if l.startswith('VmSize')][0].split()[1]) * 1024\n"
             "resource.setrlimit(resource.RLIMIT_AS, (size + (256 << 20), resource.RLIM_INFINITY))\nhog = []\n"
             "def take_it_all():\n    time.sleep(0.3)\n    for piece in (1 << 20, 1 << 16):\n"
             "        while True:\n            try:\n                hog.append(bytearray(piece))\n"
             "            except MemoryError:\n                break\n"
             "hogging = threading.Thread(target=take_it_all)\nhogging.start()\n"
             "try:\n    core.train(p, m, v, pairs, pairs[::-1], 0, 10 ** 7, threads=1)\n"
             "except MemoryError as exc:\n    hogging.join()\n    hog.clear()\n    done = exc.updates_done\n"
             "    core.train(*start, pairs, pairs[::-1], 0, done, threads=1)\n"
             "    print(done, all(np.array_equal(a.view(np.uint32), b.view(np.uint32)) for a, b in zip(start, (p, m, v))))\n"
             "    print(exc)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=ENV, timeout=120)
    count, same = done.stdout.split("\n")[0].split()
    assert done.returncode == 0 and int(count) > 0 and same == "True", (done.stdout, done.stderr[-500:])
    assert done.stdout.split("\n")[1].endswith(f"; the planes hold the state after the {count} updates made "
                                                "before it (updates_done)"), done.stdout


SCRIPTS = [("bob-inspect", 70), ("bob-fuzz", 70), ("bob-qualify", 70), ("bob-fixture", 1), ("bob-run", 1),
           ("python -m bob fuzz", 70)]


def _script_importing(tmp_path: Path, script: str, failing: "tuple[str, ...]", raised: str):
    """``script`` run (``--version``; bob-fuzz: ``targets``) with the import of each of ``failing`` raising ``raised``."""
    (tmp_path / "sitecustomize.py").write_text(
        "import sys\nclass Exhausted:\n    def find_spec(self, name, path=None, target=None):\n"
        f"        if name in {failing!r}:\n            raise {raised}\n"
        "sys.meta_path.insert(0, Exhausted())\n")
    env = dict(ENV, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT / "python")]))
    argv = ([sys.executable, "-m", "bob", "fuzz"] if script.startswith("python") else
            [sys.executable, str(BOB_RUN.parent / script)]) + (["targets"] if script.endswith("fuzz") else ["--version"])
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)


@pytest.mark.parametrize("script, code", SCRIPTS)
@pytest.mark.parametrize("exhausted", ["bob.signals", "bob.fuzz.cli"])
def test_out_of_memory_while_a_script_imports_bob_is_one_line(tmp_path, script, code, exhausted) -> None:
    """Before bob's runner can report it (the import of bob.signals, or of the command's own modules inside
    run_script, fails here as under a tight ulimit -v): one line and the command's unexpected code, never a
    traceback (bob-fuzz and bob-qualify gave one, exit 1, between about 13 and 16 MB)."""
    cli = {"bob-inspect": "bob.inspect.cli", "bob-qualify": "bob.qualify.cli", "bob-fixture": "bob.fixture",
           "bob-run": "bob.run"}
    failing = ("bob.signals", "bob.failures") if exhausted == "bob.signals" else (cli.get(script, "bob.fuzz.cli"),)
    done = _script_importing(tmp_path, script, failing, "MemoryError")
    said = "python -m bob" if script.startswith("python") else script
    lines = {"bob-run": "bob-run: out of memory: the machine could not give bob the memory it needed\n"}  # (its report,
    want = lines.get(script, "") if exhausted != "bob.signals" else ""  # prepared before bob.run is imported)
    assert (done.returncode, done.stderr) == (code, want or f"{said}: out of memory while bob was imported\n")


@pytest.mark.parametrize("argv, code", [(["--debug", "fixture"], 1), (["--json", "run"], 1),
                                         (["--json", "inspect"], 70)])
def test_python_m_bob_out_of_memory_while_importing_takes_the_command_after_its_options(tmp_path, argv, code):
    """The exit code was the first word's command only: ``python -m bob --debug fixture`` exited 70, a code
    bob-fixture never returns, where ``python -m bob fixture --debug`` exited 1."""
    (tmp_path / "sitecustomize.py").write_text(
        "import sys\nclass Exhausted:\n    def find_spec(self, name, path=None, target=None):\n"
        "        if name in ('bob.signals', 'bob.failures'):\n            raise MemoryError\n"
        "sys.meta_path.insert(0, Exhausted())\n")
    env = dict(ENV, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT / "python")]))
    done = subprocess.run([sys.executable, "-m", "bob", *argv, "--version"], capture_output=True, text=True, env=env,
                          timeout=60)
    assert (done.returncode, done.stderr) == (code, "python -m bob: out of memory while bob was imported\n")


@pytest.mark.parametrize("script, code", SCRIPTS)
@pytest.mark.parametrize("raised", ["OSError(12, 'Cannot allocate memory')",
                                    "ImportError('math.so: failed to map segment from shared object')",
                                    "ModuleNotFoundError(\"No module named 'bob.failures'\")"])
def test_an_import_that_cannot_allocate_or_map_is_out_of_memory_and_a_missing_module_is_not(
        tmp_path, script, code, raised) -> None:
    """Under ulimit -v the first of bob's imports failed as CPython found it (ENOMEM listing a directory, a
    shared object's segments not mapped): a traceback, exit 1. Those are the machine's, one line; a module
    that is missing is said as it is."""
    done = _script_importing(tmp_path, script, ("bob.failures",), raised)
    said = "python -m bob" if script.startswith("python") else script
    if raised.startswith("ModuleNotFoundError"):
        assert done.returncode == 1 and done.stderr.rstrip().endswith(raised.replace("(", ": ", 1)[:-1].replace(
            '"', "")) and "Traceback" in done.stderr, done.stderr
    else:
        assert (done.returncode, done.stderr) == (code, f"{said}: out of memory while bob was imported\n")


# --------------------------------------------------------------------------- #
# In process: the handlers
# --------------------------------------------------------------------------- #


def _exhausted(*args, **kwargs):
    raise MemoryError


def test_a_replay_that_runs_out_is_70_not_a_failing_replay(monkeypatch, capsys) -> None:
    from bob.fuzz import replay
    from bob.fuzz.cli import main

    monkeypatch.setattr(replay, "failure_of", _exhausted)
    path = ROOT / "fuzz" / "regressions" / "inspect"
    assert main(["replay", "--json", str(path)]) == commands.EXIT_SOFTWARE
    assert json.loads(capsys.readouterr().out)["error"]["message"].startswith(failures.OUT_OF_MEMORY)


def test_a_command_run_inside_another_leaves_out_of_memory_to_the_outer_one(monkeypatch) -> None:
    from bob.fuzz.targets import get
    from bob.inspect import cli

    monkeypatch.setattr(cli, "_work", _exhausted)
    with pytest.raises(MemoryError):  # the outer command (bob-fuzz replay) reports it: exit 70
        failures.LastWords("bob-fuzz", "bob-fuzz replay", commands.EXIT_SOFTWARE, False)
        try:
            get("inspect").run((GOLDEN / "checkpoint-abracadabra-step10.bin").read_bytes())
        finally:
            failures.LastWords.running.clear()


def test_a_qualification_check_that_runs_out_is_70_not_a_failed_check(monkeypatch, capsys) -> None:
    from bob.qualify import checks
    from bob.qualify.cli import main

    monkeypatch.setattr(checks, "check_public_vector", _exhausted)
    assert main(["--quick", "--json"]) == commands.EXIT_SOFTWARE


def test_a_report_whose_plots_run_out_is_70_never_a_refusal_of_its_directory(monkeypatch, capsys, tmp_path) -> None:
    """Pillow, out of memory encoding a plot, raises a plain OSError ("codec configuration error when writing
    image file"): drawn within --report's about(), it was a refusal of the directory (exit 2)."""
    pytest.importorskip("matplotlib", reason="the optional extra plot")
    from bob.qualify import report
    from bob.qualify.cli import main

    def codec_error(result):
        raise OSError("codec configuration error when writing image file")

    monkeypatch.setattr(report, "plots", codec_error)
    assert main(["--quick", "--json", "--report", str(tmp_path / "report")]) == commands.EXIT_SOFTWARE
    assert json.loads(capsys.readouterr().out)["error"]["option"] is None
    assert not (tmp_path / "report").exists()


def test_a_child_bob_run_out_of_memory_is_no_failed_check(monkeypatch, tmp_path) -> None:
    from bob.qualify import processes

    said = '{"command": "bob-run", "error": {"message": "out of memory: ..."}, "exit_code": 1, "ok": false}'
    monkeypatch.setattr(processes, "finished", lambda *a: subprocess.CompletedProcess(a, 1, said, "bob-run: oom"))
    with pytest.raises(MemoryError):
        processes.run_once(processes.RunFiles(tmp_path))


def test_when_even_the_report_runs_out_the_prepared_bytes_are_written(monkeypatch, capfd) -> None:
    monkeypatch.setattr(commands, "fail", _exhausted)
    def parser():
        p = commands.argument_parser(prog="bob-inspect")
        commands.add_common_options(p)
        return p

    code = commands.run_command("bob-inspect", parser, _exhausted, ["--json"], unexpected_code=commands.EXIT_SOFTWARE)
    out, err = capfd.readouterr()
    assert code == commands.EXIT_SOFTWARE
    assert json.loads(out)["error"]["message"].startswith(failures.OUT_OF_MEMORY)
    assert err.startswith("bob-inspect: out of memory")


def test_no_room_to_load_the_probe_itself_is_no_room_for_numpy(monkeypatch) -> None:
    """Under a tight ``ulimit -v`` the dynamic loader cannot map even ``mmap``'s own module
    ("failed to map segment from shared object"): that is running out, not an ImportError."""
    import resource

    monkeypatch.setattr(resource, "getrlimit", lambda which: (64 * MiB, resource.RLIM_INFINITY))
    monkeypatch.setitem(sys.modules, "mmap", None)  # importing it now raises ImportError
    assert failures.room_to_load(MiB) is False


DRAWING_ERRORS = [ValueError("Input array could not be made C-contiguous"), OSError("encoder error -2")]


@pytest.mark.parametrize("error", DRAWING_ERRORS, ids=["matplotlib", "pillow"])
@pytest.mark.parametrize("room", [False, True], ids=["no-room", "room"])
def test_a_heatmap_the_drawing_library_cannot_allocate_is_out_of_memory(pair, monkeypatch, capsys, error,
                                                                        room) -> None:
    """Under ``ulimit -v`` matplotlib raised "ValueError: Input array could not be made C-contiguous" while
    drawing (at 205-206 MB here), said as an unexpected ValueError; with address space left it still is one."""
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    from bob.inspect.cli import main

    def failing(*_args, **_kwargs):
        raise error

    monkeypatch.setattr(Figure, "savefig", failing)
    monkeypatch.setattr(failures, "room_to_load", lambda size=0: room or size == failures.DRAWING_HEADROOM)
    code = main(["checkpoint", str(pair / "a.bob"), "--heatmap", str(pair / "h.png")])
    err = capsys.readouterr().err
    assert code == commands.EXIT_SOFTWARE and not (pair / "h.png").exists()
    said = failures.OUT_OF_MEMORY if not room else f"unexpected error: {type(error).__name__}: {error}"
    assert err.startswith(f"bob-inspect: {said}"), err


@pytest.mark.parametrize("error", DRAWING_ERRORS, ids=["matplotlib", "pillow"])
def test_the_qualify_plots_out_of_address_space_are_out_of_memory(monkeypatch, error) -> None:
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    from bob.qualify import report

    def failing(*_args, **_kwargs):
        raise error

    monkeypatch.setattr(Figure, "savefig", failing)
    result = {"fingerprint": {}, "loss_curves": {"a": [1.0, 0.5]}}
    monkeypatch.setattr(failures, "room_to_load", lambda size=0: True)
    with pytest.raises(type(error)):
        report.plots(result)
    monkeypatch.setattr(failures, "room_to_load", lambda size=0: size == failures.DRAWING_HEADROOM)  # (at the start)
    with pytest.raises(MemoryError) as raised:
        report.plots(result)
    assert raised.value.__cause__ is error


def test_no_drawing_starts_without_its_headroom(pair, monkeypatch, capsys) -> None:
    """NumPy out of address space in a ufunc's buffers (matplotlib normalising the image) sets its MemoryError
    with the GIL released: SIGSEGV, no report (a limit about 12 MB above NumPy's headroom). A drawing starts
    only where DRAWING_HEADROOM is free, so it never runs out midway: short of it, exit 70 before any of it."""
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    from bob.inspect.cli import main

    def started(*_args, **_kwargs):
        raise AssertionError("the drawing started")

    monkeypatch.setattr(Figure, "__init__", started)
    monkeypatch.setattr(failures, "room_to_load", lambda size=0: size < failures.DRAWING_HEADROOM)
    code = main(["checkpoint", str(pair / "a.bob"), "--heatmap", str(pair / "h.png")])
    assert code == commands.EXIT_SOFTWARE and not (pair / "h.png").exists()
    assert capsys.readouterr().err.startswith(f"bob-inspect: {failures.OUT_OF_MEMORY}")


def test_an_error_raised_while_running_out_was_handled_is_out_of_memory(pair, monkeypatch, capsys) -> None:
    """CPython's BytesIO whose write runs out frees its buffer (it then says it is closed); zipfile, closing
    the archive, raised "ValueError: I/O operation on closed file.": --export out.npz under ulimit -v (with
    OPENBLAS_NUM_THREADS=2, about 157 MiB above the start) was said as an unexpected ValueError."""
    import io

    from bob.inspect.cli import main

    made: list = []

    class RunsOut(io.BytesIO):  # the first one made (the archive's) runs out as a member is written
        def __init__(self, *args) -> None:
            super().__init__(*args)
            made.append(self)

        def write(self, data) -> int:  # type: ignore[override]
            if self is made[0] and len(data) > 4096:
                self.close()
                raise MemoryError
            return super().write(data)

    monkeypatch.setattr(io, "BytesIO", RunsOut)
    code = main(["checkpoint", str(pair / "a.bob"), "--export", str(pair / "out.npz")])
    monkeypatch.undo()
    err = capsys.readouterr().err
    assert code == commands.EXIT_SOFTWARE and not (pair / "out.npz").exists()
    assert err.startswith(f"bob-inspect: {failures.OUT_OF_MEMORY}"), err


def test_an_error_raised_from_none_while_running_out_is_its_own() -> None:
    """``raise X from None`` inside an ``except MemoryError`` says X is not the shortage's: not out of memory."""
    def raised(suppress: bool) -> BaseException:
        try:
            try:
                raise MemoryError
            except MemoryError:
                if suppress:
                    raise ValueError("its own") from None
                raise ValueError("while running out")
        except ValueError as exc:
            return exc
        raise AssertionError("unreachable")

    assert failures.out_of_memory(raised(False)) and not failures.out_of_memory(raised(True))


def test_the_last_words_are_said_when_the_process_started_without_stdout(monkeypatch, capfd) -> None:
    """sys.stdout is None in a process started with it closed: the flush before the words raised AttributeError,
    past the report, where the words of an out-of-memory report are one line and the exit code."""
    words = failures.LastWords("bob-run", "bob-run", 1, False)
    try:
        monkeypatch.setattr(sys, "stdout", None)
        assert words.say() == 1
    finally:
        words.done()
    assert capfd.readouterr().err == f"bob-run: {words.message}\n"
