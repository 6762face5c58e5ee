"""``bob.invoke``: one invocation in memory, the same bytes as ``bob-run``, and it never mutates what it is given."""

from __future__ import annotations

import pickle
import random
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import bob
from bob.errors import ERROR_CLASSES, FormatError
from bob.run import main as run_main
from bob.formats.constants import UPDATES_PER_INVOCATION as U
from conftest import CKPT_10_SHA256, CKPT_20_SHA256, CORPUS, PRED_HEX, PROMPTS, ROOT, sha


def run_files(tmp: Path, record: bytes, checkpoint: bytes | None) -> tuple[int, bytes, bytes]:
    """bob-run in this process on files holding ``record`` and ``checkpoint`` (None: no file)."""
    (tmp / "rec.bin").write_bytes(record)
    ck = tmp / "ck.bin"
    if checkpoint is None:
        ck.unlink(missing_ok=True)
    else:
        ck.write_bytes(checkpoint)
    (tmp / "pred.bin").unlink(missing_ok=True)
    rc = run_main(["--input", str(tmp / "rec.bin"), "--checkpoint", str(ck), "--predictions", str(tmp / "pred.bin"),
                   "--json"])
    return rc, ck.read_bytes(), (tmp / "pred.bin").read_bytes() if rc == 0 else b""


def test_section8_through_invoke_fresh_then_resumed() -> None:
    record = bob.build_input(CORPUS, PROMPTS)
    first = bob.invoke(record)
    assert (first.step_before, first.step_after, first.fresh) == (0, 10, True)
    assert sha(first.checkpoint_bytes()) == CKPT_10_SHA256 and first.predictions_bytes().hex() == PRED_HEX
    assert len(first.losses) == 10 and all(isinstance(x, float) for x in first.losses)
    second = bob.invoke(record.to_bytes(), first.checkpoint_bytes())
    assert (second.step_before, second.step_after, second.fresh) == (10, 20, False)
    assert sha(second.checkpoint_bytes()) == CKPT_20_SHA256
    # A Checkpoint object, its bytes and a thread count give the same result.
    assert bob.invoke(record, first.checkpoint, threads=1).checkpoint_bytes() == second.checkpoint_bytes()


def _random_record(rnd: random.Random) -> bytes:
    corpus = rnd.randbytes(rnd.randrange(2, 400))
    prompts = [rnd.randbytes(rnd.randrange(0, 4)) for _ in range(3)]
    return bob.build_input(corpus, prompts).to_bytes()


@pytest.mark.parametrize("seed", range(4))
def test_invoke_equals_bob_run_byte_for_byte(tmp_path: Path, seed: int, capsys) -> None:
    rnd = random.Random(seed)
    record = _random_record(rnd)
    checkpoint: bytes | None = None
    for _ in range(2):  # fresh, then resumed
        rc, ck, pred = run_files(tmp_path, record, checkpoint)
        capsys.readouterr()
        assert rc == 0
        result = bob.invoke(record, checkpoint or b"")
        assert ck == result.checkpoint_bytes() and pred == result.predictions_bytes()
        checkpoint = ck


def test_invoke_equals_a_fresh_bob_run_process(tmp_path: Path) -> None:
    record = bob.build_input(b"hello, bob", [b"he", b"", b"o"]).to_bytes()
    (tmp_path / "rec.bin").write_bytes(record)
    args = [sys.executable, "-m", "bob", "run", "--input", str(tmp_path / "rec.bin"),
            "--checkpoint", str(tmp_path / "ck.bin"), "--predictions", str(tmp_path / "pred.bin")]
    subprocess.run(args, check=True, capture_output=True)
    result = bob.invoke(record)
    assert (tmp_path / "ck.bin").read_bytes() == result.checkpoint_bytes()
    assert (tmp_path / "pred.bin").read_bytes() == result.predictions_bytes()


def test_invoke_never_mutates_its_arguments() -> None:
    record = bob.build_input(CORPUS, PROMPTS)
    start = bob.invoke(record).checkpoint
    before = (start.step, start.p.copy(), start.m.copy(), start.v.copy())
    record_bytes = record.to_bytes()
    raw = bytearray(start.to_bytes())
    raw_before = bytes(raw)
    bob.invoke(record, start)
    bob.invoke(bytearray(record_bytes), raw)
    assert start.step == before[0]
    for now, was in zip((start.p, start.m, start.v), before[1:]):
        assert np.array_equal(now.view(np.uint32), was.view(np.uint32))
    assert bytes(raw) == raw_before and record.to_bytes() == record_bytes


def test_result_shares_no_memory_with_the_arguments() -> None:
    record = bob.build_input(CORPUS, PROMPTS)
    start = bob.invoke(record).checkpoint
    result = bob.invoke(record, start)
    for a in (result.checkpoint.p, result.checkpoint.m, result.checkpoint.v):
        for b in (start.p, start.m, start.v):
            assert not np.shares_memory(a, b)


def test_invoke_refuses_by_name() -> None:
    record = bob.build_input(CORPUS, PROMPTS).to_bytes()
    with pytest.raises(bob.NotABobFile) as info:
        bob.invoke(b"BOB-CKPT" + bytes(len(record) - 8))
    assert info.value.field == "magic"
    ck = bob.invoke(record).checkpoint
    other = bob.Checkpoint(ck.step, ck.p, ck.m, ck.v, contract=bob.Contract(seed=b"bob-seed-v2"))
    with pytest.raises(bob.ContractMismatch) as mismatch:
        bob.invoke(record, other.to_bytes())
    assert mismatch.value.field == "seed"
    with pytest.raises(bob.ContractMismatch):  # the object itself, not only its bytes
        bob.invoke(record, other)
    state = bob.invoke(record).checkpoint
    state.v[3] = -1.0
    with pytest.raises(bob.StateRefused) as refused:
        bob.invoke(record, state)
    assert (refused.value.field, refused.value.index) == ("V", 3)


def test_a_state_that_would_become_non_finite_is_refused_not_returned(tmp_path: Path, capsys) -> None:
    """M = FLT_MAX with V = 0 is a valid state to resume from, but its next
    update divides FLT_MAX by ε: P would become -inf. Nothing bob would refuse
    to read is ever produced — by the library or by bob-run."""
    record = bob.build_input(CORPUS, PROMPTS)
    state = bob.invoke(record).checkpoint
    k = ord("a") * 256 + ord("b")
    state.m[k] = np.finfo(np.float32).max
    state.v[k] = 0.0
    with pytest.raises(bob.StateRefused) as info:
        bob.invoke(record, state)
    refused = info.value
    assert (refused.field, refused.index, refused.expected, refused.actual) == ("P", k, "finite", float("-inf"))
    assert refused.message == (f"the {U} updates from step {U} would make plane P non-finite "
                               "(first at context 97, next 98); nothing was written")
    data = state.to_bytes()
    rc, after, _ = run_files(tmp_path, record.to_bytes(), data)
    out = capsys.readouterr()
    assert rc == 2 and after == data and not (tmp_path / "pred.bin").exists()
    assert '"field": "P"' in out.out and "--checkpoint" in out.err and "Traceback" not in out.err


def test_a_state_left_with_no_room_for_another_invocation_is_refused() -> None:
    """Step 2^64 - 2U can make its U updates, but the state after them could
    never be resumed: refused, naming the step."""
    record = bob.build_input(CORPUS, PROMPTS)
    state = bob.invoke(record).checkpoint
    last = 2**64 - 2 * U
    state.step = last
    with pytest.raises(bob.StateRefused) as info:
        bob.invoke(record, state)
    refused = info.value
    assert (refused.field, refused.actual, refused.index) == ("step", last + U, None)
    assert refused.message == (f"the {U} updates from step {last} would leave no room for the next {U} updates "
                               "in a u64 step; nothing was written")


def test_the_invocation_shows_what_it_holds() -> None:
    result = bob.invoke(bob.build_input(CORPUS, PROMPTS))
    assert repr(result) == "Invocation(step 0 -> 10, loss 5.548397 -> 4.663767, tokens (99, 97, 0))"
    assert result.fresh and not bob.invoke(bob.build_input(CORPUS, PROMPTS), result.checkpoint).fresh
    with pytest.raises(AttributeError):
        del result.losses


def test_invocation_is_frozen_and_typed() -> None:
    result = bob.invoke(bob.build_input(CORPUS, PROMPTS))
    with pytest.raises(AttributeError):
        result.losses = ()  # type: ignore[misc]
    assert isinstance(result.checkpoint, bob.Checkpoint) and isinstance(result.predictions, bob.Predictions)


@pytest.mark.parametrize("cls", [FormatError, *ERROR_CLASSES])
def test_every_format_error_pickles(cls) -> None:
    err = cls("learner", "differs", expected=b"\x00\xff", actual=float("nan"), offset=7, index=2)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is cls and str(back) == str(err) and back.to_dict() == err.to_dict()


def test_readme_library_snippet_runs_as_written(tmp_path: Path, monkeypatch) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Library"):]
    snippet = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert len(snippet.strip().splitlines()) < 10
    monkeypatch.chdir(tmp_path)
    exec(compile(snippet, "README.md", "exec"), {})
    assert sha((tmp_path / "model.bob").read_bytes()) == CKPT_10_SHA256
    assert (tmp_path / "predictions.bin").read_bytes().hex() == PRED_HEX


def _unresumable(edit: str) -> bytes:
    """The canonical file of a state bob must refuse to resume (its digests all hold)."""
    record = bob.build_input(CORPUS, PROMPTS)
    state = bob.invoke(record).checkpoint
    if edit == "v_negative":
        state.v[5] = -2.0
    elif edit == "p_non_finite":
        state.p[300] = np.inf
    elif edit == "m_at_step_zero":
        state.step = 0
    elif edit == "no_room":
        state.step = 2**64 - 5
    return state.to_bytes(for_resume=False)


@pytest.mark.parametrize("edit", ["v_negative", "p_non_finite", "m_at_step_zero", "no_room"])
def test_invoke_from_bytes_refuses_what_load_checkpoint_refuses(edit: str) -> None:
    """Bytes are judged as load_checkpoint judges them, whichever way they are
    given: the same error, placed at the same offset in the file."""
    data = _unresumable(edit)
    with pytest.raises(FormatError) as expected:
        bob.load_checkpoint(data)
    record = bob.build_input(CORPUS, PROMPTS)
    for given in (data, bytearray(data), memoryview(data)):
        with pytest.raises(FormatError) as got:
            bob.invoke(record, given)
        assert type(got.value) is type(expected.value) and got.value.to_dict() == expected.value.to_dict()


def test_invoke_from_bytes_owns_writable_planes_and_keeps_a_wide_header() -> None:
    record = bob.build_input(CORPUS, PROMPTS)
    first = bob.invoke(record).checkpoint
    for data, header_bytes in ((first.to_bytes(), 448), (first.to_bytes(header_bytes=1024), 1024)):
        result = bob.invoke(record, data).checkpoint
        assert result.header_bytes == header_bytes and result.step == 2 * U
        view = np.frombuffer(data, dtype=np.uint8)
        for plane in (result.p, result.m, result.v):
            assert plane.flags.writeable and plane.dtype == np.float32 and not np.shares_memory(plane, view)
        assert result.to_bytes(header_bytes=448) == bob.invoke(record, first).checkpoint_bytes()


@pytest.mark.parametrize("field,value", [("step", "3"), ("step", None), ("step", 2 ** 64), ("contract", None),
                                         ("contract", "x"), ("p", None), ("header_bytes", "x")])
def test_a_checkpoint_field_reassigned_to_what_no_envelope_holds_is_refused_by_invoke(field: str, value) -> None:
    """invoke checks a Checkpoint as its writers do: a BadValue naming the field (it was a TypeError or an
    AttributeError naming none, and a step past 2**64 - 1 was "no room"), and repr still shows it."""
    record = bob.build_input(CORPUS, PROMPTS)
    checkpoint = bob.invoke(record, b"", threads=1).checkpoint
    setattr(checkpoint, field, value)
    with pytest.raises(bob.BadValue) as info:
        bob.invoke(record, checkpoint, threads=1)
    assert info.value.field == {"p": "P"}.get(field, field)
    assert repr(checkpoint).startswith("Checkpoint(") and getattr(checkpoint, field) is value


def test_invoke_does_not_mutate_the_checkpoint_it_is_given() -> None:
    record = bob.build_input(CORPUS, PROMPTS)
    checkpoint = bob.invoke(record, b"", threads=1).checkpoint
    before, planes = checkpoint.to_bytes(), (checkpoint.p, checkpoint.m, checkpoint.v)
    bob.invoke(record, checkpoint, threads=1)
    assert checkpoint.to_bytes() == before and all(a is b for a, b in zip(planes, (checkpoint.p, checkpoint.m,
                                                                                  checkpoint.v)))


def test_a_checkpoint_buffer_rewritten_after_its_digests_held_is_trained_as_digested(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A bytearray whose P[0] another thread changes once bob has checked its digests: bob trains on
    the bytes it checked (its planes are read from the same copy), never on the changed plane."""
    import bob.formats.checkpoint as door

    record = bob.build_input(CORPUS, PROMPTS)
    checkpoint = bob.invoke(record).checkpoint_bytes()
    expected = bob.invoke(record, checkpoint).checkpoint_bytes()
    recognize = door.recognize_checkpoint
    caller = bytearray(checkpoint)

    def recognize_then_rewrite(data):
        step = recognize(data)
        caller[door.HEADER_BYTES:door.HEADER_BYTES + 4] = np.float32(0.25).tobytes()  # P[0], after its SHA-256
        return step

    monkeypatch.setattr(door, "recognize_checkpoint", recognize_then_rewrite)
    assert bob.invoke(record, caller).checkpoint_bytes() == expected
    assert caller != checkpoint  # (the rewrite did happen)
