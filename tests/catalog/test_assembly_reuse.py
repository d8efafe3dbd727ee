"""``ToolAssembly.reusable`` and ``for_request``: what a host that caches assemblies (the MCP server) relies on."""

from __future__ import annotations

import pytest

from tether_clr import PythonFunction, RequestContext, ToolMetadata, ToolRegistrationOptions, ToolRegistry


def echo(text: str) -> str:
    """Return the text."""
    return text


def registry_with(**metadata: object) -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(PythonFunction.from_callable(echo), options=ToolRegistrationOptions(metadata=ToolMetadata(**metadata)))  # type: ignore[arg-type]
    return registry


def test_an_assembly_without_flags_or_deny_rules_is_reusable() -> None:
    assert registry_with().assemble(RequestContext("acme", "alice")).reusable is True


def test_a_feature_flag_or_a_deny_rule_makes_it_not_reusable() -> None:
    flagged = registry_with(enabled_when=lambda context: True)
    assert flagged.assemble(RequestContext("acme", "alice")).reusable is False
    denying = registry_with()
    denying.add_deny_rule(lambda binding, metadata, context: None)
    assert denying.assemble(RequestContext("acme", "alice")).reusable is False


def test_for_request_rebinds_the_request_id_and_keeps_the_snapshot() -> None:
    assembly = registry_with().assemble(RequestContext("acme", "alice", request_id="r1"))
    digest = assembly.digest
    later = assembly.for_request(RequestContext("acme", "alice", request_id="r2"))
    assert later.context.request_id == "r2" and assembly.context.request_id == "r1"
    assert later.digest == digest and later.bindings == assembly.bindings and later.names == assembly.names
    assert assembly.for_request(RequestContext("acme", "alice", request_id="r1")) is assembly


@pytest.mark.parametrize("other", [
    RequestContext("acme", "bob"), RequestContext("globex", "alice"), RequestContext("acme", "alice", scopes={"x"}),
    RequestContext("acme", "alice", environment="prod"), RequestContext("acme", "alice", agent_version="2"),
])
def test_for_request_refuses_another_identity(other: RequestContext) -> None:
    assembly = registry_with().assemble(RequestContext("acme", "alice"))
    with pytest.raises(ValueError):
        assembly.for_request(other)


def test_for_request_keeps_loaded_schemas() -> None:
    registry = registry_with(deferred=True)
    loaded = registry.assemble(RequestContext("acme", "alice")).with_loaded(["echo"])
    assert loaded.for_request(RequestContext("acme", "alice", request_id="r2")).loaded == frozenset({"echo"})
