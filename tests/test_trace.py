"""The trace (formats/trace.md): its bytes read and refused from hand-made files,
traced runs byte-identical to untraced ones, ``bob-run --trace`` committed
with the pair, and where two runs part (``bob.diff``, ``bob-inspect trace``)."""

from __future__ import annotations

import hashlib
import json
import os
import struct
from pathlib import Path

import numpy as np
import pytest

import bob
import bob.core
from bob.errors import BadValue, ContractMismatch, IntegrityError, NotABobFile, Truncated
from bob.formats.canonical import contract_identity
from bob.formats.constants import PLANE_NAMES, UPDATES_PER_INVOCATION
from bob.formats.trace import Trace, TraceEntry, contract_sha256, load_trace, trace_findings
from bob.run import main as run_main
from conftest import CORPUS, PROMPTS

# The layout written out by hand (formats/trace.md), independent of bob.formats.layout.
HEAD = struct.Struct("<8sQ32s32sQ16s16s16sQ")  # then the state resumed: P, M, V
ENTRY = struct.Struct("<Qd16s16s16s")


def sha(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def d16(data: bytes) -> bytes:
    """Some 16-byte digest (the hand-made traces' planes)."""
    return sha(data)[:16]


E0 = HEAD.size  # where the entries start


def hand_made(step_before: int = 0, *, magic: bytes = b"BOB-TRCE", version: int = 2, count: int = 10,
              steps: "list[int] | None" = None, contract: bytes = b"", record: bytes = b"rec",
              start: bytes = b"") -> bytes:
    steps = steps or [step_before + i + 1 for i in range(count)]
    body = HEAD.pack(magic, version, contract or sha(contract_identity()), sha(record), step_before,
                     *(d16(start + b"%s%d" % (n, step_before)) for n in (b"P", b"M", b"V")), count)
    body += b"".join(ENTRY.pack(s, 5.0 - i / 8, d16(b"P%d" % s), d16(b"M%d" % s), d16(b"V%d" % s))
                     for i, s in enumerate(steps))
    return body + sha(body)


def resealed(data: bytes) -> bytes:
    return data[:-32] + sha(data[:-32])


def test_a_hand_made_trace_reads_back_field_by_field() -> None:
    data = hand_made(7)
    assert len(data) == HEAD.size + UPDATES_PER_INVOCATION * ENTRY.size + 32 == 816
    trace = load_trace(data)
    assert trace.step_before == 7 and trace.step_after == 7 + UPDATES_PER_INVOCATION
    assert trace.entries[0] == TraceEntry(8, 5.0, (d16(b"P8"), d16(b"M8"), d16(b"V8")))
    assert trace.contract_sha256 == contract_sha256() == sha(contract_identity())
    assert trace.input_sha256 == sha(b"rec")
    assert trace.to_bytes() == data and Trace.from_bytes(data) == trace


@pytest.mark.parametrize("data, error, field, offset", [
    (b"BOB-CKPT" + hand_made()[8:], NotABobFile, "magic", 0),
    (b"NOTATRCE" + hand_made()[8:], NotABobFile, "magic", 0),
    (b"BOB-T", Truncated, "file_size", 0),
    (hand_made()[:60], Truncated, "input_sha256", 48),  # cut short inside the identity
    (hand_made()[:E0 + 3 * 64 + 20], Truncated, "entries.P", E0 + 3 * 64 + 16),  # inside entry 3
    (hand_made()[:-1], Truncated, "digest", 784),
    (hand_made() + b"\0", Truncated, "file_size", 816),
    (hand_made(version=1), BadValue, "version", 8),
    (hand_made(count=9, steps=list(range(1, 10))), BadValue, "update_count", 136),
    # no run makes 10 updates from this step: the head is refused, not the entry whose step wrapped
    (hand_made(2**64 - 5, steps=[(2**64 - 5 + i + 1) % 2**64 for i in range(10)]), BadValue, "step_before", 80),
    (resealed(hand_made()[:E0] + struct.pack("<Q", 99) + hand_made()[E0 + 8:]), BadValue, "entries.step", E0),
    *[(resealed(hand_made()[:E0 + 72] + struct.pack("<d", loss) + hand_made()[E0 + 80:]), BadValue, "entries.loss",
       E0 + 72)
      for loss in (-1.0, -5e-324, float("nan"), float("-inf"))],  # (entry 1's: what no mean cross-entropy is)
    (hand_made()[:-1] + bytes([hand_made()[-1] ^ 1]), IntegrityError, "digest", 784),
    (hand_made()[:200] + bytes([hand_made()[200] ^ 1]) + hand_made()[201:], IntegrityError, "digest", 784),
])
def test_a_reader_refuses_naming_the_field_and_offset(data, error, field, offset) -> None:
    findings = trace_findings(data)
    assert findings and type(findings[0]) is error, findings
    assert (findings[0].field, findings[0].offset) == (field, offset), findings[0]
    with pytest.raises(error):
        load_trace(data)


def test_every_loss_bob_can_write_is_read() -> None:
    """§6.4's mean of -log p over the pairs: +0.0 and -0.0 (every p is 1), +inf (a p of 0), a subnormal."""
    for loss in (0.0, -0.0, float("inf"), 5e-324, 1e308):
        data = resealed(hand_made()[:E0 + 72] + struct.pack("<d", loss) + hand_made()[E0 + 80:])
        assert trace_findings(data) == [] and load_trace(data).to_bytes() == data
    made = load_trace(hand_made())
    entries = made.entries
    with pytest.raises(BadValue, match=r"^entries\[2\]\.loss: a mean cross-entropy"):
        bob.Trace(sha(contract_identity()), sha(b"rec"), 0, made.start, (*entries[:2], entries[2]._replace(loss=-1.0),
                                                                         *entries[3:]))


def test_a_damaged_step_before_past_every_run_keeps_the_digest_s_finding_first() -> None:
    """A bit flipped in step_before near the top (the rule had been the layout's, a refusal alone): the digest
    says the file was damaged, then step_before; no entry's step is blamed on its own."""
    data = bytearray(hand_made(2**64 - 21))
    data[80] ^= 0x10
    findings = trace_findings(bytes(data))
    assert [(type(f), f.field, f.offset) for f in findings] == [(IntegrityError, "digest", 784),
                                                                (BadValue, "step_before", 80)]
    assert str(findings[1]).startswith("step_before at offset 80: entry i's step, step_before + i + 1, would pass")


def test_a_trace_of_another_contract_is_refused_by_name_as_a_checkpoint_is() -> None:
    """(It was "OK: a valid bob-trace v1 trace", of the version before.)"""
    other = hand_made(contract=sha(b"another contract"))
    findings = trace_findings(other)
    assert [(type(f), f.field, f.offset) for f in findings] == [(ContractMismatch, "contract_sha256", 16)]
    with pytest.raises(ContractMismatch, match="^contract_sha256: a trace of a run under another contract"):
        made = load_trace(hand_made())
        bob.Trace(sha(b"another contract"), sha(b"record"), 0, made.start, made.entries)
    with pytest.raises(ContractMismatch):
        bob.diff(hand_made(), other)


@pytest.mark.parametrize("other, field, offset", [
    (hand_made(record=b"another record"), "input_sha256", 48),
    (hand_made(10), "step_before", 80),
])
def test_a_trace_of_another_run_is_refused_by_its_identity_field(other, field, offset) -> None:
    with pytest.raises(BadValue) as caught:
        load_trace(hand_made()).first_divergence(load_trace(other))
    assert (caught.value.field, caught.value.offset) == (field, offset)
    with pytest.raises(BadValue):
        bob.diff(hand_made(), other)


def test_the_first_diverging_update_is_named() -> None:
    a = hand_made()
    at = E0 + 4 * 64 + 16 + 16  # entry 4's M digest
    b = resealed(a[:at] + d16(b"other") + a[at + 16:])
    assert load_trace(a).first_divergence(load_trace(b)) == 4
    report = bob.diff(a, b)
    assert report["first_divergence"] == {"update": 5, "step": 5, "loss_a": 4.5, "loss_b": 4.5, "planes": ["M"]}
    assert not report["same"] and report["verdict"].startswith("the runs part at update 5")
    assert bob.diff(a, a)["same"] and bob.diff(a, a)["first_divergence"] is None


# --------------------------------------------------------------------------- #
# Traced runs
# --------------------------------------------------------------------------- #

RECORD = bob.build_input(CORPUS, PROMPTS)


@pytest.mark.parametrize("invocations", [1, 2])
def test_a_traced_invoke_is_byte_identical_to_an_untraced_one(invocations: int) -> None:
    plain, traced = b"", b""
    for _ in range(invocations):
        a, b = bob.invoke(RECORD, plain), bob.invoke(RECORD, traced, trace=True)
        plain, traced = a.checkpoint_bytes(), b.checkpoint_bytes()
        assert plain == traced and a.predictions_bytes() == b.predictions_bytes() and a.losses == b.losses
    assert a.trace is None and b.trace is not None
    with pytest.raises(ValueError):
        a.trace_bytes()
    trace = load_trace(b.trace_bytes())
    assert trace == b.trace and trace.step_before == b.step_before and trace.losses == b.losses
    assert trace.input_sha256 == sha(RECORD.to_bytes())
    c = b.checkpoint  # the last entry is the state written
    assert trace.entries[-1].digests == tuple(bob.core.xxh3_128_each([c.p, c.m, c.v]))


def test_the_planes_digest_is_xxh3_128_by_xxhash_s_vectors(core) -> None:
    # XXH3_128bits of "" and of "abc" (xxHash's canonical form), and of the fresh
    # planes (§6.1), as the xxhash package (python-xxhash 3.x, libxxhash 0.8) gives them
    p, m, _ = core.initial_planes()
    assert [d.hex() for d in core.xxh3_128_each([b"", b"abc", p, m])] == [
        "99aa06d3014798d86001c324468d497f", "06b05ab6733a618578af5f94892f3950",
        "6cd251dfbe13753f50fd5f460bd5b603", "9aa295aead2a46612d64c035e85fb928"]
    with pytest.raises(TypeError):
        core.xxh3_128_each([3])
    with pytest.raises(ValueError, match="C-contiguous"):
        core.xxh3_128_each([memoryview(b"abcd")[::2]])


def test_each_entry_is_the_state_after_its_update(core) -> None:
    trace = bob.invoke(RECORD, trace=True).trace
    p, m, v = core.initial_planes()
    for entry in trace.entries:
        core.train(p, m, v, RECORD.contexts, RECORD.targets, entry.step - 1, 1)
        assert entry.digests == tuple(core.xxh3_128_each([p, m, v]))


@pytest.fixture
def work(tmp_path: Path) -> Path:
    RECORD.write(tmp_path / "rec.bin")
    return tmp_path


def run(work: Path, name: str, *extra: str) -> int:
    return run_main(["--input", str(work / "rec.bin"), "--checkpoint", str(work / f"{name}.ck"),
                     "--predictions", str(work / f"{name}.pred"), *extra])


def test_bob_run_trace_writes_the_same_pair_and_the_library_s_trace(work: Path, capsys) -> None:
    for _ in range(2):
        assert run(work, "plain") == 0
        assert run(work, "traced", "--trace", str(work / "t.trace"), "--json") == 0
    assert '"trace_file": ' in capsys.readouterr().out
    for suffix in ("ck", "pred"):
        assert (work / f"plain.{suffix}").read_bytes() == (work / f"traced.{suffix}").read_bytes()
    first = bob.invoke(RECORD)
    assert (work / "t.trace").read_bytes() == bob.invoke(RECORD, first.checkpoint, trace=True).trace_bytes()


@pytest.mark.parametrize("target", ["traced.ck", "traced.pred", "rec.bin", ".traced.ck.bob-lock", "sub"])
def test_bob_run_refuses_a_trace_target_that_is_another_file_of_the_run(work: Path, target: str, capsys) -> None:
    (work / "sub").mkdir()
    assert run(work, "traced", "--trace", str(work / target)) == 2
    assert "--trace" in capsys.readouterr().err
    assert not (work / "traced.ck").exists()


@pytest.mark.parametrize("trace_before", [True, False], ids=["old-trace", "no-trace"])
def test_the_trace_is_rolled_back_with_the_pair(work: Path, monkeypatch, capsys, trace_before: bool) -> None:
    assert run(work, "traced", *(("--trace", str(work / "t.trace")) if trace_before else ())) == 0
    before = {p.name: p.read_bytes() for p in work.iterdir()}
    real = os.replace

    def replace(src, dst, *args, **kwargs):
        if str(dst).endswith("traced.ck"):
            raise OSError(5, "Input/output error")
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)
    assert run(work, "traced", "--trace", str(work / "t.trace")) == 2
    assert {p.name: p.read_bytes() for p in work.iterdir()} == before  # all three old, nothing left behind


# --------------------------------------------------------------------------- #
# bob-inspect trace
# --------------------------------------------------------------------------- #


def diverged() -> "tuple[bob.Invocation, bob.Checkpoint, Trace]":
    """A run, and a second state of it whose P differs by one bit after the last update, with its trace."""
    a = bob.invoke(RECORD, trace=True)
    other = a.checkpoint.copy()
    other.p[1234] = np.nextafter(other.p[1234], np.float32(1))
    entries = list(a.trace.entries)
    entries[-1] = entries[-1]._replace(digests=(bob.core.xxh3_128_each([other.p])[0],) + entries[-1].digests[1:])
    return a, other, Trace(a.trace.contract_sha256, a.trace.input_sha256, 0, a.trace.start, tuple(entries))


def test_inspect_trace_names_the_update_then_the_plane_and_index(tmp_path: Path, cli) -> None:
    a, other, trace_b = diverged()
    (tmp_path / "a.trace").write_bytes(a.trace_bytes())
    trace_b.write(tmp_path / "b.trace")
    a.checkpoint.write(tmp_path / "a.ck")
    other.write(tmp_path / "b.ck")
    A, B = str(tmp_path / "a.trace"), str(tmp_path / "b.trace")
    assert cli.json("trace", A, A)["same"] is True
    report = cli.json("trace", A, B, "--checkpoints", str(tmp_path / "a.ck"), str(tmp_path / "b.ck"), code=1)
    assert report["first_divergence"]["update"] == UPDATES_PER_INVOCATION
    assert report["first_divergence"]["planes"] == ["P"]
    first = report["checkpoints"]["first"]
    assert (first["plane"], first["index"], report["checkpoints"]["step"]) == ("P", 1234, UPDATES_PER_INVOCATION)
    text = cli.text("trace", A, B, code=1)
    assert f"first diverging update: {UPDATES_PER_INVOCATION}" in text
    library = bob.diff(a.trace, trace_b, checkpoints=(a.checkpoint, other))
    assert library["checkpoints"]["first"]["index"] == 1234 and library["first_divergence"]["planes"] == ["P"]


def test_the_library_s_refusal_of_one_of_two_names_the_argument() -> None:
    """Two traces, or two checkpoints, refused in the same words: a note names the one refused (the command
    names its path)."""
    a, other, trace_b = diverged()
    cut = a.trace_bytes()[:700]
    for args, kwargs, named in [((a.trace, cut), {}, "b"), ((cut, a.trace), {}, "a"),
                                ((a.trace, trace_b), {"checkpoints": (a.checkpoint, a.checkpoint.to_bytes()[:9])},
                                 "checkpoints[1]"),
                                ((a.trace, trace_b), {"checkpoints": (other, other)}, "checkpoints[0]"),
                                ((a.trace, bob.invoke(RECORD, a.checkpoint, trace=True).trace), {}, "b"),  # another run
                                ((a.trace, trace_b), {"checkpoints": (a.checkpoint, b"")}, "checkpoints[1]")]:  # steps
        with pytest.raises(bob.FormatError) as info:
            bob.diff(*args, **kwargs)
        assert info.value.__notes__ == [f"(refusing the argument {named})"], (named, info.value)


def test_inspect_trace_refuses_with_exit_2_naming_the_path_and_field(tmp_path: Path, cli) -> None:
    a, other, _ = diverged()
    good = tmp_path / "a.trace"
    good.write_bytes(a.trace_bytes())
    (tmp_path / "cut.trace").write_bytes(a.trace_bytes()[:748])
    (tmp_path / "other.trace").write_bytes(bob.invoke(RECORD, a.checkpoint, trace=True).trace_bytes())
    a.checkpoint.write(tmp_path / "a.ck")
    other.write(tmp_path / "b.ck")
    for name, field in (("cut.trace", "entries.P"), ("other.trace", "step_before"), ("a.ck", "magic")):
        error = cli.json("trace", str(good), str(tmp_path / name), code=2)["error"]
        assert error["field"] == field and error["path"] == str(tmp_path / name), error
    error = cli.json("trace", str(good), str(good), "--checkpoints", str(tmp_path / "b.ck"), str(tmp_path / "a.ck"),
                     code=2)["error"]
    assert (error["option"], error["field"]) == ("--checkpoints", "P")  # b.ck is no state of trace A
    # a path that cannot be read names its argument as a refused file does (A, B, --checkpoints)
    for args, option in (((str(tmp_path / "none"), str(good)), "A"), ((str(good), str(tmp_path)), "B"),
                         ((str(good), str(good), "--checkpoints", str(tmp_path / "a.ck"), str(tmp_path)),
                          "--checkpoints")):
        assert cli.json("trace", *args, code=2)["error"]["option"] == option
    assert PLANE_NAMES[0] in error["message"]


def test_a_state_damaged_after_one_update_is_named_at_that_update(core) -> None:
    # bob-qualify traces both kernels' runs this way (bob.qualify.kernels.first_diverging_update)
    from bob.invocation import traced_train
    from bob.qualify import kernels

    state = kernels.draw_state(3, 0)
    reference = kernels.kernel_trace(state, "scalar", 1, False)
    for damaged in (0, 4, UPDATES_PER_INVOCATION - 1):
        planes = (state.p.copy(), state.m.copy(), state.v.copy())
        digests: list = []

        def damage(i: int) -> None:
            if i == damaged:
                planes[2].view(np.uint32)[77] ^= 1  # V

        losses = traced_train(*planes, state.contexts, state.targets, state.step, UPDATES_PER_INVOCATION, digests,
                              kernel="scalar", after=damage)
        entries = tuple(TraceEntry(state.step + i + 1, x, d) for i, (x, d) in enumerate(zip(losses, digests[1:])))
        traced = Trace(reference.contract_sha256, reference.input_sha256, state.step, digests[0], entries)
        assert traced.start == reference.start
        assert reference.first_divergence(traced) == damaged
        assert traced.entries[damaged].digests[:2] == reference.entries[damaged].digests[:2]  # only V differs there
    assert kernels.first_diverging_update(state, core.kernels()[-1], 2) == {"first_diverging_update": None}


def test_telling_a_trace_by_its_path_never_blocks_on_a_fifo(tmp_path: Path) -> None:
    from bob.divergence import is_trace

    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "t.trace").write_bytes(hand_made())
    assert not is_trace(tmp_path / "fifo") and not is_trace(tmp_path / "missing") and not is_trace(tmp_path)
    assert is_trace(tmp_path / "t.trace") and is_trace(str(tmp_path / "t.trace"))


@pytest.mark.parametrize("loss", [float("inf")])
def test_two_traces_with_a_non_finite_loss_compare_in_strict_json(tmp_path: Path, cli, loss: float) -> None:
    """A trace may hold a loss of +inf (a pair's target of probability 0); the comparison's JSON says "inf", as
    every report does (docs/bob-inspect.md), not Infinity, which strict readers refuse."""
    a = hand_made()
    b = resealed(a[:HEAD.size + 8] + struct.pack("<d", loss) + bytes([a[HEAD.size + 16] ^ 1]) + a[HEAD.size + 17:])
    (tmp_path / "a.trace").write_bytes(a)
    (tmp_path / "b.trace").write_bytes(b)  # its first update's loss and P digest differ
    report = cli.json("trace", str(tmp_path / "a.trace"), str(tmp_path / "b.trace"), code=1)
    assert report["first_divergence"]["loss_b"] == str(loss) and report["b"]["losses"][0] == str(loss)
    assert cli.json("trace", str(tmp_path / "b.trace"), str(tmp_path / "b.trace"))["same"] is True
    # bob.diff returns the same report (docs/bob-inspect.md): it had no file names, and NaN where the CLI says "nan"
    library = bob.diff(str(tmp_path / "a.trace"), tmp_path / "b.trace")
    assert {k: v for k, v in report.items() if k not in ("command", "ok", "exit_code", "error")} == \
        {k: v for k, v in library.items() if k not in ("command", "ok")}
    json.dumps(library, allow_nan=False)


def test_the_constructor_takes_bytes_and_integers_only() -> None:
    """An int was taken for its zero bytes (bytes(32)), and "5" or 5.7 for a step (int() of it)."""
    trace = load_trace(hand_made())
    with pytest.raises(TypeError, match="^input_sha256 must be bytes"):
        Trace(trace.contract_sha256, 32, 0, trace.start, trace.entries)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="^entries.digests must be bytes"):
        Trace(trace.contract_sha256, trace.input_sha256, 0, trace.start,
              [(e.step, e.loss, (16, 16, 16)) for e in trace.entries])
    for step in (str, float):
        with pytest.raises(BadValue, match=r"^entries\[0\].step: an integer"):
            Trace(trace.contract_sha256, trace.input_sha256, 0, trace.start, [(step(e.step), e.loss, e.digests)
                                                                              for e in trace.entries])
    assert Trace(trace.contract_sha256, trace.input_sha256, 0, trace.start, trace.entries) == trace


@pytest.mark.parametrize("step_before", [-1, 2**64 - UPDATES_PER_INVOCATION, 1.0, True, "0"])
def test_the_constructor_refuses_a_step_before_no_trace_holds(step_before) -> None:
    """-1 or a step whose entries pass 2**64 - 1 built a Trace that to_bytes could not write
    (struct.error); a float or a bool was taken for an integer."""
    trace = load_trace(hand_made())
    entries = [(i + 1 + (step_before if type(step_before) is int else 0), e.loss, e.digests)
               for i, e in enumerate(trace.entries)]
    with pytest.raises(BadValue, match=r"^step_before: an integer from 0 to 2\*\*64 - 1 - 10"):
        Trace(trace.contract_sha256, trace.input_sha256, step_before, trace.start, entries)
    last = 2**64 - 1 - UPDATES_PER_INVOCATION
    made = Trace(trace.contract_sha256, trace.input_sha256, np.uint64(last), trace.start,
                 [(last + i + 1, e.loss, e.digests) for i, e in enumerate(trace.entries)])
    assert load_trace(made.to_bytes()) == made and type(made.step_before) is int


@pytest.mark.parametrize("entry, field", [((1, "0.5", (b"",) * 3), r"entries\[0\].loss: a real number"),
                                          ((1, None, (b"",) * 3), r"entries\[0\].loss: a real number"),
                                          ((1, 10**400, (b"",) * 3), r"entries\[0\].loss: a real number a float64"),
                                          ((1, 0.5), r"entries\[0\]: an entry is"),
                                          ((1, 0.5, 16), r"entries\[0\]: an entry is"),
                                          (5, r"entries\[0\]: an entry is")])
def test_the_constructor_names_the_entry_field_it_refuses(entry, field) -> None:
    """A loss of "0.5" was float()ed into one; a short entry, an int for the digests or a huge
    integer loss raised ValueError, TypeError or OverflowError naming nothing."""
    trace = load_trace(hand_made())
    with pytest.raises(BadValue, match="^" + field):
        Trace(trace.contract_sha256, trace.input_sha256, 0, trace.start, [entry, *trace.entries[1:]])


def test_two_traces_held_to_checkpoints_judge_their_planes_as_written() -> None:
    """A float64 copy of a plane (== to the original) was "no state of its trace" until an unrelated
    to_bytes converted it in place; a Fortran-ordered one was "needs C-contiguous buffers"."""
    record = bob.build_input(CORPUS, PROMPTS)
    a, b = bob.invoke(record, trace=True), bob.invoke(record, trace=True)
    for convert in (lambda p: p.astype(np.float64), lambda p: np.asfortranarray(p.reshape(256, 256))):
        same = a.checkpoint.copy()
        same.p = convert(same.p)
        assert same == a.checkpoint
        assert bob.diff(a.trace, b.trace, checkpoints=(a.checkpoint, same))["verdict"].endswith("the same state")
        assert same.p.dtype != np.float32 or not same.p.flags.c_contiguous  # the caller's object untouched


@pytest.mark.parametrize("kwargs, said", [
    ({"checkpoints": "one"}, "^checkpoints is a pair"), ({"checkpoints": (None, None)}, r"^checkpoints\[0\] must be"),
    ({"ulp": 5}, "^ulp= and atol= go with two checkpoints"), ({"atol": 1.0}, "^ulp= and atol= go with two")])
def test_two_traces_refuse_what_does_not_go_with_them(kwargs, said) -> None:
    """checkpoints= was unpacked unchecked (a Checkpoint: 'not iterable'; None: open()'s TypeError);
    ulp= and atol= were taken and ignored."""
    record = bob.build_input(CORPUS, PROMPTS)
    a, b = bob.invoke(record, trace=True), bob.invoke(record, trace=True)
    with pytest.raises(TypeError, match=said):
        bob.diff(a.trace, b.trace, **kwargs)


def test_a_non_finite_loss_is_json_ready_and_checkpoints_is_never_a_path_split_in_characters(tmp_path: Path) -> None:
    """Trace.as_dict said JSON-ready and held NaN (strict JSON refused it); bob.diff(..., checkpoints="ab")
    read the files "a" and "b", and a single path was refused as "got tuple ('m', 'o', ...)"."""
    a = hand_made()
    b = resealed(a[:HEAD.size + 8] + struct.pack("<d", float("inf")) + a[HEAD.size + 16:])
    assert load_trace(b).as_dict()["entries"][0]["loss"] == "inf"
    json.dumps(load_trace(b).as_dict(), allow_nan=False)
    for given in ("ab", "model.bob", b"ab", tmp_path):
        with pytest.raises(TypeError, match=f"^checkpoints is a pair: one state of each run; got {type(given).__name__}"):
            bob.diff(a, a, checkpoints=given)


def test_runs_that_resumed_different_states_part_before_update_1_even_when_the_first_update_erases_it(
        tmp_path: Path, cli) -> None:
    """A -0.0 moment where the other state has +0.0: the first update makes both +0.0, and every entry agrees.
    The traces said "same"; the state each run resumed is in its trace, so they part before update 1."""
    start = bob.invoke(RECORD).checkpoint
    assert np.signbit(start.m[0]) == 0
    other = start.copy()
    other.m[0] = -0.0
    a, b = bob.invoke(RECORD, start, trace=True), bob.invoke(RECORD, other, trace=True)
    assert a.checkpoint_bytes() == b.checkpoint_bytes() and a.trace.entries == b.trace.entries
    report = bob.diff(a.trace, b.trace)
    assert report["same"] is False and report["first_divergence"] == {
        "update": 0, "step": 10, "loss_a": None, "loss_b": None, "planes": ["M"]}
    assert report["verdict"] == "the runs resumed different states at step 10: M differs before the first update"
    for name, data in (("a.trace", a.trace_bytes()), ("b.trace", b.trace_bytes())):
        (tmp_path / name).write_bytes(data)
    start.write(tmp_path / "a.ck", for_resume=False)
    other.write(tmp_path / "b.ck", for_resume=False)
    shown = cli.json("trace", str(tmp_path / "a.trace"), str(tmp_path / "b.trace"), "--checkpoints",
                     str(tmp_path / "a.ck"), str(tmp_path / "b.ck"), code=1)  # the states resumed: the first cell
    assert shown["checkpoints"]["step"] == 10 and shown["checkpoints"]["first"]["plane"] == "M"
    assert shown["checkpoints"]["first"]["index"] == 0
    assert "the states resumed (step 10) differ: digests differ for M" in cli.text(
        "trace", str(tmp_path / "a.trace"), str(tmp_path / "b.trace"), code=1)
    assert load_trace(a.trace_bytes()).start == tuple(bob.core.xxh3_128_each([start.p, start.m, start.v]))


@pytest.mark.parametrize("start", [{"P": 1}, 5, b"x" * 48, (b"x" * 16,) * 2, (b"x" * 16, b"x" * 16, b"x" * 15)])
def test_the_constructor_names_the_start_it_refuses(start) -> None:
    """A dict, an int or the three digests run together in one bytes were shown as "NoneType None", or were a
    TypeError about an int."""
    trace = load_trace(hand_made())
    with pytest.raises(BadValue, match=r"^start: the 16-byte XXH3-128 of P, M and V \(got ") as info:
        Trace(trace.contract_sha256, trace.input_sha256, 0, start, trace.entries)
    assert "NoneType" not in str(info.value)
