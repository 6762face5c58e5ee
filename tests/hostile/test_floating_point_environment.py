"""A hostile floating-point environment in the calling thread (D17).

An extension module built with ``-ffast-math`` sets flush-to-zero and
denormals-are-zero when it is imported; ``fesetround`` changes the rounding
mode. Either one, set on the thread that calls bob, must not change a byte bob
writes, and bob gives the thread's environment back as it found it. The
environment is set here through glibc's ``<fenv.h>`` (x86_64: MXCSR is the last
word of ``fenv_t``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import platform
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

import bob
from conftest import CKPT_10_SHA256, CKPT_20_SHA256, CORPUS, PRED_HEX, PROMPTS, sha

pytestmark = pytest.mark.skipif(
    not (sys.platform == "linux" and platform.machine() == "x86_64" and platform.libc_ver()[0] == "glibc"),
    reason="sets MXCSR through glibc's fenv_t layout on x86_64",
)

FE_TOWARDZERO = 0xC00
FE_UPWARD = 0x800
FLUSH_TO_ZERO = 1 << 15
DENORMALS_ARE_ZERO = 1 << 6
MXCSR_OFFSET = 28  # glibc x86_64 fenv_t: the x87 environment (28 bytes), then MXCSR
FENV_SIZE = 32


def libm() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")


def environment() -> bytes:
    """This thread's whole floating-point environment (fegetenv)."""
    buffer = ctypes.create_string_buffer(FENV_SIZE)
    assert libm().fegetenv(buffer) == 0
    return buffer.raw


def set_environment(raw: bytes) -> None:
    buffer = ctypes.create_string_buffer(raw, FENV_SIZE)
    assert libm().fesetenv(buffer) == 0


def with_mxcsr_bits(raw: bytes, bits: int) -> bytes:
    mxcsr = int.from_bytes(raw[MXCSR_OFFSET:MXCSR_OFFSET + 4], "little") | bits
    return raw[:MXCSR_OFFSET] + mxcsr.to_bytes(4, "little") + raw[MXCSR_OFFSET + 4:]


@contextmanager
def hostile(name: str) -> Iterator[bytes]:
    """Sets the hostile environment ``name`` on this thread; yields it as fegetenv reads it."""
    saved = environment()
    try:
        if name == "flush-to-zero and denormals-are-zero":
            set_environment(with_mxcsr_bits(saved, FLUSH_TO_ZERO | DENORMALS_ARE_ZERO))
        else:
            assert libm().fesetround({"round toward zero": FE_TOWARDZERO, "round up": FE_UPWARD}[name]) == 0
        yield environment()
    finally:
        set_environment(saved)


HOSTILE = ["flush-to-zero and denormals-are-zero", "round toward zero", "round up"]


def control_bits(raw: bytes) -> tuple[int, int]:
    """The x87 control word and MXCSR without its six sticky exception flags."""
    return (int.from_bytes(raw[:2], "little"),
            int.from_bytes(raw[MXCSR_OFFSET:MXCSR_OFFSET + 4], "little") & ~0x3F)


@pytest.mark.parametrize("name", HOSTILE)
def test_invoke_writes_the_section8_bytes_in_a_hostile_environment(name: str) -> None:
    record = bob.build_input(CORPUS, PROMPTS)
    with hostile(name) as set_here:
        first = bob.invoke(record)
        second = bob.invoke(record, first.checkpoint)
        after = environment()
    assert sha(first.checkpoint_bytes()) == CKPT_10_SHA256
    assert first.predictions_bytes().hex() == PRED_HEX
    assert sha(second.checkpoint_bytes()) == CKPT_20_SHA256
    assert control_bits(after) == control_bits(set_here), "bob did not give the thread's environment back"


@pytest.mark.parametrize("name", HOSTILE)
def test_the_environment_is_really_hostile(name: str) -> None:
    """The check above can fail: the same arithmetic in NumPy, on this thread,
    gives other bits under the environment than without it."""
    import numpy as np

    def arithmetic() -> bytes:
        tiny = np.array([1e-40], dtype=np.float32)  # a subnormal
        thirds = np.array([1.0, -1.0], dtype=np.float32) / np.float32(3.0)
        return (tiny * np.float32(1.5)).tobytes() + thirds.tobytes()

    plain = arithmetic()
    with hostile(name):
        changed = arithmetic()
    assert changed != plain


def _subnormal_states() -> "list[tuple[str, bob.Checkpoint]]":
    """States bob must refuse to resume for a subnormal alone, which a float
    comparison under denormals-are-zero takes for zero."""
    import numpy as np

    fresh = bob.Checkpoint.fresh()
    zeros = np.zeros_like(fresh.p)
    moment = zeros.copy()
    moment.view(np.uint32)[5] = 0x00000001  # the smallest positive subnormal, at step 0
    negative = zeros.copy()
    negative.view(np.uint32)[5] = 0x80000001  # the smallest negative subnormal, in V
    return [("step 0, a subnormal M", bob.Checkpoint(0, fresh.p.copy(), moment, zeros.copy())),
            ("step 10, a negative subnormal V", bob.Checkpoint(10, fresh.p.copy(), zeros.copy(), negative))]


def test_a_subnormal_state_is_refused_by_every_door_in_a_hostile_environment(tmp_path) -> None:
    from bob.commands import Refused
    from bob.errors import StateRefused
    from bob.formats.checkpoint import state_findings
    from bob.run import run_files

    record = bob.build_input(CORPUS, PROMPTS)
    (tmp_path / "rec.bin").write_bytes(record.to_bytes())
    cases = [(name, state, state.to_bytes(for_resume=False)) for name, state in _subnormal_states()]
    with hostile("flush-to-zero and denormals-are-zero"):
        for name, state, data in cases:
            assert bob.core.resume_problem(state.p, state.m, state.v, state.step) is not None, name
            findings = state_findings(state.step, (state.p, state.m, state.v))
            assert [type(f) for f in findings] == [StateRefused], name
            if state.step:  # the value named is the subnormal itself, not the zero a conversion would make of it
                assert findings[0].actual == -math.ldexp(1.0, -149) and findings[0].index == 5, findings[0]
            for door in (lambda: bob.load_checkpoint(data), lambda: bob.invoke(record, state),
                         lambda: bob.invoke(record, data), lambda: state.to_bytes()):
                with pytest.raises(StateRefused):
                    door()
            (tmp_path / "ck.bin").write_bytes(data)
            with pytest.raises(Refused, match=r"^--checkpoint .*(plane M is not all zero|negative value\(s\) in plane V)"):
                run_files(str(tmp_path / "rec.bin"), str(tmp_path / "ck.bin"), str(tmp_path / "pred.bin"))
            assert (tmp_path / "ck.bin").read_bytes() == data and not (tmp_path / "pred.bin").exists(), name


@pytest.mark.parametrize("name", HOSTILE)
def test_the_librarys_own_analysis_reads_subnormals_as_they_are(name: str) -> None:
    """bob.diff and bob.analysis's comparisons, bob.probabilities, Checkpoint.as_dict, a Checkpoint
    built from float64 planes and the inspector's statistics and rows compute in NumPy on the caller's
    thread: each runs in the default environment (bob.environment) and answers as it does without a
    hostile one (each decorator taken away alone fails this test). Under denormals-are-zero, 1e-45
    against -1e-45 was equal within atol=0, as_dict counted one non-zero value fewer and row 0's top
    next byte was 0, not 7."""
    import struct

    import numpy as np

    from bob.inspect.checkpoint import plane_stats, rows_report

    zeros = np.zeros_like(bob.Checkpoint.fresh().p)
    tiny, minus_tiny = zeros.copy(), zeros.copy()
    tiny.view(np.uint32)[7] = 0x00000001  # +1e-45 at context 0, next 7
    minus_tiny.view(np.uint32)[7] = 0x80000001
    a, b = (bob.Checkpoint(10, p, zeros.copy(), zeros.copy()) for p in (tiny, minus_tiny))
    b.contract = bob.Contract(learner=b.contract.learner[:-4] + struct.pack("<f", 0.02))  # its floats in the diff
    fresh = bob.Checkpoint.fresh()
    wide = np.full(zeros.shape, 0.1)  # float64: rounded to float32 by the constructor, to nearest as D17 says
    wide[:2] = 1e-45, -7e-46
    narrow = np.array([0.1, 0, 3], np.float32)  # rounded here, to nearest: bob.ulp's own rounding is tested

    def answers() -> list:
        return [bob.diff(a, b, atol=0.0), bob.diff(a, b, ulp=2), a.as_dict(), plane_stats(a.p),
                plane_stats(b.p), rows_report(a.p, b"\0"), bob.analysis.compare(*map(bob.analysis.Side.of, (a, b),
                "ab"), atol=0.0), bob.analysis.beyond(a.p, b.p, atol=0.0).tolist(),
                bob.analysis.plane_diff(a.p, b.p, atol=0.0), bob.probabilities(fresh, 0).tobytes(),
                bob.Checkpoint(10, wide, zeros, zeros).to_bytes(),
                bob.analysis.ulp_distance([0.1, 1e-45, 3.0000001], narrow).tolist()]

    plain = answers()
    with hostile(name) as set_here:
        there = answers()
        after = environment()
    assert there == plain
    assert control_bits(after) == control_bits(set_here), "bob did not give the thread's environment back"
    assert [plain[0]["planes"]["P"]["beyond_tolerance"], plain[1]["planes"]["P"]["beyond_tolerance"]] == [1, 0]
    assert plain[2]["planes"]["P"]["nonzero"] == 1
    assert plain[5][0]["top"][0]["next"] == 7
    assert plain[-1] == [0, 1, 0]


@pytest.mark.parametrize("name", HOSTILE)
def test_the_heatmap_is_drawn_as_it_is_without_a_hostile_environment(name: str, tmp_path) -> None:
    """bob-inspect --heatmap, called as a library (bob.inspect.main), draws the same PNG whatever the
    thread's environment: matplotlib normalises the plane in NumPy, and under denormals-are-zero a
    plane of subnormals was drawn in other colours."""
    pytest.importorskip("matplotlib")
    import numpy as np

    from bob.inspect import main

    p = np.zeros_like(bob.Checkpoint.fresh().p)
    p.view(np.uint32)[::3] = np.arange(1, p.size + 1, 3, dtype=np.uint32) % 0x800000  # subnormals
    (tmp_path / "ck.bin").write_bytes(bob.Checkpoint(10, p, np.zeros_like(p), np.zeros_like(p)).to_bytes())

    def drawn(out: str) -> bytes:
        assert main([str(tmp_path / "ck.bin"), "--heatmap", str(tmp_path / out)]) == 0
        return (tmp_path / out).read_bytes()

    plain = drawn("plain.png")
    with hostile(name):
        there = drawn("there.png")
    assert there == plain
