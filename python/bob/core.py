"""The native core, and nothing else: bob's training math lives in Rust.

This module is the package's door to ``bob._core``: nothing else in bob
imports the extension except :mod:`bob.fuzz.core_target`, which fuzzes the
binding itself (``tests/house/test_house.py`` holds that). It never
re-implements the math and never falls back to anything: if the extension is
missing, importing this module raises :class:`NativeCoreUnavailable` saying
how to build it.

It imports nothing heavy: the core works on any float32 buffer in this
machine's byte order (NumPy arrays, flat or as tables, ``array.array('f')``,
a ``bytearray`` cast to ``'f'``), so ``bob-run`` can train without importing
NumPy. An array of another library with ``__dlpack__`` or ``__array__`` (a
torch tensor) is taken through a NumPy view of its memory
(:mod:`bob.arrays`): training a CPU float32 tensor trains it in place.
NumPy comes in only for the functions that make or convert arrays.

Memory the binding allocates for its caller (the pairs of :func:`train`, the
words and the predictions of :func:`predict`, the planes of :func:`initial_planes`,
by ``numpy.zeros``) is reserved before use, and what it returns (a list of
predictions, losses or digests, the planes) is made with Python's memory by
CPython's constructors: when either has none (``ulimit -v``, more than the
address space), the call raises ``MemoryError`` with nothing changed, never a
panic. A :func:`train` that runs out after its first chunk of updates, or has
no memory for its list of losses once they are made, raises it with
``updates_done`` (as a Ctrl-C's): the planes hold the state after those updates.
A kernel that overcommits (Linux's default) may grant more than
there is and end the process when the pages are first written
(``initial_planes`` of a vocabulary in the tens of thousands asks for tens of
GiB), as it would any program's.
"""

from __future__ import annotations

import sys

from bob.errors import byte_buffer, int_text, integer_value, ordered_items, shown_kind
from bob.formats.constants import (  # noqa: F401 - re-exported for the library's users
    EMPTY_PROMPT,
    PARAMETER_COUNT,
    SEED,
    UPDATES_PER_INVOCATION,
    VOCABULARY,
)


TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - typing costs start-up time bob-run does not pay
    from collections.abc import Callable, Iterable
    from typing import Any, TypeVar

    import numpy as np
    import numpy.typing as npt

    from bob.arrays import PairsLike, PlaneLike

    _T = TypeVar("_T")

__all__ = [
    "CoreError",
    "sha256",
    "xxh3_128_each",
    "EMPTY_PROMPT",
    "NativeCoreUnavailable",
    "PARAMETER_COUNT",
    "SEED",
    "UPDATES_PER_INVOCATION",
    "VOCABULARY",
    "fnv1a64",
    "in_default_environment",
    "initial_planes",
    "initialize",
    "kernels",
    "predict",
    "reading",
    "resume_problem",
    "train",
]


class NativeCoreUnavailable(ImportError):
    """bob._core could not be loaded; there is no other path to the math."""


def _unavailable() -> NativeCoreUnavailable:
    import sys

    reason = sys.exc_info()[1]  # (no `except … as name` here: it would leave a name in the module's types)
    return NativeCoreUnavailable(
        "bob's native core (bob._core) is not built or cannot be loaded "
        f"({reason}). Build it from the checkout with `scripts/bootstrap.sh` "
        "(maturin develop --release); bob has no other path to the training math.")


try:
    from bob import _core
except ImportError:  # pragma: no cover - exercised through a subprocess test
    from bob.failures import room_to_load

    if not room_to_load():  # the machine's (the command's unexpected exit), not a missing build
        raise MemoryError("no address space left to load bob's native core") from None
    raise _unavailable()  # chained to the ImportError

CoreError = _core.CoreError


def _bytes(value, name: str) -> bytes:
    """A bytes-like ``value`` as bytes, or the one "must be bytes" refusal
    (:func:`bob.errors.byte_buffer`) that names it."""
    return byte_buffer(value, name, core=True).tobytes()


def _whole(value, name: str, bits: int = 64) -> int:
    """``value`` as an int in 0 .. 2**bits - 1, or a refusal that names it.

    Every count and word the core takes goes through here, so a float, a
    bool, a string or an integer out of range is refused by name rather
    than truncated by ``int()`` or left to a nameless ``OverflowError``
    (one too large for digits said by its size: :func:`bob.errors.int_text`).
    """
    number = integer_value(value)
    if number is None:
        raise TypeError(f"{name} must be an integer; got {shown_kind(value)}")
    if not 0 <= number < 1 << bits:
        raise CoreError(f"{name} = {int_text(number)} is outside 0 .. 2**{bits} - 1")
    return number


def in_default_environment(function: "Callable[[], _T]") -> "_T":
    """``function()``, called in the IEEE default floating-point environment (D17), the thread's own
    given back afterwards; :mod:`bob.environment` decorates with it."""
    return _core.in_default_environment(function)


sha256 = _core.sha256
"""SHA-256 of a bytes-like object, by the core (the CPU's SHA extensions where
it has them): as fast as hashlib here without importing OpenSSL, which is a
tenth of a bob-run (BENCHMARKS.md)."""


xxh3_128_each = _core.xxh3_128_each
"""XXH3-128 of each of a list of bytes-like objects (16 bytes, big-endian), by
the core with the GIL released: a traced run's P, M and V after each update
(:func:`bob.invocation.traced_train`; formats/trace.md)."""


def _refuse_masked(value: Any, name: str) -> None:
    from bob.arrays import is_masked  # lazily: bob-run's planes and pairs return before this is asked

    if is_masked(value):
        raise TypeError(f"{name} is a masked array; the core reads every value, masked or not (pass "
                        f"numpy.ma.getdata({name}))")


def _plane(value: "PlaneLike", name: str, writes: bool = False) -> "Any":
    """A plane for the binding: a buffer as it is (the binding checks it and names it), an array of another
    library through a NumPy view of it (or a ``TypeError`` naming the plane, as for any object that is no
    buffer). What the core would read other than as the caller sees it is refused: a masked array (its mask),
    and, for a plane the core ``writes``, an ``__array__`` that gives a new copy (the copy would be trained)."""
    if type(value).__module__ == "numpy" or isinstance(value, (memoryview, bytearray, bytes)) \
            or hasattr(value, "typecode"):
        return value  # a NumPy array, bob-run's planes (memoryviews), array.array: the binding checks them
    _refuse_masked(value, name)
    from bob.arrays import foreign_array, is_foreign  # lazily: bob-run's start-up does without

    if is_foreign(value):
        return foreign_array(value, name, shared=writes)
    try:  # another buffer: through a memoryview, the same memory, since the binding's buffer request needs
        return memoryview(value)  # type: ignore[arg-type]  # the strides a ctypes array does not export
    except TypeError:
        return value  # no buffer: the binding refuses it by name


def fnv1a64(data: bytes) -> int:
    """FNV-1a-64 of ``data`` (contract §6.1), computed by the core."""
    return _core.fnv1a64(_bytes(data, "data"))


def initial_planes(seed: bytes = SEED, vocabulary: int = VOCABULARY) -> "tuple[npt.NDArray[np.float32], npt.NDArray[np.float32], npt.NDArray[np.float32]]":
    """Fresh P, M, V as flat float32 NumPy arrays in parameter order (contract §6.1)."""
    return _core.initial_planes(_bytes(seed, "seed"), _whole(vocabulary, "vocabulary"))


def initialize(p: "PlaneLike", seed: bytes = SEED) -> None:
    """Fill the float32 buffer ``p`` in place with the seeded initialization (§6.1)."""
    _core.initialize(_plane(p, "p", writes=True), _bytes(seed, "seed"))


def _buffer(value: Any) -> "memoryview | None":
    """A memoryview of ``value`` if it is a buffer that is neither an array (with a ``dtype``) nor a torch tensor."""
    if hasattr(value, "dtype") or hasattr(value, "__dlpack__"):
        return None
    try:
        return memoryview(value)
    except TypeError:
        return None


def _pair_buffer(pairs: "PairsLike | Iterable[int]", name: str) -> "Any":
    """Contexts or targets as a C-contiguous uint8 or uint32 buffer.

    Refuses instead of guessing: values that are not integers (a float 97.7,
    a bool) raise ``TypeError``; integers outside u32 (-1, 2**32 + 97) raise
    :class:`CoreError` naming the index — never a silent wrap or truncation.
    Values at or above the vocabulary are refused by the core itself.
    """
    values: Any = pairs
    if isinstance(values, (bytes, bytearray)):
        return values
    view = _buffer(values)  # a memoryview, array.array, mmap, ctypes array, PickleBuffer: not a NumPy array
    if view is not None:
        if view.c_contiguous and (view.format, view.itemsize) in (("B", 1), ("I", 4)):
            return view  # what the binding reads as it is
        import numpy as np  # any other integers (an array('H'), a strided view): read as values

        values = np.asarray(view)
    _refuse_masked(values, name)
    from bob.arrays import foreign_array, is_foreign

    if is_foreign(values):  # a torch tensor: its NumPy view, checked as any array is
        values = foreign_array(values, name)
    dtype = getattr(values, "dtype", None)
    if dtype is not None:  # a NumPy array: NumPy is already imported
        import numpy as np

        if dtype.kind not in "ui":
            raise TypeError(f"{name} must hold integers (byte values); got an array of {dtype}")
        if dtype in (np.uint8, np.uint32) and values.flags.c_contiguous:
            return values
        flat = np.asarray(values).reshape(-1)
        bad = np.flatnonzero(np.less(flat, 0) | np.greater(flat, 0xFFFFFFFF))  # not `<`: see bob.formats.rules
        if bad.size:
            k = int(bad[0])
            raise CoreError(f"{name}[{k}] = {int(flat[k])} is not a byte value (not even a u32)")
        return np.ascontiguousarray(flat, dtype=np.uint32)
    import array  # lazily: array imports collections, which bob-run's start-up does without

    words, given = array.array("I"), ordered_items(values)
    if given is None:
        raise TypeError(f"{name} must be a sequence of byte values (bytes, an integer array); got {shown_kind(values)}")
    for k, value in enumerate(given):
        whole = integer_value(value)  # (a NumPy integer too: every door that takes an integer asks this)
        if whole is None:
            raise TypeError(f"{name}[{k}] must be an integer (a byte value); got {shown_kind(value)}")
        if not 0 <= whole <= 0xFFFFFFFF:
            raise CoreError(f"{name}[{k}] = {int_text(whole)} is not a byte value (not even a u32)")
        words.append(whole)
    return words


def train(p: "PlaneLike", m: "PlaneLike", v: "PlaneLike", contexts: "PairsLike | Iterable[int]",
          targets: "PairsLike | Iterable[int]", step: int, updates: int = UPDATES_PER_INVOCATION,
          *, threads: int = 0, kernel: str = "auto") -> list[float]:
    """Make ``updates`` AdamW updates in place on P, M, V (contract §6.3).

    P, M, V are writable float32 buffers of rows x rows values (flat or
    as the table; a NumPy array, an ``array.array``, a torch tensor …);
    ``contexts`` and ``targets`` are the pairs' bytes (bytes, integer arrays
    or tensors, or a sequence of ints). ``step``
    is the number of updates completed before. Returns the loss before each
    update (contract §6.4). ``kernel`` is "auto" (the best fast kernel) or one
    of :func:`kernels`; "scalar" is the slow reference transcription of §6,
    for qualifying the others, never chosen by "auto".

    Ctrl-C (a signal whose handler raises) ends a long call between whole
    updates: the exception's ``updates_done`` says how many, and the planes
    hold the state after them; so does a ``MemoryError`` from memory that
    ran out after the first of its chunks (another thread took it). While it
    runs, another call of the core on the same memory (another thread's) is
    refused with ``BufferError``; the caller's own writes to the planes from
    another thread are not seen (the GIL is released) and make the result
    the schedule's: make none.
    """
    if not isinstance(kernel, str):  # (str() made None "None" and took any object that prints a name)
        raise TypeError(f"kernel must be a str (\"auto\" or one of kernels()); got {shown_kind(kernel)}")
    return _core.train((_plane(p, "p", True), _plane(m, "m", True), _plane(v, "v", True)),
                       (_pair_buffer(contexts, "contexts"), _pair_buffer(targets, "targets")),
                       _whole(step, "step"), _whole(updates, "updates"), threads=_whole(threads, "threads"),
                       kernel=kernel)


def reading(*planes: Any, **named: Any) -> Any:
    """Read loans on the planes P, M, V (or on buffers by name: ``reading(P=view)``) for a ``with`` block
    (``bob._core.reading``): a :func:`train` of that memory meanwhile, in another thread, is a ``BufferError``,
    and so is taking them while one runs (``Checkpoint.to_bytes`` hashes and copies inside one; a ``Checkpoint``
    converting a strided or byte-swapped view copies it inside one). Each loan spans the bytes its buffer's
    items lie in, whatever their strides. What is no buffer (a list) cannot be trained, and gets none; the
    others get theirs."""
    import contextlib

    if len(planes) > 3:
        raise TypeError("reading takes the planes P, M and V")
    lent = {}
    for name, x in {**dict(zip("PMV", planes)), **named}.items():
        with contextlib.suppress(TypeError):  # (a masked array, what no array can be made of: never trained)
            lent[name] = _plane(x, name)
    return _core.reading(**lent)  # (BufferError, a train holding one, goes to the caller)


def kernels() -> list[str]:
    """Names of the kernels this CPU can run: "scalar" (the reference), then the fast ones."""
    return _core.kernels()


def predict(p: "PlaneLike", prompt_words: "Iterable[int]") -> list[tuple[int, int]]:
    """(token, validity) per prompt word (contract §4); 0xFFFFFFFF is an empty prompt."""
    words = ordered_items(prompt_words)
    if words is None:
        raise TypeError(f"prompt_words must be a sequence of integers; got {shown_kind(prompt_words)}")
    return _core.predict(_plane(p, "p"), [_whole(w, f"prompt word {k}", 32) for k, w in enumerate(words)])


def resume_problem(p: "PlaneLike", m: "PlaneLike", v: "PlaneLike", step: int,
                   updates: int = UPDATES_PER_INVOCATION, *, into: "PlaneLike | None" = None) -> "tuple[str, str, int] | None":
    """The first reason the state may not be resumed (§5) as (check, plane, index), or None.

    ``check`` is "non_finite", "negative", "moments_at_step_zero" or
    "no_room"; ``plane`` "P", "M", "V" (or "" for the step); ``index`` the
    parameter index (0 for the step). With ``into`` (a writable float32
    buffer of 3 × len(P) values, sharing no memory with P, M, V), P, M and V
    are copied into it first and the copy is checked: a checked copy in one
    call (``bob.invoke`` makes its working copy so).
    """
    return _core.resume_problem(_plane(p, "p"), _plane(m, "m"), _plane(v, "v"), _whole(step, "step"),
                                _whole(updates, "updates"), into=None if into is None else _plane(into, "into", True))
