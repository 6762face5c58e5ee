"""The binding's refusals: bad buffers raise clear Python exceptions, never a
PanicException, and leave the caller's arrays untouched."""

import array
import subprocess
import sys

import numpy as np
import pytest

import bob.core
from bob import _core

N = bob.core.PARAMETER_COUNT


def planes():
    return bob.core.initial_planes()


def pairs():
    ctx = np.arange(256, dtype=np.uint32)
    return ctx, (ctx * 7 + 3) % 256


def train(p, m, v):
    ctx, tgt = pairs()
    return _core.train(p, m, v, ctx, tgt.astype(np.uint32), 0, 10)


def test_wrong_dtype_is_named():
    p, m, v = planes()
    with pytest.raises(TypeError, match=r"P must hold float32 values; got float64"):
        train(p.astype(np.float64), m, v)


def test_not_a_buffer_is_named():
    p, m, v = planes()
    with pytest.raises(TypeError, match=r"M must be a writable float32 buffer.*list"):
        train(p, list(m), v)


def test_wrong_length_is_named():
    p, m, v = planes()
    with pytest.raises(ValueError, match=r"V holds 65535 float32 values, expected 65536"):
        train(p, m, v[:-1].copy())


def test_not_square_is_refused_by_the_core():
    p = np.zeros(65535, np.float32)
    with pytest.raises(_core.CoreError, match=r"not rows x rows"):
        train(p, np.zeros_like(p), np.zeros_like(p))


def test_read_only_is_refused_and_untouched():
    p, m, v = planes()
    p.setflags(write=False)
    before = p.copy()
    with pytest.raises(ValueError, match=r"P is read-only"):
        train(p, m, v)
    assert np.array_equal(p.view(np.uint32), before.view(np.uint32))


def test_non_contiguous_is_refused():
    p, m, v = planes()
    wide = np.zeros(2 * N, np.float32)
    with pytest.raises(ValueError, match=r"M is not C-contiguous"):
        train(p, wide[::2], v)


@pytest.mark.parametrize("same", [("P", "M"), ("P", "V"), ("M", "V")])
def test_same_array_twice_is_refused(same):
    p, m, v = planes()
    arrays = {"P": p, "M": m, "V": v}
    arrays[same[1]] = arrays[same[0]]
    before = p.copy()
    with pytest.raises(ValueError, match=rf"{same[0]} and {same[1]} share memory"):
        train(arrays["P"], arrays["M"], arrays["V"])
    assert np.array_equal(p.view(np.uint32), before.view(np.uint32))


def test_overlapping_views_are_refused():
    big = np.zeros(N + 8, np.float32)
    _, m, _ = planes()
    with pytest.raises(ValueError, match=r"P and V share memory"):
        train(big[:N], m, big[8:])


def test_other_writable_buffers_work_in_place():
    # array.array and memoryviews are float32 buffers too: trained in place, zero-copy.
    p, m, v = planes()
    pa, ma = array.array("f", p.tobytes()), array.array("f", m.tobytes())
    vb = bytearray(v.tobytes())
    train(pa, ma, memoryview(vb).cast("f"))
    p2, m2, v2 = planes()
    train(p2, m2, v2)
    assert bytes(pa) == p2.tobytes() and bytes(ma) == m2.tobytes() and bytes(vb) == v2.tobytes()


def test_pair_errors_name_the_index():
    p, m, v = planes()
    ctx, tgt = pairs()
    ctx = ctx.copy()
    ctx[5] = 256
    with pytest.raises(_core.CoreError, match=r"contexts\[5\] = 256 is not below the vocabulary 256"):
        _core.train(p, m, v, ctx, tgt.astype(np.uint32), 0, 10)
    with pytest.raises(_core.CoreError, match=r"no pairs"):
        _core.train(p, m, v, np.zeros(0, np.uint32), np.zeros(0, np.uint32), 0, 10)
    with pytest.raises(_core.CoreError, match=r"leaves no room"):
        _core.train(p, m, v, ctx % 256, tgt.astype(np.uint32), 2**64 - 5, 10)


def test_prompt_word_out_of_range_is_named():
    p, _, _ = planes()
    with pytest.raises(_core.CoreError, match=r"prompt word 1 = 0x100"):
        _core.predict(p, [1, 256, 0xFFFFFFFF])


def test_unknown_kernel_is_refused():
    p, m, v = planes()
    ctx, tgt = pairs()
    with pytest.raises(ValueError, match="kernel must be"):
        _core.train(p, m, v, ctx, tgt.astype(np.uint32), 0, 1, kernel="gpu")


def test_kernels_agree_bit_for_bit():
    ctx, tgt = pairs()
    results = []
    for kernel in ("portable", "avx2", "avx512", "auto"):
        p, m, v = planes()
        _core.train(p, m, v, ctx, tgt.astype(np.uint32), 0, 10, kernel=kernel)
        results.append(p.tobytes() + m.tobytes() + v.tobytes())
    assert results[0] == results[1] == results[2] == results[3]


def test_gil_is_released_while_training():
    # Two threads training at once finish; with the GIL held they would still
    # finish, so check the GIL is free by running Python code concurrently.
    import threading
    import time

    p, m, v = bob.core.initial_planes(vocabulary=1024)
    ctx = np.arange(1024, dtype=np.uint32)
    ticks = []
    done = threading.Event()

    def ticker():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.0005)

    t = threading.Thread(target=ticker)
    t.start()
    start = time.perf_counter()
    _core.train(p, m, v, ctx, ctx, 0, 40, threads=1)
    end = time.perf_counter()
    done.set()
    t.join()
    during = [x for x in ticks if start < x < end]
    assert end - start > 0.02, "training too short to observe"
    assert len(during) >= 3, "Python could not run while the core computed"


def test_missing_core_says_how_to_build_it(tmp_path):
    # A copy of the pure-Python package without the extension: importing the
    # core must fail with the build instructions, not fall back to anything.
    import shutil

    src = __import__("bob").__path__[0]
    dst = tmp_path / "bob"
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("_core*", "__pycache__"))
    out = subprocess.run(
        [sys.executable, "-c", "import bob.core"],
        cwd=tmp_path, capture_output=True, text=True, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode != 0
    assert "NativeCoreUnavailable" in out.stderr
    assert "scripts/bootstrap.sh" in out.stderr


def test_pairs_may_be_bytes_or_uint32_and_give_the_same_bits():
    ctx, tgt = pairs()
    tgt = tgt.astype(np.uint32)
    results = []
    for c, t in ((ctx, tgt), (ctx.astype(np.uint8).tobytes(), tgt.astype(np.uint8).tobytes()),
                 (bytearray(ctx.astype(np.uint8)), memoryview(tgt.astype(np.uint8)))):
        p, m, v = planes()
        losses = _core.train(p, m, v, c, t, 0, 10)
        results.append((p.tobytes(), losses))
    assert results[0] == results[1] == results[2]


def test_pairs_of_another_dtype_are_refused_by_name():
    p, m, v = planes()
    ctx, tgt = pairs()
    with pytest.raises(TypeError, match=r"targets must hold uint8 or uint32 values; got float64"):
        _core.train(p, m, v, ctx, tgt.astype(np.float64), 0, 10)
    with pytest.raises(TypeError, match=r"contexts must be a buffer of uint8 or uint32"):
        _core.train(p, m, v, list(ctx), tgt.astype(np.uint32), 0, 10)
