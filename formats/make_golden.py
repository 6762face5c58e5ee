#!/usr/bin/env python3
"""Regenerate bob's golden vectors (python/bob/data/golden/) and check them.

    .venv/bin/python formats/make_golden.py          # write python/bob/data/golden/
    .venv/bin/python formats/make_golden.py --check  # compare with what is on disk

No golden file is taken from the code's own output unchecked: each one is
checked, before it is written, against a value that does not come from bob's
library —

* the contract's §8 digests and hex (input record, predictions, checkpoint
  after 10 updates; the checkpoint needs the native core);
* for the §8 invocation's trace, the contract's strings, §8's record and the
  reference's planes and losses after each update (:func:`check_section8_trace`);
* the independent NumPy reference in tests/reference.py (other valid files);
* for the refused files, the findings written out by hand below.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
GOLDEN = os.path.join(os.path.dirname(HERE), "python", "bob", "data", "golden")
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "tests"))

import bob  # noqa: E402
import bob.core  # noqa: E402  (check_section8_trace's digests)
from bob.formats.constants import LEARNER_PREFIX  # noqa: E402
from bob.formats.layout import CANONICAL, CANONICAL_HEADER_BYTES, INPUT  # noqa: E402
from bob.qualify import vector  # noqa: E402
import reference as R  # noqa: E402  (tests/reference.py: independent of bob's library)

# Contract §8, copied from python/bob/data/contract/bob-v1.md.
# The §8 values, from the package's one copy of them (bob.qualify.vector);
# tests/conftest.py holds an independent copy and a test compares the two.
RECORD_SHA256 = vector.RECORD_SHA256
CHECKPOINT_10_SHA256 = vector.CHECKPOINT_SHA256[10]
PREDICTIONS_HEX = vector.PREDICTIONS_HEX


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _pretty(obj, indent: int = 0) -> str:
    pad = " " * (indent + 1)
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        items = [f"{pad}{json.dumps(k)}: {_pretty(obj[k], indent + 1)}" for k in sorted(obj)]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    if isinstance(obj, list) and any(isinstance(x, (dict, list)) for x in obj):
        if all(isinstance(x, list) for x in obj):  # e.g. the 256 pairs: one per line
            return "[\n" + ",\n".join(pad + json.dumps(x) for x in obj) + "\n" + " " * indent + "]"
        return "[\n" + ",\n".join(pad + _pretty(x, indent + 1) for x in obj) + "\n" + " " * indent + "]"
    return json.dumps(obj, ensure_ascii=True)


def dump(obj) -> bytes:
    """JSON, sorted keys, one item per line (short lists of numbers inline)."""
    text = _pretty(obj) + "\n"
    assert json.loads(text) == obj
    return text.encode()


def findings_json(findings) -> list[dict]:
    return [{"error": type(f).__name__, "field": f.field, "index": f.index, "offset": f.offset} for f in findings]


def section8_checkpoint_10() -> bytes:
    """The §8 checkpoint after one invocation (10 updates), through the library and the core."""
    return bob.invoke(bob.build_input(b"abracadabra", [b"abra", b"cad", b""])).checkpoint_bytes()


LOSS_TOLERANCE = 1e-12  # relative: §6.4 compares losses within a tolerance (f64 log is the platform's)
LOSS_FIELD = re.compile(rb'("loss": )([^,\n]*)')  # a loss in a trace's .json (dump: one key a line)
TRACE_LINE = re.compile(rb"^[0-9a-f]{64}(  trace-[^\n]*)$", re.MULTILINE)  # a trace's line in SHA256SUMS


def losses_apart(name: str, data: bytes) -> tuple[bytes, list[float]]:
    """A golden file's bytes with what a trace's losses decide set apart, and those losses: a sealed trace's loss
    fields and seal, its .json's loss values, the digests of SHA256SUMS's trace lines. Anything else, a trace
    whose seal does not hold or a .json that is not one included, is itself, with no losses."""
    if name.startswith("trace-") and name.endswith(".bin") and len(data) == 816 and \
            data[784:] == hashlib.sha256(data[:784]).digest():
        kept, losses = bytearray(data[:784]), []
        for at in range(152, 784, 64):
            losses.append(struct.unpack_from("<d", data, at)[0])
            kept[at:at + 8] = bytes(8)
        return bytes(kept), losses
    if name.startswith("trace-") and name.endswith(".json"):
        try:
            return LOSS_FIELD.sub(rb"\g<1>0", data), [float(json.loads(v)) for _, v in LOSS_FIELD.findall(data)]
        except (ValueError, TypeError):  # (not JSON numbers or "nan"-like strings: compared as they are)
            return data, []
    if name == MANIFEST:
        return TRACE_LINE.sub(b"0" * 64 + rb"\g<1>", data), []
    return data, []


def same_golden(name: str, on_disk: bytes, made: bytes) -> bool:
    """Whether a golden file on disk is the one made: byte for byte, but for a trace's losses (within
    :data:`LOSS_TOLERANCE`) and what they decide (:func:`losses_apart`)."""
    if on_disk == made:
        return True
    (kept, losses), (kept_made, losses_made) = losses_apart(name, on_disk), losses_apart(name, made)
    return kept == kept_made and len(losses) == len(losses_made) and \
        all(math.isclose(a, b, rel_tol=LOSS_TOLERANCE) for a, b in zip(losses, losses_made))


def check_section8_trace(trace: bytes, record: bytes, checkpoint: bytes) -> None:
    """The §8 invocation's trace (formats/trace.md) read by hand: its identity from the contract's strings and
    §8's record; its losses the reference's (within :data:`LOSS_TOLERANCE`); its digests XXH3-128 (bob.core's, which
    tests/test_trace.py holds to xxHash's published vectors) of the reference's planes before and after each
    update, the last one those of the §8 checkpoint's planes."""
    xxh3 = bob.core.xxh3_128_each
    contract = b"".join(struct.pack("<I", len(s)) + s for s in (R.STATE_CONTRACT, R.LEARNER_CONTRACT,
                                                                 R.DATA_CONTRACT, R.SEED_CONTRACT))
    contract += struct.pack("<3Q", 786_432, 262_144, R.UPDATES_PER_INVOCATION)
    assert trace[:144] == b"BOB-TRCE" + struct.pack("<Q", 2) + hashlib.sha256(contract).digest() + \
        bytes.fromhex(RECORD_SHA256) + struct.pack("<Q", 0) + b"".join(xxh3(R.initial_planes())) + \
        struct.pack("<Q", R.UPDATES_PER_INVOCATION), "the §8 trace's head differs from the reference's"
    contexts, targets, _ = R.parse_fixture(record)
    planes = R.initial_planes()
    for i in range(R.UPDATES_PER_INVOCATION):
        (loss,) = R.train(*planes, contexts, targets, i, 1)
        step, written = struct.unpack_from("<Qd", trace, 144 + 64 * i)
        assert step == i + 1 and math.isclose(written, loss, rel_tol=LOSS_TOLERANCE) and \
            trace[160 + 64 * i:208 + 64 * i] == b"".join(xxh3(planes)), f"the §8 trace's entry {i} differs"
    assert b"".join(xxh3(planes)) == b"".join(xxh3([checkpoint[448 + n * 262_144:][:262_144] for n in range(3)]))
    assert len(trace) == 816 and trace[784:] == hashlib.sha256(trace[:784]).digest()


def build(with_checkpoint: bool = True) -> dict[str, bytes]:
    """Every golden file: name -> bytes (the .json files included)."""
    out: dict[str, bytes] = {}

    # -- §8 input record ----------------------------------------------------------
    record = bob.build_input(b"abracadabra", [b"abra", b"cad", b""])
    raw = record.to_bytes()
    assert sha(raw) == RECORD_SHA256, "the §8 record's SHA-256 differs from the contract"
    out["input-abracadabra.bin"] = raw
    out["input-abracadabra.json"] = dump(record.as_dict())

    # -- another record: every awkward byte, checked against the reference --------
    corpus = b"\x00\xff\n\\\"\x7f"
    prompts = [b"\xff", b"", b"x\x00"]
    rec2 = bob.build_input(corpus, prompts)
    raw2 = rec2.to_bytes()
    assert raw2 == R.build_fixture(corpus, prompts), "the reference builds a different record"
    out["input-binary.bin"] = raw2
    out["input-binary.json"] = dump(rec2.as_dict())

    # -- §8 predictions --------------------------------------------------------------
    pred = bob.Predictions(((0x63, 1), (0x61, 1), (0, 0)))
    assert pred.to_bytes().hex() == PREDICTIONS_HEX, "the §8 predictions differ from the contract"
    out["predictions-abracadabra.bin"] = pred.to_bytes()
    out["predictions-abracadabra.json"] = dump(pred.as_dict())

    pred2 = bob.Predictions(((255, 1), (0, 0), (0, 1)))
    assert pred2.to_bytes() == R.predictions_bytes([(255, 1), (0, 0), (0, 1)])
    out["predictions-mixed.bin"] = pred2.to_bytes()
    out["predictions-mixed.json"] = dump(pred2.as_dict())

    # -- §8 checkpoint after 10 updates ----------------------------------------------
    if with_checkpoint:
        ckpt = section8_checkpoint_10()
        assert sha(ckpt) == CHECKPOINT_10_SHA256, "the §8 checkpoint's SHA-256 differs from the contract"
        out["checkpoint-abracadabra-step10.bin"] = ckpt
        out["checkpoint-abracadabra-step10.json"] = dump(bob.load_checkpoint(ckpt).as_dict())
        header = ckpt[:CANONICAL_HEADER_BYTES]
        trace = bob.invoke(record, trace=True).trace_bytes()
        check_section8_trace(trace, raw, ckpt)
        out["trace-abracadabra-step10.bin"] = trace
        out["trace-abracadabra-step10.json"] = dump(bob.load_trace(trace).as_dict())
    else:
        header = None

    # -- refused files, with their findings written out by hand (the offsets in the
    # findings are the contract's table, written independently of the layout module) --
    refused: dict[str, tuple[bytes, list[dict]]] = {}

    bad = bytearray(raw)
    struct.pack_into("<I", bad, INPUT["targets"].offset + 4 * 3, 0x62)  # targets[3]: pair 3 is (a, c)
    refused["input-wrong-target"] = (bytes(bad), [
        {"error": "BadValue", "field": "targets", "index": 3, "offset": 540},
    ])

    bad = bytearray(raw)
    struct.pack_into("<I", bad, INPUT["prompt_words"].offset + 4, 256)  # prompt_words[1] = 256
    struct.pack_into("<I", bad, INPUT["prompt_words"].offset + 8, 0xFFFFFFFE)  # prompt_words[2]
    refused["input-bad-prompt-words"] = (bytes(bad), [
        {"error": "BadValue", "field": "prompt_words", "index": 1, "offset": 1556},
        {"error": "BadValue", "field": "prompt_words", "index": 2, "offset": 1560},
    ])

    refused["input-truncated"] = (raw[:1000], [
        {"error": "Truncated", "field": "file_size", "index": None, "offset": None},
    ])

    refused["predictions-bad"] = (struct.pack("<6I", 0x63, 2, 7, 0, 256, 1), [
        {"error": "BadValue", "field": "validity", "index": 0, "offset": 4},
        {"error": "BadValue", "field": "token", "index": 1, "offset": 8},
        {"error": "BadValue", "field": "token", "index": 2, "offset": 16},
    ])

    if header is not None:
        # The §8 checkpoint's header alone, with lr changed from 0.05 to 0.1 and
        # the header digest left as it was: three findings.
        bad = bytearray(header)
        struct.pack_into("<f", bad, CANONICAL.fields["learner"].offset + len(LEARNER_PREFIX), 0.1)  # lr
        refused["checkpoint-header-wrong-learner"] = (bytes(bad), [
            {"error": "IntegrityError", "field": "header_digest", "index": None, "offset": 415},
            {"error": "ContractMismatch", "field": "learner", "index": None, "offset": 101},
            {"error": "Truncated", "field": "file_size", "index": None, "offset": None},
        ])
        # ... and the same header with a length prefix that overruns the file.
        bad = bytearray(header)
        struct.pack_into("<I", bad, CANONICAL.fields["data.length"].offset, 5000)  # data.length
        refused["checkpoint-header-long-prefix"] = (bytes(bad), [
            {"error": "Truncated", "field": "data", "index": None, "offset": 158},
        ])

    finders = {
        "input": bob.input_findings,
        "predictions": bob.predictions_findings,
        "checkpoint": bob.checkpoint_findings,
    }
    for name, (data, expected) in refused.items():
        got = findings_json(finders[name.split("-")[0]](data))
        assert got == expected, f"{name}: findings {got} differ from the ones written by hand {expected}"
        out[f"refused/{name}.bin"] = data
        out[f"refused/{name}.json"] = dump({"findings": expected})
    return out


MANIFEST = "SHA256SUMS"


def with_manifest(files: dict[str, bytes]) -> dict[str, bytes]:
    """``files`` and ``SHA256SUMS`` (``sha256sum``'s lines) of them and of the exports in ``interop/``, which
    other libraries wrote: the whole of what the package ships, which bob-qualify holds a package to."""
    interop = os.path.join(GOLDEN, "interop")
    listed = {**files, **{f"interop/{n}": open(os.path.join(interop, n), "rb").read() for n in os.listdir(interop)}}
    lines = "".join(f"{sha(data)}  {name}\n" for name, data in sorted(listed.items()))
    return {**files, MANIFEST: lines.encode("ascii")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with python/bob/data/golden/ instead of writing")
    args = parser.parse_args(argv)
    files = with_manifest(build())
    status = 0
    for name, data in sorted(files.items()):
        path = os.path.join(GOLDEN, name)
        if args.check:
            try:
                with open(path, "rb") as f:
                    same = same_golden(name, f.read(), data)
            except FileNotFoundError:
                same = False
            if not same:
                print(f"differs: {path}")
                status = 1
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            bob.write_atomic(path, data)
            print(f"wrote {os.path.relpath(path, ROOT)} ({len(data)} bytes)")
    return status


if __name__ == "__main__":
    sys.exit(main())
