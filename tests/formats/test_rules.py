"""The state rules of ``bob.formats.rules`` come in two forms, one entry each: ``ok`` on one
value (what the rule says, and what the docs print) and ``bad(np, plane)`` on a whole plane
(what the readers run). They must refuse exactly the same values, whatever the float."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from bob.formats import rules

# Every kind of float32: zeros of both signs, the smallest and largest subnormals and
# normals, FLT_MAX, infinities, and NaNs with payloads and either sign.
SPECIAL_BITS = [0x00000000, 0x80000000, 0x00000001, 0x807FFFFF, 0x00800000, 0x80800000, 0x3F800000,
                0xBF800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001,
                0x7F800001, 0xFFBFFFFF]
PLANE = np.array(SPECIAL_BITS, dtype=np.uint32).view(np.float32)
PLANE_RULES = [rule for rules_of_kind in rules.RULES.values() for rule in rules_of_kind if rule.bad is not None]


def test_the_plane_rules_are_the_ones_resuming_needs() -> None:
    assert PLANE_RULES == [rules.FINITE, rules.V_NOT_NEGATIVE, rules.MOMENTS_ZERO_AT_STEP_0]


@pytest.mark.parametrize("rule", PLANE_RULES, ids=lambda rule: rule.message[:30])
def test_a_plane_rule_refuses_with_numpy_what_it_refuses_one_value_at_a_time(rule: rules.ValueRule) -> None:
    assert rule.bad is not None
    mask = rule.bad(np, PLANE)
    for bits, refused in zip(SPECIAL_BITS, mask.tolist()):
        one = struct.unpack("<f", struct.pack("<I", bits))[0]
        said = rule.ok(0, one) if rule is rules.MOMENTS_ZERO_AT_STEP_0 else rule.ok(one)
        assert refused == (not said), f"{bits:#010x}: numpy says refused={refused}, the rule says ok={said}"


# Where the core's vectorized screen changes block (64 values a block) and the plane's ends.
BLOCK_EDGES = [0, 1, 63, 64, 65, 127, 128, 255, 256, 4095, 65471, 65472, 65535]


@pytest.mark.parametrize("plane_index", [0, 1, 2], ids=["P", "M", "V"])
@pytest.mark.parametrize("step", [0, 10])
def test_the_cores_resume_check_refuses_exactly_what_the_numpy_findings_refuse(plane_index: int, step: int) -> None:
    """``bob.core.resume_problem`` (which ``bob.invoke`` and ``bob-run`` run) and
    ``bob.formats.checkpoint.state_findings`` (which the readers run) agree on every kind of float
    at every block edge, and both name the first bad index."""
    import bob.core
    from bob.formats.checkpoint import state_findings

    for bits in SPECIAL_BITS:
        for index in BLOCK_EDGES:
            planes = np.zeros((3, 65536), dtype=np.float32)
            planes[plane_index].view(np.uint32)[index] = bits
            if index + 7 < 65536:  # a later value of the same kind must not be the one named
                planes[plane_index].view(np.uint32)[index + 7] = bits
            problem = bob.core.resume_problem(planes[0], planes[1], planes[2], step)
            into = np.empty_like(planes)
            assert bob.core.resume_problem(planes[0], planes[1], planes[2], step, into=into) == problem
            findings = state_findings(step, planes)
            assert (problem is None) == (findings == []), (f"{bits:#010x} at {index} in plane {plane_index}, "
                                                           f"step {step}: core {problem}, numpy {findings}")
            if problem is not None:
                first_numpy = findings[0]
                assert problem[1] == "PMV"[plane_index]  # the step (10) has room: a plane is named
                if first_numpy.index is not None:
                    assert problem[2] == first_numpy.index


def test_a_float32_is_read_from_its_bits_exactly() -> None:
    """``layout.f32_from_bits`` (what a state refusal names) is the float32 itself, sign and all."""
    import math
    import random

    from bob.formats.layout import f32_from_bits

    rnd = random.Random(7)
    for bits in SPECIAL_BITS + [rnd.getrandbits(32) for _ in range(20_000)]:
        want = struct.unpack("<f", struct.pack("<I", bits))[0]
        got = f32_from_bits(bits)
        assert math.copysign(1.0, got) == math.copysign(1.0, want), hex(bits)
        assert (math.isnan(got) and math.isnan(want)) or got == want, (hex(bits), got, want)


def test_every_rule_is_worded_in_ascii() -> None:
    """A refusal is one line of printable ASCII (bob.text.one_line escapes every other character): a rule worded
    with a "§" read "(\\xa76.4)" in every refusal of it."""
    for rule in (value for value in vars(rules).values() if isinstance(value, rules.ValueRule)):
        for text in (rule.message, rule.given, str(rule.expected)):
            assert text.isascii() and text.isprintable(), (rule.field, text)
