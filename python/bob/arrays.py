"""Arrays from other libraries, as NumPy arrays: the one place bob takes them in.

A plane (``Checkpoint(step, p, m, v)``, ``bob.core.train(p, m, v, …)``) or
the pairs' bytes may be anything a user holds: a NumPy array, flat or
as its table (a row per context byte); anything with the buffer protocol (``array.array``, a
``memoryview``); or an object that offers ``__dlpack__`` or ``__array__``
— torch tensors, JAX and CuPy arrays. :func:`foreign_array` turns the last
kind into a NumPy array, zero-copy where the owner allows (a CPU torch
tensor shares its memory: training it in place trains the tensor), and
refuses by name what it cannot take (a tensor that requires grad, one on
a GPU).

Imports NumPy only when such an object is given (``bob-run`` passes bytes and
``array.array``).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - typing costs start-up time bob-run does not pay
    from typing import Any, Protocol, TypeAlias

    import numpy as np
    import numpy.typing as npt
    from typing_extensions import Buffer

    class SupportsDLPack(Protocol):
        """An array of another library that exports DLPack (torch, JAX, CuPy …)."""

        def __dlpack__(self) -> Any: ...

    class SupportsArray(Protocol):
        """An object NumPy converts with ``__array__``."""

        def __array__(self) -> npt.NDArray[Any]: ...

    #: A plane as bob takes it: 65,536 float32 values (flat or 256 x 256) in any of these forms; other
    #: dtypes are converted by Checkpoint and refused by the core, which reads planes in place (README).
    PlaneLike: TypeAlias = npt.NDArray[np.float32] | npt.NDArray[Any] | Buffer | SupportsDLPack | SupportsArray
    #: The pairs' bytes: bytes, a uint8 / uint32 buffer, an integer array or tensor.
    PairsLike: TypeAlias = Buffer | npt.NDArray[Any] | SupportsDLPack | SupportsArray

__all__ = ["NotAnArray", "foreign_array", "is_foreign", "is_masked"]
if TYPE_CHECKING:  # pragma: no cover - the aliases exist for type checkers only (`import *` must not ask for them)
    __all__ += ["PlaneLike", "PairsLike"]


class NotAnArray(TypeError):
    """An array of another library that cannot be read here; ``reason`` is its owner's."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"{name}: {reason}")
        self.name: str = name
        self.reason: str = reason

    def __reduce__(self) -> "tuple[type[NotAnArray], tuple[str, str]]":  # its arguments: it pickles and copies
        return type(self), (self.name, self.reason)


def is_masked(value: object) -> bool:
    """True for a NumPy masked array, which bob refuses wherever it reads values (D22): which value a
    masked slot holds is the caller's decision. (``numpy.ma`` is looked up, never imported.)"""
    import sys

    masked = sys.modules.get("numpy.ma")
    return masked is not None and isinstance(value, masked.MaskedArray)


def is_foreign(value: object) -> bool:
    """True for an object that is no NumPy array and offers no buffer, but
    ``__dlpack__`` or ``__array__`` (a torch tensor)."""
    if type(value).__module__ == "numpy":
        return False
    if not (hasattr(value, "__dlpack__") or hasattr(value, "__array__")):
        return False
    try:
        memoryview(value)  # type: ignore[arg-type]
    except TypeError:
        return True
    return False


def foreign_array(value: Any, name: str, *, shared: bool = False) -> "np.ndarray":
    """``value`` (see :func:`is_foreign`) as a NumPy array, sharing its memory where it can: DLPack first
    (zero-copy, and it refuses a tensor on another device rather than copying it), then ``__array__``;
    ``shared``: only an array that is ``value``'s memory (an ``__array__`` giving a new copy each time is
    refused: what bob writes into it would be lost). A refusal is a :class:`NotAnArray` (a ``TypeError``)
    naming ``name`` and the owner's reason."""
    import numpy as np

    reasons = []
    if hasattr(value, "__dlpack__"):
        try:
            return np.from_dlpack(value)
        except (BufferError, TypeError, ValueError, RuntimeError) as exc:
            reasons.append(f"__dlpack__: {type(exc).__name__}: {_first_line(exc)}")
    if hasattr(value, "__array__"):
        try:
            array = np.asarray(value)
            if not shared or np.may_share_memory(array, np.asarray(value)):
                return array
            reasons.append("__array__ gives a new copy each time, and bob would train the copy, not the object")
        except (TypeError, ValueError, RuntimeError) as exc:
            reasons.append(f"__array__: {type(exc).__name__}: {_first_line(exc)}")
    raise NotAnArray(name, f"a {type(value).__module__}.{type(value).__qualname__} cannot be read as an array "
                           f"on this CPU ({'; '.join(reasons)})")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else "no reason given"
