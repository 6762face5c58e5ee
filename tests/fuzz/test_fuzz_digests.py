"""The checkpoint target's shared digests (python/bob/fuzz/digests.py) and its memory:
each plane hashed once per input, the right digest every time, nothing kept."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import numpy as np
import pytest

from bob.fuzz.digests import DigestMemo, shared_digests
from bob.fuzz.targets import get
from conftest import GOLDEN

CKPT = (GOLDEN / "checkpoint-abracadabra-step10.bin").read_bytes()


def test_the_memo_gives_each_content_its_own_digest_and_hashes_it_once() -> None:
    memo = DigestMemo()
    a, b = bytes(range(256)) * 64, bytes(range(255, -1, -1)) * 64  # same length, other bytes
    view = memoryview(CKPT)[448:448 + 262144]
    for data in (a, b, view, bytes(view), np.frombuffer(bytes(view), np.uint8), memoryview(CKPT)[448:448 + 262144]):
        assert memo.sha256(data).digest() == hashlib.sha256(data).digest()
    assert memo.hashes == 3
    assert memo.sha256(b"small").hexdigest() == hashlib.sha256(b"small").hexdigest()


def test_inside_the_block_only_and_hashlib_given_back() -> None:
    real = hashlib.sha256
    with shared_digests() as memo:
        assert hashlib.sha256 is not real
        hashlib.sha256(CKPT[448:])
    assert hashlib.sha256 is real and memo.hashes == 1


def test_the_checkpoint_target_hashes_each_plane_once(monkeypatch: pytest.MonkeyPatch) -> None:
    real, big = hashlib.sha256, []

    def counting(data=b"", **kw):
        if memoryview(data).nbytes >= 4096:
            big.append(memoryview(data).nbytes)
        return real(data, **kw)

    from bob.formats.checkpoint import header as canonical

    canonical.sha256(b"")  # (binds the fast path's digest)
    real_fast, fast = canonical._digest, []

    def counting_fast(data) -> bytes:
        if memoryview(data).nbytes >= 4096:
            fast.append(memoryview(data).nbytes)
        return real_fast(data)

    monkeypatch.setattr(hashlib, "sha256", counting)
    monkeypatch.setattr(canonical, "_digest", counting_fast)
    assert canonical.recognize_checkpoint(CKPT) == 10 and fast == [262144] * 3  # the fast path hashes each plane
    fast.clear()
    get("checkpoint").run(CKPT)
    # P, M, V: once each, for bob's readers, the fast path and the oracle together
    assert big == [262144] * 3 and fast == []
    assert canonical._digest is counting_fast  # given back after the execution


def test_the_fast_path_still_sees_the_digest_of_what_it_hashes() -> None:
    """A fast path hashing the wrong bytes gets their digest, not the plane's: a forged chunk digest
    is still refused inside the memo's block."""
    from bob.formats import checkpoint as canonical

    forged = bytearray(CKPT)
    forged[448] ^= 1  # P changed, its digest not: the fast path must not recognize it
    with shared_digests():
        assert canonical.recognize_checkpoint(CKPT) == 10
        assert canonical.recognize_checkpoint(bytes(forged)) is None


def test_instrumented_state_checks_keep_no_memory() -> None:
    """atheris 3.0.0 leaked the result of every instrumented comparison operator that is not a bool
    (`plane < 0` kept its 64 KiB array): bob's state checks use NumPy's functions instead."""
    pytest.importorskip("atheris")
    script = (
        "import resource, atheris, numpy as np\n"
        "with atheris.instrument_imports(include=['bob']):\n"
        "    from bob.formats.checkpoint import state_findings\n"
        "planes = np.full((3, 65536), 0.5, np.float32)\n"
        "for _ in range(20): state_findings(0, planes)\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "for _ in range(400): state_findings(0, planes)\n"
        "print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    grew_mb = int(out.stdout.split()[-1])
    assert grew_mb < 8, f"the instrumented state checks grew {grew_mb} MB in 400 calls"


def test_the_checkpoint_target_parses_the_header_once_and_both_readings_see_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import bob
    from bob.formats import schema

    real, calls = schema.parse, []

    def counting(parsed_by, data):
        calls.append(len(data))
        return real(parsed_by, data)

    monkeypatch.setattr(schema, "parse", counting)
    get("checkpoint").run(CKPT)
    assert calls == [len(CKPT)]  # a canonical file: bob's readings recognize it; the schema judges that once
    wide = bob.load_checkpoint(CKPT).to_bytes(header_bytes=512)
    calls.clear()
    get("checkpoint").run(wide)
    assert calls == [len(wide)]  # the findings for resuming and the loader for reading: one parse
    bad = bytearray(CKPT)
    bad[35] = 0xFF  # the state string's length prefix past the file: the parse itself refuses
    calls.clear()
    get("checkpoint").run(bytes(bad))  # both readings refuse with the parse's refusal, held to the oracle
    assert calls == [len(bad)]
    assert schema.parse is counting  # given back after the execution
    from bob.errors import FormatError
    from bob.formats.checkpoint import ENVELOPE_HEADER

    with pytest.raises(FormatError):
        real(ENVELOPE_HEADER, bytes(bad))


def test_the_checkpoint_target_lays_the_header_out_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from bob.formats.checkpoint import examination, header

    real, calls = examination.envelope_layout, []

    def counting(lengths):
        calls.append(tuple(lengths))
        return real(lengths)

    monkeypatch.setattr(examination, "envelope_layout", counting)
    monkeypatch.setattr(header, "envelope_layout", counting)
    get("checkpoint").run(CKPT)
    assert len(calls) == 1  # the readings, the round trip's header_length: one layout
    assert examination.envelope_layout is counting and header.envelope_layout is counting
