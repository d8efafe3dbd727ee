"""Microsoft.Extensions.AI content records across the language boundary."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .runtime import ClrUnavailableError, current_runtime

if TYPE_CHECKING:
    from ..outcomes import ToolExecutionOutcome

__all__ = ["function_call_parts", "to_clr_function_result"]


def function_call_parts(content: Any) -> tuple[str, str, str]:
    """``(call_id, name, arguments JSON)`` of a .NET ``FunctionCallContent``."""
    from .bridge import bridge

    return str(content.CallId), str(content.Name), str(bridge().Records.ArgumentsJson(content))


def to_clr_function_result(outcome: ToolExecutionOutcome) -> Any:
    """A real ``Microsoft.Extensions.AI.FunctionResultContent`` for ``outcome``.

    Needs Microsoft.Extensions.AI.Abstractions loaded in the hosted runtime (load
    an assembly that uses it, or ``load_assembly`` it from ``TETHER_MEAI_DIR``).
    """
    missing = (
        "to_clr_function_result needs Microsoft.Extensions.AI.Abstractions loaded in the .NET runtime; "
        "load it with tether_clr.clr.load_meai() (TETHER_MEAI_DIR or a NuGet cache) or use to_function_result()"
    )
    if current_runtime() is None:
        raise ClrUnavailableError(missing)
    from .bridge import bridge

    records = bridge().Records
    if records.FindAbstractions() is None:
        raise ClrUnavailableError(missing)
    error = None if outcome.failure is None else f"{outcome.failure.code}: {outcome.failure.message}"
    return records.CreateFunctionResult(outcome.call_id, outcome.name, outcome.value_json, error)
