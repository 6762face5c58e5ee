"""Each target for a fixed, seeded number of executions (no engine; seconds), its
regressions and seed corpora replayed, and each target shown able to fail."""

from __future__ import annotations

import pytest

from bob.fuzz.loop import seeded_loop
from bob.fuzz.replay import replay
from bob.fuzz.targets import TARGETS, get, seed_files
from conftest import GOLDEN, ROOT

RUNS = {"input": 400, "checkpoint": 150, "predictions": 400, "inspect": 60, "run": 60, "core": 400, "interop": 150}
REGRESSIONS = ROOT / "fuzz" / "regressions"


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_seeded_runs_find_nothing(name: str) -> None:
    result = seeded_loop(name, RUNS[name], seed=20261130)
    assert result.executions == RUNS[name]
    assert not result.findings, [f.message for f in result.findings]


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_seed_corpus_and_regressions_pass(name: str) -> None:
    paths = [str(p) for p in seed_files(name)]
    if (REGRESSIONS / name).is_dir():
        paths.append(str(REGRESSIONS / name))
    verdicts = replay(paths, name) if paths else []
    assert all(v.passed for v in verdicts), [v for v in verdicts if not v.passed]
    assert name == "core" or verdicts


def test_the_inspect_target_is_seeded_with_every_kind_bob_inspect_reads() -> None:
    """Its seeds had no trace, which bob-inspect recognises and reads as it does the other three."""
    assert {p.name.split("-")[0] for p in seed_files("inspect")} == {"input", "checkpoint", "predictions", "trace"}


def test_every_regression_directory_names_a_target() -> None:
    python_targets = {p.name for p in REGRESSIONS.iterdir() if p.is_dir()} - {"kernels", "predict", "resume"}
    assert python_targets <= set(TARGETS)


def test_the_targets_can_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    import bob.formats.canonical as canonical

    data = (GOLDEN / "input-abracadabra.bin").read_bytes()
    monkeypatch.setattr(canonical, "recognize_record", lambda d: None)  # a fast path that never recognizes
    with pytest.raises(AssertionError, match="fast path"):
        get("input").run(data)


def test_no_property_is_an_assert_statement() -> None:
    """``python -O`` strips asserts: the targets' properties raise PropertyFailed instead."""
    import ast

    for module in ("targets", "core_target", "oracle", "properties"):
        source = (ROOT / "python" / "bob" / "fuzz" / f"{module}.py").read_text(encoding="utf-8")
        asserts = [n.lineno for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Assert)]
        assert not asserts, f"{module}.py: assert statements at lines {asserts}"


def test_the_targets_fail_under_python_optimize() -> None:
    import subprocess
    import sys

    script = (
        "import sys, bob.formats.canonical as c\n"
        "from bob.fuzz.properties import PropertyFailed\n"
        "from bob.fuzz.targets import get\n"
        "assert False, 'asserts are stripped'\n"
        "c.recognize_record = lambda d: None\n"
        f"data = open({str(GOLDEN / 'input-abracadabra.bin')!r}, 'rb').read()\n"
        "try:\n    get('input').run(data)\nexcept PropertyFailed as e:\n    print('found:', e)\n"
    )
    out = subprocess.run([sys.executable, "-O", "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("found: the fast path does not recognize"), out.stdout + out.stderr


def test_core_target_rejects_an_undocumented_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    from bob import _core
    from bob.fuzz.core_target import core_target

    def panics(*args, **kwargs):
        raise BaseException("a Rust panic stands in here")

    for name in ("train", "predict", "resume_problem", "initialize", "initial_planes", "fnv1a64", "resolved_kernel"):
        monkeypatch.setattr(_core, name, panics)
    with pytest.raises(AssertionError, match="undocumented"):
        core_target(bytes(64))


def test_regressions_are_files() -> None:
    for d in REGRESSIONS.iterdir():
        assert d.is_dir() and any(d.iterdir()), d


def test_finding_f1_f32_text_shows_flt_max() -> None:
    """docs/fuzzing.md F1: the shortest decimal of ±FLT_MAX overflowed binary32 and crashed bob-inspect."""
    import struct

    from bob.text import f32_text

    for bits in (0x7F7FFFFF, 0xFF7FFFFF, 0x7F7FFFFE):
        (x,) = struct.unpack("<f", struct.pack("<I", bits))
        assert struct.pack("<f", float(f32_text(x))) == struct.pack("<I", bits)


@pytest.mark.parametrize("refused,plant", [
    (False, "no ok"),  # an accepted checkpoint: a result
    (False, "an error on success"),
    (False, "not an object"),
    (True, "ok on a refusal"),  # not a bob file: refused, exit 2
    (True, "a wrong exit code"),
    (True, "a key beside a refusal's error"),
    (True, "an error object without its text"),
])
def test_the_inspect_target_holds_json_to_the_shared_envelope(refused: bool, plant: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """``bob-inspect --json`` printing valid JSON that is not the envelope every command
    shares (bob.commands.envelope) fails the inspect target."""
    import json

    from bob.fuzz import targets

    data = b"not a bob file" if refused else (GOLDEN / "checkpoint-abracadabra-step10.bin").read_bytes()
    get("inspect").run(data)  # passes as bob-inspect is
    real = targets.quietly

    def planted(fn, argv):
        rc, out, err = real(fn, argv)
        if "--json" not in argv:
            return rc, out, err
        document = json.loads(out)
        if plant == "no ok":
            del document["ok"]
        elif plant == "an error on success":
            document["error"] = {"message": "planted"}
        elif plant == "ok on a refusal":
            document["ok"] = True
        elif plant == "a wrong exit code":
            document["exit_code"] = 0
        elif plant == "a key beside a refusal's error":
            document["file"] = "x"
        elif plant == "an error object without its text":
            del document["error"]["text"]
        else:
            document = [document]
        return rc, json.dumps(document), err

    monkeypatch.setattr(targets, "quietly", planted)
    with pytest.raises(AssertionError, match="envelope"):
        get("inspect").run(data)


def test_an_unknown_target_s_refusal_carries_nothing_of_the_caller() -> None:
    """Asked for while its caller handles an exception, an unknown target's ValueError prints alone: no "During
    handling of the above exception" naming the caller's (its context suppressed, as ``from None`` does)."""
    try:
        raise OSError(24, "Too many open files")
    except OSError:
        with pytest.raises(ValueError, match="unknown target 'nope'") as refused:
            get("nope")
    assert refused.value.__suppress_context__ and refused.value.__cause__ is None
