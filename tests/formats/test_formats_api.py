"""The library surface: `import bob`, the typed objects, the error family, the atomic writer."""

from __future__ import annotations

import copy
import json
import os
import pickle
import subprocess
import sys
from dataclasses import fields

import numpy as np
import pytest

import bob
from conftest import GOLDEN, ROOT, golden
from bob import BadValue, ContractMismatch, FormatError, IntegrityError, NotABobFile, StateRefused, Truncated
from bob.fileio import TEMP_MARK, temporary_name





# --------------------------------------------------------------------------- #
# import bob
# --------------------------------------------------------------------------- #


@pytest.mark.import_graph
def test_import_bob_is_cheap_and_imports_no_core():
    code = (
        "import sys, bob\n"
        "heavy = [m for m in ('numpy', 'construct', 'hypothesis', 'bob.core', 'bob._core', 'bob.fuzz') "
        "if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


@pytest.mark.import_graph
def test_loading_does_not_import_the_core_or_hypothesis():
    code = (
        "import sys, bob\n"
        "bob.load_input(open(sys.argv[1], 'rb').read())\n"
        "bob.load_checkpoint(open(sys.argv[2], 'rb').read())\n"
        "print(','.join(m for m in ('bob.core', 'bob._core', 'hypothesis') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, os.path.join(GOLDEN, "input-abracadabra.bin"),
         os.path.join(GOLDEN, "checkpoint-abracadabra-step10.bin")],
        capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_public_names_resolve():
    for name in bob.__all__:
        assert getattr(bob, name) is not None, name
    assert set(bob.__all__) <= set(dir(bob))
    with pytest.raises(AttributeError):
        bob.no_such_name  # noqa: B018


def test_the_examinations_keep_their_fields_in_order():
    """The examinations are public dataclasses: a positional construction, a match pattern or a
    repr reads their fields in this order (a shared base once moved findings before magic)."""
    from bob.formats.checkpoint import Examination
    from bob.formats.input_record import InputExamination
    from bob.formats.predictions import PredictionsExamination
    from bob.formats.trace import TraceExamination

    heads = {cls.__name__: [f.name for f in fields(cls)][:3] for cls in
             (InputExamination, Examination, PredictionsExamination, TraceExamination)}
    assert heads == {"InputExamination": ["size", "magic", "findings"],
                     "Examination": ["size", "findings", "header"],
                     "PredictionsExamination": ["size", "findings", "records"],
                     "TraceExamination": ["size", "findings", "trace"]}


def test_an_examination_is_equal_only_to_itself_and_never_raises_comparing() -> None:
    """== of two examinations compared their planes (NumPy's ValueError: an array's truth value is ambiguous) and
    their findings (exceptions, equal only to themselves): one reading's report is equal to itself alone."""
    from bob.formats import input_record, predictions, trace

    read = [bob.examine_checkpoint(b""), bob.examine_checkpoint(bob.Checkpoint.fresh().to_bytes()),
            input_record.examine(bob.build_input(b"abc", [b"", b"", b""]).to_bytes()), input_record.examine(b"x"),
            predictions.examine(bytes(24)), trace.examine(b"")]
    for ex in read:
        again = type(ex)(**{k: v for k, v in vars(ex).items() if k in {f.name for f in fields(ex)}})
        assert ex == ex and ex != again and ex != copy.deepcopy(ex) and len({ex, again}) == 2


def test_error_family():
    for cls in (NotABobFile, Truncated, IntegrityError, ContractMismatch, BadValue, StateRefused):
        assert issubclass(cls, FormatError) and issubclass(cls, ValueError)
        assert getattr(bob, cls.__name__) is cls


# --------------------------------------------------------------------------- #
# errors
# --------------------------------------------------------------------------- #


def test_error_attributes_and_text():
    err = BadValue("chunk_table.tag", "chunk 1 is plane M", expected=b"M\0\0\0", actual=b"\x1b[2J",
                   offset=311, index=1)
    assert (err.field, err.index, err.offset) == ("chunk_table.tag", 1, 311)
    text = str(err)
    assert text.startswith("chunk_table[1].tag at offset 311: chunk 1 is plane M")
    assert '"M\\x00\\x00\\x00"' in text and '"\\x1b[2J"' in text
    assert "\x1b" not in text and "\n" not in text
    assert err.args == (text,)
    d = err.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert d["error"] == "BadValue" and d["kind"] == "bad-value" and d["index"] == 1


def test_error_defaults_are_none():
    err = Truncated("file_size", "too short")
    assert err.expected is err.actual is err.offset is err.index is None
    assert str(err) == "file_size: too short"


def test_error_pickles():
    err = ContractMismatch("learner", "differs", expected=b"a", actual=b"b", offset=101)
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is ContractMismatch and str(again) == str(err) and again.offset == 101
    err.add_note("while importing x.npz")  # what else was set on it goes along
    assert pickle.loads(pickle.dumps(err)).__notes__ == ["while importing x.npz"]


def test_hostile_message_text_is_escaped():
    err = NotABobFile("magic", "line\nbreak\x07", actual=b"\r\n")
    assert "\n" not in str(err) and "\x07" not in str(err) and str(err).isprintable()


def test_long_values_are_cut():
    err = ContractMismatch("seed", "differs", expected=b"bob-seed-v1", actual=b"x" * 4000)
    assert len(str(err)) < 400 and "...(4000 bytes)" in str(err)


# --------------------------------------------------------------------------- #
# typed objects
# --------------------------------------------------------------------------- #


def test_input_record_object():
    rec = bob.load_input(golden("input-abracadabra.bin"))
    assert rec.contexts.dtype == np.uint8 and rec.contexts.shape == (256,)
    assert rec.targets.dtype == np.uint8 and rec.targets.shape == (256,)
    assert not rec.contexts.flags.writeable
    assert rec.prompts == (97, 100, None)
    counts = rec.context_counts()
    assert counts[ord("a")] == 116 and counts.sum() == 256
    assert rec.pair_counts()[ord("a"), ord("b")] == 47
    assert len(rec.pairs) == 256 and rec.pairs[0] == (97, 98)
    assert bob.InputRecord.from_bytes(rec.to_bytes()) == rec
    assert hash(rec) == hash(bob.load_input(rec.to_bytes()))


def test_input_record_constructor_validates():
    with pytest.raises(BadValue) as info:
        bob.InputRecord(np.zeros(255, np.uint8), np.zeros(256, np.uint8), (0, 0, 0))
    assert info.value.field == "contexts"
    with pytest.raises(BadValue):
        bob.InputRecord(np.full(256, 300), np.zeros(256, np.uint8), (0, 0, 0))
    with pytest.raises(BadValue) as info:
        bob.InputRecord(np.zeros(256, np.uint8), np.zeros(256, np.uint8), (0, 256, 0))
    assert info.value.field == "prompt_words" and info.value.index == 1
    rec = bob.InputRecord(list(range(256)), np.arange(256, dtype=np.int64), (0, 255, 0xFFFFFFFF))
    assert rec.contexts.dtype == np.uint8


def test_build_input_types():
    with pytest.raises(TypeError):
        bob.build_input("abc", [b"", b"", b""])
    with pytest.raises(TypeError):
        bob.build_input(b"abc", ["a", "b", "c"])
    rec = bob.build_input(bytearray(b"ab"), [memoryview(b"xa"), b"", bytearray(b"\xff")])
    assert rec.prompt_words == (97, 0xFFFFFFFF, 255)
    long = bytes(range(256)) * 4
    assert bob.build_input(long, [b"", b"", b""]).pairs[255] == (255, 0)


def test_predictions_object():
    pred = bob.Predictions.from_core([(99, 1), (97, 1), (0, 0)])
    assert pred.tokens == (99, 97, 0) and pred.validities == (1, 1, 0)
    assert bob.Predictions.from_bytes(pred.to_bytes()) == pred
    with pytest.raises(BadValue):
        bob.Predictions(((1, 0), (0, 0), (0, 0)))
    with pytest.raises(BadValue):
        bob.Predictions(((0, 0), (0, 0)))


def test_checkpoint_object():
    data = golden("checkpoint-abracadabra-step10.bin")
    ck = bob.load_checkpoint(data)
    assert ck.step == 10 and ck.invocations == 1 and ck.header_bytes == 448
    for a in (ck.p, ck.m, ck.v):
        assert a.dtype == np.float32 and a.shape == (65536,) and a.flags.writeable and a.flags.c_contiguous
    assert ck.contract == bob.Contract() and ck.contract.is_v1
    assert ck.contract.learner_hyperparameters["lr"] == pytest.approx(0.05)
    assert "lr=0.05" in ck.contract.describe()["learner"]
    assert bob.Checkpoint.from_bytes(data) == ck and ck.copy() == ck
    other = ck.copy()
    other.p[5] = np.nextafter(other.p[5], np.float32(1))
    assert other != ck
    before = bytes(data)
    ck.p[0] = 1.0  # the planes are owned copies, not views of the bytes
    assert data == before


def test_checkpoint_constructor_validates():
    z = np.zeros(65536, np.float32)
    with pytest.raises(BadValue) as info:
        bob.Checkpoint(0, np.zeros(10, np.float32), z, z)
    assert info.value.field == "P"
    with pytest.raises(BadValue) as info:
        bob.Checkpoint(-1, z, z, z)
    assert info.value.field == "step"
    with pytest.raises(BadValue) as info:
        bob.Checkpoint(0, z, z, z, header_bytes=384)
    assert info.value.field == "header_bytes"
    ck = bob.Checkpoint(0, z, z, z)
    with pytest.raises(BadValue):
        ck.to_bytes(header_bytes=450)
    assert bob.Checkpoint(0, z.astype(np.float64), z, z).p.dtype == np.float32


def test_examine_checkpoint_for_inspectors():
    data = bytearray(golden("checkpoint-abracadabra-step10.bin"))
    data[448 + 2 * 262_144] ^= 0x80  # flip a sign bit in V
    ex = bob.examine_checkpoint(bytes(data))
    assert ex.header.step == 10 and ex.contract.is_v1 and ex.planes.shape == (3, 65536)
    assert [f.field for f in ex.findings] == ["chunk_table.digest"]
    assert len(ex.chunk_digests) == 3 and ex.header_end == 447
    assert [r.field for r in ex.header_rows()][:3] == ["magic", "version", "header_bytes"]


def test_inputs_may_be_any_bytes_like():
    data = golden("input-abracadabra.bin")
    assert bob.load_input(bytearray(data)) == bob.load_input(memoryview(data))
    with pytest.raises(TypeError):
        bob.load_input(data.decode("latin-1"))


# --------------------------------------------------------------------------- #
# atomic writer
# --------------------------------------------------------------------------- #


def temporaries(directory) -> list[str]:
    return [n for n in os.listdir(directory) if TEMP_MARK in n]


def test_write_atomic_creates_and_replaces(tmp_path):
    path = tmp_path / "ckpt"
    bob.write_atomic(path, b"one")
    assert path.read_bytes() == b"one"
    os.chmod(path, 0o640)
    bob.write_atomic(str(path), bytearray(b"two"))
    assert path.read_bytes() == b"two" and (os.stat(path).st_mode & 0o777) == 0o640
    assert temporaries(tmp_path) == []


def test_temporary_name_is_recognizable(tmp_path):
    name = os.path.basename(temporary_name(tmp_path / "model.ckpt"))
    assert name.startswith(".model.ckpt.bob-tmp-") and f"-{os.getpid()}-" in name


@pytest.mark.parametrize("failing", ["write", "fsync", "replace"])
def test_write_atomic_failure_leaves_target_untouched(tmp_path, monkeypatch, failing):
    path = tmp_path / "ckpt"
    path.write_bytes(b"old contents")

    def boom(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, failing, boom)
    with pytest.raises(OSError):
        bob.write_atomic(path, b"new contents" * 1000)
    monkeypatch.undo()
    assert path.read_bytes() == b"old contents"
    assert temporaries(tmp_path) == []


def test_write_atomic_interrupt_leaves_target_untouched(tmp_path, monkeypatch):
    path = tmp_path / "ckpt"
    path.write_bytes(b"old")

    def interrupted(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        bob.write_atomic(path, b"new")
    monkeypatch.undo()
    assert path.read_bytes() == b"old" and temporaries(tmp_path) == []


def test_clean_stale_temporaries(tmp_path):
    path = tmp_path / "ckpt"
    path.write_bytes(b"x")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".ckpt{TEMP_MARK}{dead.pid}-0123456789ab"
    mine = tmp_path / f".ckpt{TEMP_MARK}{os.getpid()}-0123456789ab"
    other_target = tmp_path / f".other{TEMP_MARK}{dead.pid}-0123456789ab"
    unrelated = tmp_path / "notes.txt"
    for p in (stale, mine, other_target, unrelated):
        p.write_bytes(b"partial")
    removed = bob.clean_stale_temporaries(path)
    assert removed == [str(stale)]
    assert not stale.exists() and mine.exists() and other_target.exists() and unrelated.exists()
    assert path.read_bytes() == b"x"
    assert bob.clean_stale_temporaries(tmp_path / "missing-dir" / "ckpt") == []


def test_write_atomic_survives_sigkill_of_the_writer(tmp_path):
    """A writer killed at a random moment leaves the old or the new whole file."""
    import signal
    import time

    path = tmp_path / "ckpt"
    old = b"A" * 2_000_000
    new = b"B" * 2_000_000
    path.write_bytes(old)
    code = (
        "import sys, bob\n"
        "while True:\n"
        "    bob.write_atomic(sys.argv[1], (b'B' if open(sys.argv[1],'rb').read(1) == b'A' else b'A') * 2_000_000)\n"
    )
    for delay in (0.05, 0.11, 0.17):
        proc = subprocess.Popen([sys.executable, "-c", code, str(path)])
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert path.read_bytes() in (old, new)
    bob.clean_stale_temporaries(path)
    assert temporaries(tmp_path) == []


def test_a_pipe_is_refused_not_read(tmp_path):
    """Only regular files are read: a FIFO (with a writer waiting) is refused
    from fstat of the one descriptor opened, without blocking and without
    consuming the writer's bytes."""
    import threading

    from bob.fileio import NotARegularFile

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    record = golden("input-abracadabra.bin")
    done = threading.Event()

    def feed():
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            return  # no reader: the refusal came first
        try:
            os.write(fd, record)
        except OSError:
            pass
        finally:
            os.close(fd)
            done.set()

    writer = threading.Thread(target=feed)
    writer.start()
    with pytest.raises(NotARegularFile) as info:
        bob.read_input_file(fifo)
    writer.join(timeout=10)
    assert "FIFO" in str(info.value) and info.value.filename == str(fifo)
