"""How a qualification is shown: live progress and the summary table (rich),
the JSON object, and ``--report DIR`` (the JSON plus PNG plots).

One of the two modules of bob that draw with matplotlib (the other is
:mod:`bob.inspect.heatmap`; ``tests/house/test_claims.py`` holds that), and
only inside :func:`plots`, behind the optional ``plot`` extra.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from bob.failures import drawing
from bob.formats.constants import UPDATES_PER_INVOCATION, VOCABULARY
from bob.qualify.runner import Progress as ProgressSink
from bob.qualify.verdict import Verdict
from bob.text import one_line, show_path

REPORT_JSON = "qualify.json"
LOSS_PLOT = "loss-curves.png"
SPEED_PLOT = "us-per-update.png"
REPORT_FILES = (REPORT_JSON, LOSS_PLOT, SPEED_PLOT)
MIN_WIDTH = 80  # columns: narrower, rich drops the table's cells (at COLUMNS=0, every line)


class LiveProgress(ProgressSink):
    """One rich progress bar per phase on stderr on a terminal; elsewhere (a
    pipe, a log) plain lines (:class:`bob.commands.Progress`: a phase that takes
    more than two seconds says where it is every five)."""

    def __init__(self, console: Console) -> None:
        self.plain = not console.is_terminal
        self.bars = Progress(TextColumn("{task.description:<24}"), BarColumn(), MofNCompleteColumn(),
                             TimeElapsedColumn(), console=console, transient=False, disable=self.plain)
        self.current: Any = None

    def __enter__(self) -> "LiveProgress":
        self.bars.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._end_plain(*exc)
        self.bars.stop()

    def _end_plain(self, *exc: object) -> None:
        """The plain phase shown ends: "(done)" only when it was not cut short by ``exc``."""
        if self.current is not None:
            self.current.__exit__(*(exc or (None, None, None)))
            self.current = None

    def phase(self, name: str, total: int) -> Callable[[], None]:
        if self.plain:
            from bob.progress import Progress as PlainProgress

            self._end_plain()
            self.current = PlainProgress("bob-qualify", name, max(total, 1), every=5.0)
            return self.current.advance
        task = self.bars.add_task(name, total=max(total, 1))
        return lambda: self.bars.advance(task)


def shown(text: str, style: str = "") -> Text:
    """Text for the report's console, as it is: never read as rich markup or emoji codes (a path's ``[/x]``,
    a failure's ``[kernel avx2, …]``), and a line holding a character a terminal would not print (ESC, a line
    break: from a path, the CPU's model, an OS error) escaped by :func:`bob.text.one_line`."""
    return Text(text if text.isprintable() else one_line(text), style=style)


def _verdict(row: dict[str, Any]) -> Verdict:
    return Verdict(**row)


def _what(row: dict[str, Any]) -> str:
    where = "" if row["ok"] else _verdict(row).where()
    return f"{row['summary']} [{where}]" if where else row["summary"]


def summary_table(result: dict[str, Any]) -> Table:
    table = Table(title=f"bob-qualify ({result['mode']}, seed {result['seed']})", show_lines=False)
    table.add_column("check", no_wrap=True)
    table.add_column("kernel", no_wrap=True)
    table.add_column("threads", justify="right")
    table.add_column("verdict")
    table.add_column("what was shown", overflow="fold")
    table.add_column("s", justify="right")
    for row in result["checks"]:
        verdict = Text("pass", style="green") if row["ok"] else Text("FAIL", style="bold red")
        table.add_row(shown(row["check"]), shown(row["kernel"] or ""),
                      "" if row["threads"] is None else str(row["threads"]), verdict, shown(_what(row)),
                      f"{row['seconds']:.2f}")
    return table


def performance_table(result: dict[str, Any]) -> Table:
    perf = result["performance"]
    table = Table(title=f"µs per update at vocabulary {VOCABULARY} (median / min of {result['plan']['speed_rounds']}, "
                        "interleaved)")
    table.add_column("kernel")
    for threads in sorted({row["threads"] for row in perf.get("kernels", [])}):
        table.add_column(f"{threads} thr" if threads else "0 (auto)", justify="right")
    by_kernel: dict[str, dict[int, dict]] = {}
    for row in perf.get("kernels", []):
        by_kernel.setdefault(row["kernel"], {})[row["threads"]] = row["us_per_update"]
    columns = sorted({row["threads"] for row in perf.get("kernels", [])})
    for kernel, cells in by_kernel.items():
        table.add_row(kernel, *(f"{cells[t]['median']:.1f} / {cells[t]['min']:.1f}" if t in cells else ""
                                for t in columns))
    return table


def process_line(result: dict[str, Any]) -> str:
    process = result["performance"].get("process")
    if not process:
        return ""
    bob_run, python = process["bob_run_seconds"], process["python_seconds"]
    return (f"a whole bob-run process: {bob_run['median'] * 1e3:.1f} ms median ({bob_run['min'] * 1e3:.1f} min); "
            f"python -c pass: {python['median'] * 1e3:.1f} ms ({python['min'] * 1e3:.1f}); "
            f"ratio {process['ratio_of_medians']:.2f}× of medians, {process['ratio_of_minima']:.2f}× of minima")


def fingerprint_lines(result: dict[str, Any]) -> list[str]:
    fp = result["fingerprint"]
    flags = " ".join(f"{name}{'+' if on else '-'}" for name, on in fp["cpu_flags"].items())
    return [
        f"machine: {fp['cpu_model']} ({fp['machine']}), {fp['cpu_count']} CPUs ({fp['usable_cpus']} usable); {flags}",
        f"kernels: {', '.join(fp['kernels'])}; auto resolves to {fp['auto_kernel']}; "
        f"threads qualified: {', '.join(map(str, result['thread_counts']))} and 0 (auto)",
        f"bob {fp['bob_version']}, contract {show_path(fp['contract']['document'])} "
        f"(identity sha256 {fp['contract']['identity_sha256'][:16]}…), "
        f"Python {fp['python']['version']}, core {show_path(os.path.basename(fp['core']['file']))} "
        f"({', '.join(fp['core'].get('wheel_tags') or ['?'])})",
    ]


def failure_lines(result: dict[str, Any]) -> list[str]:
    lines = []
    for row in result["failures"]:
        where = _verdict(row).where()
        line = f"FAILED {row['check']}: {row['summary']}" + (f" — {where}" if where else "")
        if row["expected"] is not None:
            line += f"; expected {row['expected']}, got {row['actual']}"
        lines.append(line)
    if lines:
        lines.append(f"reproduce with: {result['reproduce']}")
    return lines


def print_human(result: dict[str, Any], console: Console) -> None:
    if result["perturbation"]:
        console.print(shown(f"test hook active: one bit of {result['perturbation']['kernel']} at "
                            f"{result['perturbation']['threads']} threads is deliberately flipped", "bold yellow"))
    for line in fingerprint_lines(result):
        console.print(shown(line))
    console.print(summary_table(result))
    if result["performance"].get("kernels"):
        console.print(performance_table(result))
    console.print(shown(process_line(result)))
    for line in failure_lines(result):
        console.print(shown(line, "bold red"))
    seconds = result["timings"]["total_seconds"]
    if result["qualified"]:
        console.print(Text(f"QUALIFIED: this build's native path gives the contract's bytes here "
                           f"(seed {result['seed']}, {seconds:.1f} s)", style="bold green"))
    else:
        console.print(Text(f"NOT QUALIFIED: {len(result['failures'])} check(s) failed ({seconds:.1f} s)",
                           style="bold red"))


def write_report(directory: Path, result: dict[str, Any], command: str = "bob-qualify",
                 images: "dict[str, bytes] | None" = None) -> list[Path]:
    """``qualify.json`` and the PNG plots (``images``, else drawn here) in ``directory`` (created if needed), all or none
    (:func:`bob.commit.replace_all`): a write that fails (a full disk) leaves the old report whole, and
    a directory, a FIFO or a second hard link in the way is refused by its path before anything is written.
    ``qualify.json`` is the object ``--json`` prints: ``result``, its ``report_files`` (set here) and
    ``command``'s envelope."""
    from bob.commands import about, envelope
    from bob.commit import replace_all
    from bob.fileio import make_directory
    from bob.text import show_path

    images = plots(result) if images is None else images
    make_directory(directory)  # (a relative path once the working directory is gone: refused in those words)
    result["report_files"] = [show_path(directory / name) for name in (REPORT_JSON, *images)]  # (escaped)
    document = {**result, **envelope(command, result["exit_code"])}
    files = {REPORT_JSON: (json.dumps(document, indent=1, sort_keys=True) + "\n").encode("utf-8"), **images}
    # a signal during the renames is only recorded: the verdict is decided, the report whole
    replace_all([(os.fspath(directory / name), data, about("--report", directory / name))
                 for name, data in files.items()])
    return [directory / name for name in files]


def _png(fig: Any) -> bytes:
    import io

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


@drawing()
def plots(result: dict[str, Any]) -> dict[str, bytes]:
    """The report's PNG plots, by file name."""
    from bob.distribution import quiet_plot_directories

    quiet_plot_directories()
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")  # files only, never a window
    import matplotlib.pyplot as plt

    written = {}
    fp = result["fingerprint"]
    curves = result["loss_curves"]
    if curves:
        fig, ax = plt.subplots(figsize=(8, 4.5), dpi=110)
        updates = max(len(losses) for losses in curves.values())
        for boundary in range(UPDATES_PER_INVOCATION, updates, UPDATES_PER_INVOCATION):
            ax.axvline(boundary + 0.5, color="0.85", linewidth=0.8, zorder=0)
        for name, losses in curves.items():
            ax.plot(range(1, len(losses) + 1), losses, marker=".", markersize=3, linewidth=1.2, label=name)
        ax.set_xlabel(f"update (grey lines: one bob-run invocation = {UPDATES_PER_INVOCATION} updates)")
        ax.set_ylabel("mean cross-entropy before the update (nats)")
        ax.set_title(f"Loss over {updates // UPDATES_PER_INVOCATION} invocations of the qualification records")
        ax.legend(fontsize=8)
        ax.grid(axis="y", alpha=0.3)
        fig.tight_layout()
        written[LOSS_PLOT] = _png(fig)
        plt.close(fig)
    speeds = result["performance"].get("kernels")
    if speeds:
        fig, ax = plt.subplots(figsize=(8, 4.5), dpi=110)
        kernels = list(dict.fromkeys(row["kernel"] for row in speeds))
        threads = sorted({row["threads"] for row in speeds if row["kernel"] != "auto"})
        width = 0.8 / len(threads)
        for j, t in enumerate(threads):
            rows = {row["kernel"]: row["us_per_update"] for row in speeds if row["threads"] == t}
            xs = [i + (j - (len(threads) - 1) / 2) * width for i, k in enumerate(kernels) if k in rows]
            ks = [k for k in kernels if k in rows]
            ax.bar(xs, [rows[k]["median"] for k in ks], width, label=f"{t} thread{'s' if t > 1 else ''}")
            ax.scatter(xs, [rows[k]["min"] for k in ks], color="black", s=10, zorder=3)
        auto = [row for row in speeds if row["kernel"] == "auto"]
        if auto:
            i = kernels.index("auto")
            ax.bar([i], [auto[0]["us_per_update"]["median"]], width, color="0.5",
                   label=f"auto = {fp['auto_kernel']}, threads 0")
            ax.scatter([i], [auto[0]["us_per_update"]["min"]], color="black", s=10, zorder=3)
        ax.set_xticks(range(len(kernels)), kernels)
        ax.set_yscale("log")
        plain = matplotlib.ticker.FuncFormatter(lambda y, _: f"{y:g}")
        ax.yaxis.set_major_formatter(plain)
        ax.yaxis.set_minor_formatter(plain)
        ax.tick_params(axis="y", which="minor", labelsize=7)
        ax.set_ylabel("µs per update (log; bar: median, dot: minimum)")
        ax.set_title(f"µs per update at vocabulary {VOCABULARY} — {fp['cpu_model']}, {fp['cpu_count']} CPUs")
        ax.legend(fontsize=8)
        ax.grid(axis="y", alpha=0.3, which="both")
        fig.tight_layout()
        written[SPEED_PLOT] = _png(fig)
        plt.close(fig)
    return written
