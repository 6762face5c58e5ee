"""bob.core's scalar arguments: a count, a prompt word or a seed of the wrong
kind or out of range is refused by name (TypeError, or CoreError with the
value and the range), never truncated by int() or left to a nameless
OverflowError; and bob.invoke's threads the same way."""

from __future__ import annotations

import numpy as np
import pytest

import bob
import bob.core
from bob.core import CoreError


def planes():
    return bob.core.initial_planes()


def train(**changed):
    p, m, v = planes()
    args = {"step": 0, "updates": 1, "threads": 0} | changed
    return bob.core.train(p, m, v, b"abc", b"bcd", args["step"], args["updates"], threads=args["threads"])


@pytest.mark.parametrize("name", ["step", "updates", "threads"])
@pytest.mark.parametrize("value,error,message", [
    (1.5, TypeError, "{name} must be an integer; got float 1.5"),
    (True, TypeError, "{name} must be an integer; got bool True"),
    ("3", TypeError, "{name} must be an integer; got str '3'"),
    (None, TypeError, "{name} must be an integer; got NoneType None"),
    (-1, CoreError, "{name} = -1 is outside 0 .. 2**64 - 1"),
    (2**64, CoreError, "{name} = 18446744073709551616 is outside 0 .. 2**64 - 1"),
])
def test_train_counts_are_refused_by_name(name, value, error, message):
    with pytest.raises(error) as info:
        train(**{name: value})
    assert str(info.value) == message.format(name=name)


def test_numpy_integers_are_integers():
    p, m, v = planes()
    p2, m2, v2 = planes()
    assert bob.core.train(p, m, v, b"abc", b"bcd", np.uint64(3), np.int32(2), threads=np.int8(1)) == \
        bob.core.train(p2, m2, v2, b"abc", b"bcd", 3, 2, threads=1)
    assert p.tobytes() == p2.tobytes()
    assert bob.core.predict(p, np.array([97, 0xFFFFFFFF], np.uint32)) == bob.core.predict(p, [97, 0xFFFFFFFF])


@pytest.mark.parametrize("words,error,message", [
    ([97, 1.0], TypeError, "prompt word 1 must be an integer; got float 1.0"),
    ([False], TypeError, "prompt word 0 must be an integer; got bool False"),
    ([97, 98, -1], CoreError, "prompt word 2 = -1 is outside 0 .. 2**32 - 1"),
    ([2**32], CoreError, "prompt word 0 = 4294967296 is outside 0 .. 2**32 - 1"),
])
def test_prompt_words_are_refused_by_index(words, error, message):
    p, _, _ = planes()
    with pytest.raises(error) as info:
        bob.core.predict(p, words)
    assert str(info.value) == message


def test_resume_problem_counts_are_refused_by_name():
    p, m, v = planes()
    with pytest.raises(CoreError, match=r"^step = -1 is outside"):
        bob.core.resume_problem(p, m, v, -1)
    with pytest.raises(TypeError, match=r"^updates must be an integer; got float 10.0"):
        bob.core.resume_problem(p, m, v, 0, 10.0)


def test_a_checked_copy_is_the_planes_and_the_same_answer():
    import numpy as np

    p, m, v = planes()
    into = np.full((3, p.size), np.float32(7.0))
    assert bob.core.resume_problem(p, m, v, 10, into=into) is None
    assert into.tobytes() == p.tobytes() + m.tobytes() + v.tobytes()
    v[5] = np.float32(-2.0)
    assert bob.core.resume_problem(p, m, v, 10, into=into) == bob.core.resume_problem(p, m, v, 10) == ("negative", "V", 5)


def test_a_checked_copy_refuses_a_destination_it_cannot_fill_by_name():
    import numpy as np

    p, m, v = planes()
    with pytest.raises(ValueError, match=r"^into holds 3 float32 values, expected 196608$"):
        bob.core.resume_problem(p, m, v, 10, into=np.zeros(3, np.float32))
    read_only = np.zeros(3 * p.size, np.float32)
    read_only.flags.writeable = False
    with pytest.raises(ValueError, match=r"^into is read-only"):
        bob.core.resume_problem(p, m, v, 10, into=read_only)
    with pytest.raises(TypeError, match=r"^into must hold float32 values"):
        bob.core.resume_problem(p, m, v, 10, into=np.zeros(3 * p.size, np.float64))
    block = np.zeros((3, p.size), np.float32)
    for k, name in enumerate("PMV"):  # a destination over one of the planes it copies
        sources = [p, m, v]
        sources[k] = block[0]
        with pytest.raises(ValueError, match=rf"^into shares memory with {name}; it must be a buffer of its own$"):
            bob.core.resume_problem(*sources, 10, into=block)


@pytest.mark.parametrize("call", [
    lambda: bob.core.initial_planes(5),
    lambda: bob.core.initial_planes("bob"),
    lambda: bob.core.initialize(planes()[0], 5),
    lambda: bob.core.fnv1a64(5),
])
def test_seeds_and_data_must_be_bytes(call):
    # bytes(5) would be five zero bytes: a seed nobody meant.
    with pytest.raises(TypeError, match=r"^(seed|data) must be bytes; got (int 5|str 'bob')$"):
        call()


def test_initial_planes_vocabulary_is_refused_by_name():
    with pytest.raises(TypeError, match=r"^vocabulary must be an integer; got float 16.0$"):
        bob.core.initial_planes(b"seed", 16.0)
    with pytest.raises(CoreError, match=r"^vocabulary = -16 is outside"):
        bob.core.initial_planes(b"seed", -16)


@pytest.mark.parametrize("threads,error,message", [
    (1.5, TypeError, "threads must be an integer; got float 1.5"),
    (-1, CoreError, "threads = -1 is outside 0 .. 2**64 - 1"),
])
def test_invoke_threads_are_refused_by_name(threads, error, message):
    record = bob.build_input(b"abcdefgh" * 10, [b"a", b"b", b""])
    with pytest.raises(error) as info:
        bob.invoke(record, threads=threads)
    assert str(info.value) == message


OUT_OF_MEMORY = r"""
import resource, sys
import numpy as np
import bob.core
from bob import _core
big = np.zeros(200_000_000, np.uint8) if sys.argv[1] == "pairs" else None
words = [0] * 4_000_000 if sys.argv[1] in ("prompt words", "predictions") else None  # 32 MB, made before the limit
used = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
# room for neither the words' 16 MB copy nor the predictions' 32 MB, or for the copy alone
limit = used + ((24 if sys.argv[1] == "predictions" else 8) << 20) if words else 1 << 30
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
call = {
    "initial_planes": lambda: bob.core.initial_planes(vocabulary=20_000),  # 3 planes of 1.6 GB
    "pairs": lambda: bob.core.train(*bob.core.initial_planes(), big, big, 0, 1),  # 4 bytes a pair, copied out
    "prompt words": lambda: _core.predict(np.zeros(65536, np.float32), words),  # (bob.core's checks: seconds)
}.get(sys.argv[1], lambda: _core.predict(np.zeros(65536, np.float32), words))
try:
    call()
except Exception as exc:  # a MemoryError is an Exception: not pyo3's PanicException (a BaseException)
    print(type(exc).__name__, exc)
"""


@pytest.mark.parametrize("what, said", [("initial_planes", "Unable to allocate"), ("pairs", "no memory for the pairs"),
                                        ("prompt words", "no memory for prompt_words"),
                                        ("predictions", "no memory for the predictions")])
def test_out_of_memory_in_the_binding_is_a_memory_error(what: str, said: str) -> None:
    """An allocation the binding makes for its caller fails as MemoryError (an Exception),
    never as a panic ("panicked at", a BaseException) or the process aborted."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", OUT_OF_MEMORY, what], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "panicked at" not in done.stderr, done.stderr[-2000:]
    assert done.stdout.startswith(f"MemoryError {said}"), done.stdout + done.stderr[-2000:]


NO_PYTHON_MEMORY = r"""
import _testcapi, sys
import numpy as np
from bob import _core
p = _core.initial_planes(b"seed")[0]
bad_v = np.full(65536, -1.0, np.float32)
words = [k % 257 if k % 257 < 256 else 0xFFFFFFFF for k in range(300)]  # (made here: only the call allocates)
buffers = [k.to_bytes(4, "little") for k in range(300)]
def train():  # the losses and planes; a MemoryError's planes are as it says: as before, or after updates_done
    planes = _core.initial_planes(b"s", vocabulary=2)
    try:
        losses = _core.train(planes, (b"\0\1", b"\1\0"), 0, 300)
    except MemoryError as exc:
        _testcapi.remove_mem_hooks()  # (the checks allocate)
        if RUN > 1:  # (CPython's own traceback of the error, made while allocations still fail, can replace it)
            raise
        done = getattr(exc, "updates_done", 0)
        assert done == 0 or (done == 300 and "the planes hold the state after the 300 updates" in str(exc)), exc
        assert [a.tobytes() for a in planes] == (trained if done else [a.tobytes() for a in fresh]), exc
        raise
    _testcapi.remove_mem_hooks()
    return losses, [a.tobytes() for a in planes]


RUN = int(sys.argv[1])  # failed allocations in a row
fresh = _core.initial_planes(b"s", vocabulary=2)
trained = train()[1]
calls = {
    "predict": lambda: _core.predict(p, words),
    "train": train,
    "xxh3_128_each": lambda: _core.xxh3_128_each(buffers),
    "initial_planes": lambda: [a.tobytes() for a in _core.initial_planes(b"seed", vocabulary=3)],
    "resume_problem": lambda: _core.resume_problem(p, p, bad_v, 1, 1),
    "kernels": _core.kernels,
    "resolved_kernel": _core.resolved_kernel,
    "fnv1a64": lambda: _core.fnv1a64(b"abc"),
    "sha256": lambda: _core.sha256(b"abc"),
}
for name, call in calls.items():
    want, raised = call(), 0
    for first in range(400):  # the first-th allocation Python makes in the call fails, and the RUN - 1 after it
        _testcapi.set_nomemory(first, first + RUN)
        try:
            got = call()
        except MemoryError:
            raised += 1
            continue
        finally:
            _testcapi.remove_mem_hooks()
        assert got == want, (name, first)
    print(name, raised)
"""


def test_a_result_python_has_no_memory_for_is_a_memory_error() -> None:
    """Each result the binding returns (a list of predictions, losses or digests, the planes, a
    problem's tuple, a name, a digest) is made with Python's memory: pyo3's own conversions panicked
    ("PyObject pointer is null") where Python had none, and the panic's report could abort the process.
    One failed allocation at each point of each call is a MemoryError, or the call did not need it
    and its result is the same; a refused plane's buffer is a MemoryError too, not a TypeError. Three
    in a row are never a panic either (an exception pyo3 builds as it raises it panicked so)."""
    import subprocess
    import sys

    testcapi = pytest.importorskip("_testcapi")  # (CPython's, in every build this project's CI uses)
    assert hasattr(testcapi, "set_nomemory")
    for run in ("1", "3"):
        done = subprocess.run([sys.executable, "-c", NO_PYTHON_MEMORY, run], capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0 and "panicked at" not in done.stderr, (run, done.stderr[-2000:])
        raised = dict(line.split() for line in done.stdout.splitlines())
        assert list(raised) == ["predict", "train", "xxh3_128_each", "initial_planes", "resume_problem", "kernels",
                                "resolved_kernel", "fnv1a64", "sha256"]
        assert all(int(count) > 0 for count in raised.values()), raised  # each reached an allocation that failed


def test_the_digests_take_each_buffer_a_sequence_yields_and_refuse_what_is_none() -> None:
    """xxh3_128_each reads its sequence as pyo3's extraction of a Vec did: what iterating it yields (a len()
    that says more is not believed), NumPy arrays of objects or of rows included; a str or a mapping is no
    sequence of buffers. Made fallible, it had taken only lists and tuples."""
    class Lying:
        def __len__(self) -> int:
            return 5

        def __getitem__(self, k: int) -> bytes:
            if k >= 2:
                raise IndexError(k)
            return b"abc"

    abc = bob.core.xxh3_128_each([b"abc"])[0]
    assert bob.core.xxh3_128_each(np.array([b"abc", b"abc"], dtype=object)) == [abc, abc]
    assert bob.core.xxh3_128_each(np.frombuffer(b"abcabc", np.uint8).reshape(2, 3)) == [abc, abc]
    assert bob.core.xxh3_128_each(Lying()) == [abc, abc]
    assert bob.core.xxh3_128_each([b"abc"] * 40_000) == [abc] * 40_000  # (one loan for all: was quadratic)
    for none in ("abc", {"a": b"abc"}, 5):
        with pytest.raises(TypeError, match="^xxh3_128_each needs a sequence of bytes-like objects$"):
            bob.core.xxh3_128_each(none)


@pytest.mark.parametrize("vocabulary", [2**31, 2**32 - 1])
def test_planes_past_any_memory_are_a_memory_error_naming_p(vocabulary: int) -> None:
    """NumPy refuses such a size with a ValueError ("array is too big") before it allocates."""
    with pytest.raises(MemoryError, match=r"^no memory for P \(\d+ values\); nothing was changed$"):
        bob.core.initial_planes(vocabulary=vocabulary)


def test_pairs_in_any_integer_container_are_read_as_values() -> None:
    """D24: an array('H') was "must hold uint8 or uint32" and a strided memoryview "not C-contiguous",
    where a uint16 or a strided NumPy array was read as values."""
    import array

    import numpy as np

    from bob import core

    contexts, targets = bytes(range(256)), bytes(range(256))[::-1]
    want = core.train(*core.initial_planes(), contexts, targets, 0, 2)
    for given in (array.array("H", list(contexts)), array.array("I", list(contexts)), np.frombuffer(contexts, np.uint8),
                  memoryview(bytes(b for c in contexts for b in (c, 0)))[::2]):
        assert core.train(*core.initial_planes(), given, targets, 0, 2) == want, given


@pytest.mark.parametrize("kernel", [None, 5, b"auto"])
def test_a_kernel_is_named_by_a_str(kernel) -> None:
    """str() made None "None" (a ValueError: no such kernel) and took any object that printed a name."""
    p, m, v = bob.core.initial_planes()
    record = bob.build_input(b"abracadabra", [b"abra", b"cad", b""])
    with pytest.raises(TypeError, match=r'^kernel must be a str \("auto" or one of kernels\(\)\); got '):
        bob.core.train(p, m, v, record.contexts, record.targets, 0, 1, kernel=kernel)


FLOOR_WITHOUT_THREADS = """
import resource
from bob import _core
used = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
limit = used + (64 << 20)  # room for a few threads' stacks, not for 256
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
try:
    _core._fused_loop_floor(256)
except Exception as exc:
    print(type(exc).__name__, exc)
"""


def test_the_floor_benchmark_that_cannot_start_its_threads_says_so_rather_than_waiting_for_ever() -> None:
    """benchmarks/bench_threads.py's hook: threads it started waited at a barrier for one that could not be
    (a panic, then a process that never ended, deaf to Ctrl-C); now its OSError, the started threads ended."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", FLOOR_WITHOUT_THREADS], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "panicked at" not in done.stderr, done.stderr[-2000:]
    assert done.stdout.startswith(("BlockingIOError ", "OSError ", "MemoryError ")), done.stdout + done.stderr[-2000:]
