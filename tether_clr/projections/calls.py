"""Reading a provider's tool calls into :class:`~tether_clr.ToolCall` s: shared by the OpenAI and Anthropic readers.

Items come as dicts (the JSON) or as the client SDK's objects (read by
attribute); nothing is imported from an SDK. A function call that is malformed
(no id, arguments that are not text, input that is not an object) still
becomes a call: one carrying an ``argument_error``, which the pipeline ends
INVALID_ARGS without running it (a call with no name at all cannot be resolved:
UNKNOWN_TOOL, as for any unknown name). It never raises and loses the others.

What a reader is handed is checked first (:func:`openai_items`,
:func:`anthropic_blocks`): a value of none of the shapes it reads is a
``TypeError`` naming what to pass, never a silent ``[]``; an answer with no
tool calls (a text answer, an empty list) is ``[]``, which ends a loop.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from tether_clr.foundations.json_values import to_json_text
from tether_clr.foundations.text import safe_repr
from tether_clr.records.outcomes import ToolCall

__all__ = ["anthropic_blocks", "field", "make_call", "openai_items"]

_OPENAI_WANTED = ("a Chat Completions ChatCompletion, one of its choices or its message, a Responses Response "
                  "or its output items (a list), as the openai SDK's objects or as dicts")
_ANTHROPIC_WANTED = "an Anthropic Message or its content blocks (a list), as the anthropic SDK's objects or as dicts"


def field(item: Any, name: str) -> Any:
    """``item[name]`` for a mapping, ``item.name`` for an SDK object; ``None`` when absent."""
    if isinstance(item, Mapping):
        return item.get(name)
    return getattr(item, name, None)


def _is_list(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes | bytearray)


def _what(value: Any) -> str:
    return type(value).__name__


def _is_item(item: Any) -> bool:
    """A dict, or an SDK object (one with a ``type``): what a list of items or blocks holds."""
    return isinstance(item, Mapping) or (not isinstance(item, str | bytes | bytearray | int | float | bool | Sequence)
                                          and item is not None and field(item, "type") is not None)


def _checked_items(items: Any, wanted: str, reader: str) -> list[Any]:
    if not _is_list(items):
        raise TypeError(f"{reader} takes {wanted}; got {_what(items)}")
    listed = list(items)
    for item in listed:
        if not _is_item(item):
            raise TypeError(f"{reader} takes {wanted}; got a list holding {_what(item)}")
    return listed


def _anthropic_shaped(value: Any) -> bool:
    """A Messages API Message, or an assistant message whose content holds ``tool_use`` blocks."""
    has_stop = ("stop_reason" in value) if isinstance(value, Mapping) else hasattr(value, "stop_reason")
    if field(value, "type") == "message" and _is_list(field(value, "content")) and has_stop:
        return True  # a Responses message item has type, role and content too, but no stop_reason
    content = field(value, "content")
    return _is_list(content) and any(field(block, "type") == "tool_use" for block in content)


def openai_items(value: Any) -> list[Any]:
    """The tool-call items of what ``calls_from_openai`` was handed; ``TypeError`` for any other value.

    A ChatCompletion gives its first choice's message's ``tool_calls``; a choice,
    its message's; an assistant message, its ``tool_calls`` (none: ``[]``); a
    Response, its ``output``; a list is taken as output items or tool calls.
    """
    reader = "calls_from_openai"
    if _is_list(value):
        items = _checked_items(value, _OPENAI_WANTED, reader)
        if any(field(item, "type") == "tool_use" for item in items):
            raise TypeError(f"{reader} takes {_OPENAI_WANTED}; got Anthropic content blocks: use calls_from_anthropic")
        return items
    if isinstance(value, str | bytes | bytearray | int | float | bool) or value is None:
        raise TypeError(f"{reader} takes {_OPENAI_WANTED}; got {_what(value)}")
    choices = field(value, "choices")
    if choices is not None:  # a ChatCompletion
        if not _is_list(choices) or not choices:
            raise TypeError(f"{reader} takes {_OPENAI_WANTED}; got a ChatCompletion without choices")
        value = field(choices[0], "message")
        if value is None:
            raise TypeError(f"{reader} takes {_OPENAI_WANTED}; got a ChatCompletion whose choice has no message")
    elif field(value, "message") is not None and field(value, "role") is None:  # a Choice
        value = field(value, "message")
    if _anthropic_shaped(value):
        raise TypeError(f"{reader} takes {_OPENAI_WANTED}; got an Anthropic Message: use calls_from_anthropic")
    output = field(value, "output")
    if output is not None and field(value, "role") is None:  # a Response
        return _checked_items(output, _OPENAI_WANTED, reader)
    if field(value, "role") == "assistant" or (isinstance(value, Mapping) and "tool_calls" in value):
        tool_calls = field(value, "tool_calls")
        return [] if tool_calls is None else _checked_items(tool_calls, _OPENAI_WANTED, reader)
    raise TypeError(f"{reader} takes {_OPENAI_WANTED}; got {_what(value)}" + (
        f" with keys {sorted(map(str, value))[:8]}" if isinstance(value, Mapping) else ""))


def anthropic_blocks(value: Any) -> list[Any]:
    """The content blocks of what ``calls_from_anthropic`` was handed; ``TypeError`` for any other value.

    A Message gives its ``content``; a list is taken as content blocks.
    """
    reader = "calls_from_anthropic"
    if _is_list(value):
        blocks = _checked_items(value, _ANTHROPIC_WANTED, reader)
        if any(field(block, "type") in ("function_call", "function") for block in blocks):
            raise TypeError(f"{reader} takes {_ANTHROPIC_WANTED}; got OpenAI output items or tool calls: use calls_from_openai")
        return blocks
    if isinstance(value, str | bytes | bytearray | int | float | bool) or value is None:
        raise TypeError(f"{reader} takes {_ANTHROPIC_WANTED}; got {_what(value)}")
    if field(value, "choices") is not None or field(value, "output") is not None or field(value, "tool_calls") is not None:
        raise TypeError(f"{reader} takes {_ANTHROPIC_WANTED}; got an OpenAI response: use calls_from_openai")
    content = field(value, "content")
    if _is_list(content) and (field(value, "type") == "message" or field(value, "role") == "assistant"):
        return _checked_items(content, _ANTHROPIC_WANTED, reader)
    raise TypeError(f"{reader} takes {_ANTHROPIC_WANTED}; got {_what(value)}" + (
        f" with keys {sorted(map(str, value))[:8]}" if isinstance(value, Mapping) else ""))


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
