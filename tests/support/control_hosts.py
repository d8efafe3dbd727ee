"""A host's registry for the control-plane tests: ``echo`` in versions 1.0.0 and 1.1.0, whose body returns its version."""

from __future__ import annotations

from typing import Any

from tether_clr import (
    PythonFunction,
    RequestContext,
    SealedToolCatalogView,
    ToolCall,
    ToolMetadata,
    ToolRegistrationOptions,
    ToolRegistry,
)

VERSIONS = ("1.0.0", "1.1.0")
ACME = RequestContext("acme", "alice")


def _echo(version: str) -> Any:
    async def echo(text: str) -> str:
        return version

    return echo


def host_registry(registry: ToolRegistry | None = None) -> ToolRegistry:
    """``registry`` (a new one by default) with both versions of ``echo`` registered."""
    registry = registry if registry is not None else ToolRegistry()
    for version in VERSIONS:
        tool = PythonFunction.from_callable(_echo(version), name="echo", description="Echo back.")
        registry.register(tool, options=ToolRegistrationOptions(metadata=ToolMetadata(version=version)))
    return registry


async def call_echo(registry: ToolRegistry, view: SealedToolCatalogView, call_id: str = "c1") -> dict[str, Any]:
    """One call of ``echo`` against ``view``: its code and reason, or the version that ran."""
    [outcome] = await registry.execute_batch([ToolCall(call_id, "echo", '{"text": "hi"}')], view)
    failure = outcome.failure
    if failure is None:
        return {"ran": outcome.value}
    return {"code": failure.code.value, "reason": failure.reason}
