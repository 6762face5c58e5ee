"""One qualification: the plan for a mode, the checks in order, one result object."""

from __future__ import annotations

import random
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable

from bob.commands import RESOURCE_ERRNOS
from bob.qualify.processes import SPACE_ERRNOS
from bob.qualify.verdict import PERTURB_ENV, Verdict


@dataclass(frozen=True)
class Plan:
    """How much of each check a mode runs."""

    mode: str
    kernel_states: int  # seeded random states per (kernel, threads)
    invocations: int  # k, for fresh-process resume
    random_records: int  # besides §8's, for fresh-process resume
    speed_rounds: int  # interleaved samples per (kernel, threads)
    process_rounds: int  # interleaved bob-run / python -c pass pairs
    kill_races: int  # racing SIGKILLs (0: no commit-kill check)


PLANS = {
    "quick": Plan("quick", kernel_states=10, invocations=3, random_records=1, speed_rounds=3, process_rounds=3,
                  kill_races=0),
    "default": Plan("default", kernel_states=300, invocations=5, random_records=2, speed_rounds=9, process_rounds=9,
                    kill_races=0),
    "thorough": Plan("thorough", kernel_states=2000, invocations=8, random_records=4, speed_rounds=15,
                     process_rounds=15, kill_races=20),
}


class Progress:
    """What the checks report as they go; the command line shows it with rich."""

    def phase(self, name: str, total: int) -> Callable[[], None]:
        return lambda: None


def new_seed() -> int:
    return random.SystemRandom().randrange(1 << 32)


def qualify(plan: Plan, seed: int, *, perturb: tuple[str, int] | None = None,
            progress: Progress | None = None) -> dict[str, Any]:
    """Run every check of ``plan``; the result as one JSON-ready object."""
    from bob.qualify import checks, kernels, kill, machine, perf, resume

    progress = progress or Progress()
    began = time.perf_counter()
    verdicts: list[Verdict] = []
    timings: dict[str, float] = {}
    curves: dict[str, list[float]] = {}
    performance: dict[str, Any] = {}

    def phase(name: str, total: int, work: Callable[[Callable[[], None]], list[Verdict] | None]) -> None:
        tick = progress.phase(name, total)
        started = time.perf_counter()
        try:
            found = work(tick)
        except Exception as exc:  # noqa: BLE001 - a check that cannot run is a failed check, named
            if isinstance(exc, MemoryError) or (isinstance(exc, OSError)
                                                and exc.errno in RESOURCE_ERRNOS | SPACE_ERRNOS):
                raise  # the machine ran out (memory, descriptors, disk): bob-qualify's unexpected exit, no verdict
            found = [Verdict(name, False, f"the check could not run: {type(exc).__name__}: {exc}")]
        verdicts.extend(found or [])
        timings[name] = time.perf_counter() - started

    fingerprint = machine.fingerprint()
    phase("public vector", len(checks.VECTOR_CHECKS), checks.check_public_vector)
    phase("formats", 1, checks.check_golden)
    phase("kernels × threads", plan.kernel_states,
          lambda tick: kernels.check_kernels(seed, plan.kernel_states, perturb=perturb, tick=tick))

    def resumed(tick: Callable[[], None]) -> list[Verdict]:
        found, loss_curves = resume.check_resume(seed, plan.invocations, plan.random_records, tick=tick)
        curves.update(loss_curves)
        return found

    phase("fresh-process resume", 1 + plan.random_records, resumed)
    if plan.kill_races:
        phase("commit kill", 3 + plan.kill_races, lambda tick: kill.check_commit_kill(seed, plan.kill_races, tick))

    def speeds(tick: Callable[[], None]) -> None:
        performance["kernels"] = perf.kernel_speeds(plan.speed_rounds, tick)
        performance["updates_per_sample"] = perf.UPDATES_PER_SAMPLE

    def processes(tick: Callable[[], None]) -> None:
        performance["process"] = perf.process_speeds(plan.process_rounds, tick)

    phase("performance: kernels", plan.speed_rounds, speeds)
    phase("performance: processes", plan.process_rounds, processes)

    failed = [v for v in verdicts if not v.ok]
    return {
        "qualified": not failed,
        "exit_code": 1 if failed else 0,
        "mode": plan.mode,
        "plan": asdict(plan),
        "seed": seed,
        "reproduce": ("" if perturb is None else f"{PERTURB_ENV}={perturb[0]}:{perturb[1]} ")  # (the hook's failure)
                     + f"bob-qualify --seed {seed}" + ("" if plan.mode == "default" else f" --{plan.mode}"),
        "perturbation": None if perturb is None else {"kernel": perturb[0], "threads": perturb[1]},
        "thread_counts": kernels.thread_counts(),
        "checks": [v.to_dict() for v in verdicts],
        "failures": [v.to_dict() for v in failed],
        "fingerprint": fingerprint,
        "performance": performance,
        "loss_curves": curves,
        "timings": {"total_seconds": time.perf_counter() - began, "phases": timings},
    }
