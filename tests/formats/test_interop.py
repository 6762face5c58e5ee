"""Interop in one call each: safetensors and .npz exports and imports,
``bob-inspect ckpt --export``, ``bob.probabilities`` and ``bob.diff``."""

from __future__ import annotations

import hashlib
import io
import json
import struct
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import bob
import bob.fileio
from bob import interop
from bob.errors import LEARNER_PREFIX

safetensors_numpy = pytest.importorskip("safetensors.numpy")  # the interop extra: scripts/test.sh installs it
from safetensors import safe_open  # noqa: E402

CORPUS = b"abracadabra"
PROMPTS = [b"abra", b"cad", b""]
U64_MAX = (1 << 64) - 1
FORMATS = ("safetensors", "npz")


@pytest.fixture(scope="module")
def trained() -> bob.Checkpoint:
    record = bob.build_input(CORPUS, PROMPTS)
    ck = bob.invoke(record).checkpoint
    return bob.invoke(record, ck).checkpoint  # step 20


def export(ck: bob.Checkpoint, fmt: str, path: Path, **kw) -> None:
    getattr(ck, f"to_{fmt}")(path, **kw)


def load(fmt: str, path: Path, **kw) -> bob.Checkpoint:
    return getattr(bob.Checkpoint, f"from_{fmt}")(path, **kw)


def bits(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)


# --------------------------------------------------------------------------- #
# Round trips
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("fmt", FORMATS)
def test_bob_to_other_format_to_bob_is_byte_identical(trained, tmp_path, fmt) -> None:
    wide = bob.load_checkpoint(trained.to_bytes(header_bytes=512))  # a valid larger header keeps its size
    for ck in (trained, wide, bob.Checkpoint.fresh()):
        path = tmp_path / f"ck.{fmt}"
        export(ck, fmt, path)
        first = path.read_bytes()
        back = load(fmt, path)
        assert back.to_bytes() == ck.to_bytes() and back == ck
        export(back, fmt, path)
        assert path.read_bytes() == first  # the same bytes
        assert load(fmt, path).to_bytes() == ck.to_bytes()


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_export_is_the_same_bytes_in_every_process(fmt, tmp_path) -> None:
    """Users compare exports by their bytes: a hash map's order (the safetensors library keeps its
    metadata in one, seeded per process) must not reach the file."""
    import subprocess

    script = ("import bob, sys; bob.Checkpoint.fresh().to_bytes(); "
              f"getattr(bob.Checkpoint.fresh(), 'to_{fmt}')(sys.argv[1])")
    files = [tmp_path / f"{i}.{fmt}" for i in range(4)]
    for f in files:
        subprocess.run([sys.executable, "-c", script, str(f)], check=True)
    assert len({f.read_bytes() for f in files}) == 1


def test_the_safetensors_library_reads_the_planes_and_the_metadata(trained, tmp_path) -> None:
    path = tmp_path / "ck.safetensors"
    trained.to_safetensors(path)
    tensors = safetensors_numpy.load_file(str(path))
    assert sorted(tensors) == ["M", "P", "V"]
    for name, table in tensors.items():
        assert table.shape == (256, 256) and table.dtype == np.float32
        assert np.array_equal(bits(table).reshape(-1), bits(trained.planes[name]))
    assert tensors["P"][97, 98] == trained.p[97 * 256 + 98]  # row: context, column: next
    with safe_open(str(path), "np") as f:
        meta = f.metadata()
    assert meta["format"] == "bob-checkpoint" and meta["step"] == "20" and meta["header_bytes"] == "448"
    assert bytes.fromhex(meta["contract.learner"]) == bob.Contract().learner
    assert meta["contract.identity_sha256"] == interop.metadata(bob.Checkpoint.fresh())["contract.identity_sha256"]
    assert meta == interop.metadata(trained)


def test_one_contract_digest_in_an_export_a_trace_and_bob_qualify() -> None:
    """One identity, one digest: the §2 fields as a header holds them (they were three serialisations)."""
    from bob.qualify.machine import contract_identity

    trace = bob.invoke(bob.build_input(CORPUS, PROMPTS).to_bytes(), b"", threads=1, trace=True).trace
    digest = interop.metadata(bob.Checkpoint.fresh())["contract.identity_sha256"]
    assert digest == trace.contract_sha256.hex() == contract_identity()["identity_sha256"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_export_of_version_1_is_read_with_its_own_identity_digest(trained, tmp_path, fmt) -> None:
    """Version 1 (earlier builds) hashed the contract fields' JSON: its exports were refused once the digest became a
    trace's contract_sha256 (version 2). Read with its own digest, and with that one only."""
    from bob.fuzz.oracle_interop import check_export

    tensors, meta = _spoiled(trained, lambda t, m: None)
    fields = {k: v for k, v in meta.items() if k.startswith("contract.") and k != "contract.identity_sha256"}
    meta.update(version="1", **{"contract.identity_sha256": hashlib.sha256(json.dumps(fields, sort_keys=True)
                                                                           .encode()).hexdigest()})
    data = _safetensors_file(tensors, meta) if fmt == "safetensors" else _npz_file({**tensors, "bob": np.array(
        json.dumps(meta))})
    (tmp_path / f"x.{fmt}").write_bytes(data)
    assert load(fmt, tmp_path / f"x.{fmt}") == trained and check_export(fmt, data, True) is None
    meta["version"] = "2"  # (version 2 with version 1's digest: refused, by bob and the oracle)
    data = _safetensors_file(tensors, meta) if fmt == "safetensors" else _npz_file({**tensors, "bob": np.array(
        json.dumps(meta))})
    (tmp_path / f"x.{fmt}").write_bytes(data)
    with pytest.raises(bob.BadValue, match="metadata.contract.identity_sha256"):
        load(fmt, tmp_path / f"x.{fmt}")
    assert check_export(fmt, data, True) is not None


def test_numpy_reads_the_npz_without_pickle(trained, tmp_path) -> None:
    path = tmp_path / "ck.npz"
    trained.to_npz(path)
    with np.load(path, allow_pickle=False) as z:
        assert sorted(z.files) == ["M", "P", "V", "bob"]
        for name in "PMV":
            assert z[name].shape == (256, 256) and z[name].dtype == np.float32
            assert np.array_equal(bits(z[name]).reshape(-1), bits(trained.planes[name]))
        assert json.loads(str(z["bob"])) == interop.metadata(trained)


@pytest.mark.parametrize("fmt", FORMATS)
def test_exports_go_through_the_atomic_writer(trained, tmp_path, monkeypatch, fmt) -> None:
    calls = []
    real = bob.fileio.write_atomic
    monkeypatch.setattr(bob.fileio, "write_atomic", lambda path, data: (calls.append(path), real(path, data)))
    export(trained, fmt, tmp_path / f"ck.{fmt}")
    assert calls == [tmp_path / f"ck.{fmt}"]


# --------------------------------------------------------------------------- #
# A state bob would refuse: refused on export and on import
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_state_bob_refuses_is_refused_on_export_and_on_import(trained, tmp_path, fmt) -> None:
    bad = trained.copy()
    bad.v_table[3, 4] = -1.0
    path = tmp_path / f"ck.{fmt}"
    with pytest.raises(bob.StateRefused) as info:
        export(bad, fmt, path)
    assert (info.value.field, info.value.index) == ("V", 3 * 256 + 4) and not path.exists()
    export(bad, fmt, path, for_resume=False)  # asked for: a test file
    with pytest.raises(bob.StateRefused) as imported:
        load(fmt, path)
    assert (imported.value.field, imported.value.index) == ("V", 3 * 256 + 4)
    suffix = "bob would refuse to resume it, so {} refuses it too (for_resume=False takes it anyway, for a test file)"
    assert info.value.message.endswith(suffix.format(f"Checkpoint.to_{fmt}"))  # (an import writes nothing)
    what = "importing a .npz file" if fmt == "npz" else "importing a safetensors file"
    assert imported.value.message.endswith(suffix.format(what)), imported.value.message
    assert load(fmt, path, for_resume=False) == bad


def _safetensors_file(tensors: dict, meta: dict | None) -> bytes:
    return bytes(safetensors_numpy.save(tensors, metadata=meta))


def _npz_file(arrays: dict) -> bytes:
    out = io.BytesIO()
    np.savez(out, **arrays)
    return out.getvalue()


def _spoiled(trained, change) -> tuple[dict, dict]:
    tensors = {name: np.array(t) for name, t in trained.tables.items()}  # copies: the fixture stays as it is
    meta = interop.metadata(trained)
    change(tensors, meta)
    return tensors, meta


def _with_learner(meta: dict, learner: bytes, identity: bool) -> None:
    meta["contract.learner"] = learner.hex()
    if identity:  # (a trace's contract_sha256 of that contract: the §2 fields as a header holds them)
        strings = [bytes.fromhex(meta[f"contract.{name}"]) for name in ("state", "learner", "data", "seed")]
        sizes = [int(meta[f"contract.{name}"]) for name in ("payload_bytes", "chunk_bytes", "updates_per_invocation")]
        meta["contract.identity_sha256"] = hashlib.sha256(b"".join(struct.pack("<I", len(s)) + s for s in strings)
                                                          + struct.pack("<3Q", *sizes)).hexdigest()


OTHER_LEARNER = LEARNER_PREFIX + struct.pack("<5f", 0.5, 0.9, 0.999, 1e-8, 0.01)

SPOILS = [
    # (what is changed, the error, its field)
    (lambda t, m: t.pop("V"), bob.BadValue, "V"),
    (lambda t, m: t.update(W=t["P"]), bob.BadValue, "W"),
    # (an .npz member twice a plane's size is refused by its .npy header: a float64 plane, not one too large)
    (lambda t, m: t.update(M=t["M"].astype(np.float64)), bob.BadValue, "M"),
    (lambda t, m: t.update(P=t["P"].reshape(-1)), bob.BadValue, "P"),
    (lambda t, m: t.update(P=t["P"].reshape(128, 512)), bob.BadValue, "P"),
    (lambda t, m: m.update(format="gguf"), bob.NotABobFile, "metadata.format"),
    (lambda t, m: m.update(version="3"), bob.BadValue, "metadata.version"),
    (lambda t, m: m.update(step="ten"), bob.BadValue, "metadata.step"),
    (lambda t, m: m.update(step="-1"), bob.BadValue, "metadata.step"),
    (lambda t, m: m.update(step=str(1 << 64)), bob.BadValue, "metadata.step"),
    (lambda t, m: m.pop("step"), bob.BadValue, "metadata.step"),
    # a value out of range is named by its key too, as one in the wrong form (it named the envelope's field)
    (lambda t, m: m.update(step=str(U64_MAX)), bob.StateRefused, "metadata.step"),  # no room for 10 more updates
    (lambda t, m: m.update(step="0"), bob.StateRefused, "metadata.step"),  # M and V are not zero at step 0
    (lambda t, m: m.update(header_bytes="100"), bob.BadValue, "metadata.header_bytes"),
    (lambda t, m: m.update(header_bytes="65600"), bob.BadValue, "metadata.header_bytes"),
    (lambda t, m: m.update({"contract.seed": "zz"}), bob.BadValue, "metadata.contract.seed"),
    (lambda t, m: m.pop("contract.seed"), bob.BadValue, "metadata.contract.seed"),  # missing: not a mismatch
    (lambda t, m: _with_learner(m, OTHER_LEARNER, identity=True), bob.ContractMismatch,
     "metadata.contract.learner"),  # (by its key: it named the envelope's field)
    (lambda t, m: m.update({"contract.identity_sha256": "0" * 64}), bob.BadValue,
     "metadata.contract.identity_sha256"),
    (lambda t, m: t["P"].__setitem__((0, 0), np.nan), bob.StateRefused, "P"),
    # a foreign key named in the field is escaped there too, not only in the message (a log shows it raw)
    (lambda t, m: m.update({"\x1b[2J\n": "x"}), bob.BadValue, "metadata.\\x1b[2J\\x0a"),
]


@pytest.mark.parametrize(("change", "error", "field"), SPOILS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_an_import_that_is_no_valid_bob_state_is_refused_by_name(trained, tmp_path, fmt, change, error,
                                                                 field) -> None:
    tensors, meta = _spoiled(trained, change)
    path = tmp_path / f"x.{fmt}"
    if fmt == "safetensors":
        path.write_bytes(_safetensors_file(tensors, meta))
    else:
        path.write_bytes(_npz_file({**tensors, "bob": np.array(json.dumps(meta))}))
    with pytest.raises(error[fmt] if isinstance(error, dict) else error) as info:
        load(fmt, path)
    assert info.value.field == field


def test_a_minus_zero_offset_is_refused_as_the_safetensors_library_refuses_it(trained, tmp_path) -> None:
    """JSON's -0 is a float to serde ("invalid type: floating point `-0.0`, expected usize"); bob's
    import read it as the integer 0 and loaded a file the reference library refuses."""
    import struct

    path = tmp_path / "x.safetensors"
    trained.to_safetensors(path)
    data = path.read_bytes()
    (length,) = struct.unpack_from("<Q", data)
    header = data[8:8 + length]
    assert header.count(b'"data_offsets":[0,') == 1
    header = header.replace(b'"data_offsets":[0,', b'"data_offsets":[-0,')
    path.write_bytes(struct.pack("<Q", len(header)) + header + data[8 + length:])
    with pytest.raises(bob.BadValue, match="-0"):
        bob.Checkpoint.from_safetensors(path)


def test_files_that_are_no_bob_export_are_refused(trained, tmp_path) -> None:
    path = tmp_path / "x.safetensors"
    tensors = {name: np.ascontiguousarray(t) for name, t in trained.tables.items()}
    path.write_bytes(_safetensors_file(tensors, None))  # a safetensors file, with no bob metadata
    with pytest.raises(bob.NotABobFile, match="not a bob checkpoint export"):
        bob.Checkpoint.from_safetensors(path)
    for fmt in FORMATS:
        other = tmp_path / f"junk.{fmt}"
        other.write_bytes(trained.to_bytes())  # a bob checkpoint, not an export
        with pytest.raises(bob.NotABobFile) as info:
            load(fmt, other)
        assert info.value.field == fmt
    pickled = tmp_path / "p.npz"
    with zipfile.ZipFile(pickled, "w") as z:  # an object array: NumPy would need pickle
        buf = io.BytesIO()
        np.lib.format.write_array(buf, np.array([{"a": 1}], dtype=object), allow_pickle=True)
        z.writestr("P.npy", buf.getvalue())
    with pytest.raises(bob.NotABobFile):
        bob.Checkpoint.from_npz(pickled)
    big = tmp_path / "big.npz"
    big.write_bytes(b"\0" * (interop.MAX_EXPORT_BYTES + 1))
    with pytest.raises(bob.Truncated) as too_big:
        bob.Checkpoint.from_npz(big)
    assert too_big.value.field == "file_size"
    with pytest.raises(FileNotFoundError):
        bob.Checkpoint.from_npz(tmp_path / "missing.npz")


def test_without_safetensors_the_error_names_the_extra(trained, tmp_path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "safetensors", None)
    monkeypatch.setitem(sys.modules, "safetensors.numpy", None)
    for call in (lambda: trained.to_safetensors(tmp_path / "x.safetensors"),
                 lambda: bob.Checkpoint.from_safetensors(tmp_path / "x.safetensors")):
        with pytest.raises(interop.MissingExtra, match=r"optional extra interop: .*scripts/bootstrap\.sh interop"):
            call()
    assert not (tmp_path / "x.safetensors").exists()
    trained.to_npz(tmp_path / "x.npz")  # .npz needs only NumPy
    assert bob.Checkpoint.from_npz(tmp_path / "x.npz") == trained


# --------------------------------------------------------------------------- #
# bob-inspect ckpt --export
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("fmt", FORMATS)
def test_inspect_exports_a_valid_checkpoint(cli, files, tmp_path, fmt) -> None:
    out = tmp_path / f"ck3.{fmt}"
    r = cli.json("checkpoint", str(files / "ck3.bin"), "--export", str(out))
    assert r["export"]["format"] == fmt and r["export"]["path"] == str(out) and r["ok"]
    assert r["export"]["size"] == out.stat().st_size
    assert load(fmt, out).to_bytes() == (files / "ck3.bin").read_bytes()
    assert f"exported to {out}" in cli.text("ckpt", str(files / "ck3.bin"), "--export", str(out))


def test_inspect_says_a_fresh_start_is_exported_as_the_fresh_state(cli, files, tmp_path) -> None:
    """A zero-byte checkpoint exported with no note comes back as a whole step-0 checkpoint, not as the
    zero bytes inspected, where the docs promised "the very same checkpoint"."""
    out = tmp_path / "fresh.npz"
    r = cli.json("checkpoint", str(files / "empty.bin"), "--export", str(out))
    assert r["ok"] and "the export holds the fresh state, step 0" in r["note"]
    assert load("npz", out) == bob.Checkpoint.fresh()


def test_inspect_does_not_export_a_checkpoint_with_problems(cli, files, tmp_path) -> None:
    out = tmp_path / "state.npz"
    r = cli.json("ckpt", str(files / "state.bin"), "--export", str(out), code=2)
    assert r["export"] is None and "no export" in r["note"] and not out.exists()


def test_inspect_refuses_an_export_it_cannot_make(cli, files, tmp_path, monkeypatch) -> None:
    ck = str(files / "ck3.bin")
    err = cli.run("ckpt", ck, "--export", str(tmp_path / "x.bin"), code=2).stderr.decode()
    assert "the format comes from the suffix: .safetensors or .npz" in err and "--export" in err
    monkeypatch.setitem(sys.modules, "safetensors", None)
    monkeypatch.setitem(sys.modules, "safetensors.numpy", None)
    err = cli.run("ckpt", ck, "--export", str(tmp_path / "x.safetensors"), code=2).stderr.decode()
    assert "optional extra interop" in err and "scripts/bootstrap.sh interop" in err
    assert not (tmp_path / "x.safetensors").exists()
    cli.run(ck, "--export", str(tmp_path / "x.npz"))  # the kind detected; .npz needs no extra
    assert bob.Checkpoint.from_npz(tmp_path / "x.npz").to_bytes() == (files / "ck3.bin").read_bytes()


# --------------------------------------------------------------------------- #
# bob.probabilities and bob.diff: the library's, what bob-inspect shows
# --------------------------------------------------------------------------- #


def test_probabilities_are_what_inspect_rows_shows(cli, files) -> None:
    ck = bob.read_checkpoint_file(files / "ck3.bin")
    rows = cli.json("ckpt", str(files / "ck3.bin"), "--rows", "ab")["rows"]
    for row in rows:
        prob = bob.probabilities(ck, row["context"])
        assert prob.dtype == np.float64 and prob.shape == (256,) and abs(prob.sum() - 1) < 1e-12
        for top in row["top"]:
            assert prob[top["next"]] == top["probability"]
        assert [t["next"] for t in row["top"]] == list(np.argsort(-prob, kind="stable")[:5])


def test_probabilities_are_the_softmax_to_within_one_ulp_at_the_extremes(trained) -> None:
    """Against a 60-digit decimal softmax: FLT_MAX beside -FLT_MAX (every other term
    underflows to 0), subnormals, a uniform row (exactly 1/256 each)."""
    from decimal import Decimal, localcontext

    ck = trained.copy()
    big, tiny = np.finfo(np.float32).max, np.float32(1e-45)
    ck.p_table[1] = 0.0
    ck.p_table[2, :2], ck.p_table[2, 2:] = (big, -big), tiny
    ck.p_table[3] = np.linspace(-88, 88, 256, dtype=np.float32)
    for context in (1, 2, 3, ord("a")):
        prob = bob.probabilities(ck, context)
        with localcontext(prec=60):
            x = [Decimal(float(v)) for v in ck.p_table[context]]
            e = [(v - max(x)).exp() for v in x]
            exact = [v / sum(e) for v in e]
        for got, want in zip(prob.tolist(), exact):
            assert abs(Decimal(got) - want) <= Decimal(float(np.spacing(float(want)))), (context, got, want)
    assert bob.probabilities(ck, 1).tolist() == [1 / 256] * 256
    assert bob.probabilities(ck, 2)[0] == 1.0 and bob.probabilities(ck, 2)[1] == 0.0


def test_probabilities_do_not_depend_on_the_callers_decimal_context(trained) -> None:
    """decimal's context is the thread's, and the caller's to set: its traps (Inexact, Underflow)
    never raise out of bob.probabilities, its exponent range and rounding never change a digit."""
    import decimal

    ck = trained.copy()
    big = np.finfo(np.float32).max
    ck.p_table[2, :2], ck.p_table[2, 2:] = (big, -big), 0.0  # every other term underflows
    ck.p_table[3] = np.linspace(-600, 0, 256, dtype=np.float32)  # terms down to e**-600
    contexts = (2, 3, ord("a"))
    want = [bob.probabilities(ck, c).tolist() for c in contexts]
    with decimal.localcontext() as ctx:
        ctx.traps[decimal.Inexact] = ctx.traps[decimal.Underflow] = ctx.traps[decimal.Rounded] = True
        ctx.prec, ctx.rounding, ctx.Emin, ctx.Emax = 3, decimal.ROUND_FLOOR, -99, 99
        assert [bob.probabilities(ck, c).tolist() for c in contexts] == want


@pytest.mark.parametrize("context", [-1, 256, 1.0, True, "a", None])
def test_probabilities_refuse_what_is_no_context_byte(trained, context) -> None:
    with pytest.raises(bob.BadValue) as info:
        bob.probabilities(trained, context)
    assert info.value.field == "context"


def test_a_non_finite_row_has_no_probabilities(trained) -> None:
    ck = trained.copy()
    ck.p_table[7, 9] = np.inf
    with pytest.raises(bob.StateRefused) as info:
        bob.probabilities(ck, 7)
    assert (info.value.field, info.value.index) == ("P", 7 * 256 + 9)
    assert bob.probabilities(ck, 8).shape == (256,)


ENVELOPE = {"command", "ok", "exit_code", "error"}


def test_diff_is_what_inspect_diff_json_prints(cli, files) -> None:
    for a, b in (("ck1.bin", "ck2.bin"), ("ck3.bin", "ck3.bin"), ("empty.bin", "one.bin"), ("two.bin", "state.bin")):
        shown = cli.json("diff", str(files / a), str(files / b), code=None)
        # the command's JSON is the report inside the envelope every command shares
        # (command, ok, exit_code, error: ok means exit 0, so "different" is not ok there)
        report = {k: v for k, v in shown.items() if k not in ENVELOPE}
        assert {k: v for k, v in bob.diff(files / a, files / b).items() if k not in ENVELOPE} == report
        assert {k: v for k, v in bob.diff(str(files / a), str(files / b)).items() if k not in ENVELOPE} == report
        assert set(shown) - set(report) == ENVELOPE


def test_a_diff_beside_a_signalling_nan_warns_of_nothing(cli, files, tmp_path, trained) -> None:
    """A signalling NaN in a plane is a difference like any other: widening it to float64 would
    raise the invalid flag, which NumPy prints on stderr; the largest difference is the finite one."""
    import warnings

    snan = np.frombuffer(struct.pack("<I", 0x7F800001), np.float32)[0]
    other = trained.copy()
    other.p_table[0, 1], other.p_table[0, 2] = snan, other.p_table[0, 2] + np.float32(1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        d = bob.diff(trained, other)
    assert d["planes"]["P"]["differing"] == 2 and d["planes"]["P"]["max_abs_diff"]["index"] == 2
    (tmp_path / "a.bin").write_bytes(trained.to_bytes())
    (tmp_path / "b.bin").write_bytes(other.to_bytes(for_resume=False))
    done = cli.run("diff", str(tmp_path / "a.bin"), str(tmp_path / "b.bin"), code=None)
    assert done.code == 2 and done.stderr == b"", done.stderr  # 2: a NaN in P is a problem of the file


def test_diff_of_checkpoints_and_bytes(files, trained) -> None:
    ck1, ck2 = (bob.read_checkpoint_file(files / n) for n in ("ck1.bin", "ck2.bin"))
    by_path = bob.diff(files / "ck1.bin", files / "ck2.bin")
    for a, b in ((ck1, ck2), (ck1.to_bytes(), ck2.to_bytes())):
        got = bob.diff(a, b)
        assert got["a"]["file"] is None and got["b"]["file"] is None
        for side in ("a", "b"):
            got[side]["file"] = by_path[side]["file"]
        assert got == by_path
    one = trained.copy()
    one.p_table[1, 2] = np.nextafter(one.p_table[1, 2], np.float32(np.inf))
    d = bob.diff(trained, one)
    assert d["planes"]["P"]["differing"] == 1 and d["planes"]["P"]["first"]["index"] == 258
    assert d["planes"]["P"]["first"]["ulp"] == 1 and d["planes"]["M"]["differing"] == 0
    bad = trained.copy()
    bad.v[0] = -1.0  # a diff shows a state bob refuses; it does not raise
    d = bob.diff(trained, bad)
    assert d["ok"] is False and d["b"]["problems"][0]["field"] == "V"
    with pytest.raises(FileNotFoundError):
        bob.diff(files / "ck1.bin", files / "missing.bin")
