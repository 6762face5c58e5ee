"""bob v1's constants and the identities a checkpoint must carry (contract §1, §2).

Pure Python (no NumPy, no construct): the error messages and ``bob-inspect``
use it to decode contract fields readably.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, fields
from typing import Any

from bob.errors import LEARNER_NAMES, LEARNER_PREFIX, learner_floats, show_value

__all__ = [
    "VOCABULARY",
    "PARAMETER_COUNT",
    "PLANE_NAMES",
    "SCALAR_BYTES",
    "CHUNK_BYTES",
    "PAYLOAD_BYTES",
    "UPDATES_PER_INVOCATION",
    "PROMPTS",
    "RECORD_BYTES",
    "PREDICTION_BYTES",
    "EMPTY_PROMPT",
    "MAX_HEADER_BYTES",
    "MAX_CHECKPOINT_BYTES",
    "STRING_LIMIT",
    "LEARNER_HYPERPARAMETERS",
    "STATE",
    "LEARNER",
    "DATA",
    "SEED",
    "Contract",
    "V1",
    "CONTRACT_FIELDS",
]

VOCABULARY = 256
PARAMETER_COUNT = VOCABULARY * VOCABULARY  # 65,536, row-major: context * 256 + next
PLANE_NAMES = ("P", "M", "V")
SCALAR_BYTES = 4
CHUNK_BYTES = PARAMETER_COUNT * SCALAR_BYTES  # 262,144: one chunk per plane
PAYLOAD_BYTES = CHUNK_BYTES * len(PLANE_NAMES)  # 786,432
UPDATES_PER_INVOCATION = 10
PROMPTS = 3
RECORD_BYTES = 16 + 2 * VOCABULARY + 4 * VOCABULARY + 4 * PROMPTS  # 1,564
PREDICTION_BYTES = 8 * PROMPTS  # 24
EMPTY_PROMPT = 0xFFFFFFFF
MAX_HEADER_BYTES = 65_536
MAX_CHECKPOINT_BYTES = MAX_HEADER_BYTES + PAYLOAD_BYTES  # never read more than this
STRING_LIMIT = 4_096  # every contract string's length prefix is at most this
U64_MAX = (1 << 64) - 1

# lr, beta1, beta2, eps, weight decay — as f32
LEARNER_HYPERPARAMETERS = (0.05, 0.9, 0.999, 1e-8, 0.01)

STATE = b"bob-raw-pmv-f32-v1|parameter-order:p-then-m-then-v|payload=%d" % PAYLOAD_BYTES
LEARNER = LEARNER_PREFIX + struct.pack("<5f", *LEARNER_HYPERPARAMETERS)
DATA = b"raw-byte-sequence|vocabulary=%d|prompts=%d|record=%d" % (VOCABULARY, PROMPTS, RECORD_BYTES)
SEED = b"bob-seed-v1"


@dataclass(frozen=True)
class Contract:
    """The §2 identities, as a checkpoint's header carries them."""

    state: bytes = STATE
    learner: bytes = LEARNER
    data: bytes = DATA
    seed: bytes = SEED
    payload_bytes: int = PAYLOAD_BYTES
    chunk_bytes: int = CHUNK_BYTES
    updates_per_invocation: int = UPDATES_PER_INVOCATION

    def mismatches(self, other: "Contract | None" = None) -> list[tuple[str, Any, Any]]:
        """``(field, expected, actual)`` for every field where ``self`` differs from ``other`` (bob v1)."""
        reference = V1 if other is None else other
        return [
            (f.name, getattr(reference, f.name), getattr(self, f.name))
            for f in fields(self)
            if getattr(self, f.name) != getattr(reference, f.name)
        ]

    @property
    def is_v1(self) -> bool:
        return self == V1

    @property
    def learner_hyperparameters(self) -> dict[str, float] | None:
        """``{"lr": 0.05, "beta1": 0.9, …}`` (f32 values as Python floats), or None
        if the learner field is not shaped like ``objective|learner|`` + 20 bytes."""
        floats = learner_floats(self.learner)
        return None if floats is None else dict(zip(LEARNER_NAMES, floats))

    def describe(self) -> dict[str, str]:
        """Each field shown readably (the learner's floats as numbers)."""
        return {f.name: show_value(getattr(self, f.name), f.name) for f in fields(self)}


V1 = Contract()
CONTRACT_FIELDS = tuple(f.name for f in fields(Contract))
