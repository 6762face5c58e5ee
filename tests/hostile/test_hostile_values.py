"""Every binary32 and integer value is data, never a crash (issue 9, classes 3, 4, 9, 10).

Each special value in each learner hyperparameter and in each plane, and the
largest integers in every integer field, go through the library (accepted or
a FormatError), bob-run (exit 0 or 2, never 1; a refusal changes nothing) and
bob-inspect (a report with exit 0 or 2 and strict JSON, never exit 1).
"""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

import bob
from bob.formats.constants import LEARNER_HYPERPARAMETERS, LEARNER_PREFIX
from bob.formats.layout import CANONICAL
from bob.inspect import main as inspect_main
from bob.run import main as run_main
from bob.formats.constants import UPDATES_PER_INVOCATION as U
from conftest import CORPUS, PROMPTS

SPECIAL_BITS = {
    "FLT_MAX": 0x7F7FFFFF,
    "-FLT_MAX": 0xFF7FFFFF,
    "smallest subnormal": 0x00000001,
    "largest subnormal": 0x007FFFFF,
    "-0.0": 0x80000000,
    "quiet NaN with payload": 0x7FC12345,
    "signalling NaN": 0x7F800001,
    "negative NaN": 0xFFC00001,
    "+inf": 0x7F800000,
    "-inf": 0xFF800000,
}
HYPER_NAMES = ("lr", "beta1", "beta2", "eps", "weight_decay")


def f32(bits: int) -> np.float32:
    return np.frombuffer(struct.pack("<I", bits), dtype="<f4")[0]


@pytest.fixture(scope="module")
def record() -> bob.InputRecord:
    return bob.build_input(CORPUS, PROMPTS)


@pytest.fixture(scope="module")
def trained(record) -> bob.Checkpoint:
    return bob.invoke(record).checkpoint


def check_everywhere(tmp_path, capsys, record, data: bytes) -> tuple[int, object]:
    """The library, bob-run and bob-inspect on ``data``; returns (bob-run's code, the library's outcome)."""
    try:
        outcome: object = bob.load_checkpoint(data)
    except bob.FormatError as exc:
        str(exc), repr(exc), json.dumps(exc.to_dict(), allow_nan=False)  # showing it never raises
        outcome = exc
    (tmp_path / "rec.bin").write_bytes(record.to_bytes())
    (tmp_path / "ck.bin").write_bytes(data)
    (tmp_path / "pred.bin").unlink(missing_ok=True)
    code = run_main(["--input", str(tmp_path / "rec.bin"), "--checkpoint", str(tmp_path / "ck.bin"),
                     "--predictions", str(tmp_path / "pred.bin"), "--json"])
    out = capsys.readouterr()
    assert code in (0, 2) and "Traceback" not in out.err, out.err
    error = json.loads(out.out)["error"]  # one JSON object, refusal or summary
    if code == 2:
        assert (tmp_path / "ck.bin").read_bytes() == data and not (tmp_path / "pred.bin").exists()
        # refused on reading, or because the 10 updates would make a state bob refuses to read
        assert isinstance(outcome, bob.FormatError) or "nothing was written" in out.err, out.err
    else:
        assert not isinstance(outcome, bob.FormatError)
        assert (tmp_path / "ck.bin").read_bytes() == bob.invoke(record, data).checkpoint_bytes()
    ck = str(tmp_path / "ck.bin")
    for args in (["ckpt", ck, "--json"], [ck], ["verify", ck]):
        (tmp_path / "ck.bin").write_bytes(data)
        rc = inspect_main(args)
        report = capsys.readouterr()
        assert rc in (0, 2) and "Traceback" not in report.err, report.err
        # bob-inspect refuses the files bob-run refuses to read; a valid file at a step bob-run can never advance
        # (D14, whatever the record) is clean, and its verdict says bob-run refuses every run from it
        assert rc == (2 if isinstance(outcome, bob.FormatError) else 0), args
        if "--json" in args and rc == 0:
            said = "bob-run refuses every run from it" in json.loads(report.out)["verdict"]
            assert said == bool(error and error["field"] == "step"), (args, report.out[-300:])
        if "--json" in args:
            json.loads(report.out, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
    return code, outcome


@pytest.mark.parametrize("value", SPECIAL_BITS)
@pytest.mark.parametrize("field", HYPER_NAMES)
def test_special_values_in_learner_hyperparameters(tmp_path, capsys, record, trained, field, value) -> None:
    floats = list(LEARNER_HYPERPARAMETERS)
    floats[HYPER_NAMES.index(field)] = f32(SPECIAL_BITS[value])
    learner = LEARNER_PREFIX + struct.pack("<5f", *floats)
    contract = bob.Contract(learner=learner)
    data = bob.Checkpoint(trained.step, trained.p, trained.m, trained.v, contract=contract).to_bytes(for_resume=False)
    code, outcome = check_everywhere(tmp_path, capsys, record, data)
    assert code == 2 and isinstance(outcome, bob.ContractMismatch) and outcome.field == "learner"
    assert field in str(outcome)  # the five floats are decoded by name


@pytest.mark.parametrize("value", SPECIAL_BITS)
@pytest.mark.parametrize("plane", "PMV")
def test_special_values_in_each_plane(tmp_path, capsys, record, trained, plane, value) -> None:
    state = trained.copy()
    k = ord("a") * 256 + ord("b")
    getattr(state, plane.lower())[k] = f32(SPECIAL_BITS[value])
    data = state.to_bytes(for_resume=False)
    code, outcome = check_everywhere(tmp_path, capsys, record, data)
    x = float(f32(SPECIAL_BITS[value]))
    if not np.isfinite(x) or (plane == "V" and x < 0):
        assert isinstance(outcome, bob.StateRefused) and outcome.field == plane and outcome.index == k
        assert code == 2


U64_MAX = (1 << 64) - 1
U32_MAX = (1 << 32) - 1


def _with_integer(data: bytes, name: str, value: int) -> bytes:
    """``data`` with header field ``name`` set to ``value`` and the header digest recomputed."""
    import hashlib

    field = CANONICAL.fields[name]
    out = bytearray(data)
    out[field.slice] = struct.pack(field.format, value)
    digest = CANONICAL.fields["header_digest"]
    out[digest.slice] = hashlib.sha256(out[:digest.offset]).digest()
    return bytes(out)


INTEGER_FIELDS = ["version", "header_bytes", "step", "state.length", "learner.length", "data.length",
                  "seed.length", "payload_bytes", "chunk_bytes", "updates_per_invocation", "chunk_count",
                  "chunk_table[0].offset", "chunk_table[1].length", "chunk_table[2].offset"]


@pytest.mark.parametrize("name", INTEGER_FIELDS)
def test_the_largest_integers_in_every_integer_field(tmp_path, capsys, record, trained, name) -> None:
    data = trained.to_bytes()
    top = U64_MAX if CANONICAL.fields[name].size == 8 else U32_MAX
    for value in (top, top - 1, 1 << (8 * CANONICAL.fields[name].size - 1)):
        code, outcome = check_everywhere(tmp_path, capsys, record, _with_integer(data, name, value))
        if name == "step" and value <= U64_MAX - 2 * U:
            assert code == 0  # 2**63 is a step like any other
        else:
            assert code == 2


@pytest.mark.parametrize("step", [U64_MAX - U, U64_MAX - 2 * U + 1, U64_MAX - 2 * U])
def test_steps_at_the_end_of_u64(tmp_path, capsys, record, trained, step) -> None:
    """Room for the next invocation's updates is checked on reading, and the
    written checkpoint must leave room for as many more (never write what bob refuses)."""
    state = trained.copy()
    state.step = step
    code, outcome = check_everywhere(tmp_path, capsys, record, state.to_bytes(for_resume=False))
    assert code == (0 if step <= U64_MAX - 2 * U else 2)


# ------------------------------------------------------------- the library ---
@pytest.mark.parametrize("step", [-1, 1 << 64, 1.5, "10", True, None])
def test_a_checkpoint_with_an_impossible_step_is_refused_when_built_and_serialised(trained, step) -> None:
    with pytest.raises(bob.BadValue) as built:
        bob.Checkpoint(step, trained.p, trained.m, trained.v)
    assert built.value.field == "step"
    ck = trained.copy()
    ck.step = step
    with pytest.raises(bob.BadValue) as written:
        ck.to_bytes()
    assert written.value.field == "step"


@pytest.mark.parametrize("shape", [(5,), (1, 65536), (65536, 1), (128, 512), (256, 256, 1), (65537,), ()])
def test_a_checkpoint_with_wrong_sized_planes_is_refused(trained, shape) -> None:
    for plane in "pmv":
        planes = {"p": trained.p, "m": trained.m, "v": trained.v, plane: np.zeros(shape, np.float32)}
        with pytest.raises(bob.BadValue) as info:
            bob.Checkpoint(trained.step, planes["p"], planes["m"], planes["v"])
        assert info.value.field == plane.upper()
        ck = trained.copy()
        setattr(ck, plane, np.zeros(shape, np.float32))
        with pytest.raises(bob.BadValue):
            ck.to_bytes()


def test_checkpoint_planes_are_shared_alike_for_p_m_and_v(trained) -> None:
    """float32 C-contiguous arrays are used as given, for all three planes the
    same way (documented on Checkpoint); anything else is converted."""
    p, m, v = trained.p.copy(), trained.m.copy(), trained.v.copy()
    ck = bob.Checkpoint(10, p, m, v)
    assert ck.p is p and ck.m is m and ck.v is v
    as64 = bob.Checkpoint(10, p.astype(np.float64), m.astype(np.float64), v.astype(np.float64))
    assert not any(np.shares_memory(a, b) for a, b in ((as64.p, p), (as64.m, m), (as64.v, v)))


@pytest.mark.parametrize("bad", [np.full(256, 97.7), np.full(256, (1 << 32) + 97, dtype=np.int64),
                                 np.full(256, -1, dtype=np.int64), [97.0] * 256, [True] * 256])
def test_core_train_refuses_pairs_that_are_not_byte_values(trained, bad) -> None:
    import bob.core

    good = np.full(256, 98, dtype=np.uint8)
    ck = trained.copy()
    for contexts, targets in ((bad, good), (good, bad)):
        with pytest.raises((TypeError, bob.core.CoreError)):
            bob.core.train(ck.p, ck.m, ck.v, contexts, targets, ck.step, 10)
    assert ck == trained  # nothing was trained


# ------------------------------------------------------------ bob-inspect ---
def test_heatmap_onto_the_inspected_file_is_refused(tmp_path, trained) -> None:
    pytest.importorskip("matplotlib")
    path = tmp_path / "ck.bin"
    trained.write(path)
    before = path.read_bytes()
    (tmp_path / "alias.bin").symlink_to(path)
    for target in (path, tmp_path / "alias.bin"):
        assert inspect_main(["ckpt", str(path), "--heatmap", str(target)]) == 2
    assert path.read_bytes() == before and (tmp_path / "alias.bin").is_symlink()


def test_a_non_finite_row_does_not_take_over_the_heatmap_zoom(tmp_path, capsys, record) -> None:
    pytest.importorskip("matplotlib")
    ck = bob.invoke(record).checkpoint
    for _ in range(4):
        ck = bob.invoke(record, ck).checkpoint
    learned = {b for b in CORPUS}
    for r in range(30):  # thirty rows holding a NaN or an infinity
        ck.p[(200 + r % 50) * 256 + r] = np.nan if r % 2 else np.inf
    path = tmp_path / "ck.bin"
    path.write_bytes(ck.to_bytes(for_resume=False))
    assert inspect_main(["ckpt", str(path), "--heatmap", str(tmp_path / "h.png"), "--json"]) == 2  # state refused
    heatmap = json.loads(capsys.readouterr().out)["heatmap"]
    assert set(heatmap["rows_shown"]) >= learned  # the rows that learned stay in the zoom
    assert set(heatmap["non_finite_rows"]) == {200 + r % 50 for r in range(30)}


@pytest.mark.parametrize("plane", "MV")
def test_step_zero_with_one_non_zero_moment_is_refused_by_every_path(tmp_path, capsys, record, trained,
                                                                     plane) -> None:
    """A step-0 file must hold all-zero M and V. Each plane alone, the other
    all zero, through the library, bob-run (whose fast path trusts the core's
    check when the file is canonical) and bob-inspect."""
    from bob.formats import checkpoint

    planes = [trained.p.copy(), np.zeros_like(trained.m), np.zeros_like(trained.v)]
    k = ord("c") * 256 + ord("a")
    planes["PMV".index(plane)][k] = np.float32(1e-30)
    data = bytes(checkpoint.build_checkpoint(0, b"".join(a.astype("<f4").tobytes() for a in planes)))
    assert bob.core.resume_problem(*planes, 0) == ("moments_at_step_zero", plane, k)
    code, outcome = check_everywhere(tmp_path, capsys, record, data)
    assert code == 2 and isinstance(outcome, bob.StateRefused) and outcome.field == "step"
    assert f"plane {plane} is not all zero" in str(outcome)
