"""Hypothesis strategies over bob's files (for the property tests); Hypothesis is imported lazily."""

from __future__ import annotations

import random

from bob.formats.constants import CHECKPOINT_MAGIC, INPUT_MAGIC
from bob.fuzz.mutator import format_of, mutate

__all__ = ["random_bytes_strategy", "mutated_strategy"]


def random_bytes_strategy(prefixes: tuple[bytes, ...] = (b"", INPUT_MAGIC, CHECKPOINT_MAGIC), max_size: int = 2048):
    """Random bytes, sometimes starting with a bob magic (so they get past it)."""
    from hypothesis import strategies as st

    return st.builds(lambda p, tail: p + tail, st.sampled_from(prefixes), st.binary(max_size=max_size))


def mutated_strategy(seeds: list[bytes], *, field_aware: bool = True, max_ops: int = 3):
    """Mutations of the given valid files (field-aware in each one's format), drawn by Hypothesis."""
    from hypothesis import strategies as st

    prepared = [(seed, format_of(seed) if field_aware else None) for seed in seeds]

    @st.composite
    def strategy(draw):
        seed, fmt = draw(st.sampled_from(prepared))
        rnd = random.Random(draw(st.integers(0, 2**32 - 1)))
        count = draw(st.integers(1, max_ops))
        return mutate(seed, rnd, fmt, count=count)

    return strategy()
