"""One SHA-256 per distinct piece of an input, one header parse and one layout, shared by the checkpoint
target's properties for one ``with`` block (docs/fuzzing.md, "Memory and speed of the checkpoint target")."""

from __future__ import annotations

import contextlib
import hashlib
from types import SimpleNamespace
from typing import Any, Callable, Iterator

__all__ = ["shared_digests", "DigestMemo"]

_SMALL = 4096  # below this a hash costs less than the look-up


class DigestMemo:
    """SHA-256 digests by place, then by content (docs/fuzzing.md, "Memory and speed of the checkpoint target"):
    a place is a ``memoryview`` slice of a ``bytes`` (the readers' planes). ``hashes`` counts the ones computed."""

    def __init__(self, sha256: Any = None) -> None:
        self._sha256 = sha256 or hashlib.sha256
        self._by_content: dict[tuple, list[tuple[bytes, bytes]]] = {}
        # (id, offset, length) -> (the object, kept so that the id means it; the digest)
        self._by_place: dict[tuple[int, int, int], tuple[bytes, bytes]] = {}
        self.hashes = 0

    def digest(self, data: Any) -> bytes:
        place = None
        if isinstance(data, memoryview) and type(data.obj) is bytes and data.contiguous:
            import numpy as np

            start = np.frombuffer(data, np.uint8).ctypes.data - np.frombuffer(data.obj, np.uint8).ctypes.data
            place = (id(data.obj), start, data.nbytes)
            if place in self._by_place:
                return self._by_place[place][1]
        raw = data if type(data) is bytes else memoryview(data).cast("B").tobytes()
        key = (len(raw), raw[:32], raw[-32:], raw[len(raw) // 2:len(raw) // 2 + 32])
        bucket = self._by_content.setdefault(key, [])
        digest = next((digest for seen, digest in bucket if seen == raw), None)
        if digest is None:
            digest = self._sha256(raw).digest()
            self.hashes += 1
            bucket.append((raw, digest))
        if place is not None:
            self._by_place[place] = (data.obj, digest)
        return digest

    def sha256(self, data: Any = b"", **kw: Any) -> Any:
        """A stand-in for ``hashlib.sha256`` (as far as bob's readers use it: ``digest``, ``hexdigest``);
        small inputs and keyword uses go to the real one."""
        if kw or memoryview(data).nbytes < _SMALL:
            return self._sha256(data, **kw)
        digest = self.digest(data)
        return SimpleNamespace(digest=lambda: digest, hexdigest=digest.hex)


def _once(real: Callable[..., Any], key: Callable[..., Any]) -> Callable[..., Any]:
    """``real`` computed once per ``key(*args)`` within the block, its result or its exception (a pure
    function of what it is given: the second call gets the first's result or refusal and runs every
    check after it). A key of None is not kept; the arguments are, so that an ``id`` in a key means them."""
    seen: dict[Any, tuple[Any, BaseException | None, tuple]] = {}

    def call(*args: Any) -> Any:
        if (k := key(*args)) is None:
            return real(*args)
        if k not in seen:
            try:
                seen[k] = (real(*args), None, args)
            except Exception as exc:
                seen[k] = (None, exc, args)
        if (refusal := seen[k][1]) is not None:
            raise refusal
        return seen[k][0]

    return call


@contextlib.contextmanager
def shared_digests() -> Iterator[DigestMemo]:
    """Within the block, SHA-256 (one :class:`DigestMemo`), the header's parse and its layout shared, as above."""
    from bob.formats import schema
    from bob.formats.checkpoint import examination, header

    memo = DigestMemo()
    parse = _once(schema.parse, lambda s, data: (id(s), id(data)) if type(data) is bytes else None)
    layout = _once(examination.envelope_layout, lambda lengths: tuple(lengths))
    # header.sha256 calls header._digest (bound on first use: the fast path's bob._core.sha256, a digest as
    # bytes); the examination calls parse and the layout
    stand_ins = {(hashlib, "sha256"): memo.sha256, (header, "_digest"): lambda data: memo.sha256(data).digest(),
                 (schema, "parse"): parse, (examination, "envelope_layout"): layout, (header, "envelope_layout"): layout}
    with contextlib.ExitStack() as given_back:
        for (owner, name), value in stand_ins.items():
            given_back.callback(setattr, owner, name, getattr(owner, name))
            setattr(owner, name, value)
        yield memo
