"""The seeded loop: a target over a fixed number of mutations drawn from a seeded
``random.Random`` -- no engine, deterministic, seconds -- for CI and ``bob-fuzz run --engine loop``."""

from __future__ import annotations

import os
import random
import time

from bob.fuzz.common import DEFAULT_MAX_LEN, MAX_LEN, CampaignResult, NoVerdict, failure, failure_message, \
    load_target, read_input, seed_paths, tell_when_stopped
from bob.fuzz.properties import exception_key

__all__ = ["seeded_loop"]


def seeded_loop(target: str, runs: int, seed: int = 0, *, fmt: str | None = None,
                stop_on_finding: bool = True, artifacts: "str | os.PathLike[str] | None" = None,
                progress: bool = False) -> CampaignResult:
    """``runs`` executions of ``target`` over seeded mutations of its seeds; deterministic. A failure is a
    finding once per key (:meth:`CampaignResult.add`: its first input written to ``artifacts`` when given);
    ``progress``: how far, on stderr past 2 s; ``fast_path_share``: docs/fuzzing.md, "The field-aware mutator"."""
    from bob.fuzz.mutator import custom_mutator, mutate_canonical, recognized
    from bob.fuzz.targets import accepted_seeds
    from bob.progress import Progress

    run, fmt = load_target(target, fmt)
    name = target.replace(":", "_")
    seeds = [read_input(p) for p in seed_paths(name, fmt)] or [b""]
    rnd = random.Random(seed)
    # most mutations keep an accepted file canonical: the differential asserts only on what the fast path recognizes
    accepted = accepted_seeds(name) if name in ("input", "checkpoint") else []
    mutator = custom_mutator(fmt, None)
    limit = MAX_LEN.get(name, DEFAULT_MAX_LEN)
    result = CampaignResult(target)
    hits = 0
    start = time.monotonic()
    try:
        with Progress("bob-fuzz", f"run {target}", runs, after=2.0 if progress else float("inf")) as shown:
            for i in range(runs):
                shown.advance(extra=f"{len(result.findings)} findings")
                base = seeds[rnd.randrange(len(seeds))]
                if name == "core":
                    data = rnd.randbytes(rnd.randrange(64))
                elif accepted and rnd.random() < 0.6:
                    data = mutate_canonical(accepted[rnd.randrange(len(accepted))], rnd, name)
                else:
                    data = mutator(base, limit, rnd.getrandbits(32))
                if name in ("input", "checkpoint"):
                    hits += recognized(data, name)
                result.executions = i + 1
                try:
                    exc = failure(run, data)  # as replay: SystemExit too, out of memory not
                except (MemoryError, NoVerdict) as ran_out:  # the machine's, the build's: what was found stands
                    if not result.findings:
                        raise
                    result.notes.append(f"stopped at execution {i + 1}: {str(ran_out) or 'out of memory'}")
                    break
                if exc is not None:
                    result.add(data, failure_message(exc), exception_key(exc), artifacts)
                    if stop_on_finding:
                        break
    except KeyboardInterrupt:  # a signal: the findings written so far are said, not only the stop
        tell_when_stopped(result)
        raise
    result.seconds = time.monotonic() - start
    if name in ("input", "checkpoint") and result.executions:
        result.fast_path_share = hits / result.executions
    return result
