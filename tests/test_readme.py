"""README.md and docs/bob-inspect.md, held to the commands they describe.

The tables are parsed and the commands run: the exit table cell by cell (a
scenario per cell, in process; an unexpected error or an interruption is
planted where the command's work would run), the ``--json`` keys of every
result the key tables name, the refusal shown as JSON, and the walk-through,
whose commands run in a fresh directory and must print exactly what README
shows. Each checker is a function of the document's text, so a planted wrong
row shows it can fail.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Collection
from pathlib import Path
from typing import Any, Callable

import pytest

from conftest import GOLDEN, ROOT, main_of

README = (ROOT / "README.md").read_text(encoding="utf-8")
INSPECT_DOC = (ROOT / "docs" / "bob-inspect.md").read_text(encoding="utf-8")
BIN = Path(sys.executable).parent
CHECKPOINT = GOLDEN / "checkpoint-abracadabra-step10.bin"
INPUT = GOLDEN / "input-abracadabra.bin"
PREDICTIONS = GOLDEN / "predictions-abracadabra.bin"
PROGRAMS = ("bob-run", "bob-fixture", "bob-inspect", "bob-qualify", "bob-fuzz")


# --------------------------------------------------------------------------- #
# Reading the documents
# --------------------------------------------------------------------------- #


def section(text: str, heading: str) -> str:
    """The text under ``heading`` (a whole heading line, ``## Commands``) up to
    the next heading of the same or a higher level."""
    level = len(heading) - len(heading.lstrip("#"))
    lines = text.splitlines()
    start = lines.index(heading)
    for end in range(start + 1, len(lines)):
        m = re.match(r"(#+) ", lines[end])
        if m and len(m.group(1)) <= level:
            return "\n".join(lines[start + 1:end])
    return "\n".join(lines[start + 1:])


def tables(text: str) -> list[list[list[str]]]:
    """Every Markdown table in ``text``: its rows (the header first, the rule
    dropped), each a list of cells (``\\|`` is a ``|`` inside a cell)."""
    out: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            if not all(re.fullmatch(r":?-+:?", c) for c in cells):
                current.append(cells)
        elif current:
            out.append(current)
            current = []
    return out


def code_spans(text: str) -> list[str]:
    return re.findall(r"`([^`]+)`", text)


def names(cell: str) -> set[str]:
    """The key names of a key-table cell: ``a, b, identical`` or `` `a`, `b` ``."""
    spans = code_spans(cell) or [cell]
    return {n.strip() for span in spans for n in span.split(",") if n.strip()}


def exit_table(text: str) -> dict[tuple[str, str], str]:
    """README's one exit table, as {(row, command): cell}."""
    (table,) = [t for t in tables(text) if t[0][0] == "exit"]
    header = [h.strip("`") for h in table[0]]
    return {(row[0], header[i]): cell for row in table[1:] for i, cell in enumerate(row) if i}


# --------------------------------------------------------------------------- #
# Running the commands in process
# --------------------------------------------------------------------------- #


def call(prog: str, argv: list[str], cwd: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main_of(prog)(argv)
    finally:
        os.chdir(here)
    return rc, out.getvalue(), err.getvalue()


def json_call(prog: str, argv: list[str], cwd: Path) -> tuple[int, dict[str, Any]]:
    args = [*argv[:argv.index("--")], "--json", *argv[argv.index("--"):]] if "--" in argv else [*argv, "--json"]
    rc, out, err = call(prog, args, cwd)
    assert out.count("\n") == 1, (prog, argv, out, err)
    return rc, json.loads(out)


def raising(exc: BaseException) -> Callable[..., Any]:
    def planted(*args: Any, **kwargs: Any) -> Any:
        raise exc
    return planted


class Scene:
    """One scenario of the exit table: the command's column, a word the cell of
    the code it ends with must hold, the command line (``{dir}`` is the
    working directory), and what is planted before it runs."""

    def __init__(self, prog: str, word: str, argv: list[str], plant: Callable[[pytest.MonkeyPatch], None] | None = None,
                 *, command: str | None = None, hold_lock: bool = False) -> None:
        self.prog, self.word, self.argv, self.plant = prog, word, argv, plant
        self.command, self.hold_lock = command or prog, hold_lock


def _run(attr: str, exc: BaseException) -> Callable[[pytest.MonkeyPatch], None]:
    def plant(mp: pytest.MonkeyPatch) -> None:
        import bob.run

        mp.setattr(bob.run, attr, raising(exc))
    return plant


def _fixture(exc: BaseException) -> Callable[[pytest.MonkeyPatch], None]:
    def plant(mp: pytest.MonkeyPatch) -> None:
        import bob.fixture

        mp.setattr(bob.fixture, "build", raising(exc))
    return plant


def _inspect(exc: BaseException) -> Callable[[pytest.MonkeyPatch], None]:
    def plant(mp: pytest.MonkeyPatch) -> None:
        from bob.inspect import cli

        mp.setitem(cli.HANDLERS, "checkpoint", raising(exc))
    return plant


def _qualify(exc: BaseException) -> Callable[[pytest.MonkeyPatch], None]:
    def plant(mp: pytest.MonkeyPatch) -> None:
        from bob.qualify import cli

        mp.setattr(cli, "_work", raising(exc))
    return plant


def _fuzz(exc: BaseException) -> Callable[[pytest.MonkeyPatch], None]:
    def plant(mp: pytest.MonkeyPatch) -> None:
        from bob.fuzz import cli

        mp.setitem(cli.COMMANDS, "targets", raising(exc))
    return plant


def _interrupted(signum: int) -> BaseException:
    from bob.signals import Interrupted

    return Interrupted(signum)


RUN = ["--input", "record.bin", "--checkpoint", "model.bob", "--predictions", "predictions.bin"]
CORPUS_CHECK = ["check", "--format", "predictions", "--corpus", "corpus", "--"]
SCENES = [
    Scene("bob-run", "done", RUN),
    Scene("bob-run", "a path", ["--input", "nope.bin", "--checkpoint", "model.bob", "--predictions", "p.bin"]),
    Scene("bob-run", "content", ["--input", "model.bob", "--checkpoint", "m.bob", "--predictions", "p.bin"]),
    Scene("bob-run", "command line", ["--input", "record.bin"]),
    Scene("bob-run", "in use", RUN, hold_lock=True),
    Scene("bob-run", "unexpected", RUN, _run("run_files", RuntimeError("planted"))),
    Scene("bob-run", "interrupted", RUN, _run("run_files", KeyboardInterrupt())),
    Scene("bob-run", "SIGTERM", RUN, _run("run_files", _interrupted(signal.SIGTERM))),
    Scene("bob-run", "SIGHUP", RUN, _run("run_files", _interrupted(signal.SIGHUP))),
    Scene("bob-fixture", "written", ["--text", "abc", "--prompt", "a", "--prompt", "b", "--prompt", "", "--output",
                                     "r.bin"]),
    Scene("bob-fixture", "a path", ["--corpus", "nope.txt", "--prompt", "a", "--prompt", "b", "--prompt", "c",
                                    "--output", "r.bin"]),
    Scene("bob-fixture", "command line", ["--text", "abc"]),
    Scene("bob-fixture", "unexpected", ["--text", "abc", "--prompt", "a", "--prompt", "b", "--prompt", "", "--output",
                                        "r.bin"], _fixture(RuntimeError("planted"))),
    Scene("bob-fixture", "interrupted", ["--text", "abc", "--prompt", "a", "--prompt", "b", "--prompt", "",
                                         "--output", "r.bin"], _fixture(KeyboardInterrupt())),
    Scene("bob-fixture", "SIGTERM", ["--text", "abc", "--prompt", "a", "--prompt", "b", "--prompt", "", "--output",
                                     "r.bin"], _fixture(_interrupted(signal.SIGTERM))),
    Scene("bob-inspect", "clean", ["checkpoint", "model.bob"], command="bob-inspect checkpoint"),
    Scene("bob-inspect", "equal", ["diff", "model.bob", "model.bob"], command="bob-inspect diff"),
    Scene("bob-inspect", "differ", ["diff", "model.bob", "step20.bob"], command="bob-inspect diff"),
    Scene("bob-inspect", "the runs agree", ["trace", "run.trace", "run.trace"], command="bob-inspect trace"),
    Scene("bob-inspect", "the runs part", ["trace", "run.trace", "other.trace"], command="bob-inspect trace"),
    Scene("bob-inspect", "problems", ["checkpoint", "record.bin"], command="bob-inspect checkpoint"),
    Scene("bob-inspect", "cannot be read", ["predictions", "nope.bin"], command="bob-inspect predictions"),
    Scene("bob-inspect", "command line", ["diff", "model.bob"], command="bob-inspect diff"),
    Scene("bob-inspect", "unexpected", ["checkpoint", "model.bob"], _inspect(RuntimeError("planted")),
          command="bob-inspect checkpoint"),
    Scene("bob-inspect", "interrupted", ["checkpoint", "model.bob"], _inspect(KeyboardInterrupt()),
          command="bob-inspect checkpoint"),
    Scene("bob-inspect", "SIGHUP", ["checkpoint", "model.bob"], _inspect(_interrupted(signal.SIGHUP)),
          command="bob-inspect checkpoint"),
    Scene("bob-qualify", "a path", ["--report", "/dev/full"]),
    Scene("bob-qualify", "command line", ["--seed", "nan"]),
    Scene("bob-qualify", "unexpected", [], _qualify(RuntimeError("planted"))),
    Scene("bob-qualify", "interrupted", [], _qualify(KeyboardInterrupt())),
    Scene("bob-qualify", "SIGTERM", [], _qualify(_interrupted(signal.SIGTERM))),
    Scene("bob-fuzz", "every reader agreed", [*CORPUS_CHECK, "true"], command="bob-fuzz check"),
    Scene("bob-fuzz", "disagreed", [*CORPUS_CHECK, "false"], command="bob-fuzz check"),
    Scene("bob-fuzz", "a path", ["replay", "nope.bin"], command="bob-fuzz replay"),
    Scene("bob-fuzz", "command line", ["check", "--format", "nope", "--", "true"], command="bob-fuzz check"),
    Scene("bob-fuzz", "unexpected", ["targets"], _fuzz(RuntimeError("planted")), command="bob-fuzz targets"),
    Scene("bob-fuzz", "interrupted", ["targets"], _fuzz(KeyboardInterrupt()), command="bob-fuzz targets"),
    Scene("bob-fuzz", "SIGTERM", ["targets"], _fuzz(_interrupted(signal.SIGTERM)), command="bob-fuzz targets"),
]
# Cells no scenario here produces, and where they are tested instead.
NOT_RUN = {
    ("0", "bob-qualify"): "tests/qualify/test_qualify_cli.py: a whole qualification takes seconds",
    ("1", "bob-qualify"): "tests/qualify/test_qualify_cli.py: BOB_QUALIFY_PERTURB fails the kernels check",
}


def workdir(root: Path) -> Path:
    """Files the scenarios use: an input record, checkpoints at steps 10 and
    20, a conformance corpus of one predictions file."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(INPUT, root / "record.bin")
    shutil.copyfile(CHECKPOINT, root / "model.bob")
    import bob

    step20 = bob.invoke(INPUT.read_bytes(), CHECKPOINT.read_bytes(), trace=True)
    (root / "step20.bob").write_bytes(step20.checkpoint_bytes())
    (root / "run.trace").write_bytes(step20.trace_bytes())  # and a run that parts from it at its fifth update
    entries = list(step20.trace.entries)
    entries[4] = entries[4]._replace(digests=(bytes(16),) + entries[4].digests[1:])
    trace = step20.trace
    (root / "other.trace").write_bytes(bob.Trace(trace.contract_sha256, trace.input_sha256, trace.step_before,
                                                 trace.start, tuple(entries)).to_bytes())
    (root / "corpus" / "predictions" / "accepted").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(PREDICTIONS, root / "corpus" / "predictions" / "accepted" / "golden.bin")
    (root / "corpus" / "manifest.json").write_text(json.dumps({"format": "bob-conformance-1", "files": [
        {"file": "predictions/accepted/golden.bin", "format": "predictions", "verdict": "accept", "field": None,
         "offset": None, "error": None, "message": None, "fields": []}]}))
    return root


def play(scene: Scene, root: Path, *, as_json: bool) -> tuple[int, dict[str, Any] | None]:
    """Run ``scene`` in a fresh copy of the work files: its exit code (and, with
    ``as_json``, the object it printed)."""
    cwd = workdir(root)
    lock = None
    if scene.hold_lock:
        from bob.lock import lock_path_for

        lock = os.open(lock_path_for(str(cwd / "model.bob")), os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        with pytest.MonkeyPatch.context() as mp:
            if scene.plant is not None:
                scene.plant(mp)
            if as_json:
                return json_call(scene.prog, scene.argv, cwd)
            rc, _, _ = call(scene.prog, scene.argv, cwd)
            return rc, None
    finally:
        if lock is not None:
            os.close(lock)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Scene, int, dict[str, Any] | None]]:
    """Each scenario's exit code, as text and with --json (the same code both ways)."""
    root = tmp_path_factory.mktemp("scenes")
    out = []
    for i, scene in enumerate(SCENES):
        rc, _ = play(scene, root / f"{i}-text", as_json=False)
        rc_json, document = play(scene, root / f"{i}-json", as_json=True)
        assert rc == rc_json, (scene.prog, scene.argv, rc, rc_json)
        out.append((scene, rc, document))
    return out


def row_of(rows: "Collection[str]", code: int) -> str:
    """The row of an exit table that says what ``code`` means: its own, or 128+N for a signal's."""
    return str(code) if str(code) in rows else "128+N" if code > 128 else str(code)


def exit_table_mismatches(text: str, results: list[tuple[Scene, int, Any]]) -> list[str]:
    """Where the exit table says otherwise than the commands do: a scenario whose
    code's cell lacks its word, or a cell no scenario produces (nor NOT_RUN names)."""
    table = exit_table(text)
    found, seen = [], set()
    for scene, code, _ in results:
        row = row_of({row for row, _ in table}, code)
        seen.add((row, scene.prog))
        if scene.word not in table.get((row, scene.prog), ""):
            found.append(f"{scene.prog} {' '.join(scene.argv)}: exit {code}, whose cell "
                         f"{table.get((row, scene.prog), '')!r} does not say {scene.word!r}")
    for (row, prog), cell in table.items():
        if cell and (row, prog) not in seen and (row, prog) not in NOT_RUN:
            found.append(f"{prog} exit {row} ({cell!r}): no scenario ends so")
    return found


# --------------------------------------------------------------------------- #
# The exit table
# --------------------------------------------------------------------------- #


def test_readme_has_one_exit_table_with_a_column_per_command() -> None:
    assert [t[0][0] for t in tables(README)].count("exit") == 1
    assert {prog for _, prog in exit_table(README)} == set(PROGRAMS)


def test_every_exit_code_readme_gives_is_the_one_the_command_returns(outcomes) -> None:
    assert exit_table_mismatches(README, outcomes) == []


def test_the_exit_table_check_can_fail(outcomes) -> None:
    # rows 1 and 70 swapped: bob-inspect's unexpected error would be "the files differ"
    swapped = README.replace("\n| 1 |", "\n| @ |").replace("\n| 70 |", "\n| 1 |").replace("\n| @ |", "\n| 70 |")
    assert swapped != README
    assert any("bob-inspect" in m and "'unexpected'" in m for m in exit_table_mismatches(swapped, outcomes))
    # a code claimed that no command returns
    row = "| 75 | a file it replaces is in use by another `bob-run`, or another process changed it (or its lock) while " \
        "this run held the lock: nothing changed | |"
    claimed = README.replace(row, row[:-1] + " busy |")
    assert claimed != README
    assert exit_table_mismatches(claimed, outcomes) == ["bob-fixture exit 75 ('busy'): no scenario ends so"]


def help_exit_codes(prog: str, cwd: Path) -> set[int]:
    """The exit codes ``PROG --help`` lists (its epilog: "exit codes: 0 done, 1 unexpected, …")."""
    rc, out, _ = call(prog, ["--help"], cwd)
    assert rc == 0 and "exit codes: " in out, (prog, out)
    return {int(n) for n in re.findall(r"\b(\d+) [\w(]", " ".join(out.split()).split("exit codes: ", 1)[1])}


def test_every_command_s_help_lists_the_exit_codes_readme_gives_it(tmp_path: Path) -> None:
    table = exit_table(README)
    for prog in PROGRAMS:
        signals = {143, 129} if table[("128+N", prog)] else set()
        assert help_exit_codes(prog, tmp_path) == signals | {int(row) for (row, p), cell in table.items()
                                                             if p == prog and cell and row.isdigit()}, prog


def test_the_json_object_carries_the_exit_code_and_names_the_command(outcomes) -> None:
    shared = shared_keys(README)
    for scene, code, document in outcomes:
        assert document is not None
        assert set(shared) <= set(document), (scene.argv, document)
        assert (document["command"], document["exit_code"], document["ok"]) == (scene.command, code, code == 0)
        if document["error"] is not None:
            assert document["error"]["exit_code"] == code


def test_every_code_a_commands_help_names_has_a_cell() -> None:
    table = exit_table(README)
    for prog in PROGRAMS:
        rc, out, _ = call(prog, ["--help"], ROOT)
        epilog = " ".join(out[out.lower().find("exit codes:"):].split()) if "exit codes:" in out.lower() else ""
        for code in re.findall(r"\b(\d+) [a-z]", epilog):
            assert table.get((code, prog)), (prog, code, epilog)


# --------------------------------------------------------------------------- #
# --json: the shared keys, the error object, the keys of each result
# --------------------------------------------------------------------------- #


def json_section(text: str) -> str:
    return section(text, "### `--json`")


def shared_keys(text: str) -> list[str]:
    (first, *_) = tables(json_section(text))
    assert first[0][0] == "key"
    return [row[0].strip("`") for row in first[1:]]


def error_keys(text: str) -> tuple[set[str], set[str]]:
    """The keys README gives the ``error`` object, and those of its ``finding``."""
    (paragraph,) = [p for p in json_section(text).split("\n\n") if p.startswith("The `error` object has the keys")]
    keys = paragraph.split("has the keys", 1)[1].split(", and, when a file's content", 1)[0]
    finding = paragraph.split("`bob.FormatError.to_dict()`:", 1)[1].split(".\n", 1)[0]
    return set(code_spans(keys)), set(code_spans(finding))


def result_keys(text: str) -> dict[str, set[str]]:
    (_, keys) = tables(json_section(text))
    assert keys[0][0] == "command"
    return {row[0].strip("`"): names(row[1]) for row in keys[1:]}


RESULTS = {  # a success of each command the key table names (and a report of a file with problems)
    "bob-fixture": [("bob-fixture", ["--text", "abc", "--prompt", "a", "--prompt", "b", "--prompt", "", "--output",
                                     "r.bin"])],
    "bob-run": [("bob-run", RUN)],
    "bob-inspect checkpoint": [("bob-inspect", ["checkpoint", "model.bob"]),
                               ("bob-inspect", ["checkpoint", "record.bin"]), ("bob-inspect", ["model.bob"])],
    "bob-inspect input": [("bob-inspect", ["input", "record.bin"]), ("bob-inspect", ["input", "model.bob"])],
    "bob-inspect predictions": [("bob-inspect", ["predictions", str(PREDICTIONS)]),
                                ("bob-inspect", ["predictions", "record.bin"])],
    "bob-inspect diff": [("bob-inspect", ["diff", "model.bob", "step20.bob"]),
                         ("bob-inspect", ["diff", "model.bob", "model.bob", "--ulp", "1"]),
                         ("bob-inspect", ["diff", "model.bob", "record.bin"])],
    "bob-inspect trace A": [("bob-inspect", ["trace", "run.trace"]), ("bob-inspect", ["run.trace"])],
    "bob-inspect trace A B": [("bob-inspect", ["trace", "run.trace", "run.trace"]),
                          ("bob-inspect", ["trace", "run.trace", "other.trace", "--checkpoints", "step20.bob",
                                           "step20.bob"])],
    "bob-inspect verify": [("bob-inspect", ["verify", "model.bob", "record.bin", "nope.bin"])],
    "bob-inspect schema": [("bob-inspect", ["schema"]), ("bob-inspect", ["schema", "predictions"])],
    "bob-fuzz targets": [("bob-fuzz", ["targets"])],
    "bob-fuzz run": [("bob-fuzz", ["run", "predictions", "--engine", "loop", "--runs", "5", "--artifacts", "found"])],
    "bob-fuzz replay": [("bob-fuzz", ["replay", "model.bob", "--target", "checkpoint"])],
    "bob-fuzz minimize": [("bob-fuzz", ["minimize", "record.bin", "--target", "convention_targets:always_fails",
                                        "--max-tries", "3", "--output", "small.bin"])],
    "bob-fuzz conformance": [("bob-fuzz", ["conformance", "made"])],
    "bob-fuzz check": [("bob-fuzz", [*CORPUS_CHECK, "true"])],
}


def key_mismatches(text: str, printed: dict[str, list[set[str]]]) -> list[str]:
    shared = set(shared_keys(text))
    documented = result_keys(text)
    found = [f"{c}: documented, not run" for c in documented if c not in printed]
    for command, key_sets in printed.items():
        want = documented.get(command, set()) | shared
        for keys in key_sets:
            if keys != want:
                found.append(f"{command}: missing {sorted(want - keys)}, undocumented {sorted(keys - want)}")
    return found


@pytest.fixture(scope="module")
def printed_keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[set[str]]]:
    root = tmp_path_factory.mktemp("keys")
    out: dict[str, list[set[str]]] = {}
    targets = str(ROOT / "tests" / "commands")  # convention_targets, for minimize's workers too
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(targets)
        patch.setenv("PYTHONPATH", os.pathsep.join([targets, os.environ.get("PYTHONPATH", "")]))
        for i, (command, runs) in enumerate(RESULTS.items()):
            for j, (prog, argv) in enumerate(runs):
                _, document = json_call(prog, argv, workdir(root / f"{i}-{j}"))
                assert document["command"] == command.removesuffix(" A B").removesuffix(" A")  # (trace's forms)
                out.setdefault(command, []).append(set(document))
    return out


def test_every_result_prints_exactly_the_keys_readme_gives(printed_keys) -> None:
    assert key_mismatches(README, printed_keys) == []


def test_the_key_check_can_fail(printed_keys) -> None:
    planted = README.replace("| `bob-inspect schema` | `formats` |", "| `bob-inspect schema` | `formats, kinds` |")
    assert planted != README
    assert key_mismatches(planted, printed_keys) == ["bob-inspect schema: missing ['kinds'], undocumented []"] * 2


def test_a_refusal_prints_the_shared_keys_and_the_error_object_readme_gives(tmp_path: Path) -> None:
    error, finding = error_keys(README)
    cwd = workdir(tmp_path)
    rc, document = json_call("bob-run", ["--input", "nope.bin", "--checkpoint", "m.bob", "--predictions", "p.bin"], cwd)
    assert rc == 2 and list(document) == sorted(shared_keys(README)) and set(document["error"]) == error
    (block,) = re.findall(r"```json\n(.*?)```", json_section(README), re.S)
    assert json.loads(block) == document  # the example is what bob-run prints
    # a file's content refused: the error names its finding
    rc, document = json_call("bob-run", ["--input", "model.bob", "--checkpoint", "m.bob", "--predictions", "p.bin"],
                             cwd)
    assert rc == 2 and set(document["error"]) == error | {"finding"} and set(document["error"]["finding"]) == finding
    # a usage error: the same object
    for prog, argv in (("bob-fixture", []), ("bob-inspect", ["diff", "model.bob"]), ("bob-qualify", ["--bogus"]),
                       ("bob-fuzz", ["bogus"])):
        rc, document = json_call(prog, argv, cwd)
        assert rc == 2 and set(document) == set(shared_keys(README)) and set(document["error"]) == error, prog


def test_the_error_key_check_can_fail() -> None:
    planted = README.replace("`field`, `message`, `exit_code`", "`field`, `message`, `exit`")
    assert planted != README
    assert "exit" in error_keys(planted)[0] and "exit" not in error_keys(README)[0]


# --------------------------------------------------------------------------- #
# The walk-through
# --------------------------------------------------------------------------- #


def walkthrough(text: str) -> list[tuple[str, str]]:
    """(command, the output README shows) for each ``$`` line of the walk-through."""
    (block,) = re.findall(r"```console\n(.*?)```", section(text, "## A first walk-through"), re.S)
    steps: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    return [(command, "".join(f"{line}\n" for line in out)) for command, out in steps]


def transcript(commands: list[str], cwd: Path) -> list[str]:
    """What each command prints (stdout and stderr), run in order by one shell
    in ``cwd`` with the commands of the bob under test on PATH."""
    marker = "\x1estep\x1e"  # (printf writes it from its octal escapes)
    script = "".join(f"__rc=$?; printf '\\036step\\036'; (exit $__rc); {c} 2>&1\n" for c in commands)
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    return done.stdout.split(marker)[1:]


def walkthrough_mismatches(text: str, printed: list[str]) -> list[str]:
    steps = walkthrough(text)
    if len(steps) != len(printed):
        return [f"{len(steps)} commands shown, {len(printed)} run"]
    return [f"$ {command}: README shows {shown!r}, it prints {got!r}"
            for (command, shown), got in zip(steps, printed) if shown != got]


@pytest.fixture(scope="module")
def walked(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return transcript([command for command, _ in walkthrough(README)], tmp_path_factory.mktemp("walk"))


def test_the_walkthrough_prints_what_readme_shows(walked) -> None:
    steps = walkthrough(README)
    programs = [c.split()[0] for c, _ in steps]
    # three runs, and the third run again (traced both times) to compare the traces
    assert programs.count("bob-fixture") == 1 and programs.count("bob-run") == 4
    assert {"bob-inspect checkpoint", "bob-inspect diff", "bob-inspect trace"} <= {" ".join(c.split()[:2])
                                                                                   for c, _ in steps}
    assert walkthrough_mismatches(README, walked) == []


def test_the_walkthrough_check_can_fail(walked) -> None:
    planted = README.replace("bob-run: step 10 -> 20\n", "bob-run: step 10 -> 21\n", 1)
    assert planted != README
    (mismatch,) = walkthrough_mismatches(planted, walked)
    assert "step 10 -> 21" in mismatch


# --------------------------------------------------------------------------- #
# docs/bob-inspect.md
# --------------------------------------------------------------------------- #


def inspect_exit_rows(text: str) -> dict[str, str]:
    (table,) = tables(section(text, "## Exit codes"))
    assert table[0][:2] == ["code", "meaning"]
    return {row[0]: row[1] for row in table[1:]}


def inspect_exit_mismatches(text: str, results: list[tuple[Scene, int, Any]]) -> list[str]:
    rows = inspect_exit_rows(text)
    inspect = [(scene, code) for scene, code, _ in results if scene.prog == "bob-inspect"]
    found = [f"bob-inspect {' '.join(s.argv)}: exit {code}, whose row {rows.get(row_of(rows, code), '')!r} does "
             f"not say {s.word!r}" for s, code in inspect if s.word not in rows.get(row_of(rows, code), "")]
    readme = {row for (row, prog), cell in exit_table(README).items() if prog == "bob-inspect" and cell}
    if set(rows) != readme or set(rows) != {row_of(rows, code) for _, code in inspect}:
        found.append(f"codes: docs {sorted(rows)}, README {sorted(readme)}, run {sorted({c for _, c in inspect})}")
    return found


def test_docs_bob_inspect_exit_codes_are_the_commands(outcomes) -> None:
    assert inspect_exit_mismatches(INSPECT_DOC, outcomes) == []


def test_the_docs_exit_check_can_fail(outcomes) -> None:
    planted = INSPECT_DOC.replace("\n| 70 |", "\n| 1 |", 1)
    assert planted != INSPECT_DOC
    assert inspect_exit_mismatches(planted, outcomes)


def test_docs_bob_inspect_refusal_is_what_the_command_prints(tmp_path: Path) -> None:
    (block,) = re.findall(r"```json\n(.*?)```", section(INSPECT_DOC, "## Exit codes"), re.S)
    shown = json.loads(block)
    rc, document = json_call("bob-inspect", ["checkpoint", shown["error"]["path"]], workdir(tmp_path))
    assert rc == 2 and document == shown


def doc_keys(text: str, command: str) -> set[str]:
    """The top-level keys docs/bob-inspect.md gives ``command``'s report."""
    reference = section(text, "## JSON reference")

    def keys_of(heading: str) -> set[str]:
        return {n for t in tables(section(reference, heading)) if t[0][0] == "key" for row in t[1:]
                for n in names(row[0])}

    out = keys_of("### Every object")
    if command in ("checkpoint", "input", "predictions", "trace FILE"):
        out |= keys_of("### Every file report")
    return out | keys_of(f"### `{command}`")


def test_docs_bob_inspect_keys_are_what_each_subcommand_prints(printed_keys) -> None:
    for command in ("checkpoint", "input", "predictions", "diff", "trace", "schema"):
        for keys in printed_keys[f"bob-inspect {command}" + (" A B" if command == "trace" else "")]:
            assert doc_keys(INSPECT_DOC, command) == keys, command


def test_docs_bob_inspect_keys_are_what_one_trace_prints(tmp_path: Path) -> None:
    cwd = workdir(tmp_path)
    for argv, code in ((["run.trace"], 0), (["trace", "run.trace"], 0), (["trace", "model.bob"], 2)):
        rc, document = json_call("bob-inspect", argv, cwd)
        assert (rc, document["command"]) == (code, "bob-inspect trace")
        assert doc_keys(INSPECT_DOC, "trace FILE") == set(document), argv


def test_the_docs_key_check_can_fail() -> None:
    planted = INSPECT_DOC.replace("| `identical` |", "| `same` |", 1)
    assert planted != INSPECT_DOC
    assert "same" in doc_keys(planted, "diff") and "identical" not in doc_keys(planted, "diff")


# --------------------------------------------------------------------------- #
# One spelling of each format
# --------------------------------------------------------------------------- #

ALIAS = re.compile(r"(?<![\w.-])(ckpt|pred|envelope)(?![\w.-])")
# Where an alias may be named: the one sentence that says they are aliases, and
# README's Layout rows of the modules being moved (rewritten with them).
ALIAS_ALLOWED = ("| formats | ", "| `python/bob/formats/` | ", "| `python/bob/fuzz/`", "`ckpt` and `pred` are accepted",
                 "`schema`, `envelope` of `checkpoint`")


def alias_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if ALIAS.search(line) and not any(a in line for a in ALIAS_ALLOWED)]


def test_readme_and_docs_spell_each_format_one_way() -> None:
    assert alias_lines(README) == [] and alias_lines(INSPECT_DOC) == []


def test_the_spelling_check_can_fail() -> None:
    assert alias_lines(README + "\nRun `bob-inspect ckpt FILE`.\n") == ["Run `bob-inspect ckpt FILE`."]
    assert alias_lines("the `bob-envelope` format, `bob.formats.envelope`, `envelope_schema.py`") == []


def test_the_layout_names_every_module_and_package_of_bob() -> None:
    """README's Layout table is where a newcomer looks a module up: each one of python/bob is in it."""
    layout = README[README.index("## Layout"):README.index("## Dependencies")]
    rows = [line for line in layout.splitlines() if line.startswith("| `python/bob/")]
    package = ROOT / "python" / "bob"
    names = [p.name for p in package.glob("*.py") if p.name != "__main__.py"]  # (python -m bob: README's Commands)
    names += [f"{p.name}/" for p in package.iterdir() if (p / "__init__.py").exists()]
    missing = [n for n in names if not any(f"`python/bob/{n}`" in row or f"`{n}`" in row for row in rows)]
    assert missing == []


def test_the_library_example_runs_and_writes_the_checkpoint_last(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """README's first library example, run as written: a crash between its two writes must leave the old
    checkpoint (the next run writes both again), never the new one beside the old predictions."""
    import bob

    example = section(README, "## Library").split("```python\n", 1)[1].split("```", 1)[0]
    written: list[str] = []
    for kind in (bob.Checkpoint, bob.Predictions):
        monkeypatch.setattr(kind, "write", lambda self, path, real=kind.write: (written.append(str(path)),
                                                                               real(self, path))[1])
    monkeypatch.chdir(tmp_path)
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(example, "README.md", "exec"), {})
    assert written == ["predictions.bin", "model.bob"] and bob.read_checkpoint_file("model.bob").step == 10
