"""The oracle's view of an interop export (python/bob/fuzz/oracle_interop.py), held to
bob's documented rules on hand-made cases, independently of bob's reader."""

from __future__ import annotations

import contextlib
import io
import json
import zipfile

import pytest

import bob
from bob import interop
from bob.formats.checkpoint.header import header_length
from bob.formats.contract import V1
from bob.fuzz import oracle_interop


@pytest.fixture(scope="module")
def trained() -> bob.Checkpoint:
    return bob.invoke(bob.build_input(b"abracadabra", [b"abra", b"cad", b""])).checkpoint


def test_the_oracle_s_header_length_is_the_contract_s() -> None:
    assert oracle_interop.HEADER_END == header_length(V1)


def test_the_oracle_accepts_what_bob_exports(trained) -> None:
    assert oracle_interop.check_npz(interop.npz_bytes(trained)) is None
    assert oracle_interop.check_safetensors(interop.safetensors_bytes(trained)) is None
    fresh = bob.Checkpoint.fresh()
    assert oracle_interop.check_export("npz", interop.npz_bytes(fresh)) is None


def _npz(trained, **changes) -> bytes:
    meta = interop.metadata(trained)
    meta.update(changes)
    out = io.BytesIO()
    import numpy as np

    np.savez(out, **{k: np.ascontiguousarray(t) for k, t in trained.tables.items()}, bob=np.array(json.dumps(meta)))
    return out.getvalue()


@pytest.mark.parametrize("changes", [{"step": "020"}, {"step": str(2 ** 64)}, {"header_bytes": "100"},
                                     {"header_bytes": "384"}, {"version": "3"}, {"extra": "x"},
                                     {"contract.seed": V1.seed.hex().upper()}])
def test_the_oracle_refuses_metadata_bob_must_refuse(trained, changes) -> None:
    assert oracle_interop.check_npz(_npz(trained, **changes)) is not None
    assert oracle_interop.check_npz(_npz(trained, header_bytes="512")) is None


def test_the_oracle_judges_the_state_only_for_resuming(trained) -> None:
    data = _npz(trained, step=str(2 ** 64 - 1))  # no room for one more invocation
    assert oracle_interop.check_npz(data) is not None and oracle_interop.check_npz(data, for_resume=False) is None


def test_the_oracle_refuses_a_member_twice_and_an_unknown_one(trained) -> None:
    data = interop.npz_bytes(trained)
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        members = [(i.filename, z.read(i)) for i in z.infolist()]
    for extra in (("P.npy", members[0][1]), ("notes.txt", b"hi")):
        out = io.BytesIO()
        with pytest.warns(UserWarning) if extra[0] == "P.npy" else contextlib.nullcontext(), \
                zipfile.ZipFile(out, "w") as z:
            for name, member in members + [extra]:
                z.writestr(name, member)
        assert oracle_interop.check_npz(out.getvalue()) is not None



def test_the_oracle_refuses_a_minus_zero_as_the_safetensors_library_does(trained) -> None:
    """JSON's -0 is a float to serde: the library, and bob, refuse it where a whole number stands."""
    data = interop.safetensors_bytes(trained)
    length = int.from_bytes(data[:8], "little")
    header = data[8:8 + length].replace(b'"data_offsets":[0,', b'"data_offsets":[-0,')
    assert header != data[8:8 + length]
    minus_zero = len(header).to_bytes(8, "little") + header + data[8 + length:]
    with pytest.raises(bob.BadValue):
        interop.from_safetensors_bytes(minus_zero, bob.Checkpoint)
    assert oracle_interop.check_safetensors(minus_zero) is not None
    assert oracle_interop.check_safetensors(minus_zero, for_resume=False) is not None
