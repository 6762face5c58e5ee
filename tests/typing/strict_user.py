"""A user's script, typed, over bob's whole public API: tests/test_typing.py
checks it with ``mypy --strict`` (which must report exactly the one
deliberate error in :func:`deliberate_error`, nothing else) and runs it.

Run as ``python strict_user.py DIR``: it writes its files in DIR.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import numpy as np
import numpy.typing as npt

import bob
import bob.core


def train_and_save(work: Path) -> bob.Checkpoint:
    record: bob.InputRecord = bob.build_input(b"abracadabra", [b"abra", b"cad", b""])
    record.write(work / "record.bin")
    again: bob.InputRecord = bob.read_input_file(work / "record.bin")
    assert again == bob.load_input(record.to_bytes()) and not bob.input_findings(record.to_bytes())

    result: bob.Invocation = bob.invoke(record)
    result = bob.invoke(record, result.checkpoint, threads=1)
    losses: tuple[float, ...] = result.losses
    step_after: int = result.step_after
    assert len(losses) == 10 and step_after == 20 and result.step_before == 10
    predictions: bob.Predictions = result.predictions
    tokens: tuple[int, ...] = predictions.tokens
    predictions.write(work / "predictions.bin")
    assert bob.read_predictions_file(work / "predictions.bin") == predictions
    assert bob.load_predictions(result.predictions_bytes()) == predictions
    assert not bob.predictions_findings(result.predictions_bytes()) and len(tokens) == 3

    ck: bob.Checkpoint = result.checkpoint
    ck.write(work / "model.bob")
    assert bob.read_checkpoint_file(work / "model.bob") == ck == bob.Checkpoint.read(work / "model.bob")
    assert bob.load_checkpoint(result.checkpoint_bytes()) == bob.Checkpoint.from_bytes(ck.to_bytes())
    pin: str = hashlib.sha256(ck.to_bytes()).hexdigest()  # the pinned resume
    assert bob.load_checkpoint(ck.to_bytes(), expected_sha256=pin) == ck
    assert bob.invoke(record, ck.to_bytes(), expect=pin).step_after == 30
    assert not bob.checkpoint_findings(ck.to_bytes())
    examined: bob.Examination = bob.examine_checkpoint(ck.to_bytes())
    assert examined.ok and examined.contract == bob.Contract()
    return ck


def arrays(ck: bob.Checkpoint) -> None:
    table: npt.NDArray[np.float32] = ck.p_table
    flat: npt.NDArray[np.float32] = ck.p
    assert table.shape == (256, 256) and flat.shape == (65536,)
    tables: dict[str, npt.NDArray[np.float32]] = ck.tables
    rebuilt = bob.Checkpoint(ck.step, tables["P"].copy(), ck.m_table.copy(), ck.v_table.copy())
    assert rebuilt == ck and rebuilt.invocations == 2 and ck.planes["V"] is ck.v
    probabilities: npt.NDArray[np.float64] = bob.probabilities(ck, ord("a"))
    assert abs(float(probabilities.sum()) - 1.0) < 1e-9


def interop(ck: bob.Checkpoint, work: Path) -> None:
    ck.to_npz(work / "model.npz")
    ck.to_safetensors(work / "model.safetensors")
    assert bob.Checkpoint.from_npz(work / "model.npz") == ck
    assert bob.Checkpoint.from_safetensors(work / "model.safetensors") == ck
    report: dict[str, object] = bob.diff(ck, work / "model.bob")
    assert report["identical"] is True
    document: str = bob.contract_document()
    assert Path(document).is_file()


def core(ck: bob.Checkpoint) -> None:
    p, m, v = bob.core.initial_planes()
    losses: list[float] = bob.core.train(p, m, v, b"abracadabr", b"bracadabra", 0, bob.core.UPDATES_PER_INVOCATION)
    assert len(losses) == 10
    records: list[tuple[int, int]] = bob.core.predict(p, [97, bob.core.EMPTY_PROMPT])
    problem: tuple[str, str, int] | None = bob.core.resume_problem(p, m, v, 10)
    assert problem is None and len(records) == 2
    kernels: list[str] = bob.core.kernels()
    digest: int = bob.core.fnv1a64(bob.core.SEED)
    assert "scalar" in kernels and digest > 0
    bob.core.initialize(p)
    try:
        bob.core.train(p, m, v, b"a", b"ab", 0)
    except bob.core.CoreError as exc:
        message: str = str(exc)
        assert message


def files_and_errors(work: Path) -> None:
    target: str = bob.write_atomic(work / "raw.bin", b"\0" * 8)
    removed: list[str] = bob.clean_stale_temporaries(work / "raw.bin")
    assert target and not removed
    try:
        bob.load_checkpoint(b"not a checkpoint at all")
    except bob.FormatError as exc:
        field: str = exc.field
        assert field and isinstance(exc, (bob.NotABobFile, bob.Truncated, bob.IntegrityError,
                                         bob.ContractMismatch, bob.BadValue, bob.StateRefused))


def deliberate_error(ck: bob.Checkpoint) -> None:
    ck.step = "ten"  # the one error mypy --strict must report (a step is an int)


def main(work: Path) -> None:
    ck = train_and_save(work)
    arrays(ck)
    interop(ck, work)
    core(ck)
    files_and_errors(work)
    print("ok")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
