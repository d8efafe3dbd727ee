"""``tether-clr log show``: a session's event log as a readable table (or JSON lines)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rich.table import Table
from rich.text import Text

from tether_clr.cli.display import shorten
from tether_clr.cli.runner import RunSettings
from tether_clr.recording.session.events import SessionEvent

__all__ = ["event_detail", "event_json", "events_table"]

def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def event_detail(event: SessionEvent) -> str:
    """One line saying what the event records; a payload of an unexpected shape (a hand-edited log) is shown raw."""
    try:
        return _detail(event)
    except (AttributeError, TypeError, KeyError):
        return _compact(event.payload)


def _detail(event: SessionEvent) -> str:
    payload = event.payload
    kind = event.kind
    if kind == "assistant/message":
        calls = payload.get("calls", [])
        return "proposes " + (", ".join(f"{c.get('call_id')} {c.get('name')}" for c in calls) or "nothing")
    if kind == "tool/call":
        return f"{payload.get('name')}({payload.get('arguments')})"
    if kind == "tool/ptc-dispatch":
        return f"child {payload.get('child')} of {payload.get('parent_call_id')}: {payload.get('name')}({payload.get('arguments')})"
    if kind == "user/message":
        return f"context: {payload.get('text')}"
    if kind == "approval/asked":
        return f"{payload.get('name')}: {payload.get('reason') or 'approval required'}"
    if kind == "approval/decided":
        how = f" always ({payload['always']})" if payload.get("always") else ""
        how += f" by grant {payload['grant']}" if payload.get("grant") else ""
        return f"{payload.get('name')}: {payload.get('decision')}{how}"
    if kind in ("approval/grant", "approval/revoke"):
        what = "grant" if kind == "approval/grant" else "revoked grant"
        return (f"{what} {payload.get('grant_id')}: {payload.get('decision')} {payload.get('tool')} "
                f"v{payload.get('major')} for {payload.get('scope')} of {payload.get('principal_id')}")
    if kind == "tool/attempt":
        outcome = "ok" if payload.get("ok") is not False else f"{payload.get('code')}: {payload.get('message')}"
        return f"{payload.get('name')} attempt {payload.get('attempt')}: {outcome}"
    if kind == "tool/result":
        attempts = f" (after {payload['attempts']} attempts)" if payload.get("attempts") else ""
        if payload.get("ok") is False:
            reason = f" [{payload['reason']}]" if payload.get("reason") else ""
            return f"{payload.get('code')}{reason}: {payload.get('message')}{attempts}"
        return f"ok {_compact(payload.get('value'))}{attempts}"
    if kind in ("step/start", "step/end"):
        return f"{payload.get('calls', 0)} calls"
    if kind == "turn/start" and (run := RunSettings.from_note(payload)) is not None:
        settings, script_turn = run
        return f"tether-clr run {settings.script}, script turn {script_turn + 1}, as {settings.principal}@{settings.tenant}"
    return "" if not payload else _compact(payload)


def events_table(session_id: str, events: Sequence[SessionEvent]) -> Table:
    table = Table(title=f"session {session_id}: {len(events)} events", title_justify="left")
    for header in ("seq", "turn", "step", "event", "call", "detail", "at"):
        table.add_column(header, justify="right" if header in ("seq", "turn", "step") else "left")
    for event in events:
        style = "red" if event.kind == "tool/result" and event.payload.get("ok") is False else ""
        table.add_row(
            str(event.seq),
            str(event.turn),
            "" if event.step is None else str(event.step),
            event.kind,
            event.call_id or "",
            Text(shorten(event_detail(event), 80), style=style),
            event.at.strftime("%H:%M:%S.%f")[:-3],
        )
    return table


def event_json(event: SessionEvent) -> str:
    """One event as a JSON line (for ``log show --json``)."""
    return _compact(
        {
            "seq": event.seq,
            "session_id": event.session_id,
            "turn": event.turn,
            "step": event.step,
            "kind": event.kind,
            "call_id": event.call_id,
            "payload": event.payload,
            "at": event.at.isoformat(),
        }
    )
