"""``tether-clr parity Tools.dll calls.json``: the parity report (:mod:`tether_clr.clr.parity`) as a rich table."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from tether_clr.clr.parity import ParityReport

__all__ = ["parity_table"]

_STYLES = {"same": "green", "accepted": "yellow", "UNEXPECTED": "bold red"}


def parity_table(report: ParityReport, title: str) -> Table:
    """One row per call: its id and tool, what MEAI's invoker and tether_clr handed back, what differs
    (``call_id``, ``result``, ``exception``) and the verdict (``same``, ``deliberate: <category>``,
    ``accepted``, ``UNEXPECTED``). Only the two result columns wrap."""
    table = Table(title=title, title_justify="left")
    for header in ("call", "tool", "FunctionInvokingChatClient", "tether_clr", "differs", "verdict"):
        wraps = header in ("FunctionInvokingChatClient", "tether_clr")
        table.add_column(header, overflow="fold", no_wrap=not wraps, ratio=1 if wraps else None)
    for comparison in report.comparisons:
        cells = (comparison.call.call_id, comparison.call.name, comparison.meai.cell(), comparison.tether.cell(),
                 ", ".join(comparison.fields), comparison.status)
        # Text, not markup: a result or an exception message may hold [brackets].
        table.add_row(*(Text(cell) for cell in cells), style=_STYLES.get(comparison.status, "cyan"))
    return table
