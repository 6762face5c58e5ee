"""The power-loss checker (docs/fuzzing.md, "Power loss"; after ALICE, Pillai et al., OSDI 2014, and CrashMonkey).

:class:`Recorder` gives a new file a fresh inode number (a reused one is not the old file); it wraps ``os`` rather
than use ``strace`` or an LD_PRELOAD shim: no tool the CI machine may lack, exactly bob's calls in order, and in
process. :func:`crash_states` keeps or drops each write whole.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import os
import random
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from bob.fuzz.faults import ENTRY_CALLS, OsPatch
from bob.fuzz.properties import invoked, quietly, require
from bob.lock import LOCK_TAG, lock_path_for
from bob.refusals import EXIT_BUSY

__all__ = ["Op", "Recorder", "crash_states", "check_states", "record_run", "Scenario"]

_ENTRY_OPS, _DATA_OPS = ("create", "rename", "link", "unlink"), ("write", "truncate")
_CHECKPOINT, _PREDICTIONS, _TRACE = "model.bob", "predictions.bin", "traces/run.trace"  # (its own directory)
_HOMES = {_CHECKPOINT: "targets", _PREDICTIONS: "outputs", _TRACE: "traces"}  # with links: each target's directory
_invoked = functools.lru_cache(maxsize=4)(invoked)  # a scenario's states hold two or three checkpoints: each once


@dataclass(frozen=True)
class Op:
    """One file-system operation: ``kind`` with its inode (``node``), directory entries and data."""

    kind: str  # create, write, truncate, fsync, fsyncdir, rename, link, unlink
    node: int = -1  # the inode it acts on (a directory's for fsyncdir: -1)
    entry: tuple[str, str] = ("", "")  # (directory, name): created, unlinked, a rename's or link's source
    target: tuple[str, str] = ("", "")  # a rename's or link's destination
    offset: int = 0
    data: bytes = b""


@dataclass
class Image:
    """A directory tree as a crash leaves it: entries naming inodes, inodes holding bytes."""

    entries: dict[tuple[str, str], int]
    nodes: dict[int, bytearray]
    links: dict[tuple[str, str], str] = field(default_factory=dict)  # symbolic links (never changed by bob)

    def copy(self) -> "Image":
        return Image(dict(self.entries), {k: bytearray(v) for k, v in self.nodes.items()}, dict(self.links))

    def apply(self, op: Op) -> None:
        data = self.nodes.setdefault(op.node, bytearray())  # a renamed inode none of whose data reached the disk: empty
        if op.kind in _DATA_OPS:  # zeros up to the offset; a truncation (its data empty) drops all past it
            data.extend(bytes(max(0, op.offset - len(data))))
            data[op.offset:None if op.kind == "truncate" else op.offset + len(op.data)] = op.data
        if op.kind in ("rename", "unlink") and self.entries.get(op.entry) == op.node:
            del self.entries[op.entry]
        if op.kind in ("create", "rename", "link"):
            self.entries[op.entry if op.kind == "create" else op.target] = op.node

    def listing(self) -> dict[tuple[str, str], Any]:
        """Each entry's bytes, or ``("link", target)`` for a symbolic link."""
        return {**{e: bytes(self.nodes.get(n, b"")) for e, n in self.entries.items()},
                **{e: ("link", t) for e, t in self.links.items()}}

    def read(self, directory: str, name: str) -> bytes | None:
        """The bytes at ``directory/name``, through symbolic links; None if nothing is there."""
        path = os.path.join(directory, name)  # (a name may hold a directory)
        for _ in range(40):
            if (entry := os.path.split(path)) not in self.links:
                return None if (node := self.entries.get(entry)) is None else bytes(self.nodes.get(node, b""))
            path = os.path.normpath(os.path.join(entry[0], self.links[entry]))
        return None

    def materialize(self, root: Path, old_root: str) -> None:
        """Write this image's tree under ``root`` (the recorded root ``old_root`` becomes ``root``); the entries
        of one inode as hard links of one file (a dead run's backup link is a second name of its file)."""
        written: dict[int, Path] = {}
        for (directory, name), node in [*self.entries.items(), *self.links.items()]:
            path = root / os.path.relpath(directory, old_root) / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if not isinstance(node, int):
                path.symlink_to(str(node))
            elif node in written:
                os.link(written[node], path)
            else:
                path.write_bytes(bytes(self.nodes.get(node, b"")))
                written[node] = path


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


class Recorder(OsPatch):
    """``with Recorder(root) as r: …`` logs in ``r.ops`` every change bob makes under ``root``."""

    names: tuple[str, ...] = ("open", "write", "pwrite", "ftruncate", "fsync", *ENTRY_CALLS, "close")

    def __init__(self, root: Path) -> None:
        self.root: str = os.path.realpath(root)
        self.image: Image
        self.image, self._inodes = snapshot(Path(self.root))
        self.ops: list[Op] = []
        self._fds: dict[int, tuple[int, str]] = {}  # descriptor → (model inode, or -1 for a directory; its path)

    def wrap(self, name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        """Each call's record: by its path (open; a directory entry's) or by its descriptor (the others)."""
        record = self._open if name == "open" else self._entry_call if name in ENTRY_CALLS else self._fd_call
        return functools.partial(record, real, {"replace": "rename", "pwrite": "write"}.get(name, name))

    def _path(self, path: Any, dir_fd: int | None) -> str:
        """A path as given, or as named in a watched directory's descriptor (a commit's), made absolute."""
        return os.path.abspath(os.path.join(self._fds[dir_fd][1] if dir_fd in self._fds else "", os.fsdecode(path)))

    def _entry(self, path: str) -> tuple[str, str]:
        directory, name = os.path.split(path)
        directory = os.path.realpath(directory)
        return (directory, name) if directory == self.root or directory.startswith(self.root + os.sep) else ("", "")

    def _node(self, st: os.stat_result, new: bool = False) -> int:
        key = (st.st_dev, st.st_ino)
        if new or key not in self._inodes:
            self._inodes[key] = max(self._inodes.values(), default=-1) + 1
        return self._inodes[key]

    def _open(self, real, _kind, path, flags, mode=0o777, *, dir_fd=None):
        entry = self._entry(full := self._path(path, dir_fd))
        existed = os.path.lexists(full) if entry[0] else True
        fd = real(path, flags, mode, dir_fd=dir_fd)
        if entry[0] or os.path.realpath(full) == self.root:  # (the root's entry is outside it)
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                self._fds[fd] = (-1, os.path.realpath(full))
            elif stat.S_ISREG(st.st_mode):
                created = not existed and bool(flags & os.O_CREAT)
                node = self._node(st, new=created)
                self._fds[fd] = (node, entry[0])
                if created:
                    self.ops.append(Op("create", node, entry))
                elif flags & os.O_TRUNC:
                    self.ops.append(Op("truncate", node, offset=0))
        return fd

    def _fd_call(self, real, kind, fd, *args):
        """write (and pwrite), ftruncate, fsync of a watched descriptor: an operation on its inode; close."""
        known = self._fds.pop(fd, None) if kind == "close" else self._fds.get(fd)
        at = (args[1] if len(args) > 1 else os.lseek(fd, 0, os.SEEK_CUR)) if known and kind == "write" else 0
        result = real(fd, *args)
        if known is not None and kind != "close":
            node, where = known
            self.ops.append(Op("write", node, offset=at, data=bytes(memoryview(args[0]).cast("B")[:result]))
                            if kind == "write" else Op("truncate", node, offset=args[0]) if kind == "ftruncate"
                            else Op("fsync", node) if node >= 0 else Op("fsyncdir", entry=(where, "")))
        return result

    def _entry_call(self, real, kind, src, *dst, **kwargs):
        """rename (and replace), link, unlink of a regular file under the root."""
        at = kwargs.get("src_dir_fd", kwargs.get("dir_fd"))
        source = self._entry(self._path(src, at))
        target = self._entry(self._path(dst[0], kwargs.get("dst_dir_fd"))) if dst else ("", "")
        try:
            st = os.stat(src, dir_fd=at, follow_symlinks=False) if source[0] else None
        except FileNotFoundError:
            st = None
        result = real(src, *dst, **kwargs)
        if st is not None and stat.S_ISREG(st.st_mode) and (target[0] or not dst):
            self.ops.append(Op(kind, self._node(st), source, target))
        return result


def durable_before(ops: list[Op], k: int) -> list[bool]:
    """Which of the first ``k`` operations POSIX has made durable by the time of a crash after them: a write or
    truncation once its file is fsynced; a directory entry once its directory is (for a rename, both)."""
    synced, durable = set(), []  # type: set[int | str], list[bool]  # (the inodes and directories fsynced)
    for op in reversed(ops[:k]):  # walk back: an fsync covers what came before it
        if op.kind in ("fsync", "fsyncdir"):
            synced.add(op.node if op.kind == "fsync" else op.entry[0])
        durable.append(op.node in synced if op.kind in (*_DATA_OPS, "fsync")
                       else {d for d, _ in (op.entry, op.target) if d} <= synced)
    return durable[::-1]


def crash_states(image: Image, ops: list[Op]) -> Iterator[tuple[int, tuple[int, ...], Image]]:
    """Every crash state ``(k, kept, image)``: a crash after ``k`` operations keeping the volatile ones
    ``kept`` (indices), judged once as docs/fuzzing.md's "Power loss" says, at the first ``k`` that leaves it."""
    seen, states = set(), set()  # type: set[tuple[bool, frozenset]], set[tuple[Any, ...]]

    @functools.cache  # what these operations leave (the entries; or ``node``'s bytes, with their digest): each once
    def after(done: tuple[int, ...], node: int = -1) -> tuple[Image, bytes]:
        one = Image(dict(image.entries), {node: bytearray(image.nodes.get(node, b""))})
        for i in done:
            one.apply(ops[i])
        return one, hashlib.sha256(one.nodes[node]).digest()

    for k in range(len(ops) + 1):
        if 0 < k < len(ops) and ops[k - 1].kind in ("fsync", "fsyncdir"):  # a sync changes no file: its states
            continue  # were left before it
        said, durable = k == len(ops), durable_before(ops, k)  # (said: only the whole run said anything)
        newest = () if said or not k or durable[k - 1] else (k - 1,)  # a state without it was left before it
        volatile = [i for i in range(k) if not durable[i] and (i,) != newest]
        subsets = (itertools.combinations(volatile, r) for r in range(len(volatile) + 1))
        for kept in itertools.chain.from_iterable(subsets):
            kept += newest
            applied, writes = [], {}  # type: list[int], dict[int, list[int]]
            for i in sorted(itertools.chain(itertools.compress(range(k), durable), kept)):  # (in order)
                if ops[i].kind in _ENTRY_OPS:
                    applied.append(i)
                elif ops[i].kind in _DATA_OPS:
                    writes.setdefault(ops[i].node, []).append(i)
            named = after(tuple(applied))[0].entries
            nodes = sorted(set(named.values()))
            state = (said, tuple(applied), *((n, *writes.get(n, ())) for n in nodes))  # told apart before it is built
            if state in states:
                continue
            states.add(state)
            held = {n: after(tuple(writes.get(n, ())), n) for n in nodes}
            files = {e: (e[1].endswith(LOCK_TAG), held[n][1]) for e, n in named.items()}
            keys = {(said, frozenset((e, None if lock else digest) for e, (lock, digest) in files.items())),
                    (said, frozenset((e, digest) for e, (lock, digest) in files.items() if lock))}
            if not keys <= seen:  # the other files with which locks exist; the locks' bytes
                seen |= keys
                yield k, kept, Image(dict(named), {n: one.nodes[n] for n, (one, _) in held.items()}, image.links)


@dataclass
class Scenario:
    """A recorded run: the tree before it, its operations, and what it said."""

    root: str
    image: Image
    ops: list[Op]
    record: bytes
    old_checkpoint: bytes | None  # None: no file (a first run)
    old_predictions: bytes | None
    new_checkpoint: bytes
    new_predictions: bytes
    new_trace: bytes | None = None  # a run with --trace: its trace, committed with the pair
    old_trace: bytes | None = None  # the trace already at its path
    committed: bool = True  # what the run said: committed (exit 0), or nothing changed (its lock lost, EXIT_BUSY)


def _argv(directory: Path, trace: bool) -> list[str]:
    return ["--json", "--input", str(directory / "input.bin"), "--checkpoint", str(directory / _CHECKPOINT),
            "--predictions", str(directory / _PREDICTIONS), *(["--trace", str(directory / _TRACE)] if trace else [])]


def record_run(directory: Path, record: bytes, checkpoint: bytes | None, predictions: bytes | None, *,
               links: bool = False, writer: Callable[[list[str]], int] | None = None, trace: bool = False,
               old_trace: bytes | None = None, lock_lost: bool = False) -> Scenario:
    """Run ``bob-run`` (or ``writer``, given bob-run's arguments) once in ``directory`` with these files (None:
    none; ``links``: symbolic links to the checkpoint in ``targets/`` and the predictions in ``outputs/``, two
    directories; ``trace``: ``--trace`` into ``traces/``, over ``old_trace``), recording what it does; the run
    must succeed, or with ``lock_lost`` (its lock deleted once the predictions are renamed) roll back (EXIT_BUSY)."""
    from bob import commit
    from bob.run import main as run_main

    directory.mkdir(parents=True, exist_ok=True)
    (directory / "input.bin").write_bytes(record)
    for home in _HOMES.values():
        (directory / home).mkdir(exist_ok=True)
    if old_trace is not None:
        (directory / _TRACE).write_bytes(old_trace)
    for name, data in ((_CHECKPOINT, checkpoint), (_PREDICTIONS, predictions)):
        if data is not None:
            (directory / (f"{_HOMES[name]}/{name}" if links else name)).write_bytes(data)
        if links:
            (directory / name).symlink_to(f"{_HOMES[name]}/{name}")
    want = _invoked(record, checkpoint or b"", trace=trace)  # (the next run's from the old checkpoint too)
    pause = commit.pause_at

    def deleting_the_lock(point: str) -> None:  # as another process would, at the race hook's point
        if point == "predictions-renamed":
            os.unlink(lock_path_for(os.path.realpath(directory / _CHECKPOINT)))
        pause(point)

    commit.pause_at = deleting_the_lock if lock_lost else pause
    try:
        with Recorder(directory) as recorder:
            rc, _out, err = quietly(writer or run_main, _argv(directory, trace))
    finally:
        commit.pause_at = pause
    require(rc == (EXIT_BUSY if lock_lost else 0), f"the recorded run exited {rc}: {err.strip()[-300:]}")
    # The model is faithful: every operation applied gives the tree the run left.
    final = recorder.image.copy()
    for op in recorder.ops:
        final.apply(op)
    require(final.listing() == snapshot(Path(recorder.root))[0].listing(),
            "the recorded operations do not rebuild the tree the run left (the recorder missed a call)")
    return Scenario(recorder.root, recorder.image, recorder.ops, record, checkpoint, predictions,
                    want.checkpoint_bytes(), want.predictions_bytes(), want.trace_bytes() if trace else None, old_trace,
                    committed=not lock_lost)


def check_state(sc: Scenario, k: int, kept: tuple[int, ...], state: Image, scratch: Path) -> None:
    """One crash state held to bob's promise (docs/fuzzing.md, "Power loss")."""
    from bob.run import main as run_main

    where = f"crash after {k} of {len(sc.ops)} operations, keeping {list(kept)} of the volatile ones"
    ck, pred, trace = (state.read(sc.root, name) for name in (_CHECKPOINT, _PREDICTIONS, _TRACE))
    require(ck in (sc.old_checkpoint, sc.new_checkpoint),
            f"{where}: the checkpoint is neither the old nor the new one "
            f"({'missing' if ck is None else f'{len(ck)} bytes'})")
    committed = ck == sc.new_checkpoint and sc.new_checkpoint != sc.old_checkpoint
    if committed:
        require(pred == sc.new_predictions, f"{where}: the new checkpoint beside other predictions")
        require(trace == sc.new_trace, f"{where}: the new checkpoint beside another trace (or none)")
    else:
        require(pred in (sc.old_predictions, sc.new_predictions),
                f"{where}: the predictions are neither the old nor the new ones")
        require(trace in (sc.old_trace, sc.new_trace), f"{where}: the trace is neither the old nor the new one")
    if k == len(sc.ops) and sc.committed:
        require(committed, f"{where}: bob-run said it committed, but after a power loss the old checkpoint is back")
    elif k == len(sc.ops):
        require((ck, pred, trace) == (sc.old_checkpoint, sc.old_predictions, sc.old_trace),
                f"{where}: bob-run said nothing was changed, but after a power loss a new file is there")
    # The next bob-run resumes from what it finds and leaves nothing of the dead run.
    if scratch.exists():
        shutil.rmtree(scratch)
    state.materialize(scratch, sc.root)
    (scratch / "input.bin").write_bytes(sc.record)
    for home in _HOMES.values():  # (empty, they are in no image)
        (scratch / home).mkdir(exist_ok=True)
    traced = sc.new_trace is not None
    # None: the next invocation is refused (a step with no room left), and so is the next bob-run
    want = _invoked(sc.record, ck or b"", trace=traced)
    rc, out, err = quietly(run_main, _argv(scratch, traced))
    require(rc == (0 if want else 2), f"{where}: the next bob-run exited {rc}: {err.strip()[-300:]}")
    files = [scratch / _CHECKPOINT, scratch / _PREDICTIONS, *([scratch / _TRACE] if traced else [])]
    require([p.read_bytes() if p.exists() else None for p in files] == ([ck, pred, trace][:len(files)] if want is None
            else [want.checkpoint_bytes(), want.predictions_bytes(), *([want.trace_bytes()] if traced else [])]),
            f"{where}: the next bob-run did not write what bob.invoke computes from the checkpoint it found")
    left = sorted(str(p.relative_to(scratch)) for p in scratch.rglob("*") if not p.is_dir()
                  and p.name not in ("input.bin", _CHECKPOINT, _PREDICTIONS, os.path.basename(_TRACE)))
    require(not left, f"{where}: after the next bob-run these are left: {left}")


def check_states(sc: Scenario, scratch: Path, seed: int = 0, sample: int | None = None) -> int:
    """Judge every crash state of ``sc`` (or, with ``sample``, the states after the whole run and
    ``sample`` others drawn by ``seed``: the fuzzer's); return how many."""
    states = list(crash_states(sc.image, sc.ops))
    if sample is not None:
        rest = [s for s in states if s[0] < len(sc.ops)]
        states = [s for s in states if s[0] == len(sc.ops)] + random.Random(seed).sample(rest, min(sample, len(rest)))
    for k, kept, state in states:
        check_state(sc, k, kept, state, scratch)
    return len(states)
