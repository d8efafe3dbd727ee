"""The registry as the catalog's control plane: versions, lifecycle, pins, metadata, deny rules,
authority, revisions and change events, discovery and assembly snapshots, and the layering rule."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from tether_clr import (
    AgentPipelineScope,
    CapabilityQuery,
    DiscoveryResult,
    DuplicateToolError,
    IncompatibleSchemaError,
    PythonFunction,
    RequestContext,
    SealedToolCatalogView,
    SideEffect,
    ToolAssembly,
    ToolMetadata,
    ToolRegistrationOptions,
    ToolRegistry,
    ToolsChangedEvent,
    ToolStatus,
)

S = ToolStatus
CTX = RequestContext("acme", "alice", scopes=frozenset({"orders:read"}), request_id="r1")


def versioned(registry: ToolRegistry, name: str, version: str = "1.0.0", *, fn: Any = None,
              status: ToolStatus | None = None, scope: AgentPipelineScope | None = None, **meta: Any) -> Any:
    body = fn if fn is not None else (lambda: version)
    tool = PythonFunction.from_callable(body, name=name)
    options = ToolRegistrationOptions(metadata=ToolMetadata(version=version, **meta), status=status)
    return registry.register(tool, scope, options)


def bound(assembly: ToolAssembly) -> list[str]:
    return [f"{b.model_name}@{b.version}" for b in assembly.bindings.values()]


# ---------------------------------------------------------------- registration
def test_register_without_options_keeps_todays_behaviour() -> None:
    registry = ToolRegistry()
    registry.register(PythonFunction.from_callable(lambda: 1, name="t"))
    view = registry.seal()
    assert view.names == ["t"] and view.context is None and view.bindings is None and view.digest is None


def test_several_versions_of_one_name_live_in_one_layer_and_a_duplicate_version_is_refused() -> None:
    registry = ToolRegistry()
    versioned(registry, "t", "1.0.0")
    versioned(registry, "t", "1.1.0")
    with pytest.raises(DuplicateToolError, match="1.1.0"):
        versioned(registry, "t", "1.1.0")
    scope = AgentPipelineScope()
    versioned(registry, "t", "1.1.0", scope=scope)  # another layer
    assert bound(registry.assemble(CTX)) == ["t@1.1.0"]


def test_a_breaking_schema_in_the_same_major_version_is_refused_under_strict_and_tolerant() -> None:
    registry = ToolRegistry()
    versioned(registry, "t", "1.0.0", fn=lambda a: a)
    for mode in ("strict", "tolerant"):
        with pytest.raises(IncompatibleSchemaError) as caught:
            versioned(registry, "t", "1.1.0", fn=lambda a, b: a, compatibility=mode)
        assert caught.value.report.compatible is False and caught.value.report.breaking
    assert registry.revision == 1  # nothing registered
    versioned(registry, "t", "1.2.0", fn=lambda a, b: a, compatibility="manual_review")
    versioned(registry, "t", "2.0.0", fn=lambda x: x)  # a new major version may break
    versioned(registry, "t", "1.3.0", fn=lambda a, b, c=1: a)  # compared with 1.2.0, the highest 1.x


@pytest.mark.parametrize("field", ["tenant_id", "principal_id", "user_id"])
def test_a_schema_asking_the_model_for_identity_is_refused_unless_it_is_a_business_field(field: str) -> None:
    registry = ToolRegistry()
    namespace: dict[str, Any] = {}
    exec(f"def lookup({field}: str) -> str:\n    return {field}", namespace)
    tool = PythonFunction.from_callable(namespace["lookup"])
    with pytest.raises(ValueError, match="identity"):
        registry.register(tool)
    assert registry.seal().names == []
    registry.register(tool, options=ToolRegistrationOptions(allow_identity_parameters=True))
    assert registry.seal().names == ["lookup"]


def test_registration_options_are_checked() -> None:
    with pytest.raises(TypeError):
        ToolRegistrationOptions(metadata={"version": "1.0.0"})  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ToolRegistrationOptions(status="active")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ToolRegistrationOptions(allow_identity_parameters=1)  # type: ignore[arg-type]


# ---------------------------------------------------------------- lifecycle
def test_set_status_moves_forward_and_refuses_everything_else_without_changing_anything() -> None:
    registry = ToolRegistry()
    versioned(registry, "t", status=S.DRAFT)
    with pytest.raises(ValueError):
        registry.set_status("t", "1.0.0", S.ACTIVE)  # DRAFT moves only to VALIDATED
    registry.set_status("t", "1.0.0", S.VALIDATED)
    revision = registry.revision
    registry.set_status("t", "1.0.0", S.VALIDATED)  # no-op
    assert registry.revision == revision
    registry.set_status("t", "1.0.0", S.DISABLED)  # steps may be skipped
    registry.set_status("t", "1.0.0", S.ACTIVE)  # re-enable
    with pytest.raises(ValueError):
        registry.set_status("t", "1.0.0", S.VALIDATED)
    registry.set_status("t", "1.0.0", S.RETIRED)
    with pytest.raises(ValueError, match="final"):
        registry.set_status("t", "1.0.0", S.ACTIVE)
    with pytest.raises(LookupError):
        registry.set_status("t", "9.9.9", S.ACTIVE)


def test_validation_runs_the_checks_the_tool_must_still_be_bound() -> None:
    registry = ToolRegistry()
    registration = versioned(registry, "t", status=S.DRAFT)
    keep = versioned(registry, "t", scope=AgentPipelineScope(), status=S.DRAFT)
    registration.dispose()
    registry.set_status("t", "1.0.0", S.VALIDATED)  # only the live registration is left
    keep.dispose()
    with pytest.raises(LookupError):
        registry.set_status("t", "1.0.0", S.VALIDATED)


@pytest.mark.parametrize("status", [S.DRAFT, S.VALIDATED, S.DISABLED, S.RETIRED])
def test_draft_validated_disabled_and_retired_versions_are_neither_sealed_nor_assembled(status: ToolStatus) -> None:
    registry = ToolRegistry()
    versioned(registry, "t", status=status)
    assert registry.seal().names == []
    assembly = registry.assemble(CTX)
    assert bound(assembly) == [] and [o.reason for o in assembly.omitted] == ["not_active"]


# ---------------------------------------------------------------- versions and pins
def test_the_highest_active_version_is_assembled_and_the_others_are_superseded() -> None:
    registry = ToolRegistry()
    for version in ("1.0.0", "1.10.0", "1.2.0"):
        versioned(registry, "t", version)
    versioned(registry, "t", "2.0.0-rc.1", status=S.DRAFT)
    assembly = registry.assemble(CTX)
    assert bound(assembly) == ["t@1.10.0"]
    assert sorted((o.version, o.reason) for o in assembly.omitted) == [
        ("1.0.0", "superseded"), ("1.2.0", "superseded"), ("2.0.0-rc.1", "not_active")]
    assert registry.seal().get_tool("t") is not None and registry.seal().resolve("t").candidate.version == "1.10.0"


def test_a_pin_picks_its_version_for_its_tenant_and_survives_deprecation() -> None:
    registry = ToolRegistry()
    versioned(registry, "t", "1.0.0")
    versioned(registry, "t", "1.1.0")
    registry.pin("t", "1.0.0", tenant_id="acme")
    assert bound(registry.assemble(CTX)) == ["t@1.0.0"]
    assert bound(registry.assemble(RequestContext("globex", "bob"))) == ["t@1.1.0"]
    registry.set_status("t", "1.0.0", S.DEPRECATED)
    assert bound(registry.assemble(CTX)) == ["t@1.0.0"]
    registry.set_status("t", "1.0.0", S.DISABLED)
    assert bound(registry.assemble(CTX)) == ["t@1.1.0"]


def test_the_most_specific_pin_wins_and_unpinning_restores_the_default() -> None:
    registry = ToolRegistry()
    for version in ("1.0.0", "1.1.0", "1.2.0", "1.3.0"):
        versioned(registry, "t", version)
    registry.pin("t", "1.0.0")
    registry.pin("t", "1.1.0", agent_version="7")
    tenant_pin = registry.pin("t", "1.2.0", tenant_id="acme")
    assert bound(registry.assemble(RequestContext("acme", "a", agent_version="7"))) == ["t@1.2.0"]
    assert bound(registry.assemble(RequestContext("globex", "a", agent_version="7"))) == ["t@1.1.0"]
    assert bound(registry.assemble(RequestContext("globex", "a"))) == ["t@1.0.0"]
    tenant_pin.dispose()
    assert bound(registry.assemble(RequestContext("acme", "a", agent_version="7"))) == ["t@1.1.0"]


@pytest.mark.parametrize("status", [S.DRAFT, S.VALIDATED, S.DEPRECATED, S.DISABLED, S.RETIRED])
def test_pinning_a_version_that_is_not_active_raises(status: ToolStatus) -> None:
    registry = ToolRegistry()
    versioned(registry, "t", status=status)
    with pytest.raises(ValueError, match="not ACTIVE"):
        registry.pin("t", "1.0.0")
    with pytest.raises(LookupError):
        registry.pin("t", "2.0.0")


# ---------------------------------------------------------------- metadata, deny rules, authority
def test_update_metadata_changes_governance_fields_but_never_identity() -> None:
    registry = ToolRegistry()
    versioned(registry, "refund")
    registry.update_metadata("refund", "1.0.0", required_scopes={"orders:refund"})
    assembly = registry.assemble(CTX)
    assert bound(assembly) == [] and assembly.omitted[0].reason == "missing_scope"
    for field, value in (("version", "2.0.0"), ("logical_name", "x"), ("origin", "plugin")):
        with pytest.raises(ValueError):
            registry.update_metadata("refund", "1.0.0", **{field: value})
    with pytest.raises(TypeError):
        registry.update_metadata("refund", "1.0.0", colour="red")
    with pytest.raises(LookupError):
        registry.update_metadata("nothing", "1.0.0", risk_level="high")


def test_deny_rules_apply_when_assembling_and_can_be_removed() -> None:
    registry = ToolRegistry()
    versioned(registry, "pay", side_effect=SideEffect.FINANCIAL)
    versioned(registry, "search")
    rule = registry.add_deny_rule(lambda b, m, c: "no payments" if m.side_effect is SideEffect.FINANCIAL else None)
    assembly = registry.assemble(CTX)
    assert bound(assembly) == ["search@1.0.0"] and assembly.omitted[0].reason == "deny_rule"
    rule.dispose()
    assert bound(registry.assemble(CTX)) == ["pay@1.0.0", "search@1.0.0"]
    with pytest.raises(TypeError):
        registry.add_deny_rule("no")  # type: ignore[arg-type]


def test_a_synchronous_authority_decides_the_scopes_of_an_assembly() -> None:
    registry = ToolRegistry()
    versioned(registry, "refund", required_scopes={"orders:refund"})
    registry.authority = lambda context: {"orders:refund"}
    assert bound(registry.assemble(CTX)) == ["refund@1.0.0"]


def test_an_asynchronous_authority_is_not_awaited_by_assembly_the_context_scopes_count() -> None:
    registry = ToolRegistry()
    versioned(registry, "refund", required_scopes={"orders:refund"})

    async def authority(context: RequestContext) -> set[str]:
        return {"orders:refund"}

    registry.authority = authority
    assert bound(registry.assemble(CTX)) == []
    assert bound(registry.assemble(RequestContext("acme", "alice", scopes={"orders:refund"}))) == ["refund@1.0.0"]


@pytest.mark.parametrize("answer", ["raise", ["orders:refund"], {1}, None])
def test_an_authority_that_fails_gives_assembly_no_scopes(answer: Any, caplog: pytest.LogCaptureFixture) -> None:
    registry = ToolRegistry()
    versioned(registry, "refund", required_scopes={"orders:read"})
    versioned(registry, "open")

    def authority(context: RequestContext) -> Any:
        if answer == "raise":
            raise RuntimeError("directory down")
        return answer

    registry.authority = authority
    with caplog.at_level(logging.WARNING, logger="tether_clr"):
        assert bound(registry.assemble(CTX)) == ["open@1.0.0"]
    assert "authority" in caplog.text


# ---------------------------------------------------------------- revisions and events
def test_every_change_bumps_the_revision_and_emits_it_policy_changes_bump_the_policy_revision() -> None:
    registry = ToolRegistry()
    events: list[ToolsChangedEvent] = []
    registry.on_change(events.append)
    registration = versioned(registry, "t")
    registry.set_status("t", "1.0.0", S.DEPRECATED)
    registry.update_metadata("t", "1.0.0", risk_level="high")
    versioned(registry, "t", "1.1.0")
    pin = registry.pin("t", "1.1.0")
    rule = registry.add_deny_rule(lambda b, m, c: None)
    registry.authority = lambda context: set()
    rule.dispose()
    pin.dispose()
    registration.dispose()
    assert [(e.change, e.revision) for e in events] == [
        ("added", 1), ("status", 2), ("metadata", 3), ("added", 4), ("pin", 5), ("deny_rule", 6),
        ("authority", 7), ("deny_rule", 8), ("pin", 9), ("removed", 10)]
    assert all(e.method == "tools/change" for e in events)
    assert registry.revision == 10 and registry.policy_revision == 3


# ---------------------------------------------------------------- discovery and assembly
def test_refund_tool_hidden_from_a_principal_without_orders_refund_is_listed_in_omitted() -> None:
    registry = ToolRegistry()
    versioned(registry, "lookup_order")
    versioned(registry, "refund", required_scopes={"orders:refund"})
    result = registry.discover(CTX)
    assert isinstance(result, DiscoveryResult)
    assert [b.model_name for b in result.tools] == ["lookup_order"]
    assert [(o.logical_name, o.reason) for o in result.omitted] == [("refund", "missing_scope")]
    assert (result.registry_revision, result.policy_revision) == (registry.revision, registry.policy_revision)
    granted = registry.discover(RequestContext("acme", "alice", scopes={"orders:refund"}))
    assert [b.model_name for b in granted.tools] == ["lookup_order", "refund"]


def test_discover_applies_a_capability_query() -> None:
    registry = ToolRegistry()
    versioned(registry, "pay", side_effect=SideEffect.FINANCIAL, domain="billing")
    versioned(registry, "search", domain="catalog")
    result = registry.discover(CTX, query=CapabilityQuery(domains={"billing"}))
    assert [b.model_name for b in result.tools] == ["pay"]
    assert [o.reason for o in result.omitted] == ["query_mismatch"]


def test_editing_an_assemblys_definitions_changes_neither_later_assemblies_nor_its_declarations() -> None:
    def a_tool(text: str) -> str:
        return text

    registry = ToolRegistry()
    versioned(registry, "a_tool", fn=a_tool)
    assembly = registry.assemble(CTX)
    shown = assembly.definitions[0]
    shown.parameters["properties"]["injected"] = {"type": "string"}
    shown.parameters.setdefault("required", []).append("injected")
    declared = assembly.get_declarations()[0]
    declared.parameters["properties"].clear()
    fresh = registry.assemble(CTX)
    assert "injected" not in fresh.definitions[0].parameters["properties"]
    assert "injected" not in assembly.definitions[0].parameters["properties"]
    assert fresh.definitions[0].parameters["properties"] and assembly.get_declarations()[0].parameters["properties"]
    assert fresh.definitions == assembly.definitions and fresh.digest == assembly.digest
    assert registry.seal().get_declarations()[0].parameters == fresh.definitions[0].parameters


def test_an_assembly_is_an_immutable_snapshot_and_a_sealed_view() -> None:
    registry = ToolRegistry()
    versioned(registry, "b_tool")
    versioned(registry, "a_tool")
    versioned(registry, "a_plugin", origin="plugin")
    assembly = registry.assemble(CTX)
    assert isinstance(assembly, SealedToolCatalogView)
    assert assembly.names == ["a_tool", "b_tool", "a_plugin"]  # built-ins by ordinal name, then plugins
    assert [d.name for d in assembly.definitions] == assembly.names == [d.name for d in assembly.get_declarations()]
    assert assembly.context is CTX and assembly.registry_revision == 3 and assembly.policy_revision == 0
    assert assembly.digest.startswith("sha256:") and assembly.digest == registry.assemble(CTX).digest
    versioned(registry, "c_tool")
    registry.set_status("a_tool", "1.0.0", S.DISABLED)
    assert assembly.names == ["a_tool", "b_tool", "a_plugin"] and assembly.registry_revision == 3
    with pytest.raises(TypeError):
        assembly.bindings["x"] = assembly.bindings["a_tool"]  # type: ignore[index]
    with pytest.raises(TypeError):
        registry.assemble("acme")  # type: ignore[arg-type]


def test_assembly_sees_the_scope_lineage_and_the_inner_scope_shadows_the_outer() -> None:
    registry = ToolRegistry()
    root = AgentPipelineScope()
    child = root.child()
    versioned(registry, "search", "1.0.0")
    versioned(registry, "search", "1.0.0", scope=child, fn=lambda: "inner")
    versioned(registry, "only_root", scope=root)
    assert bound(registry.assemble(CTX, root)) == ["only_root@1.0.0", "search@1.0.0"]
    inner = registry.assemble(CTX, child)
    assert inner.resolve("search").scope is child
    assert [o.reason for o in inner.omitted] == ["shadowed"]


def test_a_plugin_tool_never_shadows_a_built_in_one_even_registered_deeper(caplog: pytest.LogCaptureFixture) -> None:
    registry = ToolRegistry()
    scope = AgentPipelineScope()
    versioned(registry, "search")
    versioned(registry, "search", scope=scope, origin="plugin")
    with caplog.at_level(logging.WARNING, logger="tether_clr"):
        assembly = registry.assemble(CTX, scope)
        view = registry.seal(scope)
    assert assembly.resolve("search").scope is None and view.resolve("search").scope is None
    assert [o.reason for o in assembly.omitted] == ["shadowed"]
    assert "plugin tool 'search'" in caplog.text


def test_feature_flags_are_evaluated_when_assembling() -> None:
    registry = ToolRegistry()
    seen: list[RequestContext] = []

    def beta(context: RequestContext) -> bool:
        seen.append(context)
        return context.tenant_id == "acme"

    versioned(registry, "beta", enabled_when=beta)
    assert bound(registry.assemble(CTX)) == ["beta@1.0.0"]
    assert [o.reason for o in registry.assemble(RequestContext("globex", "bob")).omitted] == ["flag_disabled"]
    assert [c.tenant_id for c in seen] == ["acme", "globex"]


def test_a_tool_of_another_tenant_is_not_in_the_snapshot() -> None:
    registry = ToolRegistry()
    versioned(registry, "globex_export", tenants={"globex"})
    assembly = registry.assemble(CTX)
    assert "globex_export" not in assembly and assembly.resolve("globex_export") is None
    assert [o.reason for o in assembly.omitted] == ["tenant_denied"]


def test_digest_changes_when_anything_seen_or_bound_changes() -> None:
    registry = ToolRegistry()
    versioned(registry, "t")
    first = registry.assemble(CTX).digest
    assert registry.assemble(RequestContext("acme", "alice", scopes={"orders:read"}, request_id="r2")).digest == first
    assert registry.assemble(RequestContext("acme", "bob", scopes={"orders:read"})).digest != first
    registry.update_metadata("t", "1.0.0", risk_level="high")  # the revision moved
    assert registry.assemble(CTX).digest != first


def test_seal_reflects_every_change_at_once_and_keeps_no_scope_alive() -> None:
    import gc
    import weakref

    registry = ToolRegistry()
    versioned(registry, "t")
    scope = AgentPipelineScope()
    assert registry.seal().names == registry.seal(scope).names == ["t"]
    registry.set_status("t", "1.0.0", S.DISABLED)
    assert registry.seal().names == registry.seal(scope).names == []
    registry.set_status("t", "1.0.0", S.ACTIVE)
    registry.update_metadata("t", "1.0.0", aliases=("old_t",))
    assert registry.seal(scope).resolve("old_t") is not None
    versioned(registry, "t", "1.1.0")
    assert registry.seal(scope).resolve("t").candidate.version == "1.1.0"
    gone = weakref.ref(scope)
    del scope
    gc.collect()
    assert gone() is None
