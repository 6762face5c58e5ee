"""Fixtures of the bob-inspect tests: the files (built from the library: the
§8 vector, damaged and hostile ones) and ``cli``, which runs
``bob.inspect.main`` in this process and captures its output as bytes."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest

import bob
import bob.core
from bob.formats.contract import LEARNER_PREFIX, Contract
from bob.formats.envelope import Checkpoint, canonical_header_bytes
from bob.formats.predictions import Predictions
from bob.inspect import main

HB = 448
CHUNK = 262_144
AB = 97 * 256 + 98  # the parameter (context 'a', next 'b')


class Ran(NamedTuple):
    code: int
    stdout: bytes
    stderr: bytes


def strict_json(raw: bytes) -> dict:
    def no_constants(name):  # NaN/Infinity are not JSON
        raise AssertionError(f"non-JSON constant {name} in output")

    assert raw.isascii()
    assert raw.count(b"\n") == 1  # one JSON object, one line
    return json.loads(raw, parse_constant=no_constants)


class Cli:
    """``bob-inspect`` in-process: ``run`` (exit code, stdout, stderr as bytes),
    ``text`` (human output, checked printable) and ``json`` (``--json``, strict)."""

    strict_json = staticmethod(strict_json)

    def __init__(self, capture) -> None:
        self.capture = capture

    def run(self, *args: str, code: int | None = 0) -> Ran:
        self.capture.readouterr()
        rc = main(list(args))
        out, err = self.capture.readouterr()
        if code is not None:
            assert rc == code, (rc, out.decode(errors="replace"), err.decode(errors="replace"))
        assert b"Traceback" not in err
        return Ran(rc, out, err)

    def text(self, *args: str, code: int | None = 0) -> str:
        raw = self.run(*args, code=code).stdout
        assert raw.isascii() or all(b >= 0x20 or b == 0x0A for b in raw)
        return raw.decode()

    def json(self, *args: str, code: int | None = 0) -> dict:
        return strict_json(self.run(*args, "--json", code=code).stdout)


@pytest.fixture
def cli(capsysbinary) -> Cli:
    return Cli(capsysbinary)


@pytest.fixture(scope="session")
def files(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("inspect")
    rec = bob.build_input(b"abracadabra", [b"abra", b"cad", b""])
    (d / "rec.bin").write_bytes(rec.to_bytes())
    ck = bob.load_checkpoint(b"")
    for k in (1, 2, 3):
        bob.core.train(ck.p, ck.m, ck.v, rec.contexts, rec.targets, ck.step, 10)
        ck.step += 10
        (d / f"ck{k}.bin").write_bytes(ck.to_bytes())
    pred = Predictions.from_core(bob.core.predict(ck.p, rec.prompt_words))
    (d / "pred.bin").write_bytes(pred.to_bytes())
    (d / "empty.bin").write_bytes(b"")

    # two distinct problems: a wrong learner hyper-parameter (the header digest
    # recomputed, so the damage is only the contract) and a flipped byte in V
    learner = LEARNER_PREFIX + struct.pack("<5f", 0.5, 0.9, 0.999, 1e-8, 0.01)
    raw = bytearray(Checkpoint(ck.step, ck.p, ck.m, ck.v, contract=Contract(learner=learner)).to_bytes())
    raw[HB + 2 * CHUNK + 4 * 100] ^= 0x01  # V[100]'s lowest mantissa bit
    (d / "two.bin").write_bytes(raw)

    # control characters in the contract strings
    evil = Contract(state=b"evil\x1b[2J\x1b]0;pwned\x07\r\nverdict: OK\x9b31m\xe2\x80\xae", seed=b"\x1b[31mred")
    (d / "evil.bin").write_bytes(
        Checkpoint(ck.step, ck.p, ck.m, ck.v, contract=evil, header_bytes=canonical_header_bytes(evil)).to_bytes())

    # one value 3 ULP away
    one = ck.copy()
    for _ in range(3):
        one.p[AB] = np.nextafter(one.p[AB], np.float32(np.inf))
    (d / "one.bin").write_bytes(one.to_bytes())

    # state refused for resuming: a NaN in P, a negative V
    bad = ck.copy()
    bad.p[5] = np.nan
    bad.v[7] = -1.0
    (d / "state.bin").write_bytes(bad.to_bytes())
    return d
