"""The contract oracle (python/bob/fuzz/oracle.py): a second reader written from
the contract, held to the contract's own sentences here, and to bob on the
conformance corpus and in every format target."""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path

import pytest

from bob.fuzz import oracle
from conftest import GOLDEN

CKPT = (GOLDEN / "checkpoint-abracadabra-step10.bin").read_bytes()
RECORD = (GOLDEN / "input-abracadabra.bin").read_bytes()


def _u32(data: bytes, at: int, value: int) -> bytes:
    return data[:at] + struct.pack("<I", value) + data[at + 4:]


def _resealed(data: bytes) -> bytes:
    """The §8 checkpoint's layout (header 447 bytes, digest at 415, planes at 448), digests recomputed."""
    out = bytearray(data)
    for i in range(3):
        entry = 259 + 52 * i
        out[entry + 20:entry + 52] = hashlib.sha256(out[448 + i * 262144:448 + (i + 1) * 262144]).digest()
    out[415:447] = hashlib.sha256(out[:415]).digest()
    return bytes(out)


def _step(data: bytes, step: int) -> bytes:
    return _resealed(data[:24] + struct.pack("<Q", step) + data[32:])


def _plane_value(data: bytes, plane: int, k: int, value: float) -> bytes:
    at = 448 + plane * 262144 + 4 * k
    return _resealed(data[:at] + struct.pack("<f", value) + data[at + 4:])


# Each case is a sentence of the contract (§3–§5), stated with its own offsets.
CASES = [
    ("input", RECORD, None),
    ("input", RECORD[:1563], ("file_size", None)),
    ("input", b"BOB-CKPT" + RECORD[8:], ("magic", None)),
    ("input", RECORD[:8] + struct.pack("<Q", 2) + RECORD[16:], ("version", None)),
    ("input", _u32(RECORD, 528 + 4 * 5, 300), ("targets", 5)),
    ("input", _u32(RECORD, 1552 + 4, 256), ("prompt_words", 1)),
    ("input", _u32(RECORD, 1552 + 8, 0xFFFFFFFF), None),
    ("predictions", struct.pack("<6I", 99, 1, 255, 1, 0, 0), None),
    ("predictions", struct.pack("<6I", 99, 1, 1, 0, 0, 0), ("token", 1)),
    ("predictions", struct.pack("<6I", 99, 2, 0, 0, 0, 0), ("validity", 0)),
    ("predictions", struct.pack("<6I", 99, 1, 0, 0, 256, 1), ("token", 2)),
    ("predictions", bytes(25), ("file_size", None)),
    ("checkpoint", b"", None),
    ("checkpoint", CKPT, None),
    ("checkpoint", CKPT[:-1], ("file_size", None)),
    ("checkpoint", CKPT[:20], ("header_bytes", None)),
    ("checkpoint", CKPT[:16] + struct.pack("<Q", 449) + CKPT[24:], ("header_bytes", None)),
    ("checkpoint", _step(CKPT, 2 ** 64 - 11), None),
    ("checkpoint", _step(CKPT, 2 ** 64 - 10), ("step", None)),
    ("checkpoint", _step(CKPT, 0), ("step", None)),
    ("checkpoint", _plane_value(CKPT, 2, 7, -0.0), None),
    ("checkpoint", _plane_value(CKPT, 2, 7, -1e-30), ("V", 7)),
    ("checkpoint", _plane_value(CKPT, 1, 9, float("nan")), ("M", 9)),
    ("checkpoint", _plane_value(CKPT, 0, 65535, float("-inf")), ("P", 65535)),
    ("checkpoint", CKPT[:-4] + struct.pack("<f", 1.0), ("chunk_table.digest", 2)),
    ("checkpoint", CKPT[:415] + bytes(32) + CKPT[447:], ("header_digest", None)),
    ("checkpoint", _resealed(CKPT[:447] + b"\1" + CKPT[448:]), ("padding", 0)),
]


@pytest.mark.parametrize("fmt,data,want", CASES, ids=[f"{c[0]}-{c[2]}-{i}" for i, c in enumerate(CASES)])
def test_the_oracle_states_the_contract(fmt: str, data: bytes, want) -> None:
    assert oracle.check(fmt, data) == want


def test_a_checkpoint_refused_for_resuming_is_read() -> None:
    data = _plane_value(CKPT, 1, 9, float("nan"))
    assert oracle.checkpoint_verdicts(data) == (None, ("M", 9))
    assert oracle.check("checkpoint", data, for_resume=False) is None


def test_the_conformance_corpus_agrees_with_the_oracle(tmp_path: Path) -> None:
    from bob.fuzz.conformance import write_corpus

    entries = write_corpus(tmp_path)
    disagree = []
    for e in entries:
        verdict = oracle.check(e["format"], (tmp_path / e["file"]).read_bytes())
        if (None if verdict is None else verdict[0]) != e["field"]:
            disagree.append((e["file"], e["field"], verdict))
    assert not disagree, disagree
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert len(manifest["files"]) == len(entries) > 90


def test_the_format_targets_hold_bob_to_the_oracle(monkeypatch: pytest.MonkeyPatch) -> None:
    """A rule bob's readers all get wrong the same way (here: validity 2 let through) is found."""
    import bob.formats.predictions as predictions
    from bob.fuzz.targets import get

    real = predictions._record_problems
    monkeypatch.setattr(predictions, "_record_problems", lambda i, t, v: real(i, t, min(v, 1)))
    data = struct.pack("<6I", 99, 2, 0, 0, 0, 0)
    with pytest.raises(AssertionError, match="contract oracle would refuse naming 'validity'"):
        get("predictions").run(data)
