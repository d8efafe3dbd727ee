"""What a failed kit assertion shows: the session log as ``tether-clr log show`` draws it, a sink's timeline, outcomes.

The log is rendered by the command line's own table (:func:`tether_clr.cli.logview.events_table`)
into plain text, so a failure in a test reads exactly like the log a person would look at.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from typing import Any

from rich.console import Console

from tether_clr.cli.logview import events_table
from tether_clr.recording.session.events import SessionEvent
from tether_clr.records.outcomes import ToolExecutionOutcome
from tether_clr.testing.sinks import RecordingSink

__all__ = ["outcome_line", "outcome_status", "render_evidence", "render_log", "render_outcomes"]

_WIDTH = 160


def render_log(events: Sequence[SessionEvent], session_id: str | None = None) -> str:
    """The events as the ``tether-clr log show`` table, in plain text."""
    if not events:
        return "  (the log is empty)"
    buffer = io.StringIO()
    console = Console(file=buffer, width=_WIDTH, color_system=None, highlight=False, soft_wrap=False)
    console.print(events_table(session_id or events[0].session_id, list(events)))
    return "\n".join(line.rstrip() for line in buffer.getvalue().rstrip().splitlines())


def outcome_status(outcome: ToolExecutionOutcome) -> str:
    """``ok <value>`` or ``DENIED [reason]: message``, on one line."""
    if outcome.failure is None:
        value = repr(outcome.value)
        return f"ok {value if len(value) <= 100 else value[:97] + '...'}"
    reason = f" [{outcome.failure.reason}]" if outcome.failure.reason else ""
    return f"{outcome.failure.code}{reason}: {outcome.failure.message}"


def outcome_line(outcome: ToolExecutionOutcome) -> str:
    """``c2 delete DENIED [reason]: message`` or ``c1 echo ok <value>``."""
    return f"{outcome.call_id} {outcome.name} {outcome_status(outcome)}"


def render_outcomes(outcomes: Iterable[ToolExecutionOutcome]) -> str:
    return "\n".join(f"  {outcome_line(outcome)}" for outcome in outcomes) or "  (no outcomes)"


def render_evidence(log: Any) -> str:
    """The section a failure message ends with: a session log, a sink's timeline, or nothing."""
    events = getattr(log, "events", log)
    if isinstance(log, RecordingSink):
        return "the sink's timeline:\n" + log.render()
    if isinstance(events, Sequence) and events and all(isinstance(event, SessionEvent) for event in events):
        return "the session log:\n" + render_log(events)
    if isinstance(events, Sequence) and not events and log is not None:
        return "the session log:\n  (the log is empty)"
    return ""
