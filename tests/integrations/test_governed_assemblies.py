"""The core keeps the last assembly per identity and scope only while it is exactly what assembling now gives.

Adapters ask for the step's assembly per call and per step (``is_enabled`` of every tool); reusing a kept
one must never offer or bind a tool that assembling now would not: a catalog change (a tool disabled,
another tenant) bumps the registry's revision; a feature flag and a synchronous scope authority may
answer differently with no bump, so an assembly they took part in is never kept.
"""

from __future__ import annotations

import pytest

from tether_clr import (
    PythonFunction,
    RequestContext,
    ToolCall,
    ToolFailureCodes,
    ToolMetadata,
    ToolRegistrationOptions,
    ToolRegistry,
    ToolStatus,
)
from tether_clr.integrations import GovernedCalls

ACME = RequestContext("acme", "alice")


async def echo(text: str) -> str:
    """Echo the text."""
    return text


def _registry(**metadata: object) -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(PythonFunction.from_callable(echo),
                      options=ToolRegistrationOptions(metadata=ToolMetadata(version="1.0.0", **metadata)))  # type: ignore[arg-type]
    return registry


def test_the_kept_assembly_is_reused_while_nothing_changed_and_rebound_to_the_request() -> None:
    core = GovernedCalls(_registry(), context_for=lambda request_id: RequestContext("acme", "alice", request_id=request_id))
    first, second = core.assemble("r1"), core.assemble("r2")
    assert second.digest == first.digest and second.bindings == first.bindings
    assert (first.context.request_id, second.context.request_id) == ("r1", "r2")  # audit sees each request


@pytest.mark.anyio
async def test_a_tool_disabled_after_the_assembly_was_kept_is_neither_offered_nor_run() -> None:
    registry = _registry()
    core = GovernedCalls(registry, context=ACME)
    kept = core.assemble(None)
    assert kept.names == ["echo"]
    registry.set_status("echo", "1.0.0", ToolStatus.DISABLED)
    assert core.assemble(None).names == []
    batch = await core.run([ToolCall("c1", "echo", '{"text": "hi"}')], core.assemble(None))
    assert batch.outcomes["c1"].code is ToolFailureCodes.UNKNOWN_TOOL
    stale = await core.run([ToolCall("c2", "echo", '{"text": "hi"}')], kept)  # bound before: re-authorized, refused
    assert stale.outcomes["c2"].code is ToolFailureCodes.DENIED


def test_another_identity_never_gets_the_kept_assembly() -> None:
    core = GovernedCalls(_registry(tenants=frozenset({"acme"})), context_for=lambda tenant: RequestContext(tenant, "alice"))
    assert core.assemble("acme").names == ["echo"]
    assert core.assemble("globex").names == []
    assert core.assemble("acme").names == ["echo"]


def test_a_feature_flag_that_flips_with_no_catalog_change_is_seen_at_the_next_assembly() -> None:
    enabled = [True]
    core = GovernedCalls(_registry(enabled_when=lambda context: enabled[0]), context=ACME)
    assert core.assemble(None).names == ["echo"]
    enabled[0] = False
    assert core.assemble(None).names == []


def test_a_synchronous_authority_that_revokes_a_scope_is_seen_at_the_next_assembly() -> None:
    registry = _registry(required_scopes=frozenset({"echo:use"}))
    held = {"echo:use"}
    registry.authority = lambda context: set(held)
    core = GovernedCalls(registry, context=ACME)
    assert core.assemble(None).names == ["echo"]
    held.clear()
    assert core.assemble(None).names == []
