"""bob-run reads each file once (issue 22): the fast path and the schemas judge
the same bytes, whichever of them decides. Every ``os.open`` of the process
and every bounded read of :mod:`bob.fileio` is counted per resolved path,
in-process, for runs that end on the fast path, on the schemas' path, and
in the schemas' refusals."""

from __future__ import annotations

import collections
import json
import os
from pathlib import Path

import pytest

import bob
import bob.fileio
from bob.formats.constants import CHECKPOINT_MAGIC, MAX_CHECKPOINT_BYTES
from bob.run import main
from bob.formats.constants import UPDATES_PER_INVOCATION as U
from conftest import CORPUS, PROMPTS


@pytest.fixture
def work(tmp_path: Path) -> Path:
    bob.build_input(CORPUS, PROMPTS).write(tmp_path / "rec.bin")
    return tmp_path


def argv(work: Path) -> list[str]:
    return ["--input", str(work / "rec.bin"), "--checkpoint", str(work / "ck.bin"), "--predictions",
            str(work / "pred.bin"), "--json"]


def counted_run(work: Path, monkeypatch) -> "tuple[int, collections.Counter, collections.Counter]":
    """bob-run on ``work``'s files; (exit code, opens per path, bounded reads per path)."""
    opens: collections.Counter = collections.Counter()
    reads: collections.Counter = collections.Counter()
    real_open, real_read = os.open, bob.fileio.read_bounded_buffer

    def counting_open(path, *args, **kwargs):
        opens[os.path.realpath(path)] += 1
        return real_open(path, *args, **kwargs)

    def counting_read(path, limit):
        reads[os.path.realpath(path)] += 1
        return real_read(path, limit)

    with monkeypatch.context() as patch:
        patch.setattr(os, "open", counting_open)
        patch.setattr(bob.fileio, "read_bounded_buffer", counting_read)
        code = main(argv(work))
    return code, opens, reads


def assert_read_once(work: Path, opens: collections.Counter, reads: collections.Counter) -> None:
    for name in ("rec.bin", "ck.bin"):
        path = os.path.realpath(work / name)
        assert (opens[path], reads[path]) == (1, 1), (name, opens[path], reads[path])


def test_the_fast_path_reads_each_file_once(work: Path, monkeypatch, capsys) -> None:
    for step in (U, 2 * U):  # fresh (the missing checkpoint's one open fails), then resumed
        code, opens, reads = counted_run(work, monkeypatch)
        assert code == 0 and bob.read_checkpoint_file(work / "ck.bin").step == step
        assert_read_once(work, opens, reads)
    capsys.readouterr()


def test_the_schemas_path_parses_the_bytes_already_read(work: Path, monkeypatch, capsys) -> None:
    """A valid checkpoint with a larger header is not the canonical file the
    fast path knows: the schemas load it, from the one read."""
    state = bob.invoke(bob.build_input(CORPUS, PROMPTS)).checkpoint
    (work / "ck.bin").write_bytes(state.to_bytes(header_bytes=1024))
    code, opens, reads = counted_run(work, monkeypatch)
    assert code == 0 and bob.read_checkpoint_file(work / "ck.bin").step == 2 * U
    assert_read_once(work, opens, reads)
    capsys.readouterr()


def test_refusals_by_the_schemas_read_each_file_once(work: Path, monkeypatch, capsys) -> None:
    state = bob.invoke(bob.build_input(CORPUS, PROMPTS)).checkpoint
    state.v[7] = -1.0  # canonical bytes, digests hold, but the state may not be resumed
    (work / "ck.bin").write_bytes(state.to_bytes(for_resume=False))
    code, opens, reads = counted_run(work, monkeypatch)
    assert code == 2 and '"field": "V"' in capsys.readouterr().out
    assert_read_once(work, opens, reads)

    bob.invoke(bob.build_input(CORPUS, PROMPTS)).checkpoint.write(work / "ck.bin")
    record = bytearray((work / "rec.bin").read_bytes())
    record[-4:] = (300).to_bytes(4, "little")  # prompt word 2 is no byte
    (work / "rec.bin").write_bytes(bytes(record))
    code, opens, reads = counted_run(work, monkeypatch)
    assert code == 2 and '"field": "prompt_words"' in capsys.readouterr().out
    rec = os.path.realpath(work / "rec.bin")
    assert (opens[rec], reads[rec]) == (1, 1)


@pytest.mark.parametrize("head, field", [(CHECKPOINT_MAGIC, "file_size"), (b"PK\x03\x04", "magic")],
                         ids=["a checkpoint's magic", "another format"])
def test_a_file_larger_than_any_checkpoint_is_opened_once_and_refused_unread(work: Path, monkeypatch, capsys,
                                                                              head: bytes, field: str) -> None:
    (work / "ck.bin").write_bytes(head + bytes(MAX_CHECKPOINT_BYTES))  # larger than any valid checkpoint
    code, opens, reads = counted_run(work, monkeypatch)
    assert code == 2
    refusal = json.loads(capsys.readouterr().out)["error"]
    assert refusal["field"] == field and refusal["option"] == "--checkpoint"
    path = os.path.realpath(work / "ck.bin")
    assert (opens[path], reads[path]) == (1, 1)
