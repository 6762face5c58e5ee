"""bob v1's constants and the identities a checkpoint must carry (contract §1, §2).

Pure Python (no NumPy, no construct): the error messages and ``bob-inspect`` use it to decode contract fields readably.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from typing import Any, Callable

from bob.errors import BadValue, ContractMismatch, byte_buffer, integer_value, show_value, shown_kind
# The constants live in bob.formats.constants (standard library only, so
# bob-run's fast path can use them without this module's dataclasses).
from bob.formats.constants import (CHUNK_BYTES, DATA, EMPTY_PROMPT, LEARNER, LEARNER_HYPERPARAMETERS, LEARNER_NAMES,
                                   MAX_CHECKPOINT_BYTES, MAX_HEADER_BYTES, PARAMETER_COUNT,
                                   PAYLOAD_BYTES, PLANE_NAMES, PREDICTION_BYTES, PROMPTS, RECORD_BYTES, SCALAR_BYTES,
                                   SEED, STATE, STRING_LIMIT, U64_MAX, UPDATES_PER_INVOCATION, VOCABULARY,
                                   learner_floats)

__all__ = ["VOCABULARY", "PARAMETER_COUNT", "PLANE_NAMES", "SCALAR_BYTES", "CHUNK_BYTES", "PAYLOAD_BYTES",
           "UPDATES_PER_INVOCATION", "PROMPTS", "RECORD_BYTES", "PREDICTION_BYTES", "EMPTY_PROMPT", "MAX_HEADER_BYTES",
           "MAX_CHECKPOINT_BYTES", "STRING_LIMIT", "U64_MAX", "LEARNER_HYPERPARAMETERS", "STATE", "LEARNER", "DATA",
           "SEED", "Contract", "V1", "CONTRACT_FIELDS", "contract_document"]


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

    def __post_init__(self) -> None:
        """Only what a header can hold, as bytes and ints (a float equal to v1's payload_bytes was
        v1, and a checkpoint carrying it could not be written)."""
        for f in fields(self):
            value, name = getattr(self, f.name), f"contract.{f.name}"
            if f.type == "bytes":
                value = byte_buffer(value, name).tobytes()
                if len(value) > STRING_LIMIT:
                    raise BadValue(name, f"at most {STRING_LIMIT} bytes", actual=len(value))
            elif (number := integer_value(value)) is None or not 0 <= number <= U64_MAX:
                raise BadValue(name, "an integer from 0 to 2**64 - 1", actual=shown_kind(value))
            else:
                value = number
            object.__setattr__(self, f.name, value)

    def mismatches(self, other: "Contract | None" = None) -> list[tuple[str, Any, Any]]:
        """``(field, expected, actual)`` for every field where ``self`` differs from ``other`` (bob v1)."""
        reference = V1 if other is None else other
        return [(f.name, getattr(reference, f.name), getattr(self, f.name)) for f in fields(self)
                if getattr(self, f.name) != getattr(reference, f.name)]

    def mismatch_findings(self, offset_of: "Callable[[str], int | None]" = lambda name: None) -> list[ContractMismatch]:
        """Every reader's refusal of another contract: a ContractMismatch per field that differs from v1's."""
        return [ContractMismatch(name, "differs from the bob v1 contract", expected=expected, actual=actual,
                                 offset=offset_of(name)) for name, expected, actual in self.mismatches()]

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


def contract_document() -> str:
    """The path of the normative contract, bob v1 with its errata, as this bob ships it: ``bob/data/contract/bob-v1.md``
    inside the package (a wheel's or a checkout's ``python/bob/``). tests/formats/test_contract_document.py holds it
    identical to the design document it is copied from."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.join(package, "data", "contract", "bob-v1.md")
