"""Types of ``bob._core``, the native core (rust/bob-py). Kept by hand:
tests/core/test_core_stub.py checks it against the built module's names and
signatures."""

from collections.abc import Callable, Sequence
from typing import TypeAlias, TypeVar

import numpy as np
import numpy.typing as npt
from typing_extensions import Buffer, final

# Any C-contiguous, float32-aligned buffer of float32 values in this
# machine's byte order: NumPy arrays, array.array("f"), a memoryview cast to "f". (NumPy's stubs declare the buffer protocol on
# ndarray only for Python >= 3.12, hence the explicit array type.)
_Plane: TypeAlias = Buffer | npt.NDArray[np.float32]
# The pairs' bytes: bytes, bytearray, or a uint8 / uint32 array.
_Pairs: TypeAlias = Buffer | npt.NDArray[np.uint8] | npt.NDArray[np.uint32]

__all__ = [
    "CoreError",
    "UPDATES_PER_INVOCATION",
    "fnv1a64",
    "in_default_environment",
    "initial_planes",
    "initialize",
    "kernels",
    "predict",
    "reading",
    "Reading",
    "resolved_kernel",
    "resume_problem",
    "sha256",
    "train",
    "xxh3_128_each",
]

# Updates one invocation makes: the core's own count (bob-core's UPDATES_PER_INVOCATION),
# held equal to bob.formats.constants.UPDATES_PER_INVOCATION by tests/core/test_core_stub.py.
UPDATES_PER_INVOCATION: int

class CoreError(ValueError):
    """The native core refused its arguments (the message names which and why)."""

_T = TypeVar("_T")

def fnv1a64(data: bytes) -> int: ...
def in_default_environment(function: Callable[[], _T]) -> _T: ...
def sha256(data: Buffer) -> bytes: ...
def initialize(p: _Plane, seed: bytes) -> None: ...
def initial_planes(
    seed: bytes, vocabulary: int = 256
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32], npt.NDArray[np.float32]]: ...
def train(
    planes: tuple[_Plane, _Plane, _Plane],
    pairs: tuple[_Pairs, _Pairs],
    step: int,
    updates: int,
    *,
    threads: int = 0,
    kernel: str = "auto",
) -> list[float]: ...
def predict(p: _Plane, prompt_words: Sequence[int]) -> list[tuple[int, int]]: ...

@final
class Reading:
    """Read loans on the buffers given, held with the buffers themselves (their memory is never freed and handed
    out while lent) until released (or the end of a ``with`` block)."""

    def release(self) -> None: ...
    def __enter__(self) -> Reading: ...
    def __exit__(self, *exc: object) -> bool: ...

def reading(**planes: Buffer) -> Reading: ...
def resume_problem(
    p: _Plane, m: _Plane, v: _Plane, step: int, updates: int, *, into: _Plane | None = None
) -> tuple[str, str, int] | None: ...
def resolved_kernel(kernel: str = "auto") -> str: ...
def kernels() -> list[str]: ...
def xxh3_128_each(buffers: Sequence[Buffer]) -> list[bytes]: ...
