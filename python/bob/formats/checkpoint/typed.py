"""The typed checkpoint (:class:`Checkpoint`), its loader, its reader and its description:
the checkpoint's top room (nothing of the checkpoint imports it back)."""

from __future__ import annotations

import contextlib
import copy
import copyreg
import os
import sys
import threading
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from bob.arrays import NotAnArray, foreign_array, is_foreign, is_masked
from bob.environment import in_default_environment
from bob.errors import BadValue, flag_value, integer_field, integer_value, real_value, shown_kind
from bob.fileio import write_atomic
from bob.formats.checkpoint.examination import Examination, examine
from bob.formats.checkpoint.header import HEADER_BYTES, check_pin, envelope_header, hashlib_sha256, header_length
from bob.formats.checkpoint.state import finite_range, refuse_unresumable
from bob.formats.constants import (LEARNER_FLOATS, MAX_CHECKPOINT_BYTES, MAX_HEADER_BYTES, PARAMETER_COUNT,
                                   PLANE_NAMES, U64_MAX, UPDATES_PER_INVOCATION, VOCABULARY)
from bob.formats.contract import V1, Contract
from bob.formats.files import CHECKPOINT_FILE, as_bytes, read_format_file
from bob.formats.layout import HEADER_ALIGNMENT, PLANE_DTYPE, WORD_DTYPE
from bob.formats.rules import HEADER_BYTES as HEADER_BYTES_RULE
from bob.text import f32_text, repr_text

if TYPE_CHECKING:  # pragma: no cover
    import numpy.typing as npt

    from bob.arrays import PlaneLike

__all__ = ["Checkpoint", "TABLE_SHAPE", "load_checkpoint", "read_checkpoint_file", "describe_envelope"]

TABLE_SHAPE = (VOCABULARY, VOCABULARY)
"""A plane as a table: row = context byte, column = next byte (index ``context * VOCABULARY + next``)."""

_A_PLANE = f"a plane is {PARAMETER_COUNT} float32 values"


def _plane(value: Any, name: str) -> np.ndarray:
    """A plane as :class:`Checkpoint` holds it, from what it takes (which it
    shares, which it converts: its docstring)."""
    if type(value) is np.ndarray and value.dtype == np.float32 and value.shape == (PARAMETER_COUNT,) \
            and value.flags.c_contiguous and value.flags.writeable and value.flags.aligned:
        return value  # the planes bob itself makes (loaders, bob.invoke): nothing to convert
    if is_masked(value):  # D22: a plane has no mask
        raise BadValue(name, f"{_A_PLANE}, without a mask; a masked array is refused (pass np.ma.getdata "
                       "or .filled() of it)", actual=f"type {type(value).__name__}")
    try:
        if isinstance(value, np.ndarray):  # D22: a subclass (np.matrix, np.memmap) becomes a new base-class array
            arr = value.view(np.ndarray)  # (copied below)
        elif is_foreign(value):
            arr = foreign_array(value, name)
        else:
            arr = np.asarray(value)
    except NotAnArray as exc:
        raise BadValue(name, f"{_A_PLANE}; {exc.reason}") from None
    except (TypeError, ValueError) as exc:
        raise BadValue(name, f"{_A_PLANE} ({type(exc).__name__})") from None
    if isinstance(value, (list, tuple)) and arr.dtype.kind in "fiu":  # each item a number (a bool is none)
        items = np.asarray(value, dtype=object).reshape(-1)
        if (k := next((i for i, x in enumerate(items) if real_value(x) is None), None)) is not None:
            raise BadValue(name, f"{_A_PLANE}: each value a number", actual=shown_kind(items[k]), index=k)
    if arr.shape not in ((PARAMETER_COUNT,), TABLE_SHAPE):
        raise BadValue(name, f"a plane holds {PARAMETER_COUNT} values (flat, or {VOCABULARY} x {VOCABULARY})",
                       expected=f"shape ({PARAMETER_COUNT},) or {TABLE_SHAPE}",
                       actual=f"shape {arr.shape}" if arr.ndim else shown_kind(value))  # (bytes: no "shape ()")
    if arr.dtype != np.float32 or not arr.flags.c_contiguous or not arr.flags.writeable or not arr.flags.aligned \
            or isinstance(value, np.ndarray) and type(value) is not np.ndarray:  # (a subclass: D22)
        if arr.dtype.kind not in "fiu":
            raise BadValue(name, "a plane holds float32 values", actual=f"dtype {arr.dtype}")
        with np.errstate(over="ignore", invalid="ignore"), _lent(**{name: arr}):  # (never a copy torn by a train)
            arr = in_default_environment(np.array)(arr, dtype=np.float32, order="C")  # a new array, rounded per D17
    return arr if arr.ndim == 1 else arr.reshape(PARAMETER_COUNT)


def _lent(**planes: Any) -> Any:
    """The core's read loans on ``planes`` (:func:`bob.core.reading`) for a ``with`` block: no train of them
    meanwhile, so a copy, a comparison or a file holds one state, the one checked."""
    if sys.modules.get("bob._core") is None:  # (not loaded, or blocked: no train of them can be running;
        return contextlib.nullcontext()  # loaded, through bob.core or by itself, one may be)
    from bob import core

    return core.reading(**planes)


_COPIES = threading.local()  # each thread's buffer for to_bytes's copy of the planes: a new one each call costs
# its pages' first touch, more than the copy (bob-run writes through to_bytes)


def _header_bytes(value: Any, contract: Contract) -> int:
    hb = integer_field(value, "header_bytes", "header_bytes is an integer")
    need = header_length(contract)
    if not HEADER_BYTES_RULE.ok(hb) or hb < need:  # the reader's rule, and room for this contract's header
        raise BadValue("header_bytes", f"a multiple of {HEADER_ALIGNMENT}, at least the header's {need} bytes, at most "
                       f"{MAX_HEADER_BYTES}", actual=hb)
    return hb


@dataclass(eq=False, init=False)
class Checkpoint:
    """A bob checkpoint: the step, the planes P, M, V and the header's contract.

    The planes, their table views and what a plane may be built from (shared or converted, D22) are
    README's "Planes in the shapes users hold". ``header_bytes`` is where plane P starts; a loaded file keeps
    its own, so :meth:`to_bytes` gives back exactly the bytes it was read from. What no envelope can hold is
    refused (``BadValue``) when the checkpoint is built and again when it is serialised (or compared)."""

    step: int
    p: npt.NDArray[np.float32]
    m: npt.NDArray[np.float32]
    v: npt.NDArray[np.float32]
    header_bytes: int = HEADER_BYTES
    contract: Contract = field(default=V1)

    def __init__(self, step: int, p: "PlaneLike", m: "PlaneLike", v: "PlaneLike",
                 header_bytes: int = HEADER_BYTES, contract: Contract = V1) -> None:
        self.step = step
        self.p = p  # type: ignore[assignment]  # made a float32 array by _check
        self.m = m  # type: ignore[assignment]
        self.v = v  # type: ignore[assignment]
        self.header_bytes = header_bytes
        self.contract = contract
        self._check()

    def _check(self) -> None:
        """Refuse (``BadValue``) what no envelope can hold; run again before serialising,
        since the fields can be reassigned in between."""
        self.step, self.header_bytes, self.contract, self.p, self.m, self.v = self._written()

    def _written(self) -> "tuple[int, int, Contract, np.ndarray, np.ndarray, np.ndarray]":
        """(step, header_bytes, contract, P, M, V) as they would be written, or :meth:`_check`'s
        refusal; the checkpoint itself unchanged (``==`` and :meth:`copy` read it so)."""
        planes = [_plane(getattr(self, name), name.upper()) for name in ("p", "m", "v")]
        step = integer_value(self.step)
        if step is None or not 0 <= step <= U64_MAX:
            raise BadValue("step", "the step is an integer from 0 to 2**64 - 1",
                           actual=shown_kind(self.step) if step is None else step)
        if not isinstance(self.contract, Contract):
            raise BadValue("contract", "a bob.Contract", actual=shown_kind(self.contract))
        return step, _header_bytes(self.header_bytes, self.contract), self.contract, planes[0], planes[1], planes[2]

    @classmethod
    def fresh(cls) -> "Checkpoint":
        """The fresh state at step 0 (§6.1), made by the native core."""
        from bob import core  # lazily: parsing never needs the core

        return cls(0, *core.initial_planes(V1.seed, VOCABULARY))

    @classmethod
    def _of(cls, ex: Examination) -> "Checkpoint":
        """The checkpoint an examination read, or its first finding raised. The planes are
        copied once, into arrays the core can train in place, never views of the bytes (D20);
        the values are not checked again (the examination did: a read passes each room once)."""
        if ex.checked().fresh:
            return cls.fresh()
        assert ex.header is not None and ex.planes is not None
        made = object.__new__(cls)
        made.p, made.m, made.v = ex.planes.copy()
        made.step, made.header_bytes, made.contract = ex.header.step, ex.header.header_bytes, V1
        return made

    @property
    def invocations(self) -> int:
        """Invocations completed: ``step // UPDATES_PER_INVOCATION``."""
        return self.step // UPDATES_PER_INVOCATION

    @property
    def planes(self) -> dict[str, npt.NDArray[np.float32]]:
        """The flat planes by name: ``{"P": p, "M": m, "V": v}``, each a plane reassigned since as its array now."""
        return {name: self._flat(name.lower()) for name in PLANE_NAMES}

    def _flat(self, attribute: str) -> npt.NDArray[np.float32]:
        setattr(self, attribute, plane := _plane(getattr(self, attribute), attribute.upper()))  # (a list: its array)
        return plane

    def _table(self, attribute: str) -> npt.NDArray[np.float32]:
        return self._flat(attribute).reshape(TABLE_SHAPE)  # a view: the plane is C-contiguous

    @property
    def p_table(self) -> npt.NDArray[np.float32]:
        """Plane P as a writable table view: ``p_table[context, next]``."""
        return self._table("p")

    @property
    def m_table(self) -> npt.NDArray[np.float32]:
        """Plane M as a writable table view."""
        return self._table("m")

    @property
    def v_table(self) -> npt.NDArray[np.float32]:
        """Plane V as a writable table view."""
        return self._table("v")

    @property
    def tables(self) -> dict[str, npt.NDArray[np.float32]]:
        """The table views by name: ``{"P": p_table, "M": m_table, "V": v_table}``."""
        return {name: self._table(name.lower()) for name in PLANE_NAMES}

    def to_bytes(self, header_bytes: int | None = None, *, for_resume: bool = True) -> bytes:
        """The envelope file (``header_bytes``: the checkpoint's own by default).

        A state ``bob-run`` would refuse to resume is refused with a reader's
        :class:`~bob.FormatError` unless ``for_resume=False`` (for test files).
        The planes are copied, then checked and hashed, under the core's read loans (:meth:`_loans`).
        """
        return self._bytes("Checkpoint.to_bytes", header_bytes, for_resume)

    def _loans(self) -> Any:  # _lent on the planes
        return _lent(P=self.p, M=self.m, V=self.v)

    def _bytes(self, what: str, header_bytes: int | None, for_resume: bool) -> bytes:  # to_bytes, for ``what``
        with self._loans():
            self._check()
            step, own, c, *live = self._written()  # (what _check stored: read once)
            # Copied first, then checked and hashed: a thread writing a plane meanwhile changes no byte of the
            # copy, so the digests and the resume check are of the bytes written (D14).
            planes = _COPIES.__dict__.pop("planes", None)  # (taken: a call inside this one, a signal handler's
            if planes is None:  # save, makes its own)
                planes = np.empty((len(PLANE_NAMES), PARAMETER_COUNT), PLANE_DTYPE)  # little-endian, as the file
            try:
                np.stack(live, out=planes)
                if flag_value(for_resume, "for_resume"):
                    refuse_unresumable(Checkpoint(step, planes[0], planes[1], planes[2], own, c), what)
                hb = _header_bytes(own if header_bytes is None else header_bytes, c)
                header = envelope_header(step, [hashlib_sha256(row) for row in planes], hb,
                                         (c.state, c.learner, c.data, c.seed), c.payload_bytes, c.chunk_bytes,
                                         c.updates_per_invocation, hashlib_sha256)
                return b"".join((header, planes.data))
            finally:
                _COPIES.planes = planes

    @classmethod
    def from_bytes(cls, data: bytes, *, for_resume: bool = True) -> "Checkpoint":
        """Parse and check a checkpoint file's bytes (:func:`bob.load_checkpoint`)."""
        return cls._of(examine(data, for_resume=for_resume))

    @classmethod
    def read(cls, path: "str | os.PathLike[str]", *, for_resume: bool = True) -> "Checkpoint":
        """Read and check the checkpoint file at ``path`` (:func:`bob.read_checkpoint_file`)."""
        return cls._of(examine(read_format_file(path, MAX_CHECKPOINT_BYTES, CHECKPOINT_FILE), for_resume=for_resume))

    def write(self, path: "str | os.PathLike[str]", *, for_resume: bool = True) -> None:
        """Replace the file at ``path`` with this checkpoint, atomically, refusing
        first what :meth:`to_bytes` refuses."""
        write_atomic(path, self._bytes("Checkpoint.write", None, for_resume))

    # -- other tools' files (bob.interop, which never imports the checkpoint back)

    def to_safetensors(self, path: "str | os.PathLike[str]", *, for_resume: bool = True) -> None:
        """Write the checkpoint as a safetensors file, atomically (:mod:`bob.interop`; needs the ``interop`` extra)."""
        from bob.interop import write_safetensors

        write_safetensors(self, path, for_resume=for_resume)

    @classmethod
    def from_safetensors(cls, path: "str | os.PathLike[str]", *, for_resume: bool = True) -> "Checkpoint":
        """Read a file :meth:`to_safetensors` wrote, refusing anything that is no valid bob state."""
        from bob.interop import read_safetensors

        return read_safetensors(path, cls, for_resume=for_resume)

    def to_npz(self, path: "str | os.PathLike[str]", *, for_resume: bool = True) -> None:
        """As :meth:`to_safetensors`, as a NumPy ``.npz`` (``numpy.load`` reads it without pickle)."""
        from bob.interop import write_npz

        write_npz(self, path, for_resume=for_resume)

    @classmethod
    def from_npz(cls, path: "str | os.PathLike[str]", *, for_resume: bool = True) -> "Checkpoint":
        """Read a file :meth:`to_npz` wrote, with the checks of :meth:`from_safetensors`."""
        from bob.interop import read_npz

        return read_npz(path, cls, for_resume=for_resume)

    def _refuse_unwritable(self, what: str, for_resume: bool) -> None:
        """Refuse, for the writer ``what`` (bob.interop's too), what no envelope holds and, when
        ``for_resume``, what bob would not resume (:func:`~bob.formats.checkpoint.refuse_unresumable`)."""
        self._check()
        if flag_value(for_resume, "for_resume"):
            refuse_unresumable(self, what)

    def copy(self) -> "Checkpoint":
        with self._loans():
            step, header_bytes, contract, p, m, v = self._written()  # (a reassigned field: converted and checked)
            return Checkpoint(step, p.copy(), m.copy(), v.copy(), header_bytes, contract)

    def __reduce_ex__(self, protocol: Any) -> Any:
        """pickle: an object's default (its class, every attribute as it is, no ``__init__``), its attributes
        copied under the core's loans, as :meth:`copy` reads them (never a plane mid-train)."""
        with self._loans():
            return copyreg.__newobj__, (type(self),), copy.deepcopy(self.__dict__)  # type: ignore[attr-defined]

    def __deepcopy__(self, memo: dict[int, Any]) -> "Checkpoint":  # the same, in the caller's memo (what it shares
        with self._loans():  # with the planes stays shared)
            made = memo[id(self)] = object.__new__(type(self))
            made.__dict__.update(copy.deepcopy(self.__dict__, memo))
            return made

    def __copy__(self) -> "Checkpoint":  # copy.copy: the planes shared (not read), as a dataclass's
        made = object.__new__(type(self))
        made.__dict__.update(self.__dict__)
        return made

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready description (the golden vectors' ``.json``; a plane's min and max over its finite values)."""
        return describe_envelope(self.to_bytes(for_resume=False))  # describing is reading

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Checkpoint):
            return NotImplemented
        with self._loans(), other._loans():
            mine, theirs = self._written(), other._written()  # (a field may have been reassigned: a float step, a table)
            return mine[:3] == theirs[:3] and all(np.array_equal(a.view(np.uint32), b.view(np.uint32))
                                                  for a, b in zip(mine[3:], theirs[3:]))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        step, header_bytes = repr_text(self.step), repr_text(self.header_bytes)  # (10**5000: by its size, as bob.text)
        try:
            return (f"Checkpoint(step={step}, invocations={repr_text(self.invocations)}, "
                    f"header_bytes={header_bytes}, contract={'v1' if self.contract.is_v1 else 'non-v1'})")
        except (TypeError, AttributeError):  # a field reassigned to what no checkpoint holds: shown as it is
            return f"Checkpoint(step={step}, header_bytes={header_bytes}, contract={repr_text(self.contract)})"


def load_checkpoint(data: bytes, *, for_resume: bool = True, expected_sha256: str | None = None) -> Checkpoint:
    """Parse and fully check a checkpoint; raise the first finding.

    Zero bytes are the fresh state; ``for_resume=False`` skips the state checks;
    ``expected_sha256`` pins the bytes first (:func:`~bob.formats.checkpoint.check_pin`).
    """
    if expected_sha256 is not None:
        data = check_pin(data, expected_sha256, "expected_sha256") or data  # (None: refused as unpinned, below)
    return Checkpoint._of(examine(data, for_resume=for_resume))


def read_checkpoint_file(path: "str | os.PathLike[str]", *, for_resume: bool = True) -> Checkpoint:
    """Read and check a checkpoint file (at most ``MAX_CHECKPOINT_BYTES``); an empty file is the fresh state."""
    return Checkpoint.read(path, for_resume=for_resume)


def _plane_summary(plane: np.ndarray) -> dict[str, Any]:
    """A plane's first words, its min and max over its finite values (None where there are none: strict
    JSON has no NaN, and one NaN hid the range) and how many of its values are not zero."""
    low, high = finite_range(plane) or (None, None)
    return {"first_words_hex": [f"{w:08x}" for w in plane[:4].view(WORD_DTYPE).tolist()],
            "min": low, "max": high, "nonzero": int(np.count_nonzero(plane))}


@in_default_environment
def describe_envelope(data: bytes) -> dict[str, Any]:
    """A JSON-ready description of a valid envelope file, from its examination (in the default
    floating-point environment: a subnormal is not zero, a float's digits are round-to-nearest's)."""
    ex = examine(data, for_resume=False).checked()
    # A valid file: every part was read, and its strings are the contract's (ASCII).
    h, contract, digest = ex.header, ex.contract, ex.header_digest
    assert h is not None and contract is not None and digest is not None and ex.planes is not None
    learner = {"text": h.learner[:-LEARNER_FLOATS.size].decode(), **{k: float(f32_text(x)) for k, x in (
        contract.learner_hyperparameters or {}).items()}, "f32_hex": h.learner[-LEARNER_FLOATS.size:].hex()}
    shown = {name: learner if name == "learner" else value.decode() if isinstance(value, bytes) else value
             for name, value in asdict(contract).items()}
    return {"format": "bob-envelope", "version": h.version, "size": ex.size,
            "sha256": hashlib_sha256(as_bytes(data, "the checkpoint")).hex(), "header_bytes": h.header_bytes,
            "header_length": ex.header_end, "step": h.step, "invocations": h.step // UPDATES_PER_INVOCATION,
            "contract": shown, "chunk_count": h.chunk_count,
            "chunk_table": [{"tag": e.tag.rstrip(b"\0").decode(), "offset": e.offset, "length": e.length,
                             "sha256": e.digest.hex()} for e in h.chunk_table],
            "header_sha256": digest.hex(),
            "planes": {name: _plane_summary(ex.planes[i]) for i, name in enumerate(PLANE_NAMES)}}
