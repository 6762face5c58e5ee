"""Arrays in the shapes users hold: a plane flat or as its (256, 256) table,
from NumPy, the buffer protocol, ``__array__`` or ``__dlpack__`` (torch
tensors), in ``Checkpoint`` and in ``bob.core``; the (256, 256) views; the
refusals by name."""

from __future__ import annotations

import array

import numpy as np
import pytest

import bob
import bob.core

CORPUS = b"abracadabra"
CONTEXTS = bytes(CORPUS[k % 11] for k in range(256))
TARGETS = bytes(CORPUS[(k + 1) % 11] for k in range(256))


class DLPackOnly:
    """An array of another library that offers DLPack and nothing else (no
    buffer, no __array__), as CuPy and JAX arrays do on the way out."""

    def __init__(self, a: np.ndarray) -> None:
        self._a = a

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


class ArrayOnly:
    """An object NumPy reads through __array__ alone."""

    def __init__(self, a: np.ndarray) -> None:
        self._a = a

    def __array__(self, dtype=None, copy=None):
        return self._a


class OnAnotherDevice:
    """A tensor that refuses to be exported to the CPU (a GPU tensor's answer)."""

    def __dlpack__(self, **kwargs):
        raise BufferError("the tensor is on cuda:0")

    def __dlpack_device__(self):
        return (2, 0)


@pytest.fixture(scope="module")
def trained() -> bob.Checkpoint:
    record = bob.build_input(CORPUS, [b"abra", b"cad", b""])
    return bob.invoke(record).checkpoint


def test_tables_are_writable_views_context_by_next(trained) -> None:
    ck = trained.copy()
    for name, table in ck.tables.items():
        plane = ck.planes[name]
        assert table.shape == (256, 256) and table.dtype == np.dtype("<f4") == np.float32
        assert table.flags.c_contiguous and table.flags.writeable
        assert np.shares_memory(table, plane)
        assert table[97, 98] == plane[97 * 256 + 98]
    ck.p_table[97, 98] = 1.5  # written through to the plane, and so to the file
    assert ck.p[97 * 256 + 98] == 1.5
    assert bob.load_checkpoint(ck.to_bytes()).p_table[97, 98] == 1.5
    assert ck.m_table is not ck.m_table and np.shares_memory(ck.m_table, ck.m)


def test_a_loaded_checkpoint_s_tables_are_writable_too(trained) -> None:
    loaded = bob.load_checkpoint(trained.to_bytes())
    assert all(t.flags.writeable for t in loaded.tables.values())


def test_a_plane_reassigned_is_still_seen_through_its_table(trained) -> None:
    ck = trained.copy()
    ck.v = ck.v_table.tolist()  # a nested list: converted when next looked at
    assert ck.v_table.shape == (256, 256) and isinstance(ck.v, np.ndarray)
    assert np.shares_memory(ck.v_table, ck.v) and ck == trained
    ck.p, ck.m = trained.p_table.copy(), trained.m.tolist()  # flat, as planes says (it gave them as assigned)
    assert all(p.shape == (65536,) and p.dtype == np.float32 for p in ck.planes.values()) and ck.planes["M"] is ck.m
    assert ck == trained


def test_a_checkpoint_takes_planes_flat_or_as_tables_and_shares_them(trained) -> None:
    tables = [trained.p_table.copy(), trained.m_table.copy(), trained.v_table.copy()]
    ck = bob.Checkpoint(trained.step, *tables)
    assert ck == trained and ck.to_bytes() == trained.to_bytes()
    assert all(a.shape == (65536,) for a in (ck.p, ck.m, ck.v))
    assert all(np.shares_memory(a, t) for a, t in zip((ck.p, ck.m, ck.v), tables))
    tables[0][0, 0] = 7.0  # the caller's array is the checkpoint's plane
    assert ck.p[0] == 7.0


def test_other_dtypes_byte_orders_and_read_only_arrays_are_converted(trained) -> None:
    big = trained.p_table.astype(">f4")
    wide = trained.m.astype(np.float64).reshape(256, 256)
    frozen = np.frombuffer(trained.v.tobytes(), np.float32)
    assert not frozen.flags.writeable
    ck = bob.Checkpoint(trained.step, big, wide, frozen)
    assert ck == trained
    assert all(a.flags.writeable and a.dtype == np.float32 for a in (ck.p, ck.m, ck.v))
    assert not np.shares_memory(ck.v, frozen)


def test_a_misaligned_plane_is_converted_so_the_core_can_train_it(trained) -> None:
    # A float32 view one byte into a buffer: the core reads planes in place and refuses it, so
    # the checkpoint takes its own aligned copy, as of a strided view.
    misaligned = np.frombuffer(bytearray(4 * 65536 + 4), np.uint8)[1:1 + 4 * 65536].view(np.float32)
    misaligned[:] = trained.p
    assert not misaligned.flags.aligned
    ck = bob.Checkpoint(trained.step, misaligned, trained.m.copy(), trained.v.copy())
    assert ck.p.flags.aligned and not np.shares_memory(ck.p, misaligned) and ck == trained
    record = bob.build_input(CORPUS, [b"abra", b"cad", b""])
    assert bob.invoke(record, ck).checkpoint == bob.invoke(record, trained).checkpoint


def test_buffers_and_foreign_arrays_are_taken(trained) -> None:
    p = array.array("f", trained.p.tobytes())
    m = DLPackOnly(trained.m_table.copy())
    v = ArrayOnly(trained.v.copy())
    ck = bob.Checkpoint(trained.step, p, m, v)
    assert ck == trained
    assert np.shares_memory(ck.m, m._a) and np.shares_memory(ck.v, v._a)  # zero-copy, as for NumPy
    assert bob.Checkpoint(trained.step, memoryview(p), trained.m, trained.v) == trained


def test_ndarray_subclasses_become_base_class_arrays_and_masks_are_refused(trained, tmp_path) -> None:
    """D22: np.matrix and np.memmap planes are converted into new base-class arrays (never shared);
    a masked array is refused naming the plane."""
    matrix = np.asmatrix(trained.p_table.copy())
    mapped = np.memmap(tmp_path / "m.f32", dtype=np.float32, mode="w+", shape=(65536,))
    mapped[:] = trained.m
    ck = bob.Checkpoint(trained.step, matrix, mapped, trained.v.copy())
    assert ck == trained and ck.to_bytes() == trained.to_bytes()
    for plane, given in ((ck.p, matrix), (ck.m, mapped)):
        assert type(plane) is np.ndarray and plane.shape == (65536,) and not np.shares_memory(plane, given)
    assert ck.p_table.shape == (256, 256) and ck.tables["M"].shape == (256, 256)  # the table views work
    ck.p = np.asmatrix(trained.p_table.copy())  # reassigned: converted when next seen
    assert type(ck.p_table) is np.ndarray and type(ck.p) is np.ndarray
    with pytest.raises(bob.BadValue) as flat:
        bob.Checkpoint(trained.step, np.asmatrix(trained.p.copy()), trained.m, trained.v)  # a (1, 65536) matrix
    assert flat.value.field == "P" and flat.value.actual == "shape (1, 65536)"
    for mask in (False, np.zeros(65536, bool)):
        with pytest.raises(bob.BadValue) as masked:
            bob.Checkpoint(trained.step, trained.p, trained.m, np.ma.array(trained.v.copy(), mask=mask))
        assert masked.value.field == "V" and "masked array" in str(masked.value)


def test_a_checkpoint_equals_another_as_their_bytes_do_whatever_its_planes_were_reassigned(trained) -> None:
    same = trained.copy()
    for plane in (trained.p_table.copy(), trained.p.astype(np.float64), trained.p.tolist()):
        same.p = plane
        assert same == trained and same.to_bytes() == trained.to_bytes()
    same.p = trained.p[:-1].copy()
    with pytest.raises(bob.BadValue, match="^P"):
        _ = same == trained
    with pytest.raises(bob.BadValue, match=r"^contract: a bob.Contract \(got str 'v1'\)"):
        bob.Checkpoint(0, trained.p, trained.m, trained.v, contract="v1")  # type: ignore[arg-type]


@pytest.mark.parametrize("shape", [(256, 255), (1, 65536), (65536, 1), (128, 512), (256, 256, 1)])
def test_other_shapes_are_refused_naming_the_plane(trained, shape) -> None:
    for i, name in enumerate("PMV"):
        planes = [trained.p, trained.m, trained.v]
        planes[i] = np.zeros(shape, np.float32)
        with pytest.raises(bob.BadValue) as info:
            bob.Checkpoint(trained.step, *planes)
        assert info.value.field == name and info.value.actual == f"shape {shape}"
        assert info.value.expected == "shape (65536,) or (256, 256)"


@pytest.mark.parametrize("given, said", [(b"\x00" * 4, "bytes b'\\x00\\x00\\x00\\x00'"), (None, "NoneType None"),
                                         (3.5, "float 3.5")])
def test_a_plane_given_as_no_array_is_said_as_what_it_is(trained, given, said) -> None:
    """bytes, None or a number were refused as "got shape ()", the shape NumPy gives what is not a sequence."""
    with pytest.raises(bob.BadValue) as info:
        bob.Checkpoint(trained.step, trained.p, given, trained.v)
    assert info.value.field == "M" and info.value.actual == said, info.value


def test_a_foreign_array_that_cannot_be_read_is_refused_naming_the_plane(trained) -> None:
    with pytest.raises(bob.BadValue) as info:
        bob.Checkpoint(trained.step, trained.p, OnAnotherDevice(), trained.v)
    assert info.value.field == "M"
    assert "the tensor is on cuda:0" in str(info.value) and str(info.value).startswith("M: a plane is 65536")
    with pytest.raises(TypeError, match=r"^m: .*the tensor is on cuda:0"):
        bob.core.train(trained.p.copy(), OnAnotherDevice(), trained.v.copy(), CONTEXTS, TARGETS, 10)


def test_core_takes_tables_and_foreign_arrays_and_trains_them_in_place(trained) -> None:
    want = [a.copy() for a in (trained.p, trained.m, trained.v)]
    want_losses = bob.core.train(*want, CONTEXTS, TARGETS, trained.step)
    p, m, v = trained.p_table.copy(), trained.m_table.copy(), trained.v.copy()
    contexts = DLPackOnly(np.frombuffer(CONTEXTS, np.uint8).copy())
    targets = ArrayOnly(np.frombuffer(TARGETS, np.uint8).copy())
    losses = bob.core.train(p, DLPackOnly(m), ArrayOnly(v), contexts, targets, trained.step)
    assert losses == want_losses
    for got, expected in zip((p, m, v), want):
        assert np.array_equal(got.reshape(-1).view(np.uint32), expected.view(np.uint32))
    assert bob.core.predict(DLPackOnly(p), [97]) == bob.core.predict(want[0], [97])
    assert bob.core.resume_problem(DLPackOnly(p), m, ArrayOnly(v), trained.step + 10) is None


class CopyEachTime:
    """An object whose __array__ gives a new copy at each call (an h5py dataset reads one so)."""

    def __init__(self, a: np.ndarray) -> None:
        self._a = a

    def __array__(self, dtype=None, copy=None):
        return self._a.copy()


def test_core_refuses_to_train_what_it_could_not_train_in_place(trained) -> None:
    """The core trains in place: a copy it would train (the caller's object unchanged, the training lost)
    and a masked array (the mask ignored) are refused naming the plane; reading a copy is fine."""
    p, m, v = (a.copy() for a in (trained.p, trained.m, trained.v))
    with pytest.raises(TypeError, match=r"^m: .*__array__ gives a new copy each time, and bob would train the copy"):
        bob.core.train(p, CopyEachTime(m), v, CONTEXTS, TARGETS, trained.step)
    with pytest.raises(TypeError, match=r"^p: .*gives a new copy"):
        bob.core.initialize(CopyEachTime(p))
    with pytest.raises(TypeError, match=r"^into: .*gives a new copy"):
        bob.core.resume_problem(p, m, v, trained.step, into=CopyEachTime(np.zeros(3 * p.size, np.float32)))
    masked = np.ma.masked_array(p, mask=np.arange(p.size) % 2 == 0)
    for call in (lambda: bob.core.train(masked, m, v, CONTEXTS, TARGETS, trained.step),
                 lambda: bob.core.predict(masked, [97])):
        with pytest.raises(TypeError, match=r"^p is a masked array; the core reads every value"):
            call()
    assert [a.tobytes() for a in (p, m, v)] == [a.tobytes() for a in (trained.p, trained.m, trained.v)]
    assert bob.core.predict(CopyEachTime(p), [97]) == bob.core.predict(p, [97])
    assert bob.core.resume_problem(CopyEachTime(p), m, v, trained.step) is None


def test_core_refuses_foreign_pairs_that_are_not_bytes_by_name(trained) -> None:
    p, m, v = (a.copy() for a in (trained.p, trained.m, trained.v))
    with pytest.raises(TypeError, match="contexts must hold integers"):
        bob.core.train(p, m, v, ArrayOnly(np.full(256, 97.5)), TARGETS, 10)
    with pytest.raises(bob.core.CoreError, match=r"targets\[3\] = -1 is not a byte value"):
        bob.core.train(p, m, v, CONTEXTS, DLPackOnly(np.array([97, 98, 99, -1] + [97] * 252)), 10)


def test_core_takes_a_list_of_numpy_integers_as_every_door_takes_them(trained) -> None:
    """A list of np.uint8 (iterating an array gives them) was "must be an integer"; bools and floats still are not."""
    planes = [[a.copy() for a in (trained.p, trained.m, trained.v)] for _ in range(2)]
    listed = [np.uint8(c) for c in CONTEXTS]
    assert bob.core.train(*planes[0], listed, TARGETS, 10) == bob.core.train(*planes[1], CONTEXTS, TARGETS, 10)
    assert all(np.array_equal(a, b) for a, b in zip(*planes))
    for bad, said in ((np.True_, "bool"), (97.0, "float"), (np.float32(97), "float32")):
        with pytest.raises(TypeError, match=rf"^contexts\[0\] must be an integer \(a byte value\); got {said}"):
            bob.core.train(*planes[0], [bad] + listed[1:], TARGETS, 10)


# --------------------------------------------------------------------------- #
# torch, where it is installed (CI need not have it)
# --------------------------------------------------------------------------- #


def test_torch_tensors_in_checkpoint_and_core(trained) -> None:
    torch = pytest.importorskip("torch")
    tables = [torch.from_numpy(t.copy()) for t in (trained.p_table, trained.m_table, trained.v_table)]
    ck = bob.Checkpoint(trained.step, *tables)
    assert ck == trained
    assert all(np.shares_memory(a, t.numpy()) for a, t in zip((ck.p, ck.m, ck.v), tables))
    back = torch.from_numpy(ck.p_table)  # and out again, zero-copy
    assert back.shape == (256, 256) and back.dtype == torch.float32

    want = [a.copy() for a in (trained.p, trained.m, trained.v)]
    want_losses = bob.core.train(*want, CONTEXTS, TARGETS, trained.step)
    contexts = torch.tensor(list(CONTEXTS), dtype=torch.uint8)
    targets = torch.tensor(list(TARGETS), dtype=torch.int64)
    losses = bob.core.train(*tables, contexts, targets, trained.step)
    assert losses == want_losses
    assert torch.equal(tables[0].reshape(-1), torch.from_numpy(want[0]))  # trained in place


def test_a_tensor_that_requires_grad_is_refused_by_name(trained) -> None:
    torch = pytest.importorskip("torch")
    p = torch.from_numpy(trained.p.copy()).requires_grad_()
    with pytest.raises(bob.BadValue) as info:
        bob.Checkpoint(trained.step, p, trained.m, trained.v)
    assert info.value.field == "P" and "grad" in str(info.value)
    with pytest.raises(TypeError, match="^p: .*grad"):
        bob.core.train(p, trained.m.copy(), trained.v.copy(), CONTEXTS, TARGETS, trained.step)
