"""An outcome's content in each provider's wire format, as plain JSON dicts.

Pure functions of an outcome's fields (call id, content parts, value, failure),
used by :class:`~tether_clr.ToolExecutionOutcome`'s ``to_openai``,
``to_anthropic``, ``to_mcp`` and ``to_function_result``; no client SDK is
imported. The SDK-typed forms (MCP's ``CallToolResult`` object, say) are in
:mod:`tether_clr.projections`. Every call builds fresh dicts and lists.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from tether_clr.records.content import ContentPart, ImagePart, TextPart

__all__ = [
    "OpenAIApi",
    "anthropic_tool_result",
    "check_openai_api",
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


def _image_placeholder(index: int, part: ImagePart) -> str:
    return f"[image {index}: {part.mime_type}, in the user message that follows]"


def openai_chat_tool_message(call_id: str, parts: Sequence[ContentPart]) -> dict[str, Any]:
    """``{"role": "tool", "tool_call_id", "content"}``: a string for one text part, else text parts.

    Chat Completions tool messages carry text only: each image is named here by a
    placeholder and travels in :func:`openai_chat_image_message`, the user
    message that follows the tool messages.
    """
    texts: list[str] = []
    images = 0
    for part in parts:
        if isinstance(part, TextPart):
            texts.append(part.text)
        else:
            images += 1
            texts.append(_image_placeholder(images, part))
    content: Any = texts[0] if len(texts) == 1 else [{"type": "text", "text": text} for text in texts]
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


def openai_function_call_output(call_id: str, parts: Sequence[ContentPart]) -> dict[str, Any]:
    """The Responses ``function_call_output`` item: a string for one text part, else
    ``input_text`` and ``input_image`` (data URL) parts."""
    output: Any
    if len(parts) == 1 and isinstance(parts[0], TextPart):
        output = parts[0].text
    else:
        output = [
            {"type": "input_text", "text": part.text} if isinstance(part, TextPart)
            else {"type": "input_image", "image_url": part.data_url, "detail": "auto"}
            for part in parts
        ]
    return {"type": "function_call_output", "call_id": call_id, "output": output}


def anthropic_tool_result(call_id: str, parts: Sequence[ContentPart], is_error: bool) -> dict[str, Any]:
    """The Messages API ``tool_result`` block: text and base64 image blocks, ``is_error: true`` on failure."""
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": call_id,
        "content": [
            {"type": "text", "text": part.text} if isinstance(part, TextPart)
            else {"type": "image", "source": {"type": "base64", "media_type": part.mime_type, "data": part.base64}}
            for part in parts
        ],
    }
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
