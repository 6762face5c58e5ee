"""The structure-aware mutations (python/bob/fuzz/structural.py) keep files consistent:
each reaches the rule behind the digests and the chunk table it is meant for."""

from __future__ import annotations

import random
import struct
from collections import Counter

import pytest

import bob
from bob.fuzz import oracle
from bob.fuzz.mutator import custom_mutator
from bob.fuzz.structural import CHECKPOINT_OPS, any_step, rewiden_targets, structural_mutate
from conftest import GOLDEN

CKPT = (GOLDEN / "checkpoint-abracadabra-step10.bin").read_bytes()
U64_MAX = 2 ** 64 - 1


def _outcomes(op: str, runs: int = 60) -> Counter:
    rnd = random.Random(op)
    seen: Counter = Counter()
    for _ in range(runs):
        reading, resuming = oracle.checkpoint_verdicts(structural_mutate(CKPT, rnd, "checkpoint", op))
        seen[(reading and reading[0], resuming and resuming[0])] += 1
    return seen


# What each operation must reach (and what it must never stop at: a digest).
REACHES = {
    "step": {(None, None), (None, "step")},
    "header_bytes": {(None, None), ("padding", "padding"), ("header_bytes", "header_bytes")},
    "chunks": {("chunk_table.offset",) * 2, ("chunk_table.length",) * 2, ("payload_bytes",) * 2},
    "planes": {(None, None), (None, "V"), ("chunk_table.tag",) * 2},
    "moments": {(None, None), (None, "step")},
}


@pytest.mark.parametrize("op", CHECKPOINT_OPS)
def test_each_operation_reaches_its_rule_past_the_digests(op: str) -> None:
    seen = _outcomes(op)
    assert REACHES[op] <= set(seen), seen
    digests = {"header_digest", "chunk_table.digest"}
    assert not any(reading in digests for reading, _ in seen), seen


def test_steps_are_drawn_over_the_whole_u64_range_and_at_the_limits() -> None:
    rnd = random.Random(5)
    steps = [any_step(rnd) for _ in range(3000)]
    assert {s.bit_length() for s in steps} == set(range(65))  # log-uniform: every bit length
    assert {U64_MAX - 10, U64_MAX - 9, U64_MAX - 20, U64_MAX - 19, 0, 1} <= set(steps)
    assert all(0 <= s <= U64_MAX for s in steps)


def test_a_grown_header_is_a_valid_file_that_round_trips() -> None:
    rnd = random.Random(6)
    sizes = set()
    for _ in range(40):
        data = structural_mutate(CKPT, rnd, "checkpoint", "header_bytes")
        if oracle.check("checkpoint", data) is None:
            ck = bob.load_checkpoint(data)
            assert ck.to_bytes() == data
            sizes.add(ck.header_bytes)
    assert len(sizes) >= 8 and max(sizes) == 65536, sorted(sizes)


def test_rewidened_targets_keep_a_record_valid() -> None:
    rnd = random.Random(7)
    base = (GOLDEN / "input-abracadabra.bin").read_bytes()
    changed = [rewiden_targets(base, rnd) for _ in range(50)]
    assert all(oracle.check("input", d) is None for d in changed)
    assert len(set(changed)) == 50


def test_the_campaign_mix_draws_consistent_changes() -> None:
    """In the custom mutator (campaign and seeded loop), files of another header size, steps at the
    limit and moved tables are drawn from the golden checkpoint."""
    mutator = custom_mutator("checkpoint", None, [CKPT])
    rnd = random.Random(8)
    wide = limit = moved = 0
    for _ in range(250):
        data = mutator(CKPT, 1 << 20, rnd.getrandbits(32))
        verdict = oracle.check("checkpoint", data, for_resume=False)
        if len(data) >= 32:
            hb, step = struct.unpack_from("<QQ", data, 16)
            wide += verdict is None and hb != 448
            limit += verdict is None and step >= U64_MAX - 21
        moved += verdict is not None and verdict[0] in ("chunk_table.offset", "chunk_table.length")
    assert wide >= 5 and limit >= 5 and moved >= 5, (wide, limit, moved)
