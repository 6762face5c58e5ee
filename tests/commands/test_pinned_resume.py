"""The pinned resume (issue 33 item 2): ``bob-run --expect-checkpoint SHA256``,
``bob.load_checkpoint(..., expected_sha256=)`` and ``bob.invoke(..., expect=)``
refuse, before training, a checkpoint whose whole-file SHA-256 is not the
pinned one, an empty or missing checkpoint, and a malformed pin, each naming
the option or the argument. The digest ``bob-run --json`` prints is the pin of
the next run."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import bob
from bob.errors import IntegrityError
from conftest import GOLDEN

CHECKPOINT = (GOLDEN / "checkpoint-abracadabra-step10.bin").read_bytes()
PIN = hashlib.sha256(CHECKPOINT).hexdigest()
RECORD = bob.build_input(b"abracadabra", [b"abra", b"cad", b""]).to_bytes()
MALFORMED = ["", "abc", PIN[:-1], PIN + "0", "g" * 64, " " + PIN[1:], PIN[:32] + " " + PIN[33:], "0x" + PIN[2:],
             "\u0661" * 64]  # (Arabic-Indic digit one: a digit to str.isdigit, not a hex digit)


def bob_run(tmp: Path, *extra: str) -> "tuple[int, dict]":
    done = subprocess.run([sys.executable, "-m", "bob", "run", "--input", str(tmp / "rec.bin"), "--checkpoint",
                           str(tmp / "ck.bin"), "--predictions", str(tmp / "pred.bin"), "--json", *extra],
                          capture_output=True, text=True, timeout=120)
    return done.returncode, json.loads(done.stdout)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "rec.bin").write_bytes(RECORD)
    return tmp_path


def files(tmp: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(tmp.iterdir()) if p.is_file()}


def test_the_digest_bob_run_prints_pins_the_next_run(work: Path) -> None:
    rc, first = bob_run(work)
    assert rc == 0
    pin = first["checkpoint_sha256"]
    assert pin == hashlib.sha256((work / "ck.bin").read_bytes()).hexdigest()
    rc, second = bob_run(work, "--expect-checkpoint", pin)
    assert rc == 0 and second["step_before"] == first["step_after"]
    rc, third = bob_run(work, "--expect-checkpoint", second["checkpoint_sha256"].upper())  # either case
    assert rc == 0 and third["step_before"] == second["step_after"]


@pytest.mark.parametrize("pin", [PIN, "0" * 64])
def test_a_checkpoint_that_is_not_the_pinned_one_is_refused_and_nothing_is_written(work: Path, pin: str) -> None:
    checkpoint = bytearray(CHECKPOINT)
    checkpoint[-1] ^= 1  # one bit of V flipped: a valid-looking file, but not the pinned one
    (work / "ck.bin").write_bytes(checkpoint)
    (work / "pred.bin").write_bytes(b"old predictions")
    before = files(work)
    rc, document = bob_run(work, "--expect-checkpoint", pin)
    assert rc == 2 and document["error"]["option"] == "--expect-checkpoint", document
    assert hashlib.sha256(checkpoint).hexdigest() in document["error"]["message"]
    assert files(work) == before  # nothing written, nothing left behind


@pytest.mark.parametrize("pin", MALFORMED)
def test_a_malformed_pin_is_refused_naming_the_option(work: Path, pin: str) -> None:
    (work / "ck.bin").write_bytes(CHECKPOINT)
    before = files(work)
    rc, document = bob_run(work, f"--expect-checkpoint={pin}")
    assert rc == 2 and document["error"]["option"] == "--expect-checkpoint", document
    assert "64 hexadecimal digits" in document["error"]["message"]
    assert files(work) == before


@pytest.mark.parametrize("empty", [True, False])
def test_an_empty_or_missing_checkpoint_with_a_pin_is_refused(work: Path, empty: bool) -> None:
    if empty:
        (work / "ck.bin").write_bytes(b"")
    before = files(work)
    rc, document = bob_run(work, "--expect-checkpoint", hashlib.sha256(b"").hexdigest())  # even the empty digest
    assert rc == 2 and document["error"]["option"] == "--expect-checkpoint", document
    assert "a missing or empty checkpoint (a fresh start) is not the pinned one" in document["error"]["message"]
    assert files(work) == before


def test_the_pinned_checkpoint_is_read_once(work: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """The digest is of the bytes trained from: the checkpoint is opened for reading once."""
    from bob.run import main

    (work / "ck.bin").write_bytes(CHECKPOINT)
    target = str(work / "ck.bin")
    opened: list[int] = []
    real_open = os.open

    def counting_open(path, flags, *args, **kwargs):
        if os.fspath(path) == target and not flags & (os.O_WRONLY | os.O_RDWR):
            opened.append(flags)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", counting_open)
    assert main(["--input", str(work / "rec.bin"), "--checkpoint", target, "--predictions",
                 str(work / "pred.bin"), "--expect-checkpoint", PIN]) == 0, capsys.readouterr().err
    assert len(opened) == 1


def test_load_checkpoint_refuses_what_is_not_pinned() -> None:
    assert bob.load_checkpoint(CHECKPOINT, expected_sha256=PIN).step == 10
    assert bob.load_checkpoint(CHECKPOINT, expected_sha256=PIN.upper()).step == 10
    for data in (CHECKPOINT[:-1] + bytes([CHECKPOINT[-1] ^ 1]), b""):
        with pytest.raises(IntegrityError) as refused:
            bob.load_checkpoint(data, expected_sha256=PIN)
        assert refused.value.field == "expected_sha256" and str(refused.value).startswith("expected_sha256: ")
    for pin in MALFORMED:
        with pytest.raises(ValueError, match=r"^expected_sha256 must be 64 hexadecimal digits"):
            bob.load_checkpoint(CHECKPOINT, expected_sha256=pin)
    with pytest.raises(TypeError, match=r"^expected_sha256 must be a str"):
        bob.load_checkpoint(CHECKPOINT, expected_sha256=bytes.fromhex(PIN))  # type: ignore[arg-type]
    # the bytes as unpinned: any bytes-like object (a strided view was numpy's "C-contiguous"), else
    # the same TypeError (None was "has no len()")
    strided = memoryview(bytes(b for byte in CHECKPOINT for b in (byte, 0)))[::2]
    assert bob.load_checkpoint(strided, expected_sha256=PIN).step == 10
    for data in (None, "checkpoint"):
        with pytest.raises(TypeError, match=r"^the checkpoint must be bytes"):
            bob.load_checkpoint(data, expected_sha256=PIN)  # type: ignore[arg-type]


def test_invoke_refuses_what_is_not_pinned_before_training() -> None:
    assert bob.invoke(RECORD, CHECKPOINT, expect=PIN).step_after == bob.invoke(RECORD, CHECKPOINT).step_after
    flipped = bytearray(CHECKPOINT)
    flipped[-1] ^= 1
    for data in (bytes(flipped), flipped, b""):
        with pytest.raises(IntegrityError) as refused:
            bob.invoke(RECORD, data, expect=PIN)
        assert refused.value.field == "expect"
    for pin in (PIN, None):  # None is no checkpoint, pinned or not (pinned, it was refused as a fresh start)
        with pytest.raises(TypeError, match=r"^the checkpoint must be bytes \(or a bytes-like object\), not NoneType$"):
            bob.invoke(RECORD, None, expect=pin)  # type: ignore[arg-type]
    assert flipped[-1] == CHECKPOINT[-1] ^ 1  # the caller's bytes untouched
    with pytest.raises(ValueError, match=r"^expect must be 64 hexadecimal digits"):
        bob.invoke(RECORD, CHECKPOINT, expect="abc")
    with pytest.raises(TypeError, match=r"^expect pins a checkpoint file's bytes"):
        bob.invoke(RECORD, bob.load_checkpoint(CHECKPOINT), expect=PIN)


def test_a_bad_record_is_refused_before_an_unpinned_checkpoint_by_invoke_as_by_bob_run(work: Path) -> None:
    """invoke checked the pin before the record (§7 reads the record first), where bob-run refuses the record."""
    bad = RECORD[:8] + (2).to_bytes(8, "little") + RECORD[16:]  # version 2
    (work / "rec.bin").write_bytes(bad)
    (work / "ck.bin").write_bytes(CHECKPOINT)
    rc, said = bob_run(work, "--expect-checkpoint", "0" * 64)
    with pytest.raises(bob.FormatError) as refused:
        bob.invoke(bad, CHECKPOINT, expect="0" * 64)
    assert rc == 2 and said["error"]["field"] == refused.value.field == "version"
    for malformed, error in ((123, TypeError), ("xyz", ValueError)):  # a malformed pin: before the record, as
        with pytest.raises(error, match="^expect "):  # bob-run's --expect-checkpoint is (a review of 6b102c6)
            bob.invoke(bad, CHECKPOINT, expect=malformed)  # type: ignore[arg-type]


def test_the_bytes_pinned_are_the_bytes_loaded_when_the_caller_s_buffer_changes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A bytearray another thread rewrites from the pinned checkpoint to another valid one just after
    the pin is checked: what is loaded (or trained) is what was pinned, never the other."""
    from bob.formats.checkpoint import header

    later = bob.invoke(RECORD, CHECKPOINT).checkpoint_bytes()  # valid too: step 20
    trained = bob.invoke(RECORD, CHECKPOINT).checkpoint_bytes()
    caller = bytearray(CHECKPOINT)
    hashed = header.sha256

    def hash_then_rewrite(data):
        digest = hashed(data)
        caller[:] = later  # (as another thread would, between the pin and the read)
        return digest

    monkeypatch.setattr(header, "sha256", hash_then_rewrite)
    assert bob.load_checkpoint(caller, expected_sha256=PIN).step == 10
    assert caller == later  # (the rewrite did happen)
    caller[:] = CHECKPOINT
    assert bob.invoke(RECORD, caller, expect=PIN).checkpoint_bytes() == trained
    assert caller == later
