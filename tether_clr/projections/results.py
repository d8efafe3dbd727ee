"""The messages answering a step, per API: each outcome's result, then the batch's additional contexts.

* :func:`chat_tool_messages` (Chat Completions): the tool messages, one user
  message per outcome with images, then one user message with the contexts.
* :func:`responses_input_items` (Responses): the ``function_call_output`` items,
  then one user ``message`` item with the contexts as ``input_text``.
* :func:`tool_results_message` (Anthropic): one user message, its ``tool_result``
  blocks first, then one text block per context.

The contexts are ``outcomes.additional_contexts`` when ``outcomes`` is what
``execute_batch`` returned (:class:`~tether_clr.BatchOutcomes`); a plain
iterable of outcomes has none, and then nothing is added. They always come
after the results, the order the session log records them in. Nothing here
imports a client SDK: the types are theirs only for a type checker.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, cast

from tether_clr.records.outcomes import ToolExecutionOutcome
from tether_clr.records.wire import openai_chat_image_message

if TYPE_CHECKING:
    from anthropic.types import MessageParam
    from openai.types.chat import ChatCompletionMessageParam
    from openai.types.responses import ResponseInputItemParam

__all__ = ["additional_contexts_of", "chat_tool_messages", "responses_input_items", "tool_results_message"]


def additional_contexts_of(outcomes: Iterable[ToolExecutionOutcome]) -> tuple[str, ...]:
    """The ``additional_contexts`` a batch's outcomes carry (a ``BatchOutcomes``' or ``BatchSuspended``'s), else ``()``."""
    contexts = getattr(outcomes, "additional_contexts", ())
    return tuple(text for text in contexts if isinstance(text, str) and text) if isinstance(contexts, tuple | list) else ()


def chat_tool_messages(outcomes: Iterable[ToolExecutionOutcome]) -> list[ChatCompletionMessageParam]:
    """The Chat Completions messages answering a step: each outcome's tool message, in order, then
    one user message per outcome with images (tool messages carry only text; see ``outcome.to_openai``),
    then, when the outcomes carry additional contexts, one user message with a text part per context."""
    contexts = additional_contexts_of(outcomes)
    listed = list(outcomes)
    messages: list[dict[str, Any]] = [outcome.to_openai("chat") for outcome in listed]
    for outcome in listed:
        images = openai_chat_image_message(outcome.call_id, outcome.content)
        if images is not None:
            messages.append(images)
    if contexts:
        messages.append({"role": "user", "content": [{"type": "text", "text": text} for text in contexts]})
    return cast("list[ChatCompletionMessageParam]", messages)


def responses_input_items(outcomes: Iterable[ToolExecutionOutcome]) -> list[ResponseInputItemParam]:
    """The Responses API input items answering a step: each outcome's ``function_call_output``, in
    order, then, when the outcomes carry additional contexts, one ``{"type": "message", "role": "user"}``
    item with an ``input_text`` part per context."""
    contexts = additional_contexts_of(outcomes)
    items: list[dict[str, Any]] = [outcome.to_openai("responses") for outcome in outcomes]
    if contexts:
        items.append({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text} for text in contexts]})
    return cast("list[ResponseInputItemParam]", items)


def tool_results_message(outcomes: Iterable[ToolExecutionOutcome]) -> MessageParam:
    """The Anthropic user message answering a step: one ``tool_result`` block per outcome, in order,
    then, when the outcomes carry additional contexts, one text block per context (Anthropic wants
    the ``tool_result`` blocks first in the message)."""
    contexts = additional_contexts_of(outcomes)
    content: list[dict[str, Any]] = [outcome.to_anthropic() for outcome in outcomes]
    content += [{"type": "text", "text": text} for text in contexts]
    return cast("MessageParam", {"role": "user", "content": content})
