"""The field-aware mutator reaches every field of every format, and keeps the
fast-path differential busy."""

from __future__ import annotations

import random

import pytest

import bob
from bob.fuzz.loop import seeded_loop
from bob.fuzz.mutator import FORMATS, field_names, mutate_field, spots
from conftest import GOLDEN

SAMPLES = {"input": "input-abracadabra.bin", "checkpoint": "checkpoint-abracadabra-step10.bin",
           "predictions": "predictions-abracadabra.bin"}


@pytest.mark.parametrize("fmt", FORMATS)
def test_mutations_reach_every_field(fmt: str) -> None:
    data = (GOLDEN / SAMPLES[fmt]).read_bytes()
    rnd = random.Random(1)
    hit, changed = set(), set()
    for _ in range(3000):
        out, name = mutate_field(data, rnd, fmt)
        hit.add(name)
        if out != data:
            changed.add(name)
    assert hit == field_names(fmt) == {s.name for s in spots(data, fmt)}
    assert changed == hit, f"fields never actually changed: {sorted(hit - changed)}"


def test_checkpoint_fields_include_the_learner_floats_chunk_table_padding_and_planes() -> None:
    names = field_names("checkpoint")
    assert {f"learner.{n}" for n in ("lr", "beta1", "beta2", "eps", "weight_decay")} <= names
    assert {f"chunk_table[{i}].{f}" for i in range(3) for f in ("tag", "offset", "length", "digest")} <= names
    assert {"padding", "P", "M", "V", "header_digest", "step", "chunk_count"} <= names


def test_plane_mutations_write_special_binary32_values() -> None:
    import numpy as np

    data = (GOLDEN / SAMPLES["checkpoint"]).read_bytes()
    rnd = random.Random(2)
    seen = set()
    for _ in range(400):
        out, _ = mutate_field(data, rnd, "checkpoint", "P")
        ck = bob.load_checkpoint(bob.fuzz.refresh_digests(out), for_resume=False)
        p = ck.p[ck.p.view(np.uint32) != bob.load_checkpoint(data).p.view(np.uint32)]
        for x in p.tolist():
            seen.add("nan" if x != x else "inf" if abs(x) == float("inf") else
                     "max" if abs(x) > 3e38 else "subnormal" if 0 < abs(x) < 1.2e-38 else "other")
    assert {"nan", "inf", "max", "subnormal"} <= seen


@pytest.mark.parametrize("fmt,floor", [("input", 0.4), ("checkpoint", 0.4)])
def test_fast_path_differential_reaches_its_assertion_often(fmt: str, floor: float) -> None:
    result = seeded_loop(fmt, 300, seed=11)
    assert not result.findings, result.findings
    assert result.fast_path_share is not None and result.fast_path_share >= floor, result.fast_path_share
