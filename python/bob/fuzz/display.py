"""A campaign's live progress: a rich panel on a terminal, one plain line every 10 s otherwise."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bob.fuzz.campaign import CampaignResult

__all__ = ["CampaignDisplay"]


class CampaignDisplay:
    """Live progress: a rich panel on a terminal, one plain line every 10 s otherwise."""

    def __init__(self, target: str, live: bool | None) -> None:
        self.target: str = target
        self.last_plain: float = 0.0
        self.live: Any = None  # a rich.live.Live on a terminal (rich is the optional fuzz extra)
        if live is None:
            live = sys.stderr.isatty()
        if live:
            try:
                from rich.console import Console
                from rich.live import Live
            except ImportError:
                return
            self.live = Live(console=Console(stderr=True), refresh_per_second=2, transient=False)
            self.live.start()

    def _text(self, r: CampaignResult, rate: int) -> str:
        return (f"bob-fuzz {self.target}: {r.executions} execs ({rate}/s), cov {r.coverage} ft {r.features}, "
                f"corpus {r.corpus}, findings {len(r.findings)}, {r.seconds:.0f}s")

    def update(self, r: CampaignResult, rate: int) -> None:
        """Show ``r`` (and the executions per second over all workers)."""
        if self.live is not None:
            from rich.table import Table

            table = Table(title=f"bob-fuzz run {self.target}", show_header=False)
            for k, v in (("executions", f"{r.executions} ({rate}/s)"), ("coverage", f"{r.coverage} edges, "
                         f"{r.features} features"), ("corpus", r.corpus), ("findings", len(r.findings)),
                         ("elapsed", f"{r.seconds:.0f} s")):
                table.add_row(k, str(v))
            self.live.update(table)
        elif r.seconds - self.last_plain >= 10:
            self.last_plain = r.seconds
            print(self._text(r, rate), file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()
