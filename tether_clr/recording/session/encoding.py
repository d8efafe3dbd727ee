"""How events are encoded on their way into the log: rows, timestamps, payloads.

Payloads are compact ASCII JSON text (one shared encoder); indexed text columns
are valid Unicode with no NUL (PostgreSQL refuses both); timestamps are UTC ISO
8601 with microseconds, formatted once per second.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from json.encoder import encode_basestring_ascii
from typing import Any

from tether_clr.foundations.text import safe_text_or_value
from tether_clr.recording.session.repair import NewEvent
from tether_clr.records.content import parts_from_json, parts_to_json
from tether_clr.records.outcomes import ToolCall, ToolExecutionOutcome, ToolFailureCodes

__all__ = [
    "PendingEvent",
    "attempt_payload",
    "call_payload",
    "check_session_id",
    "column_text",
    "dumps",
    "failure_fields",
    "now_text",
    "pending_from",
    "proposal_entry",
    "proposal_text",
    "refused_fields",
    "result_payload",
]

_SECOND: tuple[int, str] = (-1, "")  # the last whole second formatted by now_text, and its text


def now_text() -> str:
    """``datetime.now(UTC).isoformat(timespec="microseconds")``, formatting the date and time once per second."""
    global _SECOND
    second, micro = divmod(time.time_ns() // 1000, 1_000_000)
    cached = _SECOND
    if cached[0] != second:
        cached = _SECOND = (second, datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S"))
    return f"{cached[1]}.{micro:06d}+00:00"


def column_text(text: str | None) -> str | None:
    """Text for an indexed column: valid Unicode, no NUL (PostgreSQL refuses both)."""
    if text is None:
        return None
    if type(text) is str and text.isascii() and "\x00" not in text:  # the usual call id: nothing to change
        return text
    text = safe_text_or_value(text)
    return text.replace("\x00", "\\u0000") if "\x00" in text else text


class PendingEvent:
    """An event on its way into the log (a sink's buffer, a repair, a cancelled step): its payload is already JSON text."""

    __slots__ = ("turn", "step", "kind", "call_id", "position", "payload", "at")

    def __init__(self, turn: int, step: int | None, kind: str, call_id: str | None, position: int | None, payload: str) -> None:
        self.turn, self.step, self.kind = turn, step, kind
        self.call_id, self.position, self.payload, self.at = column_text(call_id), position, payload, now_text()


_ENCODER = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False)

# The JSON string of a str exactly as ``_ENCODER`` writes it (the same C function): the payloads of the
# calls and results of every batch are assembled from it around their fixed keys, with no dict built and
# walked per event. Each fast path below gives the very text ``dumps`` of its dict gives (tested).
_quote = encode_basestring_ascii


def _text(value: Any) -> str | None:
    """``value``'s JSON text when it is a plain str (the fast paths' one case), else None."""
    return _quote(value) if type(value) is str else None


def dumps(payload: dict[str, Any]) -> str:
    """Compact ASCII JSON (one shared encoder: ``json.dumps`` with options builds a new one per call)."""
    return _ENCODER.encode(payload)


def pending_from(event: NewEvent) -> PendingEvent:
    """A repair's planned event, ready to append."""
    return PendingEvent(event.turn, event.step, event.kind, event.call_id, event.position, dumps(event.payload))


def check_session_id(session_id: str) -> str:
    if not isinstance(session_id, str) or not session_id:
        raise ValueError(f"session_id must be a non-empty str, got {session_id!r}")
    return session_id


def failure_fields(outcome: ToolExecutionOutcome) -> dict[str, Any]:
    failure = outcome.failure
    if failure is None:
        return {"ok": True}
    return {"ok": False, "code": str(failure.code), "reason": getattr(failure, "reason", None), "message": failure.message}


def _where(position: int | None, child: str | None) -> dict[str, Any]:
    return {"index": position} if child is None else {"child": child}


def refused_fields(call: ToolCall) -> dict[str, Any]:
    """What a call whose arguments were refused before they parsed adds to its record: ``arguments_refused``
    (``{"bytes", "sha256"}`` of the text sent) and ``argument_error`` (the refusal); nothing for any other call."""
    refused = call.arguments_refused
    if refused is None:
        return {}
    return {"arguments_refused": {"bytes": refused.size, "sha256": refused.sha256},
            "argument_error": safe_text_or_value(call.argument_error)}


def proposal_entry(index: int, call: ToolCall) -> dict[str, Any]:
    """One proposed call in an ``assistant/message`` payload: position, id, name, raw argument text, parent,
    and the client's ``argument_error`` if any. A call whose arguments are refused before they parse
    (:meth:`~tether_clr.ToolCall.with_arguments_refused`) has only their prefix as ``arguments`` (the
    whole text when it is short: what ``tether-clr run`` compares its script with), and ``arguments_refused``."""
    entry: dict[str, Any] = {
        "index": index, "call_id": safe_text_or_value(call.call_id), "name": safe_text_or_value(call.name),
        "arguments": safe_text_or_value(call.arguments), "parent_call_id": safe_text_or_value(call.parent_call_id),
    }
    if call.arguments_refused is not None:
        entry.update(refused_fields(call))
    elif call.argument_error is not None:
        entry["argument_error"] = safe_text_or_value(call.argument_error)
    return entry


def proposal_text(calls: Sequence[ToolCall]) -> str:
    """The ``assistant/message`` payload of ``calls`` (in model order) as JSON text: ``{"calls": [...]}`` of
    their :func:`proposal_entry`, each plain call's entry written straight from its JSON strings."""
    parts: list[str] = []
    for index, call in enumerate(calls):
        fast = None
        if call.argument_error is None and call.arguments_refused is None:
            fast = _entry_text(index, call)
        parts.append(dumps(proposal_entry(index, call)) if fast is None else fast)
    return '{"calls":[' + ",".join(parts) + "]}"


def _entry_text(index: int, call: ToolCall) -> str | None:
    """:func:`proposal_entry`'s JSON text for a call of ASCII strs (which ``safe_text_or_value`` leaves as
    they are) and no argument error; None for any other (the dict path)."""
    call_id, name, arguments, parent = call.call_id, call.name, call.arguments, call.parent_call_id
    for text in (call_id, name, arguments):
        if type(text) is not str or not text.isascii():
            return None
    if parent is not None and (type(parent) is not str or not parent.isascii()):
        return None
    return (f'{{"index":{index},"call_id":{_quote(call_id)},"name":{_quote(name)},"arguments":{_quote(arguments)},'
            f'"parent_call_id":{"null" if parent is None else _quote(parent)}}}')


def call_payload(position: int | None, call: ToolCall, child: str | None = None) -> str:
    """A ``tool/call`` payload as JSON text: position (a child call: its ``child`` key instead), name,
    the declared argument text, parent call. A call refused before its arguments parsed declares only
    a prefix of them (at most ``ArgumentLimits.max_logged_bytes``), with ``arguments_refused`` and
    ``argument_error`` (:func:`refused_fields`)."""
    if child is None and type(position) is int and call.arguments_refused is None:
        name, arguments, parent = _text(call.name), _text(call.arguments), call.parent_call_id
        parent_text = "null" if parent is None else _text(parent)
        if name is not None and arguments is not None and parent_text is not None:
            return f'{{"index":{position},"name":{name},"arguments":{arguments},"parent_call_id":{parent_text}}}'
    return dumps({**_where(position, child), "name": call.name, "arguments": call.arguments,
                  "parent_call_id": call.parent_call_id, **refused_fields(call)})


def result_payload(
    position: int | None, outcome: ToolExecutionOutcome, child: str | None = None, contexts: tuple[str, ...] = ()
) -> str:
    """A ``tool/result`` payload as JSON text: position, name, failure fields, the content when a
    content hook set it (images as base64 with their MIME type; otherwise it is the value's default
    text and is not written twice), and the value.

    A child call has its ``child`` key instead of the position; ``contexts``, the
    additional contexts post-execute listeners added for the call, are kept with its
    result (what a resumed step's ``user/message`` events are written from).

    The value is already canonical JSON text: spliced in, not parsed and dumped again.
    """
    if (child is None and type(position) is int and outcome.failure is None and not contexts and outcome.attempts == 1
            and outcome.explicit_content is None):  # the usual result: written straight from its parts
        name = _text(outcome.name)
        if name is not None:
            return f'{{"index":{position},"name":{name},"ok":true,"value":{outcome.value_json}}}'
    fields: dict[str, Any] = {**_where(position, child), "name": outcome.name, **failure_fields(outcome)}
    if contexts:
        fields["contexts"] = list(contexts)
    if outcome.attempts != 1:  # a retried call: how many attempts it took (tool/attempt events)
        fields["attempts"] = outcome.attempts
    if outcome.explicit_content is not None:
        fields["content"] = parts_to_json(outcome.explicit_content)
    return dumps(fields)[:-1] + ',"value":' + outcome.value_json + "}"


def outcome_from_result(call_id: str, name: str, payload: dict[str, Any]) -> ToolExecutionOutcome:
    """The outcome a ``tool/result`` payload (:func:`result_payload`'s) records, as the batch returned it."""
    if payload.get("ok") is True:
        outcome = ToolExecutionOutcome.success(call_id, name, payload.get("value"))
    else:
        reason = payload.get("reason")
        outcome = ToolExecutionOutcome.failed(
            call_id, name, ToolFailureCodes(str(payload.get("code"))), str(payload.get("message")),
            reason if isinstance(reason, str) else None,
        )
    attempts = payload.get("attempts")
    if type(attempts) is int and attempts > 1:
        outcome = outcome.with_attempts(attempts)
    content = payload.get("content")
    return outcome if content is None else outcome.with_content(parts_from_json(content))


def attempt_payload(position: int | None, attempt: int, outcome: ToolExecutionOutcome, child: str | None = None) -> str:
    """A ``tool/attempt`` payload as JSON text: position (a child call: its ``child`` key instead), name, the
    attempt's number and its failure fields (``ok``, ``code``, ``reason``, ``message``); the value is the
    result's to record, not the attempt's."""
    return dumps({**_where(position, child), "name": outcome.name, "attempt": attempt, **failure_fields(outcome)})
