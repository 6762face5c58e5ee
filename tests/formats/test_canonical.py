"""bob-run's standard-library fast paths (bob.formats.canonical, and the
checkpoint's in bob.formats.checkpoint) held to the construct schemas: what it builds is what the schemas build; what it
recognizes the schemas accept, with the same content; it never recognizes a
file the schemas refuse. And a run on good files imports neither construct
nor NumPy."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bob
from conftest import CKPT_10_SHA256, CKPT_20_SHA256, CORPUS, PROMPTS
import bob.core
from bob.formats import canonical, checkpoint
from bob.fuzz import mutate, mutate_canonical, refresh_digests

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def random_checkpoint(seed: int, step: int) -> bob.Checkpoint:
    rng = np.random.default_rng(seed)
    p = rng.normal(0, 0.1, 65536).astype(np.float32)
    m = rng.normal(0, 0.01, 65536).astype(np.float32)
    v = rng.random(65536).astype(np.float32) * np.float32(1e-4)
    if step == 0:
        m[:] = 0
        v[:] = 0
    return bob.Checkpoint(step, p, m, v)


def planes_of(ckpt: bob.Checkpoint) -> bytes:
    return b"".join(a.astype("<f4").tobytes() for a in (ckpt.p, ckpt.m, ckpt.v))


@pytest.fixture(scope="module")
def trained() -> bytes:
    return bob.invoke(bob.build_input(CORPUS, PROMPTS)).checkpoint_bytes()


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), step=st.sampled_from([0, 1, 10, 12345, 2**64 - 11, 2**64 - 1]))
def test_built_checkpoint_is_what_the_schemas_build(seed: int, step: int) -> None:
    ckpt = random_checkpoint(seed, step)
    built = checkpoint.build_checkpoint(step, planes_of(ckpt))
    assert built == ckpt.to_bytes(for_resume=False)  # a random state bob may refuse to resume
    assert checkpoint.recognize_checkpoint(built) == step
    assert bob.load_checkpoint(built, for_resume=False) == ckpt


def test_sealing_writes_only_the_header_in_place(trained: bytes) -> None:
    # bob-run trains in the buffer it read and seals it for the new step:
    # the planes are not touched, the old header is overwritten whole.
    buffer = bytearray(trained)
    buffer[:checkpoint.HEADER_BYTES] = b"\xff" * checkpoint.HEADER_BYTES
    sealed = checkpoint.seal_checkpoint(20, buffer)
    assert sealed is buffer
    assert sealed[checkpoint.HEADER_BYTES:] == trained[checkpoint.HEADER_BYTES:]
    assert sealed == checkpoint.build_checkpoint(20, memoryview(trained)[checkpoint.HEADER_BYTES:])
    assert checkpoint.recognize_checkpoint(sealed) == 20


def test_building_refuses_planes_of_another_size() -> None:
    with pytest.raises(ValueError) as info:
        checkpoint.build_checkpoint(10, bytes(5))
    assert str(info.value) == "planes are 786432 bytes, got 5"


@pytest.mark.parametrize("buffer", [bytearray(checkpoint.CHECKPOINT_BYTES - 1), bytes(checkpoint.CHECKPOINT_BYTES)],
                         ids=["short", "read-only"])
def test_sealing_refuses_a_buffer_it_cannot_make_a_checkpoint(buffer: "bytes | bytearray") -> None:
    with pytest.raises(ValueError, match="a checkpoint buffer is 786880 writable bytes"):
        checkpoint.seal_checkpoint(10, buffer)  # type: ignore[arg-type]


def test_header_constants_agree_with_the_schema() -> None:
    from bob.formats.checkpoint import canonical_header_bytes

    assert checkpoint.HEADER_BYTES == canonical_header_bytes() == 448
    assert checkpoint.CHECKPOINT_BYTES == 786_880


def test_contract_vector_is_recognized(trained: bytes) -> None:
    import hashlib

    assert hashlib.sha256(trained).hexdigest() == CKPT_10_SHA256
    assert checkpoint.recognize_checkpoint(trained) == 10


def test_any_changed_byte_is_not_recognized(trained: bytes) -> None:
    rnd = random.Random(5)
    offsets = list(range(0, 448)) + [rnd.randrange(448, len(trained)) for _ in range(200)]
    for at in offsets:
        bad = bytearray(trained)
        bad[at] ^= 1 << rnd.randrange(8)
        assert checkpoint.recognize_checkpoint(bytes(bad)) is None, at


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), refresh=st.booleans())
def test_recognized_checkpoints_are_accepted_by_the_schemas(trained: bytes, seed: int, refresh: bool) -> None:
    rnd = random.Random(seed)
    data = mutate_canonical(trained, rnd) if rnd.random() < 0.7 else mutate(trained, rnd)
    if refresh:  # make the digests agree again, so only the fields are wrong
        data = refresh_digests(data)
    step = checkpoint.recognize_checkpoint(data)
    if step is None:
        return
    loaded = bob.load_checkpoint(data, for_resume=False)  # must not raise
    assert loaded.step == step
    assert planes_of(loaded) == data[448:]


def test_larger_header_is_left_to_the_schemas(trained: bytes) -> None:
    ckpt = bob.load_checkpoint(trained)
    wide = ckpt.to_bytes(header_bytes=512)
    loaded = bob.load_checkpoint(wide)
    assert loaded.step == ckpt.step and planes_of(loaded) == planes_of(ckpt)
    assert checkpoint.recognize_checkpoint(wide) is None


# ------------------------------------- examine: the canonical path = the schema path ---
def _said(findings) -> list:
    return [(type(f), f.field, f.message, repr(f.expected), repr(f.actual), f.offset, f.index) for f in findings]


def assert_same_examination(data: bytes, for_resume: bool) -> None:
    from bob.formats.checkpoint import examine, examine_by_schema

    fast, slow = examine(data, for_resume=for_resume), examine_by_schema(data, for_resume=for_resume)
    assert _said(fast.findings) == _said(slow.findings)
    assert fast.header == slow.header and type(fast.header) is type(slow.header)
    for name in ("size", "magic", "header_raw", "header_digest", "computed_header_digest", "chunk_digests",
                 "header_end", "contract", "partial_header", "fresh", "ok"):
        assert getattr(fast, name) == getattr(slow, name), name
    assert (fast.planes is None) == (slow.planes is None)
    if fast.planes is not None:
        assert fast.planes.tobytes() == slow.planes.tobytes()
    assert fast.header_rows() == slow.header_rows()
    if fast.layout is not None:
        assert fast.layout.fields == slow.layout.fields
        assert fast.offset_of("learner") == slow.offset_of("learner")
    assert fast.header is None or (fast.header.step == slow.header.step
                                   and fast.header.chunk_table[2].digest == slow.header.chunk_table[2].digest)


def _unresumable(seed: int) -> list[bytes]:
    """Canonical files bob must refuse to resume, one per state rule."""
    out = []
    for plane, index, value, step in (("p", 7, np.nan, 10), ("m", 65535, np.inf, 10), ("v", 64, -1.0, 10),
                                      ("m", 3, 0.5, 0), ("p", 0, 0.0, 2**64 - 1)):
        ckpt = random_checkpoint(seed, 10)
        getattr(ckpt, plane)[index] = value
        ckpt.step = step
        out.append(ckpt.to_bytes(for_resume=False))
    return out


@pytest.mark.parametrize("for_resume", [True, False])
def test_a_canonical_file_is_examined_as_the_schemas_examine_it(trained: bytes, for_resume: bool) -> None:
    files = [trained, *(random_checkpoint(3, s).to_bytes(for_resume=False) for s in (0, 10, 2**64 - 11)),
             *_unresumable(4)]
    for data in files:
        assert checkpoint.recognize_checkpoint(data) is not None  # every one takes the canonical path
        assert_same_examination(data, for_resume)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), refresh=st.booleans())
def test_any_file_is_examined_as_the_schemas_examine_it(trained: bytes, seed: int, refresh: bool) -> None:
    # Mutants of a canonical file: most leave the canonical path after its digests are
    # computed, and the schema path then reuses those digests.
    rnd = random.Random(seed)
    data = mutate_canonical(trained, rnd) if rnd.random() < 0.7 else mutate(trained, rnd)
    if refresh:
        data = refresh_digests(data)
    assert_same_examination(data, for_resume=rnd.random() < 0.5)


@pytest.mark.import_graph
def test_inspecting_a_canonical_checkpoint_imports_no_construct(tmp_path: Path, trained: bytes) -> None:
    (tmp_path / "ck.bin").write_bytes(trained)
    call = f"from bob.inspect.cli import main\nrc = main(['ckpt', {str(tmp_path / 'ck.bin')!r}])\n"
    left_out = (("construct",), ("bob.formats.schema", "bob.formats.checkpoint.schema"))
    out = run_importing_none_of(call, *left_out)
    assert out.returncode == 0, out.stderr
    damaged = bytearray(trained)
    damaged[500] ^= 1  # a plane's digest no longer holds: the schema path, construct and all
    (tmp_path / "ck.bin").write_bytes(bytes(damaged))
    out = run_importing_none_of(call, *left_out)
    assert out.returncode != 0 and "construct" in out.stderr


# ----------------------------------------------------------------- record ---
@SETTINGS
@given(corpus=st.binary(min_size=2, max_size=600), prompts=st.lists(st.binary(max_size=5), min_size=3, max_size=3))
def test_valid_records_are_recognized_with_their_content(corpus: bytes, prompts: list[bytes]) -> None:
    record = bob.build_input(corpus, prompts)
    contexts, targets, words = canonical.recognize_record(record.to_bytes())
    assert contexts == record.contexts.tobytes()
    assert targets == record.targets.tobytes()
    assert words == record.prompt_words


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_recognized_records_are_accepted_by_the_schemas(seed: int) -> None:
    good = bob.build_input(b"abracadabra", [b"abra", b"cad", b""]).to_bytes()
    rnd = random.Random(seed)
    data = mutate_canonical(good, rnd) if rnd.random() < 0.7 else mutate(good, rnd)
    fast = canonical.recognize_record(data)
    if fast is None:
        return
    record = bob.load_input(data)  # must not raise
    assert fast == (record.contexts.tobytes(), record.targets.tobytes(), record.prompt_words)


def test_predictions_bytes_match_the_schema() -> None:
    for records in ([(99, 1), (97, 1), (0, 0)], [(0, 1), (255, 1), (0, 0)]):
        assert canonical.predictions_bytes(records) == bob.Predictions.from_core(records).to_bytes()


# ------------------------------------------------------- the state checks ---
def test_resume_problem_matches_the_schemas(trained: bytes) -> None:
    ckpt = bob.load_checkpoint(trained)
    assert bob.core.resume_problem(ckpt.p, ckpt.m, ckpt.v, ckpt.step) is None
    cases = [
        ("p", 7, np.float32("nan"), 10, ("non_finite", "P", 7)),
        ("m", 9, np.float32("inf"), 10, ("non_finite", "M", 9)),
        ("v", 3, np.float32(-1.0), 10, ("negative", "V", 3)),
        ("v", 3, np.float32(-0.0), 10, None),
        ("m", 5, np.float32(0.5), 0, ("moments_at_step_zero", "M", 5)),
    ]
    for plane, index, value, step, want in cases:
        c = ckpt.copy()
        getattr(c, plane)[index] = value
        c.step = step
        assert bob.core.resume_problem(c.p, c.m, c.v, step) == want
        findings = bob.checkpoint_findings(c.to_bytes(for_resume=False))
        assert bool(findings) == (want is not None)
    assert bob.core.resume_problem(ckpt.p, ckpt.m, ckpt.v, 2**64 - 5) == ("no_room", "", 0)


def run_importing_none_of(call: str, packages: tuple[str, ...], modules: tuple[str, ...] = ()) -> "subprocess.CompletedProcess[str]":
    """Runs ``call`` (statements that set ``rc``) in a fresh interpreter, which then fails
    unless ``rc`` is 0 and no module of ``packages`` and none of ``modules`` was imported."""
    script = (f"import sys\n{call}"
              f"heavy = sorted(m for m in sys.modules if m.split('.')[0] in {packages!r} or m in {modules!r})\n"
              "assert rc == 0 and not heavy, (rc, heavy)\n")
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)


# ------------------------------------------------------------- bob-run ---
@pytest.mark.import_graph
def test_a_good_run_imports_neither_construct_nor_numpy_nor_hashlib(tmp_path: Path, trained: bytes) -> None:
    (tmp_path / "rec.bin").write_bytes(bob.build_input(b"abracadabra", [b"abra", b"cad", b""]).to_bytes())
    (tmp_path / "ck.bin").write_bytes(trained)
    call = ("import bob.run\n"
            f"rc = bob.run.main(['--input', {str(tmp_path / 'rec.bin')!r}, '--checkpoint', {str(tmp_path / 'ck.bin')!r},"
            f" '--predictions', {str(tmp_path / 'pred.bin')!r}])\n")
    out = run_importing_none_of(call, ("numpy", "construct", "hashlib", "_hashlib"),
                                ("bob.arrays", "bob.interop", "bob.analysis", "bob.distribution"))
    assert out.returncode == 0, out.stderr
    import hashlib

    assert hashlib.sha256((tmp_path / "ck.bin").read_bytes()).hexdigest() == (
        CKPT_20_SHA256)


def test_a_valid_wide_header_checkpoint_runs_through_the_schemas_and_keeps_its_header(
        tmp_path: Path, trained: bytes) -> None:
    (tmp_path / "rec.bin").write_bytes(bob.build_input(b"abracadabra", [b"abra", b"cad", b""]).to_bytes())
    wide = bob.load_checkpoint(trained).to_bytes(header_bytes=512)
    (tmp_path / "ck.bin").write_bytes(wide)
    from bob.run import main

    assert main(["--input", str(tmp_path / "rec.bin"), "--checkpoint", str(tmp_path / "ck.bin"),
                 "--predictions", str(tmp_path / "pred.bin")]) == 0
    after = bob.load_checkpoint((tmp_path / "ck.bin").read_bytes())
    assert after.header_bytes == 512 and after.step == 20
    canonical_twin = bob.invoke((tmp_path / "rec.bin").read_bytes(), trained).checkpoint
    assert canonical_twin.step == 20
    assert planes_of(after) == planes_of(canonical_twin)


def test_the_cores_sha256_is_hashlibs() -> None:
    import hashlib
    import os

    from bob import _core

    for size in (0, 1, 55, 56, 63, 64, 65, 447, 262_144, 786_880):
        data = os.urandom(size)
        assert _core.sha256(data) == hashlib.sha256(data).digest(), size
        assert _core.sha256(bytearray(data)) == hashlib.sha256(data).digest(), size
        assert _core.sha256(memoryview(data)[size // 3:]) == hashlib.sha256(data[size // 3:]).digest(), size
    with pytest.raises(TypeError):
        _core.sha256("text")  # type: ignore[arg-type]
