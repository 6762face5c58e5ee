"""The power-loss checker: what a POSIX file system may leave of a run that lost power.

After ALICE (Pillai et al., OSDI 2014) and CrashMonkey: record a real ``bob-run``'s
(or a library writer's) file-system operations, build every state a crash may leave.

**Recording.** :class:`Recorder` wraps the ``os`` functions that change files (all
bob's writes use them) and logs each call under its directory as an operation on
*inodes* (a new file gets a fresh number: a reused inode number is not the old
file). Chosen over ``strace`` and an LD_PRELOAD shim: no tool the CI machine may
lack, exactly bob's calls in order, and in process, so the suite judges every state.

**Crash states.** For a crash after the first ``k`` operations, an operation
is *durable* when POSIX makes it so before the crash: a write or truncation
of a file once that file is fsynced; a directory entry (create, rename, link,
unlink) once its directory is fsynced (for a rename, both directories).
Every other operation of the prefix may or may not have reached the disk, in
any combination (POSIX orders none of them): each subset of them, applied in
program order, with the durable ones, is one crash state. A write is kept or
dropped whole. :func:`crash_states` yields them all, or a bounded sample.

**Judging.** :func:`check_states` materializes each state in a fresh directory and
holds it to bob's promise: the old checkpoint or the new one, whole; never a new
checkpoint beside the old predictions; only the new pair once the run said it
committed; the next ``bob-run`` exits 0, writes what ``bob.invoke`` computes from
what it found, and leaves nothing of the dead run. A run's whole space is a few dozen
states (tests/hostile/test_power_loss.py judges all; the ``run`` target's ``powerloss`` world a sample).
"""

from __future__ import annotations

import hashlib
import itertools
import os
import random
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from bob.fuzz.faults import patch_os, restore_os
from bob.fuzz.properties import quietly, require

__all__ = ["Op", "Recorder", "crash_states", "check_states", "record_run", "Scenario"]

_WRAPPED = ("open", "write", "pwrite", "ftruncate", "fsync", "replace", "rename", "link", "unlink", "close")
_ENTRY_OPS = ("create", "rename", "link", "unlink")


@dataclass(frozen=True)
class Op:
    """One file-system operation: ``kind`` with its inode (``node``), directory entries and data."""

    kind: str  # create, write, truncate, fsync, fsyncdir, rename, link, unlink
    node: int = -1  # the inode it acts on (a directory's for fsyncdir: -1)
    entry: tuple[str, str] = ("", "")  # (directory, name): created, unlinked, a rename's or link's source
    target: tuple[str, str] = ("", "")  # a rename's or link's destination
    offset: int = 0
    data: bytes = b""

    def directories(self) -> set[str]:
        return {d for d, _ in (self.entry, self.target) if d}


@dataclass
class Image:
    """A directory tree as a crash leaves it: entries naming inodes, inodes holding bytes."""

    entries: dict[tuple[str, str], int]
    nodes: dict[int, bytearray]
    links: dict[tuple[str, str], str] = field(default_factory=dict)  # symbolic links (never changed by bob)

    def copy(self) -> "Image":
        return Image(dict(self.entries), {k: bytearray(v) for k, v in self.nodes.items()}, dict(self.links))

    def apply(self, op: Op) -> None:
        if op.kind == "create":
            self.entries[op.entry] = op.node
            self.nodes.setdefault(op.node, bytearray())
        elif op.kind == "write":
            data = self.nodes.setdefault(op.node, bytearray())
            if len(data) < op.offset:
                data.extend(bytes(op.offset - len(data)))
            data[op.offset:op.offset + len(op.data)] = op.data
        elif op.kind == "truncate":
            data = self.nodes.setdefault(op.node, bytearray())
            del data[op.offset:]
            data.extend(bytes(op.offset - len(data)))
        elif op.kind in ("rename", "link"):
            self.nodes.setdefault(op.node, bytearray())  # its data, if none of it reached the disk: empty
            if op.kind == "rename" and self.entries.get(op.entry) == op.node:
                del self.entries[op.entry]
            self.entries[op.target] = op.node
        elif op.kind == "unlink" and self.entries.get(op.entry) == op.node:
            del self.entries[op.entry]

    def files(self, directory: str) -> dict[str, bytes]:
        return {name: bytes(self.nodes.get(node, b"")) for (d, name), node in self.entries.items() if d == directory}

    def read(self, directory: str, name: str) -> bytes | None:
        """The bytes at ``directory/name``, through symbolic links; None if nothing is there."""
        for _ in range(40):
            if (directory, name) in self.links:
                target = os.path.join(directory, self.links[(directory, name)])
                directory, name = os.path.split(os.path.normpath(target))
                continue
            node = self.entries.get((directory, name))
            return None if node is None else bytes(self.nodes.get(node, b""))
        return None

    def materialize(self, root: Path, old_root: str) -> None:
        """Write this image's tree under ``root`` (the recorded root ``old_root`` becomes ``root``)."""
        def where(directory: str) -> Path:
            return root / os.path.relpath(directory, old_root)

        for (directory, name), node in self.entries.items():
            where(directory).mkdir(parents=True, exist_ok=True)
            (where(directory) / name).write_bytes(bytes(self.nodes.get(node, b"")))
        for (directory, name), target in self.links.items():
            where(directory).mkdir(parents=True, exist_ok=True)
            (where(directory) / name).symlink_to(target)


def snapshot(root: Path) -> tuple[Image, dict[tuple[int, int], int]]:
    """The image of the tree under ``root`` now, and each file's (device, inode) → model inode."""
    image, inodes = Image({}, {}), {}  # type: tuple[Image, dict[tuple[int, int], int]]
    for directory, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(directory, name)
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                image.links[(directory, name)] = os.readlink(path)
            elif stat.S_ISREG(st.st_mode):
                node = inodes.setdefault((st.st_dev, st.st_ino), len(inodes))
                image.entries[(directory, name)] = node
                image.nodes[node] = bytearray(Path(path).read_bytes())
    return image, inodes


class Recorder:
    """``with Recorder(root) as r: …`` logs in ``r.ops`` every change bob makes under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root: str = os.path.realpath(root)
        self.image: Image
        self.image, self._inodes = snapshot(Path(self.root))
        self.ops: list[Op] = []
        self._fds: dict[int, tuple[int, str]] = {}  # descriptor → (model inode, or -1 for a directory; its path)
        self._real: dict[str, Callable[..., Any]] = {}

    def _inside(self, path: str) -> bool:
        return path == self.root or path.startswith(self.root + os.sep)

    def _entry(self, path: Any) -> tuple[str, str]:
        path = os.fsdecode(path)
        directory, name = os.path.split(os.path.abspath(path))
        directory = os.path.realpath(directory)
        return (directory, name) if self._inside(directory) else ("", "")

    def _node(self, st: os.stat_result, new: bool = False) -> int:
        key = (st.st_dev, st.st_ino)
        if new or key not in self._inodes:
            self._inodes[key] = max(self._inodes.values(), default=-1) + 1
        return self._inodes[key]

    def _wrap(self, name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return getattr(self, "_" + name)(real, *args, **kwargs)
        return wrapper

    def _open(self, real, path, flags, mode=0o777, *, dir_fd=None):
        entry = self._entry(path)
        existed = os.path.lexists(path) if entry[0] else True
        fd = real(path, flags, mode, dir_fd=dir_fd)
        if entry[0]:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                self._fds[fd] = (-1, os.path.realpath(path))
            elif stat.S_ISREG(st.st_mode):
                created = not existed and bool(flags & os.O_CREAT)
                node = self._node(st, new=created)
                self._fds[fd] = (node, entry[0])
                if created:
                    self.ops.append(Op("create", node, entry))
                elif flags & os.O_TRUNC:
                    self.ops.append(Op("truncate", node, offset=0))
        elif os.path.realpath(os.fsdecode(path)) == self.root:
            self._fds[fd] = (-1, self.root)
        return fd

    def _write(self, real, fd, data, *offset):
        at = offset[0] if offset else os.lseek(fd, 0, os.SEEK_CUR) if fd in self._fds else 0
        n = real(fd, data, *offset)
        if fd in self._fds:
            self.ops.append(Op("write", self._fds[fd][0], offset=at, data=bytes(memoryview(data).cast("B")[:n])))
        return n

    _pwrite = _write

    def _ftruncate(self, real, fd, length):
        real(fd, length)
        if fd in self._fds:
            self.ops.append(Op("truncate", self._fds[fd][0], offset=length))

    def _fsync(self, real, fd):
        real(fd)
        if fd in self._fds:
            node, where = self._fds[fd]
            self.ops.append(Op("fsync", node) if node >= 0 else Op("fsyncdir", entry=(where, "")))

    def _moved(self, real, kind, src, dst, **kwargs):
        source, target = self._entry(src), self._entry(dst)
        st = os.lstat(src) if source[0] and os.path.lexists(src) else None
        result = real(src, dst, **kwargs)
        if st is not None and stat.S_ISREG(st.st_mode) and target[0]:
            self.ops.append(Op(kind, self._node(st), source, target))
        return result

    def _replace(self, real, src, dst, **kwargs):
        return self._moved(real, "rename", src, dst, **kwargs)

    def _link(self, real, src, dst, **kwargs):
        return self._moved(real, "link", src, dst, **kwargs)

    _rename = _replace

    def _unlink(self, real, path, **kwargs):
        entry = self._entry(path)
        st = os.lstat(path) if entry[0] and os.path.lexists(path) else None
        real(path, **kwargs)
        if st is not None and stat.S_ISREG(st.st_mode):
            self.ops.append(Op("unlink", self._node(st), entry))

    def _close(self, real, fd):
        self._fds.pop(fd, None)
        return real(fd)

    def __enter__(self) -> "Recorder":
        self._real = patch_os(_WRAPPED, self._wrap)
        return self

    def __exit__(self, *exc: object) -> None:
        restore_os(self._real)


def durable_before(ops: list[Op], k: int) -> list[bool]:
    """Which of the first ``k`` operations POSIX has made durable by the time of a crash after them."""
    synced_nodes: set[int] = set()
    synced_dirs: set[str] = set()
    durable = [False] * k
    for i in range(k - 1, -1, -1):  # walk back: an fsync covers what came before it
        op = ops[i]
        if op.kind == "fsync":
            synced_nodes.add(op.node)
            durable[i] = True
        elif op.kind == "fsyncdir":
            synced_dirs.add(op.entry[0])
            durable[i] = True
        elif op.kind in _ENTRY_OPS:
            durable[i] = op.directories() <= synced_dirs
        else:
            durable[i] = op.node in synced_nodes
    return durable


def crash_states(image: Image, ops: list[Op], limit: int | None = None,
                 rng: random.Random | None = None) -> Iterator[tuple[int, tuple[int, ...], Image]]:
    """Every crash state ``(k, kept, image)``: a crash after ``k`` operations keeping the volatile ones
    ``kept`` (indices). With ``limit``, each prefix's two extremes (all kept, none) and ``rng``'s sample."""
    seen: set[bytes] = set()
    for k in range(len(ops) + 1):
        durable = durable_before(ops, k)
        volatile = [i for i in range(k) if not durable[i] and ops[i].kind not in ("fsync", "fsyncdir")]
        subsets: list[tuple[int, ...]] = [tuple(c) for r in range(len(volatile) + 1)
                                          for c in itertools.combinations(volatile, r)]
        if limit is not None and len(subsets) > 2:
            extremes = [tuple(volatile), ()]
            rest = [s for s in subsets if s not in extremes]
            (rng or random.Random(k)).shuffle(rest)
            subsets = extremes + rest[:max(0, limit - 2)]
        for kept in subsets:
            state = image.copy()
            keep = set(kept)
            for i in range(k):
                if durable[i] or i in keep:
                    state.apply(ops[i])
            # One judgment per tree and per what the run had said by then (only the whole run said anything).
            key = hashlib.sha256(repr((k == len(ops), sorted((e, hashlib.sha256(state.nodes.get(n, b"")).digest())
                                                             for e, n in state.entries.items()))).encode()).digest()
            if key not in seen:
                seen.add(key)
                yield k, kept, state


@dataclass
class Scenario:
    """A recorded run: the tree before it, its operations, and what it said."""

    root: str
    image: Image
    ops: list[Op]
    record: bytes
    old_checkpoint: bytes
    old_predictions: bytes | None
    new_checkpoint: bytes
    new_predictions: bytes
    checkpoint: str = "model.bob"
    predictions: str = "predictions.bin"


def _argv(directory: Path, sc: "Scenario") -> list[str]:
    return ["--json", "--input", str(directory / "input.bin"), "--checkpoint", str(directory / sc.checkpoint),
            "--predictions", str(directory / sc.predictions)]


def _listing(image: Image) -> dict[tuple[str, str], Any]:
    return {**{e: bytes(image.nodes.get(n, b"")) for e, n in image.entries.items()},
            **{e: ("link", t) for e, t in image.links.items()}}


def record_run(directory: Path, record: bytes, checkpoint: bytes, predictions: bytes | None, *,
               links: bool = False, writer: Callable[[list[str]], int] | None = None) -> Scenario:
    """Run ``bob-run`` (or ``writer``, given bob-run's arguments) once in ``directory`` with these files
    (``links``: symbolic links into ``targets/``), recording what it does; the run must succeed."""
    import bob
    from bob.run import main as run_main

    sc = Scenario("", Image({}, {}), [], record, checkpoint, predictions, b"", b"")
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "input.bin").write_bytes(record)
    home = directory / "targets" if links else directory
    home.mkdir(exist_ok=True)
    (home / sc.checkpoint).write_bytes(checkpoint)
    if predictions is not None:
        (home / sc.predictions).write_bytes(predictions)
    if links:
        for name in (sc.checkpoint, sc.predictions):
            (directory / name).symlink_to(f"targets/{name}")
    want = bob.invoke(record, checkpoint, threads=1)
    recorder = Recorder(directory)
    with recorder:
        rc, _out, err = quietly(writer or run_main, _argv(directory, sc))
    require(rc == 0, f"the recorded run exited {rc}: {err.strip()[-300:]}")
    sc.root, sc.image, sc.ops = recorder.root, recorder.image, recorder.ops
    sc.new_checkpoint, sc.new_predictions = want.checkpoint_bytes(), want.predictions_bytes()
    # The model is faithful: every operation applied gives the tree the run left.
    final = recorder.image.copy()
    for op in recorder.ops:
        final.apply(op)
    require(_listing(final) == _listing(snapshot(Path(recorder.root))[0]),
            "the recorded operations do not rebuild the tree the run left (the recorder missed a call)")
    return sc


def check_state(sc: Scenario, k: int, kept: tuple[int, ...], state: Image, scratch: Path) -> None:
    """One crash state held to bob's promise (see the module docstring)."""
    import bob
    from bob.run import main as run_main

    where = f"crash after {k} of {len(sc.ops)} operations, keeping {list(kept)} of the volatile ones"
    ck, pred = state.read(sc.root, sc.checkpoint), state.read(sc.root, sc.predictions)
    require(ck in (sc.old_checkpoint, sc.new_checkpoint),
            f"{where}: the checkpoint is neither the old nor the new one "
            f"({'missing' if ck is None else f'{len(ck)} bytes'})")
    committed = ck == sc.new_checkpoint and sc.new_checkpoint != sc.old_checkpoint
    if committed:
        require(pred == sc.new_predictions, f"{where}: the new checkpoint beside other predictions")
    else:
        require(pred in (sc.old_predictions, sc.new_predictions),
                f"{where}: the predictions are neither the old nor the new ones")
    if k == len(sc.ops):
        require(committed, f"{where}: bob-run said it committed, but after a power loss the old checkpoint is back")
    # The next bob-run resumes from what it finds and leaves nothing of the dead run.
    if scratch.exists():
        shutil.rmtree(scratch)
    state.materialize(scratch, sc.root)
    (scratch / "input.bin").write_bytes(sc.record)
    want = bob.invoke(sc.record, ck or b"", threads=1)
    rc, out, err = quietly(run_main, _argv(scratch, sc))
    require(rc == 0, f"{where}: the next bob-run exited {rc}: {err.strip()[-300:]}")
    require((scratch / sc.checkpoint).read_bytes() == want.checkpoint_bytes()
            and (scratch / sc.predictions).read_bytes() == want.predictions_bytes(),
            f"{where}: the next bob-run did not write what bob.invoke computes from the checkpoint it found")
    left = sorted(str(p.relative_to(scratch)) for p in scratch.rglob("*") if not p.is_dir()
                  and p.name not in ("input.bin", sc.checkpoint, sc.predictions))
    require(not left, f"{where}: after the next bob-run these are left: {left}")


def check_states(sc: Scenario, scratch: Path, limit: int | None = None, seed: int = 0,
                 sample: int | None = None) -> int:
    """Judge every crash state of ``sc`` (or ``limit`` per prefix; or, with ``sample``, the states
    after the whole run and ``sample`` others drawn by ``seed``: the fuzzer's); return how many."""
    states = list(crash_states(sc.image, sc.ops, limit, random.Random(seed)))
    if sample is not None:
        rest = [s for s in states if s[0] < len(sc.ops)]
        states = [s for s in states if s[0] == len(sc.ops)] + random.Random(seed).sample(rest, min(sample, len(rest)))
    for k, kept, state in states:
        check_state(sc, k, kept, state, scratch)
    return len(states)
