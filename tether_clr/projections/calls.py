"""Reading a provider's tool calls into :class:`~tether_clr.ToolCall` s: shared by the OpenAI and Anthropic readers.

Items come as dicts (the JSON) or as the client SDK's objects (read by
attribute); nothing is imported from an SDK. A function call that is malformed
(no id, arguments that are not text, input that is not an object) still
becomes a call: one carrying an ``argument_error``, which the pipeline ends
INVALID_ARGS without running it (a call with no name at all cannot be resolved:
UNKNOWN_TOOL, as for any unknown name). It never raises and loses the others.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from tether_clr.foundations.json_values import to_json_text
from tether_clr.foundations.text import safe_repr
from tether_clr.records.outcomes import ToolCall

__all__ = ["field", "items_of", "make_call"]


def field(item: Any, name: str) -> Any:
    """``item[name]`` for a mapping, ``item.name`` for an SDK object; ``None`` when absent."""
    if isinstance(item, Mapping):
        return item.get(name)
    return getattr(item, name, None)


def items_of(value: Any, attribute: str) -> list[Any]:
    """The items of ``value``: itself when it is a list (a sequence, not text), else its ``attribute``
    (a message's ``tool_calls``, a response's ``output``, a Message's ``content``); ``[]`` when it has none."""
    if not isinstance(value, Sequence) or isinstance(value, str | bytes):  # an SDK object iterates its fields: not a list
        value = field(value, attribute)
    if not isinstance(value, Sequence) or isinstance(value, str | bytes):
        return []
    return list(value)


def make_call(index: int, call_id: Any, name: Any, arguments: Any, *, provider: str, parsed: bool = False) -> ToolCall:
    """One call; a malformed one carries an ``argument_error`` naming what was wrong.

    ``arguments`` is the raw argument text (OpenAI), or, with ``parsed=True``,
    an already parsed object (Anthropic's ``input``) whose canonical JSON becomes the raw text.
    """
    problems: list[str] = []
    if not isinstance(call_id, str) or not call_id:
        problems.append(f"no call id (got {safe_repr(call_id)})")
        call_id = f"invalid_call_{index}"
    if not isinstance(name, str):
        problems.append(f"no function name (got {safe_repr(name)})")
        name = ""
    raw: str
    if parsed:
        if isinstance(arguments, Mapping):
            try:
                raw = to_json_text(dict(arguments))
            except TypeError:  # model data JSON cannot hold: kept as escaped text, which the pipeline refuses
                raw = json.dumps(arguments, ensure_ascii=True, allow_nan=True, default=repr)
        else:
            problems.append(f"input is not a JSON object (got {type(arguments).__name__})")
            raw = "{}"
    elif isinstance(arguments, str):
        raw = arguments
    else:
        problems.append(f"arguments are not text (got {type(arguments).__name__})")
        raw = "{}"
    error = f"malformed {provider} function call: " + "; ".join(problems) if problems else None
    return ToolCall(call_id, name, raw, argument_error=error)
