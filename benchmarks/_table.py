"""What every benchmark here prints the same way: the machine's load while
it ran (this machine is noisy; a number means little without it) and a table
of medians, minima and each median's ratio to one baseline row."""

from __future__ import annotations

import os
import statistics


def load_line() -> str:
    """``load average 0.5 1.0 1.6 on 2 CPUs``."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.1f} {five:.1f} {fifteen:.1f} on {os.cpu_count()} CPUs"


def ratio_table(times: dict[str, list[float]], baseline: str, *, first_column: str, unit: str, scale: float,
                ratio_to: str) -> str:
    """One row per entry of ``times`` (seconds, one per round): its median and
    minimum in ``unit`` (seconds times ``scale``), and median / the baseline's median."""
    base = statistics.median(times[baseline])
    width = max(len(first_column), *(len(name) for name in times))
    median_head, min_head, ratio_head = f"median {unit}", f"min {unit}", f"median / {ratio_to}"
    lines = [f"{first_column:<{width}} {median_head:>12} {min_head:>10} {ratio_head:>{len(ratio_head)}}"]
    for name, xs in times.items():
        median = statistics.median(xs)
        lines.append(f"{name:<{width}} {median * scale:12.1f} {min(xs) * scale:10.1f} "
                     f"{median / base:>{len(ratio_head)}.2f}")
    return "\n".join(lines)
