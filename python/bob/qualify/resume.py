"""Fresh-process resume (§7): k ``bob-run`` processes ≡ k calls of ``bob.invoke``
≡ one call of k invocations' updates, byte for byte, on the §8 record and seeded random ones."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

import bob
from bob import core
from bob.formats.constants import UPDATES_PER_INVOCATION, VOCABULARY
from bob.qualify import vector
from bob.qualify.checks import locate
from bob.qualify.processes import ProcessFailed, RunFiles, bob_run_command, run_once
from bob.qualify.verdict import Verdict, first_byte_difference, losses_agree
from bob.scratch import scratch_directory

CHECK = "resume"


@dataclass(frozen=True)
class Series:
    """What one path produced: the files after each invocation, and the losses."""

    checkpoints: list[bytes]
    predictions: list[bytes]
    losses: list[float]


def qualification_records(seed: int, random_records: int) -> list[tuple[str, bytes]]:
    """The §8 record, then ``random_records`` records built from seeded random corpora
    (short corpora leave most rows with count 0)."""
    records = [("§8 abracadabra", bob.build_input(vector.CORPUS, list(vector.PROMPTS)).to_bytes())]
    rng = np.random.default_rng([seed, 0xB0B])
    for i in range(random_records):
        length = int(rng.integers(2, 600))
        alphabet = int(rng.integers(2, VOCABULARY + 1))
        corpus = rng.integers(0, alphabet, length).astype(np.uint8).tobytes()
        prompts = [rng.bytes(int(rng.integers(0, 4))) for _ in range(3)]
        records.append((f"random {i + 1} ({length}-byte corpus)", bob.build_input(corpus, prompts).to_bytes()))
    return records


def through_processes(record: bytes, invocations: int, command: list[str]) -> Series:
    with scratch_directory("bob-qualify-") as directory:
        files = RunFiles(Path(directory))
        files.record.write_bytes(record)
        series = Series([], [], [])
        for _ in range(invocations):
            summary = run_once(files, command)
            series.checkpoints.append(files.checkpoint.read_bytes())
            series.predictions.append(files.predictions.read_bytes())
            series.losses.extend(summary["losses"])
        return series


def through_invoke(record: bytes, invocations: int) -> Series:
    series, checkpoint = Series([], [], []), b""
    for _ in range(invocations):
        result = bob.invoke(record, checkpoint)
        checkpoint = result.checkpoint_bytes()
        series.checkpoints.append(checkpoint)
        series.predictions.append(result.predictions_bytes())
        series.losses.extend(result.losses)
    return series


def in_one_call(record: bytes, invocations: int) -> Series:
    rec = bob.load_input(record)
    ck = bob.load_checkpoint(b"")
    losses = core.train(ck.p, ck.m, ck.v, rec.contexts, rec.targets, 0, UPDATES_PER_INVOCATION * invocations)
    ck.step = UPDATES_PER_INVOCATION * invocations
    predictions = bob.Predictions.from_core(core.predict(ck.p, rec.prompt_words)).to_bytes()
    return Series([ck.to_bytes()], [predictions], list(losses))


def _compare(name: str, what: str, expected: Series, actual: Series, pairs: list[tuple[int, int]]) -> Verdict | None:
    for i, j in pairs:
        if expected.checkpoints[i] != actual.checkpoints[j]:
            spot = locate(expected.checkpoints[i], actual.checkpoints[j])
            return Verdict(CHECK, False, f"{name}: {what} differ in the checkpoint after invocation {j + 1}",
                           plane=spot.get("plane"), index=spot.get("index"),
                           expected=spot.get("expected"), actual=spot.get("actual"),
                           details={"record": name, "offset": spot.get("offset")})
        if expected.predictions[i] != actual.predictions[j]:
            return Verdict(CHECK, False, f"{name}: {what} differ in the predictions after invocation {j + 1}",
                           index=first_byte_difference(expected.predictions[i], actual.predictions[j]),
                           expected=expected.predictions[i].hex(), actual=actual.predictions[j].hex(),
                           details={"record": name})
    if not losses_agree(expected.losses, actual.losses):
        return Verdict(CHECK, False, f"{name}: {what} report different losses", details={"record": name})
    return None


def check_resume(seed: int, invocations: int, random_records: int,
                 tick: Callable[[], None] = lambda: None) -> tuple[list[Verdict], dict[str, list[float]]]:
    """One verdict per record, and each record's losses over the invocations (for the plots)."""
    command = bob_run_command()
    verdicts, curves = [], {}
    for name, record in qualification_records(seed, random_records):
        started = time.perf_counter()
        invoked = through_invoke(record, invocations)
        curves[name] = invoked.losses
        try:
            processes = through_processes(record, invocations, command)
        except ProcessFailed as exc:
            verdicts.append(Verdict(CHECK, False, f"{name}: {exc}", details={"record": name}))
            tick()
            continue
        every = [(i, i) for i in range(invocations)]
        found = (_compare(name, f"{invocations} bob-run processes and {invocations} calls of bob.invoke",
                          invoked, processes, every)
                 or _compare(name, f"{invocations} calls of bob.invoke and one call of "
                                   f"{UPDATES_PER_INVOCATION * invocations} updates",
                             in_one_call(record, invocations), invoked, [(0, invocations - 1)]))
        verdict = found or Verdict(
            CHECK, True, f"{name}: {invocations} bob-run processes ≡ {invocations} bob.invoke calls ≡ "
                         f"one call of {UPDATES_PER_INVOCATION * invocations} updates", kernel="auto", threads=0,
            details={"record": name})
        verdict.details.update(invocations=invocations, command=command)
        verdict.seconds = time.perf_counter() - started
        verdicts.append(verdict)
        tick()
    return verdicts, curves
