"""An outcome's content in each provider's wire format, as plain JSON dicts.

Pure functions of an outcome's fields (call id, content parts, value, failure),
used by :class:`~tether_clr.ToolExecutionOutcome`'s ``to_openai``,
``to_anthropic``, ``to_mcp`` and ``to_function_result``; no client SDK is
imported. The SDK-typed forms (MCP's ``CallToolResult`` object, say) are in
:mod:`tether_clr.projections`. Every call builds fresh dicts and lists.

Two rules hold for every provider form:

* **No empty text blocks.** Anthropic refuses an empty text block, so an empty
  text part is left out of a list of blocks; a result with nothing left is a
  ``tool_result`` without ``content`` (a failure, which Anthropic requires to
  have content, says its code instead). OpenAI's forms carry an empty result as
  ``""``; MCP's text content may be empty and is kept as it is.
* **Failures are marked.** Chat Completions and Responses have no error flag, so
  a failure's text starts with its marker (:func:`failure_marker`): ``Error [CODE]: ``,
  or ``Error [CODE/reason]: `` when the failure has a reason (``Error [DENIED]:
  not allowed``, ``Error [ABORTED/timeout]: timed out after 0.1 s``), so the code
  comes first and the reason stays readable (:func:`failure_marked`); Anthropic
  sets ``is_error`` and MCP ``isError``. The framework adapters
  (``tether_clr.integrations``) show a failure with the same marker.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from tether_clr.records.content import ContentPart, ImagePart, TextPart

__all__ = [
    "OpenAIApi",
    "anthropic_tool_result",
    "check_openai_api",
    "failure_marked",
    "failure_marker",
    "meai_contents",
    "mcp_call_tool_result",
    "openai_chat_image_message",
    "openai_chat_tool_message",
    "openai_function_call_output",
]

OpenAIApi = Literal["chat", "responses"]


def check_openai_api(api: Any) -> OpenAIApi:
    """``api`` itself when it is ``"chat"`` or ``"responses"``; ``ValueError`` otherwise."""
    if api not in ("chat", "responses"):
        raise ValueError(f'api must be "chat" or "responses", got {api!r}')
    result: OpenAIApi = api
    return result


def failure_marker(code: str, reason: str | None = None) -> str:
    """``Error [CODE]``, or ``Error [CODE/reason]`` when the failure has a machine-readable reason."""
    return f"Error [{code}]" if reason is None else f"Error [{code}/{reason}]"


def failure_marked(parts: Sequence[ContentPart], marker: str | None) -> tuple[ContentPart, ...]:
    """``parts`` as a model must see them on an API with no error flag: unchanged on success
    (``marker`` ``None``), else led by the :func:`failure_marker` and ``": "``.

    The marker is prefixed to the first part when it is text (a failure's default
    content, its message, or text a content hook set); when the first part is an
    image or there is no part, a text part holding the marker comes first. Text that
    already starts with the marker is left alone, so marking twice changes nothing.
    """
    if marker is None:
        return tuple(parts)
    if parts and isinstance(parts[0], TextPart):
        first = parts[0].text
        if first.startswith(marker):
            return tuple(parts)
        return (TextPart(f"{marker}: {first}" if first else marker), *parts[1:])
    return (TextPart(marker), *parts)


def _non_empty(parts: Sequence[ContentPart]) -> list[ContentPart]:
    """The parts without empty text parts (a provider may refuse an empty text block)."""
    return [part for part in parts if not (isinstance(part, TextPart) and not part.text)]


def _image_placeholder(index: int, part: ImagePart) -> str:
    return f"[image {index}: {part.mime_type}, in the user message that follows]"


def openai_chat_tool_message(call_id: str, parts: Sequence[ContentPart], marker: str | None = None) -> dict[str, Any]:
    """``{"role": "tool", "tool_call_id", "content"}``: a string for one text part (``""`` for an
    empty result), else text parts, none empty; a failure's led by its ``marker`` (:func:`failure_marker`).

    Chat Completions tool messages carry text only: each image is named here by a
    placeholder and travels in :func:`openai_chat_image_message`, the user
    message that follows the tool messages.
    """
    texts: list[str] = []
    images = 0
    for part in _non_empty(failure_marked(parts, marker)):
        if isinstance(part, TextPart):
            texts.append(part.text)
        else:
            images += 1
            texts.append(_image_placeholder(images, part))
    content: Any = "" if not texts else texts[0] if len(texts) == 1 else [{"type": "text", "text": text} for text in texts]
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def openai_chat_image_message(call_id: str, parts: Sequence[ContentPart]) -> dict[str, Any] | None:
    """The user message carrying a call's images as ``image_url`` parts (data URLs), or ``None`` without images."""
    images = [part for part in parts if isinstance(part, ImagePart)]
    if not images:
        return None
    content: list[dict[str, Any]] = [{"type": "text", "text": f"The images of tool call {call_id}:"}]
    for index, image in enumerate(images, 1):
        content.append({"type": "text", "text": f"image {index}:"})
        content.append({"type": "image_url", "image_url": {"url": image.data_url}})
    return {"role": "user", "content": content}


def openai_function_call_output(call_id: str, parts: Sequence[ContentPart], marker: str | None = None) -> dict[str, Any]:
    """The Responses ``function_call_output`` item: a string for one text part (``""`` for an empty
    result), else ``input_text`` (none empty) and ``input_image`` (data URL) parts; a failure's
    led by its ``marker`` (:func:`failure_marker`)."""
    output: Any
    parts = _non_empty(failure_marked(parts, marker))
    if not parts:
        output = ""
    elif len(parts) == 1 and isinstance(parts[0], TextPart):
        output = parts[0].text
    else:
        output = [
            {"type": "input_text", "text": part.text} if isinstance(part, TextPart)
            else {"type": "input_image", "image_url": part.data_url, "detail": "auto"}
            for part in parts
        ]
    return {"type": "function_call_output", "call_id": call_id, "output": output}


def anthropic_tool_result(call_id: str, parts: Sequence[ContentPart], is_error: bool, marker: str | None = None) -> dict[str, Any]:
    """The Messages API ``tool_result`` block: text and base64 image blocks, ``is_error: true`` on failure.

    Anthropic refuses empty text blocks: empty text parts are left out, and a
    result with nothing left has no ``content`` (Anthropic's ``content`` is
    optional). A failure must have content: one with nothing left says its
    ``marker`` (:func:`failure_marker`; ``Error`` when none is given).
    """
    kept = _non_empty(parts)
    if not kept and is_error:
        kept = [TextPart(marker or "Error")]
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id}
    if kept:
        block["content"] = [
            {"type": "text", "text": part.text} if isinstance(part, TextPart)
            else {"type": "image", "source": {"type": "base64", "media_type": part.mime_type, "data": part.base64}}
            for part in kept
        ]
    if is_error:
        block["is_error"] = True
    return block


def mcp_call_tool_result(
    parts: Sequence[ContentPart], value: Any, failure: tuple[str, str | None, str] | None
) -> dict[str, Any]:
    """MCP's ``CallToolResult`` as JSON (``content``, ``structuredContent``, ``isError``).

    ``structuredContent`` is the value when it is a JSON object, else ``{"result": value}``
    (protocol versions up to 2025-11-25 require an object); a failure, given as
    ``(code, reason, message)``, has ``isError: true`` and those three as its structured content.
    """
    structured: dict[str, Any]
    if failure is not None:
        code, reason, message = failure
        structured = {"code": code, "reason": reason, "message": message}
    else:
        structured = value if isinstance(value, dict) else {"result": value}
    return {
        "content": [
            {"type": "text", "text": part.text} if isinstance(part, TextPart)
            else {"type": "image", "data": part.base64, "mimeType": part.mime_type}
            for part in parts
        ],
        "structuredContent": structured,
        "isError": failure is not None,
    }


def meai_contents(parts: Sequence[ContentPart]) -> list[dict[str, Any]]:
    """The parts as Microsoft.Extensions.AI ``AIContent`` JSON: ``{"$type": "text", "text"}`` and
    ``{"$type": "data", "uri": "data:...;base64,...", "mediaType"}``."""
    return [
        {"$type": "text", "text": part.text} if isinstance(part, TextPart)
        else {"$type": "data", "uri": part.data_url, "mediaType": part.mime_type}
        for part in parts
    ]
