"""Microsoft.Extensions.AI content records across the language boundary.

The core's records (``ToolCall``, ``ToolExecutionOutcome``) know nothing of
.NET; these projections attach them to the real MEAI types from above, so the
core never imports this package.
"""

from __future__ import annotations

from typing import Any

from tether_clr.clr.runtime import ClrUnavailableError, current_runtime
from tether_clr.foundations.json_values import canonical_json
from tether_clr.records.outcomes import ToolCall, ToolExecutionOutcome
from tether_clr.records.scope import AgentPipelineScope

__all__ = ["function_call_to_tool_call", "to_clr_function_result"]


def function_call_to_tool_call(
    content: Any,
    *,
    scope: AgentPipelineScope | None = None,
    parent_call_id: str | None = None,
    invocation_context: Any = None,
) -> ToolCall:
    """A :class:`~tether_clr.ToolCall` from a .NET ``FunctionCallContent`` (or its dict shape).

    ``Arguments`` (values often ``JsonElement``) become canonical JSON text.
    When the content's ``Exception`` is set (its client could not parse the
    model's argument text; MEAI then leaves ``Arguments`` null), the call
    carries that failure as ``argument_error``: it ends INVALID_ARGS with the
    exception's message and never runs, instead of running with ``{}``.
    """
    if isinstance(content, dict):
        return ToolCall.from_function_call(content, scope=scope, parent_call_id=parent_call_id, invocation_context=invocation_context)
    if not (hasattr(content, "CallId") and hasattr(content, "Name")):
        raise TypeError(f"expected a FunctionCallContent or its dict shape, got {type(content).__name__}")
    from tether_clr.clr.bridge import bridge

    records = bridge().Records
    call_id, name = content.CallId, content.Name
    if not isinstance(call_id, str) or not isinstance(name, str):
        raise ValueError("a function call needs string CallId and Name")
    error = records.ArgumentsError(content)
    if error is not None:
        return ToolCall(call_id, name, "", scope, parent_call_id, invocation_context, argument_error=str(error))
    return ToolCall(call_id, name, str(records.ArgumentsJson(content)), scope, parent_call_id, invocation_context)


def to_clr_function_result(outcome: ToolExecutionOutcome) -> Any:
    """A real ``Microsoft.Extensions.AI.FunctionResultContent`` for ``outcome``.

    The result is a ``JsonElement`` of what :meth:`ToolExecutionOutcome.to_function_result`
    carries: the outcome's JSON value, or, when its content is not the default text
    (an image, a redaction), that content as ``AIContent`` JSON; a failure also
    sets ``Exception`` (never serialized by MEAI) to ``CODE: message``. Needs
    Microsoft.Extensions.AI.Abstractions loaded in the hosted runtime (load an
    assembly that uses it, or :func:`tether_clr.clr.load_meai`).
    """
    missing = (
        "to_clr_function_result needs Microsoft.Extensions.AI.Abstractions loaded in the .NET runtime; "
        "load it with tether_clr.clr.load_meai() (TETHER_MEAI_DIR or a NuGet cache) or use outcome.to_function_result()"
    )
    if current_runtime() is None:
        raise ClrUnavailableError(missing)
    from tether_clr.clr.bridge import bridge

    records = bridge().Records
    if records.FindAbstractions() is None:
        raise ClrUnavailableError(missing)
    error = None if outcome.failure is None else f"{outcome.failure.code}: {outcome.failure.message}"
    return records.CreateFunctionResult(outcome.call_id, outcome.name, canonical_json(outcome.to_function_result().result), error)
