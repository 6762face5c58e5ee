"""``--heatmap``: the P table drawn with matplotlib (the optional extra ``plot``), which only this module of
``bob-inspect`` imports, and only when the option is given."""

from __future__ import annotations

import io
import os
from typing import Any

import numpy as np

from bob.distribution import plotting_problem
from bob.environment import in_default_environment
from bob.failures import drawing
from bob.fileio import same_file
from bob.formats.constants import VOCABULARY
from bob.analysis import softmax_rows
from bob.inspect.checkpoint import p_table
from bob.inspect.common import Refused
from bob.text import escape_bytes, show_byte, show_path

INIT_BOUND = 0.01  # §6.1: every initial P value lies in [-0.01, 0.01)
MAX_ZOOM = 24  # rows in the zoom panel
MAX_ZOOM_COLUMNS = 32  # columns in the zoom panel
LABELLED_CELLS = 400  # a zoom this small gets each cell labelled
TICK_STEP = 32


def check_heatmap(out: str, inspected: str) -> None:
    """Refuse, before anything is read, a heatmap without matplotlib or onto the inspected file itself."""
    if (problem := plotting_problem()) is not None:
        raise Refused(problem, option="--heatmap")
    if same_file(out, inspected):
        raise Refused("that is the checkpoint being inspected; bob-inspect never replaces what it reads",
                      option="--heatmap", path=out)


def _plain(text: str) -> str:
    """Text for a matplotlib label: ``$`` escaped so it is never read as mathtext."""
    return text.replace("$", r"\$")


def _byte_label(b: int) -> str:
    return _plain(f"0x{b:02x} {show_byte(b)}") if 0x20 < b < 0x7F else f"0x{b:02x}"


def favoured_columns(table, rows):
    """The next bytes the given rows favour (docs/bob-inspect.md, "--heatmap"), sorted by byte."""
    score: dict[int, float] = {}
    for r in rows:
        row = table[r]
        finite = np.isfinite(row)
        if not finite.any():
            continue
        vals = row[finite].astype(np.float64)  # (a float32 median of values near FLT_MAX overflows to inf)
        top, mid = float(vals.max()), float(np.median(vals))
        cut = mid + 0.5 * (top - mid)
        for j in np.flatnonzero(finite & (row >= cut)):
            score[int(j)] = max(score.get(int(j), -np.inf), float(row[j]))
    best = sorted(score, key=lambda j: (-score[j], j))[:MAX_ZOOM_COLUMNS]
    return np.array(sorted(best), dtype=np.int64)


def _zoom(ax, table, masked, moved, cols, cmap, limit) -> None:
    ax.imshow(masked[np.ix_(moved, cols)], cmap=cmap, vmin=-limit, vmax=limit, interpolation="nearest", aspect="auto")
    ax.set_yticks(range(moved.size), [_byte_label(int(b)) for b in moved], fontsize=8)
    ax.set_xticks(range(cols.size), [_byte_label(int(b)) for b in cols], rotation=90, fontsize=8)
    ax.set(xlabel="next byte (the columns these rows favour)", ylabel="context byte")
    ax.set_title(f"zoom: the {moved.size} row(s) that left the initialization (|P| > {INIT_BOUND}),\n"
                 "logit and softmax probability in each cell", fontsize=10)
    if moved.size * cols.size > LABELLED_CELLS:
        return
    probs = softmax_rows(table[moved])
    for i, r in enumerate(moved):
        for j, c in enumerate(cols):
            v = table[r, c]
            text = f"{v:.3g}" if np.isfinite(v) else "n/a"  # (FLT_MAX in 7 characters, a subnormal not 0.00)
            if probs[i] is not None:
                text += f"\np={probs[i][c]:.3f}"
            dark = np.isfinite(v) and abs(v) > 0.6 * limit
            ax.text(j, i, text, ha="center", va="center", fontsize=7, color="white" if dark else "black")


@in_default_environment
def draw_heatmap(p_plane, out: str, title: str) -> "tuple[bytes, dict[str, Any]]":
    """:func:`heatmap_figure` drawn in the format ``out``'s extension names: the file's bytes, and what it shows."""
    # float32 arithmetic near FLT_MAX (a median, matplotlib's normalisation) overflows to a saturated
    # colour, as it should: not a warning on stderr, nor an error under PYTHONWARNINGS=error
    with np.errstate(all="ignore"), drawing():
        fig, shown = heatmap_figure(p_plane, title)
        ext = os.path.splitext(out)[1].lower().lstrip(".") or "png"
        supported = fig.canvas.get_supported_filetypes()
        if ext not in supported:
            raise Refused(f"cannot write .{escape_bytes(os.fsencode(ext))} files; use one of "
                          + ", ".join(sorted(supported)), option="--heatmap", path=out)
        buf = io.BytesIO()
        try:
            fig.savefig(buf, format=ext)
        except RuntimeError as exc:  # a format that needs a program this machine lacks (.pgf: LaTeX)
            if type(exc) is not RuntimeError:  # (RecursionError, NotImplementedError: unexpected)
                raise
            raise Refused(f"cannot write .{escape_bytes(os.fsencode(ext))} files here: {exc}", option="--heatmap",
                          path=out) from None
    return buf.getvalue(), {"path": show_path(out), "format": ext, **shown}


def heatmap_figure(p_plane, title: str) -> "tuple[Any, dict[str, Any]]":
    """The P table as a matplotlib figure, and what it shows (``rows_shown``, ``non_finite_rows``): the two panels and
    their colours of docs/bob-inspect.md, "--heatmap"; the whole table's axes is ``fig.axes[0]``."""
    from matplotlib import colormaps
    from matplotlib.figure import Figure

    table = p_table(p_plane)
    finite = np.isfinite(table)
    limit = (float(np.abs(table[finite]).max()) if finite.any() else 0.0) or 1.0  # (an all-zero table too)
    masked = np.ma.masked_invalid(table)
    cmap = colormaps["RdBu_r"].with_extremes(bad="black")

    # Rank rows by their finite values only: a row holding NaN or inf is marked (black cells, the title,
    # "non_finite_rows"), but it must not push the rows that learned something out of the zoom.
    reach = np.where(finite, np.abs(table), 0.0).max(axis=1)
    non_finite_rows = [int(r) for r in np.flatnonzero(~finite.all(axis=1))]
    moved = np.flatnonzero(reach > INIT_BOUND)
    if moved.size > MAX_ZOOM:
        moved = np.sort(moved[np.argsort(-reach[moved], kind="stable")[:MAX_ZOOM]])
    cols = favoured_columns(table, moved)
    if not cols.size:
        cols = np.arange(VOCABULARY)

    fig = Figure(figsize=(14, 6.5), dpi=120, layout="constrained")
    ax_full, ax_rows = fig.subplots(1, 2, width_ratios=[1, 1])
    im = ax_full.imshow(masked, cmap=cmap, vmin=-limit, vmax=limit, interpolation="nearest", aspect="equal")
    ticks = list(range(0, VOCABULARY, TICK_STEP)) + [VOCABULARY - 1]
    ax_full.set_xticks(ticks, [_byte_label(t) for t in ticks], rotation=90, fontsize=7)
    ax_full.set_yticks(ticks, [_byte_label(t) for t in ticks], fontsize=7)
    ax_full.set(xlabel="next byte", ylabel="context byte")
    ax_full.set_title(f"P: all {VOCABULARY} x {VOCABULARY} logits (row = context byte)", fontsize=10)
    if moved.size:
        _zoom(ax_rows, table, masked, moved, cols, cmap, limit)
    else:
        ax_rows.set_axis_off()
        said = "left the initialization (|P| <= " if finite.all() else "a finite value past the initialization (|P| > "
        ax_rows.text(0.5, 0.5, f"no row has {said}{INIT_BOUND})", ha="center", va="center")  # (NaN: none left it)
    fig.colorbar(im, ax=[ax_full, ax_rows], shrink=0.8, label="logit (black: non-finite)")
    bad = int((~finite).sum())
    fig.suptitle(_plain(title) + (f" - {bad} non-finite values in {len(non_finite_rows)} row(s)" if bad else ""),
                 fontsize=11)
    return fig, {"rows_shown": [int(b) for b in moved], "non_finite_rows": non_finite_rows}
