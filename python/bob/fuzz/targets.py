"""The fuzz targets: each takes bytes and raises ``PropertyFailed`` when a property fails; the engine, the
seeded loop, ``bob-fuzz replay`` and the OSS-Fuzz harnesses run them (what each compares: docs/fuzzing.md)."""

from __future__ import annotations

import atexit
import errno
import functools
import importlib
import json
import os
import resource
import shutil
from pathlib import Path
from typing import Callable, NamedTuple

import bob
from bob.errors import FormatError, StateRefused
from bob.formats.constants import MAX_CHECKPOINT_BYTES
from bob.formats.kinds import FORMATS
from bob.fuzz import oracle
from bob.fuzz.digests import shared_digests
from bob.fuzz.properties import PropertyFailed, quietly, require
from bob.scratch import temporary_directory
from bob.signals import step_and_record

__all__ = ["Target", "TARGETS", "get", "preload", "build_lacks", "accepted_seeds", "check_error", "golden_dir",
           "seed_files", "quietly"]


class Target(NamedTuple):
    name: str
    run: Callable[[bytes], None]
    property: str
    format: str | None  # the format the field-aware mutator works in (None: bytes)
    reaches: tuple[str, ...] = ()  # the bob modules its run imports (lazily; or module:name, by a door), for preload


def golden_dir() -> Path:
    return Path(__file__).resolve().parent.parent / "data" / "golden"


def check_error(err: BaseException, data: bytes | None = None) -> None:
    """A refusal is well formed: a FormatError naming a field, one printable ASCII line, JSON-ready."""
    if not isinstance(err, FormatError):
        raise PropertyFailed(f"not a FormatError: {type(err).__name__}: {err}")
    if not (isinstance(err.field, str) and err.field):  # (the message only when it fails: repr costs)
        raise PropertyFailed(f"no field named: {err!r}")
    text = str(err)
    require(text.isascii() and text.isprintable(), f"unprintable refusal: {text!r}")
    json.dumps(err.to_dict())
    require(err.offset is None or (isinstance(err.offset, int) and err.offset >= 0), f"bad offset {err.offset!r}")
    if data is not None and err.offset is not None:
        require(err.offset <= max(len(data), MAX_CHECKPOINT_BYTES), f"offset {err.offset} beyond the file")
    require(err.index is None or isinstance(err.index, int), f"bad index {err.index!r}")


def _load(load: Callable, data: bytes, checked: "Callable[[BaseException], bool] | None" = None, **kw):
    """``load(data)``: (the object, None), or (None, the FormatError it raised, checked unless
    ``checked(err)`` says an equal refusal was checked already)."""
    try:
        return load(data, **kw), None
    except FormatError as err:
        if checked is None or not checked(err):
            check_error(err, data)
        return None, err


def _equal_refusals(a: BaseException | None, b: BaseException | None,
                    names: tuple[str, ...] = ("field", "message", "expected", "actual", "offset", "index")) -> bool:
    """Both None, or of one type with these attributes equal: by default everything a refusal's text
    and dict are made of (so checking one checks both)."""
    if a is None or b is None:
        return a is b
    try:
        return type(a) is type(b) and all(getattr(a, n) == getattr(b, n) for n in names)
    except Exception:  # noqa: BLE001 - e.g. arrays compared: not equal for this purpose
        return False


def _as_the_contract_says(fmt: str, err: BaseException | None, want) -> None:
    """bob's verdict (``err``: its first refusal, or None) is the contract oracle's ``want``:
    both accept, or both refuse naming the same first field (and index)."""
    got = None if err is None else (err.field, err.index)  # type: ignore[attr-defined]
    if got != want:
        said = "accepts" if got is None else f"refuses naming {got[0]!r} (index {got[1]})"
        means = "accept" if want is None else f"refuse naming {want[0]!r} (index {want[1]})"
        raise PropertyFailed(f"{fmt}: bob {said} where the contract oracle would {means}")


def _judged(fmt: str, load: Callable, findings: Callable, data: bytes):
    """``load(data)`` (the object, or None) held to the contract oracle and to bob's findings list."""
    obj, refusal = _load(load, data)
    _as_the_contract_says(fmt, refusal, oracle.check(fmt, data))
    listed = findings(data)
    for err in listed:
        check_error(err, data)
    require((obj is None) == bool(listed), f"loader {'refused' if obj is None else 'accepted'} "
            f"but findings are {[f.field for f in listed]}")
    return obj


def input_target(data: bytes) -> None:
    from bob.formats import canonical

    record = _judged("input", bob.load_input, bob.input_findings, data)
    fast = canonical.recognize_record(data)
    if record is not None:
        require(record.to_bytes() == data, "an accepted record does not round-trip")
        require(fast is not None, "the fast path does not recognize a record the schema accepts")
    if fast is not None:
        require(record is not None, "the fast path recognizes a record the schema refuses")
        contexts, targets, words = fast
        require(contexts == record.contexts.tobytes() and targets == record.targets.tobytes(), "pairs differ")
        require(tuple(words) == tuple(record.prompt_words), "prompt words differ")


@shared_digests()  # each plane's SHA-256 computed once, whichever property asks
def checkpoint_target(data: bytes) -> None:
    import numpy as np

    from bob.formats import checkpoint as canonical
    from bob.formats.checkpoint import examine_by_schema

    # Two readings of bob (the findings for resuming, the loader for reading), one of the oracle (docs/fuzzing.md)
    findings = bob.checkpoint_findings(data)
    for err in findings:
        check_error(err, data)
    strict_refusal = findings[0] if findings else None
    reading = [f for f in findings if not isinstance(f, StateRefused)]
    first = reading[0] if reading else None
    # (its refusal's form is checked only if it differs from that finding: it is that finding, read again)
    loose, loose_refusal = _load(bob.load_checkpoint, data, lambda err: _equal_refusals(err, first), for_resume=False)
    if not _equal_refusals(loose_refusal, first, ("field", "index", "offset")):  # the finding put first, raised
        raise PropertyFailed(f"load_checkpoint(for_resume=False) raised {loose_refusal!r}, the findings for "
                             f"reading are {[f.field for f in reading]}")
    for_reading, for_resuming = oracle.checkpoint_verdicts(data)
    _as_the_contract_says("checkpoint (reading)", loose_refusal, for_reading)
    _as_the_contract_says("checkpoint (resuming)", strict_refusal, for_resuming)
    require(strict_refusal is not None or loose is not None, "accepted for resuming but refused for reading")
    if loose is not None and data:
        require(loose.to_bytes(for_resume=False) == data, "an accepted checkpoint does not round-trip")
    if (step := canonical.recognize_checkpoint(data)) is not None:
        # The readers take the canonical path for such a file too: judge it by the schema itself.
        by_schema = examine_by_schema(data, for_resume=False)
        require(by_schema.ok, "the fast path recognizes a checkpoint the schemas refuse")
        schema_step = by_schema.header.step if by_schema.header is not None else None
        require(schema_step == step, f"fast path step {step} != schema step {schema_step}")
        require(loose is not None and loose.step == step, "the loader does not load what the fast path recognizes")
        stored = np.frombuffer(data, dtype="<u4", offset=canonical.HEADER_BYTES).reshape(3, -1)
        require(all(np.array_equal(a.view(np.uint32), b) for a, b in zip((loose.p, loose.m, loose.v), stored)),
                "the planes differ")
    elif loose is not None and data:
        require(loose.header_bytes != canonical.HEADER_BYTES, "a canonical checkpoint is not recognized")


def predictions_target(data: bytes) -> None:
    from bob.formats import canonical

    if (pred := _judged("predictions", bob.load_predictions, bob.predictions_findings, data)) is not None:
        require(pred.to_bytes() == data, "accepted predictions do not round-trip")
        require(canonical.predictions_bytes(list(pred.records)) == data, "the fast path builds other bytes")


@functools.cache
def _scratch() -> Path:
    """The command targets' files: one private temporary directory per process (docs/fuzzing.md, "Commands")."""
    with step_and_record():  # (a Ctrl-C as it is made acts once its removal is registered)
        path = temporary_directory("bob-fuzz-")
        atexit.register(shutil.rmtree, path, True)
    return Path(path)


def _the_envelope(text: str, rc: int) -> None:
    """``text`` is the shared ``--json`` envelope (docs/fuzzing.md), its keys taken from
    ``bob.commands.envelope`` and ``Refused.to_dict``, not restated."""
    from bob.commands import Refused, envelope

    document = json.loads(text)
    said = f"bob-inspect --json is not the shared envelope (exit {rc}): {text.strip()[:300]}"
    shared = set(envelope("bob-inspect", rc))
    require(isinstance(document, dict) and shared <= set(document), said)
    require(document["ok"] is (rc == 0) and type(document["exit_code"]) is int and document["exit_code"] == rc
            and str(document["command"]).startswith("bob-inspect"), said)
    if (error := document["error"]) is not None:
        keys = [set(Refused("").to_dict()), set(Refused("", detail={"": ""}).to_dict())]
        require(rc != 0 and set(document) == shared and isinstance(error, dict) and set(error) in keys
                and error["exit_code"] == rc, said)


def inspect_target(data: bytes) -> None:
    from bob.inspect import main as inspect_main

    path = _scratch() / "inspected.bin"
    path.write_bytes(data)
    for argv in ([str(path)], ["--json", str(path)]):
        rc, out, err = quietly(inspect_main, argv)
        require(rc in (0, 2), f"bob-inspect {' '.join(argv[:-1])} exited {rc}: {err.strip()[-300:]}")
        require("Traceback" not in out + err, "bob-inspect printed a traceback")
        bad = [c for c in out + err if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) < 0xA0]
        require(not bad, f"bob-inspect prints raw control characters {bad[:4]!r}")
        if "--json" in argv:
            _the_envelope(out, rc)


WORLD_DESCRIPTORS = 64  # free for bob-run's files, locks and directories, a racer's pipe and thread (docs/fuzzing.md)


def run_target(data: bytes) -> None:
    from bob.fuzz.mutator import format_of
    from bob.fuzz.world import run_in_world

    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]  # (the listing takes one: EMFILE too, no verdict)
    if limit != resource.RLIM_INFINITY and os.path.isdir("/proc/self/fd") \
            and limit - len(os.listdir("/proc/self/fd")) < WORLD_DESCRIPTORS:  # (no /proc: not counted)
        raise OSError(errno.EMFILE, f"fewer than {WORLD_DESCRIPTORS} descriptors free for a world (ulimit -n {limit})")
    # data is the record when it starts like one, else the checkpoint; the other file is the golden one
    if format_of(data) == "input":
        record, checkpoint = data, (golden_dir() / "checkpoint-abracadabra-step10.bin").read_bytes()
    else:
        record, checkpoint = (golden_dir() / "input-abracadabra.bin").read_bytes(), data
    try:
        want = bob.invoke(record, checkpoint, threads=1)
    except FormatError as refusal:
        check_error(refusal)
        want = None
    run_in_world(data, record, checkpoint, want, _scratch(), quietly)


def interop_target(data: bytes) -> None:
    """Every input read as ``.npz`` and as safetensors, for resuming and for reading."""
    from bob import interop
    from bob.fuzz.oracle_interop import check_export

    for fmt, load, export in (("npz", interop.from_npz_bytes, interop.npz_bytes),
                              ("safetensors", interop.from_safetensors_bytes, interop.safetensors_bytes)):
        for for_resume in (True, False):
            checkpoint, _ = _load(load, data, make=bob.Checkpoint, for_resume=for_resume)
            why = check_export(fmt, data, for_resume)
            require((checkpoint is None) == (why is not None),
                    f"{fmt} (for_resume={for_resume}): bob {'refuses' if checkpoint is None else 'accepts'} where "
                    f"the oracle {'accepts' if why is None else f'refuses ({why})'}")
            if checkpoint is not None:
                again = load(export(checkpoint, for_resume=for_resume), bob.Checkpoint, for_resume=for_resume)
                require(again == checkpoint, f"{fmt}: an accepted export does not round-trip")


def core_target(data: bytes) -> None:
    from bob.fuzz.core_target import core_target as run

    run(data)


# (tests/fuzz/test_campaign_limits.py: a worker's target imports nothing after its prelude, over its seeds and b"")
_READERS = ("bob.formats.files", "bob.formats.canonical")
_CHECKPOINT = ("bob.formats.checkpoint:Checkpoint", "bob.formats.checkpoint:ENVELOPE")  # (by its door)
_COMMANDS = _READERS + _CHECKPOINT + ("bob.formats.input_record", "bob.formats.predictions", "bob.inspect",
                                      "bob.invocation", "bob.run", "bob.commit", "bob.lock", "bob.core", "bob.failures")
_VIEWS = tuple(f"bob.inspect.{view}" for view in ("checkpoint", "predictions", "record", "trace", "render"))
TARGETS: dict[str, Target] = {t.name: t for t in (
    Target("input", input_target, "load_input raises only FormatError, accepted records round-trip, "
           "the fast path agrees with the schema", "input", _READERS + ("bob.formats.input_record",)),
    Target("checkpoint", checkpoint_target, "load_checkpoint raises only FormatError, accepted files "
           "round-trip, the fast path agrees with the schemas", "checkpoint", _READERS + _CHECKPOINT + ("bob.core",)),
    Target("predictions", predictions_target, "load_predictions raises only FormatError, accepted files "
           "round-trip", "predictions", _READERS + ("bob.formats.predictions",)),
    Target("inspect", inspect_target, "bob-inspect [--json] exits 0 or 2, no traceback, no raw control "
           "character, --json is the shared envelope", None,
           _COMMANDS + _VIEWS + ("bob.formats.trace", "bob.analysis", "bob.ulp")),
    Target("run", run_target, "bob-run, among links, failing writes, crashes and a held lock, refuses exactly "
           "when bob.invoke or the world says so and otherwise writes what bob.invoke computes; the files "
           "old or new and consistent, its exit code true, nothing left behind", None,
           _COMMANDS + ("bob.fuzz.world", "bob.formats.trace")),
    Target("interop", interop_target, "the .npz and safetensors imports raise only FormatError, accept "
           "exactly what the oracle does, and accepted exports round-trip", None,
           _CHECKPOINT + ("bob.interop", "bob.fuzz.oracle_interop")),
    Target("core", core_target, "the binding raises only CoreError/TypeError/ValueError/OverflowError, "
           "never panics; fast kernels equal the scalar transcription", None, ("bob.fuzz.core_target",)))}


def build_lacks(exc: ImportError) -> bool:
    """Whether an import fails whatever the input: bob's native core (not built) or a module outside bob (a dependency
    missing). A name a module lacks, or a bob module missing, is bob's bug, which an input may reach."""
    name = exc.name if isinstance(exc, ModuleNotFoundError) else None
    return f"{type(exc).__module__}.{type(exc).__name__}" == "bob.core.NativeCoreUnavailable" or \
        name == "bob._core" or bool(name) and str(name).split(".")[0] != "bob"


def preload(target: str | None = None) -> None:
    """Import the modules a named target's run imports, for any other every module the targets reach, so that an
    engine instrumenting imports sees them (the targets import lazily, which would leave them uninstrumented). Only
    those: each module costs a worker's start its instrumentation, 3.5 s for all, 0.3 s for one format's."""
    every = dict.fromkeys(m for t in TARGETS.values() for m in t.reaches)  # (in one order: a seeded run repeats)
    for module, _, name in (m.partition(":") for m in (TARGETS[target].reaches if target in TARGETS else every)):
        try:
            getattr(importlib.import_module(module), name or "__name__")  # (a door imports a name's room as asked)
        except ImportError as exc:  # (no native core: bob-inspect runs without it, bob-run's target says so)
            if not build_lacks(exc):
                raise


def get(name: str) -> Target:
    try:
        return TARGETS[name]
    except KeyError:
        raise ValueError(f"unknown target {name!r}; one of {', '.join(TARGETS)}") from None


def seed_files(name: str) -> list[Path]:
    """The seed corpus of a target: bob's golden and refused files it can read, plus its regressions."""
    golden = golden_dir()
    if name == "interop":
        return sorted((golden / "interop").glob("*"))
    files = sorted(golden.glob("*.bin")) + sorted((golden / "refused").glob("*.bin"))
    wanted = {"input": ("input",), "checkpoint": ("checkpoint",), "predictions": ("predictions",), "core": (),
              "run": ("input", "checkpoint"), "inspect": ("input", "checkpoint", "predictions", "trace")}[name]
    return [f for f in files if f.name.startswith(wanted)]  # (no name starts with the empty tuple)


def accepted_seeds(fmt: str | None) -> list[bytes]:
    """The golden files of ``fmt`` that bob accepts (the fast-path-keeping mutations start from them)."""
    return [p.read_bytes() for p in sorted(golden_dir().glob(f"{fmt}-*.bin"))] if fmt in FORMATS else []
