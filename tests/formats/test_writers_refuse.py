"""Writers refuse what readers refuse (formats/DECISIONS.md D14):
``Checkpoint.to_bytes`` and ``Checkpoint.write`` refuse a state ``bob-run``
would refuse to resume, with the finding a reader gives (the plane and the
index, or the field), unless ``for_resume=False`` asks for it — the one way
to build such a file for a test."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import bob

CORPUS = b"abracadabra"
PROMPTS = [b"abra", b"cad", b""]
U64_MAX = (1 << 64) - 1


@pytest.fixture(scope="module")
def trained() -> bob.Checkpoint:
    return bob.invoke(bob.build_input(CORPUS, PROMPTS)).checkpoint


def _negative_v(ck: bob.Checkpoint) -> bob.Checkpoint:
    ck.v[300] = -2.0
    return ck


def _nan_p(ck: bob.Checkpoint) -> bob.Checkpoint:
    ck.p_table[1, 2] = np.nan
    return ck


def _inf_m(ck: bob.Checkpoint) -> bob.Checkpoint:
    ck.m[65535] = np.inf
    return ck


def _moments_at_step_zero(ck: bob.Checkpoint) -> bob.Checkpoint:
    ck.step = 0
    return ck


def _no_room(ck: bob.Checkpoint) -> bob.Checkpoint:
    ck.step = U64_MAX - 9
    return ck


def _another_contract(ck: bob.Checkpoint) -> bob.Checkpoint:
    ck.contract = bob.Contract(seed=b"bob-seed-v2")
    return ck


CASES = [
    (_negative_v, bob.StateRefused, "V", 300),
    (_nan_p, bob.StateRefused, "P", 258),
    (_inf_m, bob.StateRefused, "M", 65535),
    (_moments_at_step_zero, bob.StateRefused, "step", None),
    (_no_room, bob.StateRefused, "step", None),
    (_another_contract, bob.ContractMismatch, "seed", None),
]


@pytest.mark.parametrize(("spoil", "error", "field", "index"), CASES)
def test_a_state_bob_would_not_resume_is_not_written(trained, tmp_path: Path, spoil, error, field, index) -> None:
    ck = spoil(trained.copy())
    path = tmp_path / "ck.bob"
    path.write_bytes(b"the old file")
    for write in (ck.to_bytes, lambda: ck.write(path)):
        with pytest.raises(error) as info:
            write()
        assert (info.value.field, info.value.index) == (field, index)
        anyway = "writes it anyway, a file every bob reader refuses" if error is bob.ContractMismatch else "takes it anyway"
        assert f"(for_resume=False {anyway}, for a test file)" in str(info.value)  # (what the keyword does, no more)
    assert path.read_bytes() == b"the old file"  # refused before the file was touched

    # Asked for explicitly (a test file), it is written, and a reader refuses
    # it for resuming with the same finding.
    ck.write(path, for_resume=False)
    data = path.read_bytes()
    assert data == ck.to_bytes(for_resume=False)
    with pytest.raises(error) as read:
        bob.Checkpoint.read(path)
    assert (read.value.field, read.value.index) == (field, index)
    if error is bob.StateRefused:  # (another contract is refused for reading too)
        assert bob.Checkpoint.read(path, for_resume=False) == ck


def test_a_negative_v_built_from_arrays_is_refused_where_it_was_written_without_complaint(trained, tmp_path) -> None:
    """The issue's case: planes from arrays with a negative V."""
    v = trained.v.copy()
    v[5] = -1e-3
    ck = bob.Checkpoint(trained.step, trained.p, trained.m, v)
    with pytest.raises(bob.StateRefused, match=r"^V\[5\]: 1 negative value"):
        ck.write(tmp_path / "ck.bob")
    assert not (tmp_path / "ck.bob").exists()


def test_a_resumable_state_is_written_as_before(trained, tmp_path) -> None:
    path = tmp_path / "ck.bob"
    trained.write(path)
    assert path.read_bytes() == trained.to_bytes() == trained.to_bytes(for_resume=False)
    assert bob.Checkpoint.fresh().to_bytes() == bob.Checkpoint.fresh().to_bytes(for_resume=False)
    edge = trained.copy()
    edge.step = U64_MAX - 10  # the last step with room for 10 more updates
    edge.v[0] = -0.0  # -0.0 is not negative
    assert bob.load_checkpoint(edge.to_bytes()) == edge
