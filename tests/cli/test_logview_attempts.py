"""``tether-clr log show`` describes ``tool/attempt`` events and how many attempts a result took."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tether_clr.cli.logview import event_detail

from tether_clr import SessionEvent


def _event(kind: str, payload: dict[str, Any]) -> SessionEvent:
    return SessionEvent(1, "s", 1, 1, kind, "a", payload, datetime.now(UTC))


def test_log_show_describes_attempts_and_the_attempts_of_a_result() -> None:
    failed = _event("tool/attempt", {"index": 0, "name": "t", "attempt": 1, "ok": False, "code": "TOOL_ERROR", "message": "boom"})
    assert event_detail(failed) == "t attempt 1: TOOL_ERROR: boom"
    assert event_detail(_event("tool/attempt", {"index": 0, "name": "t", "attempt": 2, "ok": True})) == "t attempt 2: ok"
    result = _event("tool/result", {"index": 0, "name": "t", "ok": True, "value": 3, "attempts": 2})
    assert event_detail(result) == "ok 3 (after 2 attempts)"
