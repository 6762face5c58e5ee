"""The native core, and nothing else: bob's training math lives in Rust.

This module is the only door to ``bob._core``. It never re-implements the
math and never falls back to anything: if the extension is missing, importing
this module raises :class:`NativeCoreUnavailable` saying how to build it.
"""

from __future__ import annotations

import numpy as np

VOCABULARY = 256
PARAMETER_COUNT = VOCABULARY * VOCABULARY
UPDATES_PER_INVOCATION = 10
SEED = b"bob-seed-v1"
EMPTY_PROMPT = 0xFFFFFFFF


class NativeCoreUnavailable(ImportError):
    """bob._core could not be loaded; there is no other path to the math."""


try:
    from bob import _core
except ImportError as exc:  # pragma: no cover - exercised through a subprocess test
    raise NativeCoreUnavailable(
        "bob's native core (bob._core) is not built or cannot be loaded "
        f"({exc}). Build it from the checkout with `scripts/bootstrap.sh` "
        "(maturin develop --release); bob has no other path to the training math."
    ) from exc


def fnv1a64(data: bytes) -> int:
    """FNV-1a-64 of ``data`` (contract §6.1), computed by the core."""
    return _core.fnv1a64(bytes(data))


def initial_planes(seed: bytes = SEED, vocabulary: int = VOCABULARY):
    """Fresh P, M, V (float32, parameter order) for ``seed`` (contract §6.1)."""
    p = np.empty(vocabulary * vocabulary, dtype=np.float32)
    _core.initialize(p, bytes(seed))
    return p, np.zeros_like(p), np.zeros_like(p)


def train(p, m, v, contexts, targets, step: int, updates: int = UPDATES_PER_INVOCATION,
          *, threads: int = 0) -> np.ndarray:
    """Make ``updates`` AdamW updates in place on P, M, V (contract §6.3).

    ``contexts``/``targets`` are the pairs' bytes (any integer array; taken as
    uint32). ``step`` is the number of updates completed before. Returns the
    loss before each update (float64, contract §6.4).
    """
    ctx = np.ascontiguousarray(contexts, dtype=np.uint32)
    tgt = np.ascontiguousarray(targets, dtype=np.uint32)
    return _core.train(p, m, v, ctx, tgt, int(step), int(updates), threads=int(threads))


def predict(p, prompt_words) -> list[tuple[int, int]]:
    """(token, validity) per prompt word (contract §4); 0xFFFFFFFF is an empty prompt."""
    return _core.predict(p, [int(w) for w in prompt_words])
