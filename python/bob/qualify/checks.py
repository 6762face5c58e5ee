"""The contract's own evidence: the §8 public vector (through ``bob.invoke`` and
through fresh ``bob-run`` processes) and the golden files shipped with the package."""

from __future__ import annotations

import hashlib
import json
import os
import time
from importlib import resources
from pathlib import Path
from typing import Any, Callable

import bob
from bob import core
from bob.formats.constants import CHUNK_BYTES, PARAMETER_COUNT, PLANE_NAMES, UPDATES_PER_INVOCATION
from bob.formats.layout import CANONICAL_HEADER_BYTES
from bob.qualify import vector
from bob.qualify.processes import ProcessFailed, RunFiles, bob_run_command, run_once
from bob.qualify.verdict import Verdict, first_byte_difference
from bob.scratch import scratch_directory

Tick = Callable[[], None]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def section8_record() -> bytes:
    return bob.build_input(vector.CORPUS, list(vector.PROMPTS)).to_bytes()


def scalar_series(record: bytes, invocations: int) -> tuple[list[bytes], list[bytes], list[list[float]]]:
    """Checkpoint files, predictions files and losses after each invocation, made
    by the scalar transcription (also the reference a differing file is located against)."""
    rec = bob.load_input(record)
    ck = bob.load_checkpoint(b"")
    checkpoints, predictions, losses = [], [], []
    for _ in range(invocations):
        losses.append(core.train(ck.p, ck.m, ck.v, rec.contexts, rec.targets, ck.step, UPDATES_PER_INVOCATION,
                                 threads=1, kernel="scalar"))
        ck.step += UPDATES_PER_INVOCATION
        checkpoints.append(ck.to_bytes())
        predictions.append(bob.Predictions.from_core(core.predict(ck.p, rec.prompt_words)).to_bytes())
    return checkpoints, predictions, losses


def locate(expected: bytes, actual: bytes, header_bytes: int = CANONICAL_HEADER_BYTES) -> dict[str, Any]:
    """Where two checkpoint files first differ: a plane and index, or a header offset."""
    offset = first_byte_difference(expected, actual)
    if offset is None:
        return {}
    if offset < header_bytes or len(expected) != len(actual):
        return {"offset": offset}
    word = (offset - header_bytes) // 4
    plane, index = divmod(word, PARAMETER_COUNT)
    if plane >= len(PLANE_NAMES):
        return {"offset": offset}
    start = header_bytes + plane * CHUNK_BYTES + index * 4
    return {"plane": PLANE_NAMES[plane], "index": index, "offset": offset,
            "expected": expected[start:start + 4][::-1].hex(), "actual": actual[start:start + 4][::-1].hex()}


def _mismatch(check: str, what: str, expected_bytes: bytes | None, actual: bytes, **where: Any) -> Verdict:
    spot = locate(expected_bytes, actual) if expected_bytes is not None else {}
    verdict = Verdict(check, False, f"{what}: sha256 {sha256(actual)[:16]}… is not the contract's", **where)
    verdict.plane = spot.get("plane")
    verdict.index = spot.get("index")
    if "expected" in spot:
        verdict.expected, verdict.actual = f"0x{spot['expected']}", f"0x{spot['actual']}"
    verdict.details["offset"] = spot.get("offset")
    return verdict


def _vector_series(check: str, checkpoints: list[bytes], predictions: list[bytes], losses: list[list[float]],
                   reference: list[bytes]) -> Verdict | None:
    """The first way a series of two invocations misses §8, or None."""
    for i, step in enumerate(sorted(vector.CHECKPOINT_SHA256)):
        if sha256(checkpoints[i]) != vector.CHECKPOINT_SHA256[step]:
            return _mismatch(check, f"the checkpoint after step {step}", reference[i], checkpoints[i])
        if predictions[i].hex() != vector.PREDICTIONS_HEX:
            return Verdict(check, False, f"the predictions after step {step} are not the contract's",
                           expected=vector.PREDICTIONS_HEX, actual=predictions[i].hex(),
                           index=first_byte_difference(bytes.fromhex(vector.PREDICTIONS_HEX), predictions[i]))
        first, last = vector.LOSSES[step]
        ends = ((losses[i][0], first), (losses[i][-1], last))
        if not all(abs(loss - want) <= vector.LOSS_TOLERANCE for loss, want in ends):  # (a NaN is never within)
            return Verdict(check, False, f"the losses of the invocation ending at step {step} are not the contract's",
                           expected=f"{first} -> {last}", actual=f"{losses[i][0]:.6f} -> {losses[i][-1]:.6f}")
    return None


Series = tuple[list[bytes], list[bytes], list[list[float]]]  # checkpoint files, predictions files, losses


def check_public_vector(tick: Tick = lambda: None) -> list[Verdict]:
    """§8 through the scalar reference, through ``bob.invoke`` and through two fresh ``bob-run`` processes; its
    first invocation traced, against the golden trace."""
    started = time.perf_counter()  # the first check's time includes making the reference
    record = section8_record()
    scalar = scalar_series(record, 2)
    verdicts = []
    for check in VECTOR_CHECKS:
        verdict = check(record, scalar)
        verdict.seconds = time.perf_counter() - started
        verdicts.append(verdict)
        tick()
        started = time.perf_counter()
    return verdicts


def _vector_by_scalar(record: bytes, scalar: Series) -> Verdict:
    check = "public-vector/record"
    if sha256(record) != vector.RECORD_SHA256:
        return Verdict(check, False, "the §8 record built by bob.build_input is not the contract's",
                       expected=vector.RECORD_SHA256, actual=sha256(record))
    return _vector_series(check, *scalar, scalar[0]) or Verdict(
        check, True, "record and the scalar transcription's checkpoints are §8's", kernel="scalar", threads=1)


def _vector_by_invoke(record: bytes, scalar: Series) -> Verdict:
    check = "public-vector/invoke"
    first = bob.invoke(record)
    runs = (first, bob.invoke(record, first.checkpoint_bytes()))
    series = ([r.checkpoint_bytes() for r in runs], [r.predictions_bytes() for r in runs],
              [list(r.losses) for r in runs])
    return _vector_series(check, *series, scalar[0]) or Verdict(
        check, True, "2 calls of bob.invoke give §8's checkpoints and predictions", kernel="auto", threads=0)


def _vector_by_bob_run(record: bytes, scalar: Series) -> Verdict:
    check = "public-vector/bob-run"
    command = bob_run_command()
    with scratch_directory("bob-qualify-") as directory:
        files = RunFiles(Path(directory))
        files.record.write_bytes(record)
        series: Series = ([], [], [])
        try:
            for _ in range(2):
                summary = run_once(files, command)
                series[0].append(files.checkpoint.read_bytes())
                series[1].append(files.predictions.read_bytes())
                series[2].append(summary["losses"])
        except ProcessFailed as exc:
            verdict = Verdict(check, False, str(exc))
        else:
            verdict = _vector_series(check, *series, scalar[0]) or Verdict(
                check, True, "2 fresh bob-run processes give §8's files", kernel="auto", threads=0)
    verdict.details["command"] = command
    return verdict


def _vector_by_trace(record: bytes, scalar: Series) -> Verdict:
    check = "public-vector/trace"
    try:  # (compared as bob-inspect trace compares: the states' digests; a loss is the platform's, §6.4)
        golden = golden_directory() / "trace-abracadabra-step10.bin"  # (a path: read bounded, a FIFO refused)
        report = bob.diff(golden if isinstance(golden, os.PathLike) else golden.read_bytes(),
                          bob.invoke(record, trace=True).trace_bytes())
    except (OSError, bob.FormatError) as exc:
        return Verdict(check, False, f"the golden §8 trace cannot be compared: {exc}")
    if not report["same"]:
        return Verdict(check, False, f"the traced §8 invocation parts from the golden trace: {report['verdict']}")
    return Verdict(check, True, "a traced bob.invoke gives the golden §8 trace's digests", kernel="auto", threads=0)


VECTOR_CHECKS = (_vector_by_scalar, _vector_by_invoke, _vector_by_bob_run, _vector_by_trace)  # one verdict each


# --------------------------------------------------------------------------- #
# Golden files
# --------------------------------------------------------------------------- #


def golden_directory():
    """The golden files shipped in the package (works from a wheel or a checkout)."""
    return resources.files("bob") / "data" / "golden"


def _golden_problem(name: str, data: bytes, sidecar: dict) -> str | None:
    kind = name.split("-")[0]  # (bob's readers are named after it: load_KIND, KIND_findings)
    findings = getattr(bob, f"{kind}_findings")(data)
    if findings:
        return f"{name}: refused by this build: {findings[0]}"
    obj = getattr(bob, f"load_{kind}")(data)
    again = obj.to_bytes()
    if again != data:
        return f"{name}: does not round-trip (first difference at byte {first_byte_difference(data, again)})"
    if obj.as_dict() != sidecar:
        return f"{name}: reads differently from its .json description"
    return None


def _refused_problem(name: str, data: bytes, sidecar: dict) -> str | None:
    kind = name.split("-")[0]
    expected = sidecar["findings"]
    got = [{"error": type(f).__name__, "field": f.field, "index": f.index, "offset": f.offset}
           for f in getattr(bob, f"{kind}_findings")(data)]
    if got != expected:
        return f"refused/{name}: findings {got} are not the expected {expected}"
    try:
        getattr(bob, f"load_{kind}")(data)
    except bob.FormatError as exc:
        if type(exc).__name__ != expected[0]["error"] or exc.field != expected[0]["field"]:
            return f"refused/{name}: refused as {type(exc).__name__} on {exc.field!r}, expected " \
                   f"{expected[0]['error']} on {expected[0]['field']!r}"
        return None
    return f"refused/{name}: accepted, but must be refused on {expected[0]['field']!r}"


def _exports_problems(interop: Path, checkpoint: bytes) -> tuple[list[str], int, list[str]]:
    """The golden exports (``interop/``) import as the step-10 checkpoint (safetensors with the extra only);
    the problems, how many were imported, and the ones not imported for want of the extra."""
    from bob.interop import MissingExtra

    problems, imported, skipped = [], 0, []
    for entry in sorted(interop.iterdir(), key=lambda e: e.name):
        try:
            load = bob.Checkpoint.from_npz if entry.suffix == ".npz" else bob.Checkpoint.from_safetensors
            if load(entry).to_bytes() != checkpoint:
                problems.append(f"interop/{entry.name}: imports as another checkpoint than the step-10 one")
        except MissingExtra:  # (not this build's to qualify: the extra is not installed)
            skipped.append(f"interop/{entry.name}")
            continue
        except bob.FormatError as err:
            problems.append(f"interop/{entry.name}: refused: {err}")
        imported += 1
    return problems, imported, skipped


def _manifest_problems(root: Any) -> list[str]:
    """Each golden file ``SHA256SUMS`` lists (formats/make_golden.py writes it) that is missing or another file:
    a package that ships less than its golden files is not qualified on the ones left."""
    try:
        listed = [line.split("  ", 1) for line in (root / "SHA256SUMS").read_text("ascii").splitlines()]
    except OSError:
        return ["SHA256SUMS, the list of the golden files the package ships, is missing"]
    problems = []
    for digest, name in listed:
        try:
            data = (root / name).read_bytes()
        except OSError as exc:
            problems.append(f"{name}, listed in SHA256SUMS, cannot be read ({exc.strerror or exc})")
            continue
        if sha256(data) != digest:
            problems.append(f"{name} is not the file the package shipped (its SHA-256 is not SHA256SUMS's)")
    return problems


def check_golden(tick: Tick = lambda: None) -> list[Verdict]:
    """Every shipped golden file loads, verifies and round-trips; every refused one is refused by name."""
    started = time.perf_counter()
    root = golden_directory()
    homes = (root, root / "refused", root / "interop")
    odd = [f"{'' if d == root else d.name + '/'}{e.name} is no regular file (a FIFO, a device, a directory): "
           "not read, as reading a FIFO would never end" for d in homes for e in sorted(d.iterdir())
           if not e.is_file() and e not in homes[1:]]
    problems, accepted, refused, skipped = (odd, 0, 0, []) if odd else _golden_problems(root)
    tick()
    verdict = Verdict("formats", not problems,
                      problems[0] if problems else f"{accepted} golden files load, verify and round-trip; "
                                                   f"{refused} refused ones are refused by name"
                      + (f"; not imported without the interop extra: {', '.join(skipped)}" if skipped else ""),
                      details={"accepted": accepted, "refused": refused, "problems": problems, "skipped": skipped})
    verdict.seconds = time.perf_counter() - started
    return [verdict]


def _golden_problems(root: Path) -> tuple[list[str], int, int, list[str]]:
    """What :func:`check_golden` finds in the golden directory of regular files: the problems, how many accepted
    and refused files were read, and the exports not imported for want of the interop extra."""
    problems, accepted, refused = _manifest_problems(root), 0, 0
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".bin"):
            sidecar = json.loads((root / (entry.name[:-4] + ".json")).read_text("ascii"))
            problem = _golden_problem(entry.name, entry.read_bytes(), sidecar)
            problems += [problem] if problem else []
            accepted += 1
    for entry in sorted((root / "refused").iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".bin"):
            sidecar = json.loads((root / "refused" / (entry.name[:-4] + ".json")).read_text("ascii"))
            problem = _refused_problem(entry.name, entry.read_bytes(), sidecar)
            problems += [problem] if problem else []
            refused += 1
    checkpoint = (root / "checkpoint-abracadabra-step10.bin").read_bytes()
    if sha256(checkpoint) != vector.CHECKPOINT_SHA256[10]:
        problems.append("checkpoint-abracadabra-step10.bin is not §8's step-10 checkpoint")
    exports = _exports_problems(root / "interop", checkpoint)
    problems, accepted, skipped = problems + exports[0], accepted + exports[1], exports[2]
    if sha256((root / "input-abracadabra.bin").read_bytes()) != vector.RECORD_SHA256:
        problems.append("input-abracadabra.bin is not §8's record")
    if accepted == 0 or refused == 0:
        problems.append(f"the package ships {accepted} golden and {refused} refused files; expected some of each")
    return problems, accepted, refused, skipped
