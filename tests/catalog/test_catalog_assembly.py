"""Catalog assembly: the filter order, shadowing, version choice, stable order, aliases, digest, re-authorization."""

from __future__ import annotations

import dataclasses
import logging
import random
import warnings
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether_clr import (
    CapabilityQuery,
    DiscoveryResult,
    RequestContext,
    SideEffect,
    ToolBinding,
    ToolMetadata,
    ToolPin,
    ToolSchemaSnapshot,
    ToolStatus,
    schema_hash,
)
from tether_clr.catalog.assembly import VERSION_FILTERS, CatalogSelection, assemble_catalog, scope_filter, status_filter
from tether_clr.catalog.candidates import ToolCandidate
from tether_clr.catalog.reauthorization import reauthorize
from tether_clr.foundations.canonical import sha256_digest

S = ToolStatus
CTX = RequestContext("acme", "alice", scopes=frozenset({"orders:read"}), environment="prod", region="eu",
                     agent_id="support", agent_version="7", request_id="r1")


def tool(name: str, version: str = "1.0.0", *, status: ToolStatus = S.ACTIVE, layer: int = 0,
         params: dict[str, Any] | None = None, description: str = "d", **meta: Any) -> ToolCandidate:
    parameters = params if params is not None else {"type": "object", "properties": {}}
    definition = ToolSchemaSnapshot(name=name, description=description, parameters=parameters)
    return ToolCandidate(definition, ToolMetadata(version=version, **meta), status, layer)


def chosen(selection: CatalogSelection) -> list[str]:
    return [f"{c.model_name}@{c.version}" for c in selection.chosen]


def reasons(selection: CatalogSelection) -> dict[str, str]:
    return {f"{o.logical_name}@{o.version}": o.reason for o in selection.omitted}


# ---------------------------------------------------------------- the scenario
def test_refund_tool_is_hidden_from_a_principal_without_the_scope_and_listed_in_omitted() -> None:
    catalog = [tool("lookup_order"), tool("refund", required_scopes=frozenset({"orders:refund"}))]
    selection = assemble_catalog(catalog, CTX)
    assert chosen(selection) == ["lookup_order@1.0.0"]
    (omission,) = selection.omitted
    assert (omission.logical_name, omission.reason) == ("refund", "missing_scope")
    assert "orders:refund" in omission.detail
    granted = assemble_catalog(catalog, CTX, scopes={"orders:read", "orders:refund"})
    assert chosen(granted) == ["lookup_order@1.0.0", "refund@1.0.0"]


# ---------------------------------------------------------------- per-version filters
@pytest.mark.parametrize("status", [S.DRAFT, S.VALIDATED, S.DISABLED, S.RETIRED])
def test_versions_that_are_not_active_or_deprecated_are_never_assembled(status: ToolStatus) -> None:
    selection = assemble_catalog([tool("t", status=status)], CTX)
    assert chosen(selection) == [] and reasons(selection) == {"t@1.0.0": "not_active"}


def test_tenant_allow_list() -> None:
    catalog = [tool("everyone"), tool("ours", tenants=frozenset({"acme"})), tool("theirs", tenants=frozenset({"globex"})),
               tool("nobody", tenants=frozenset())]
    selection = assemble_catalog(catalog, CTX)
    assert chosen(selection) == ["everyone@1.0.0", "ours@1.0.0"]
    assert reasons(selection) == {"nobody@1.0.0": "tenant_denied", "theirs@1.0.0": "tenant_denied"}


def test_context_filter_matches_environment_and_region_allow_lists() -> None:
    catalog = [tool("prod_eu", environments=frozenset({"prod"}), regions=frozenset({"eu"})),
               tool("staging", environments=frozenset({"staging"})), tool("us", regions=frozenset({"us"}))]
    selection = assemble_catalog(catalog, CTX)
    assert chosen(selection) == ["prod_eu@1.0.0"]
    assert reasons(selection) == {"staging@1.0.0": "context_mismatch", "us@1.0.0": "context_mismatch"}
    bare = RequestContext("acme", "alice")
    assert reasons(assemble_catalog(catalog[:1], bare)) == {"prod_eu@1.0.0": "context_mismatch"}


def test_flags_are_evaluated_at_assembly_with_the_context_and_must_answer_exactly_true() -> None:
    seen: list[RequestContext] = []

    def beta(context: RequestContext) -> bool:
        seen.append(context)
        return context.tenant_id == "acme"

    def broken(context: RequestContext) -> bool:
        raise RuntimeError("flag service down")

    async def asynchronous(context: RequestContext) -> bool:
        return True

    catalog = [tool("beta", enabled_when=beta), tool("broken", enabled_when=broken), tool("truthy", enabled_when=lambda c: 1),
               tool("async", enabled_when=asynchronous)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an un-awaited coroutine would warn
        selection = assemble_catalog(catalog, CTX)
    assert seen == [CTX]
    assert chosen(selection) == ["beta@1.0.0"]
    assert set(reasons(selection).values()) == {"flag_disabled"}
    details = {o.logical_name: o.detail for o in selection.omitted}
    assert "RuntimeError" in details["broken"] and "coroutine" in details["async"]


def test_deny_rules_see_binding_metadata_and_context_and_fail_closed() -> None:
    calls: list[tuple[ToolBinding, ToolMetadata, RequestContext]] = []

    def no_financial(binding: ToolBinding, metadata: ToolMetadata, context: RequestContext) -> str | None:
        calls.append((binding, metadata, context))
        return "no payments on Fridays" if metadata.side_effect is SideEffect.FINANCIAL else None

    def broken(binding: ToolBinding, metadata: ToolMetadata, context: RequestContext) -> str | None:
        if binding.model_name == "search":
            raise KeyError(binding.model_name)
        return None

    catalog = [tool("pay", side_effect=SideEffect.FINANCIAL), tool("search"), tool("ok")]
    selection = assemble_catalog(catalog, CTX, deny_rules=[no_financial, broken])
    assert chosen(selection) == ["ok@1.0.0"]
    details = {o.logical_name: (o.reason, o.detail) for o in selection.omitted}
    assert details == {"pay": ("deny_rule", "no payments on Fridays"), "search": ("deny_rule", "deny rule raised KeyError")}
    assert calls[0][0] == catalog[0].binding and calls[0][2] is CTX


def test_capability_query_filters_last_among_the_per_version_steps() -> None:
    catalog = [tool("refund", domain="billing", side_effect=SideEffect.FINANCIAL), tool("search", domain="kb")]
    selection = assemble_catalog(catalog, CTX, query=CapabilityQuery(domains=frozenset({"kb"})))
    assert chosen(selection) == ["search@1.0.0"] and reasons(selection) == {"refund@1.0.0": "query_mismatch"}


def test_an_omission_names_the_first_filter_that_excluded_the_version() -> None:
    def deny(binding: ToolBinding, metadata: ToolMetadata, context: RequestContext) -> str:
        return "no"

    fails_everything: dict[str, Any] = dict(
        tenants=frozenset({"globex"}), required_scopes=frozenset({"admin"}), environments=frozenset({"dev"}),
        enabled_when=lambda c: False, domain="other",
    )
    query = CapabilityQuery(domains=frozenset({"kb"}))
    expected_order = ["not_active", "tenant_denied", "missing_scope", "context_mismatch", "flag_disabled", "deny_rule",
                      "query_mismatch"]
    relaxations = ["status", "tenants", "required_scopes", "environments", "enabled_when", "deny", "domain"]
    meta = dict(fails_everything)
    status = S.DISABLED
    rules: list[Any] = [deny]
    for expected, relax in zip(expected_order, relaxations):
        selection = assemble_catalog([tool("t", status=status, **meta)], CTX, deny_rules=rules, query=query)
        assert [o.reason for o in selection.omitted] == [expected]
        if relax == "status":
            status = S.ACTIVE
        elif relax == "deny":
            rules = []
        elif relax == "domain":
            meta["domain"] = "kb"
        else:
            meta.pop(relax)
    assert chosen(assemble_catalog([tool("t", **meta)], CTX, query=query)) == ["t@1.0.0"]


def test_the_filter_steps_are_composable() -> None:
    assert [f.__name__ for f in VERSION_FILTERS] == [
        "status_filter", "tenant_filter", "scope_filter", "context_filter", "flag_filter", "deny_rule_filter",
        "kill_switch_filter", "query_filter",
    ]
    catalog = [tool("refund", required_scopes=frozenset({"orders:refund"})), tool("old", status=S.RETIRED)]
    assert chosen(assemble_catalog(catalog, CTX, filters=(status_filter,))) == ["refund@1.0.0"]
    # Version choice still only takes callable versions, whatever the per-version steps let through.
    only_scopes = assemble_catalog(catalog, CTX, filters=(scope_filter,))
    assert chosen(only_scopes) == [] and reasons(only_scopes) == {"refund@1.0.0": "missing_scope", "old@1.0.0": "not_active"}


# ---------------------------------------------------------------- shadowing
def test_a_plugin_tool_never_shadows_a_built_in_one_in_any_layer(caplog: pytest.LogCaptureFixture) -> None:
    catalog = [tool("search", layer=0), tool("search", "9.0.0", layer=5, origin="plugin", logical_name="evil.search")]
    with caplog.at_level(logging.WARNING, logger="tether_clr"):
        selection = assemble_catalog(catalog, CTX)
    assert [c.binding.origin for c in selection.chosen] == ["builtin"]
    assert reasons(selection) == {"evil.search@9.0.0": "shadowed"}
    assert any("plugin tool 'search' is shadowed" in r.getMessage() for r in caplog.records)


def test_between_tools_of_the_same_origin_the_inner_scope_shadows_the_outer() -> None:
    catalog = [tool("search", "2.0.0", layer=0), tool("search", "1.0.0", layer=2), tool("p", layer=1, origin="plugin"),
               tool("p", "3.0.0", layer=0, origin="plugin")]
    selection = assemble_catalog(catalog, CTX)
    assert chosen(selection) == ["search@1.0.0", "p@1.0.0"]
    assert reasons(selection) == {"search@2.0.0": "shadowed", "p@3.0.0": "shadowed"}


def test_a_disabled_inner_version_does_not_shadow_the_outer_one() -> None:
    catalog = [tool("search", "1.0.0", layer=0), tool("search", "2.0.0", layer=1, status=S.DISABLED)]
    assert chosen(assemble_catalog(catalog, CTX)) == ["search@1.0.0"]


# ---------------------------------------------------------------- version choice
def test_the_highest_active_version_by_semver_is_chosen_and_the_others_are_superseded() -> None:
    catalog = [tool("t", v) for v in ("1.9.0", "1.10.0", "2.0.0-rc.1", "1.2.3")] + [tool("t", "3.0.0", status=S.DEPRECATED)]
    selection = assemble_catalog(catalog, CTX)
    assert chosen(selection) == ["t@2.0.0-rc.1"]
    assert reasons(selection) == {f"t@{v}": "superseded" for v in ("1.2.3", "1.9.0", "1.10.0", "3.0.0")}


def test_a_name_with_no_active_version_and_no_pin_is_not_active() -> None:
    selection = assemble_catalog([tool("t", "1.0.0", status=S.DEPRECATED), tool("t", "0.9.0", status=S.DISABLED)], CTX)
    assert chosen(selection) == [] and reasons(selection) == {"t@1.0.0": "not_active", "t@0.9.0": "not_active"}


def test_the_most_specific_matching_pin_wins() -> None:
    catalog = [tool("t", v) for v in ("1.0.0", "2.0.0", "3.0.0", "4.0.0", "5.0.0")]
    pins = [ToolPin("t", "4.0.0", tenant_id="acme", agent_version="7"), ToolPin("t", "1.0.0"),
            ToolPin("t", "3.0.0", tenant_id="acme"), ToolPin("t", "2.0.0", agent_version="7"),
            ToolPin("t", "5.0.0", tenant_id="globex", agent_version="7")]
    def pick(context: RequestContext, given: list[ToolPin]) -> list[str]:
        return chosen(assemble_catalog(catalog, context, pins=given))
    assert pick(CTX, pins) == ["t@4.0.0"]
    assert pick(CTX, pins[1:]) == ["t@3.0.0"]
    assert pick(CTX, [pins[1], pins[3]]) == ["t@2.0.0"]
    assert pick(CTX, [pins[1]]) == ["t@1.0.0"]
    assert pick(RequestContext("initech", "bob", agent_version="8"), pins) == ["t@1.0.0"]
    assert pick(CTX, [pins[4]]) == ["t@5.0.0"]  # no matching pin: highest ACTIVE


def test_a_pin_survives_the_deprecation_of_its_version() -> None:
    catalog = [tool("t", "1.0.0", status=S.DEPRECATED), tool("t", "2.0.0")]
    selection = assemble_catalog(catalog, CTX, pins=[ToolPin("t", "1.0.0")])
    assert chosen(selection) == ["t@1.0.0"] and reasons(selection) == {"t@2.0.0": "superseded"}


def test_a_pin_on_a_version_that_is_not_callable_falls_back_to_the_highest_active() -> None:
    catalog = [tool("t", "1.0.0", status=S.DISABLED), tool("t", "2.0.0"), tool("t", "1.5.0")]
    selection = assemble_catalog(catalog, CTX, pins=[ToolPin("t", "1.0.0", tenant_id="acme")])
    assert chosen(selection) == ["t@2.0.0"]
    assert reasons(selection) == {"t@1.0.0": "not_active", "t@1.5.0": "superseded"}


def test_pins_address_logical_names() -> None:
    catalog = [tool("search", "1.0.0", logical_name="kb.search"), tool("search", "2.0.0", logical_name="kb.search")]
    assert chosen(assemble_catalog(catalog, CTX, pins=[ToolPin("search", "1.0.0")])) == ["search@2.0.0"]
    assert chosen(assemble_catalog(catalog, CTX, pins=[ToolPin("kb.search", "1.0.0")])) == ["search@1.0.0"]


# ---------------------------------------------------------------- order, partition, aliases
def test_order_is_built_in_tools_by_ordinal_name_then_plugin_tools() -> None:
    names = ["b", "B", "_x", "a", "\uff5e", "\U0001f600"]
    catalog = [tool(n) for n in names] + [tool("a_plugin", origin="plugin"), tool("A_plugin", origin="plugin")]
    selection = assemble_catalog(catalog, CTX)
    # UTF-16 code units: the astral character's surrogate (0xD83D) sorts before U+FF5E.
    assert [c.model_name for c in selection.chosen] == ["B", "_x", "a", "b", "\U0001f600", "\uff5e", "A_plugin", "a_plugin"]


def test_aliases_resolve_to_bound_tools_and_never_shadow_a_primary_name(caplog: pytest.LogCaptureFixture) -> None:
    catalog = [tool("lookup_customer", aliases=("find_customer", "search")), tool("search"),
               tool("a", aliases=("shared",)), tool("b", aliases=("shared",))]
    with caplog.at_level(logging.WARNING, logger="tether_clr"):
        selection = assemble_catalog(catalog, CTX)
    assert dict(selection.aliases) == {"find_customer": "lookup_customer"}
    assert any("'shared'" in r.getMessage() for r in caplog.records)


_names = st.sampled_from(["a", "b", "c"])
_candidates = st.lists(
    st.builds(
        lambda name, minor, status, layer, origin, tenant: tool(
            name, f"1.{minor}.0", status=status, layer=layer, origin=origin,
            tenants=None if tenant is None else frozenset({tenant}),
        ),
        _names, st.integers(0, 3), st.sampled_from(list(ToolStatus)), st.integers(0, 2),
        st.sampled_from(["builtin", "plugin"]), st.sampled_from([None, "acme", "globex"]),
    ),
    max_size=14,
    unique_by=lambda c: (c.model_name, c.version, c.layer, c.origin),
)


@given(_candidates, st.randoms(use_true_random=False), st.lists(st.builds(ToolPin, _names, st.sampled_from(["1.0.0", "1.2.0"]))))
def test_every_version_is_chosen_or_omitted_once_and_the_result_ignores_input_order(
    candidates: list[ToolCandidate], rng: random.Random, pins: list[ToolPin]
) -> None:
    selection = assemble_catalog(candidates, CTX, pins=pins)
    assert len(selection.chosen) + len(selection.omitted) == len(candidates)
    assert len({c.model_name for c in selection.chosen}) == len(selection.chosen)
    assert all(c.status.is_callable for c in selection.chosen)
    shuffled = list(candidates)
    rng.shuffle(shuffled)
    again = assemble_catalog(shuffled, CTX, pins=pins)
    assert [c.binding for c in again.chosen] == [c.binding for c in selection.chosen]
    assert again.omitted == selection.omitted
    assert again.digest(1, 0) == selection.digest(1, 0)


# ---------------------------------------------------------------- digest and discovery
def test_digest_is_sha256_of_the_canonical_snapshot_document() -> None:
    catalog = [tool("b", params={"type": "object", "properties": {"n": {"type": "number", "minimum": 1.0}}}),
               tool("a"), tool("a", "0.1.0")]
    selection = assemble_catalog(catalog, CTX)
    document = {
        "definitions": [c.definition.model_dump() for c in selection.chosen],
        "bindings": [c.binding.as_json() for c in selection.chosen],
        "registry_revision": 12,
        "policy_revision": 3,
        "omitted": [o.as_json() for o in selection.omitted],
        "context": CTX.identity(),
    }
    assert selection.digest(12, 3) == sha256_digest(document)


def test_digest_is_equal_for_equal_snapshots_whatever_the_request_id() -> None:
    catalog = [tool("a"), tool("b")]
    first = assemble_catalog(catalog, CTX).digest(1, 1)
    second = assemble_catalog(list(reversed(catalog)), dataclasses.replace(CTX, request_id="r2")).digest(1, 1)
    assert first == second and first.startswith("sha256:") and len(first) == 71


@pytest.mark.parametrize(
    "change",
    ["description", "schema", "version", "omitted", "registry_revision", "policy_revision", "tenant_id",
     "principal_id", "scopes", "environment", "region", "agent_id", "agent_version", "origin", "logical_name"],
)
def test_digest_differs_when_anything_seen_or_bound_differs(change: str) -> None:
    def digest(**kw: Any) -> str:
        meta = {k: kw.pop(k) for k in ("origin", "logical_name") if k in kw}
        catalog = [tool("a", kw.pop("version", "1.0.0"), description=kw.pop("description", "d"),
                        params=kw.pop("params", None), **meta)]
        catalog += kw.pop("extra", [])
        context = dataclasses.replace(CTX, **kw.pop("context", {}))
        return assemble_catalog(catalog, context).digest(kw.pop("registry_revision", 1), kw.pop("policy_revision", 1))

    changes: dict[str, dict[str, Any]] = {
        "description": {"description": "other"},
        "schema": {"params": {"type": "object", "properties": {"q": {"type": "string"}}}},
        "version": {"version": "1.0.1"},
        "omitted": {"extra": [tool("hidden", status=S.DISABLED)]},
        "registry_revision": {"registry_revision": 2},
        "policy_revision": {"policy_revision": 2},
        "origin": {"origin": "plugin"},
        "logical_name": {"logical_name": "ns.a"},
        "scopes": {"context": {"scopes": frozenset({"orders:read", "x"})}},
    }
    for field in ("tenant_id", "principal_id", "environment", "region", "agent_id", "agent_version"):
        changes[field] = {"context": {field: "other"}}
    assert digest(**changes[change]) != digest()


def test_discovery_result_lists_bindings_omissions_and_revisions() -> None:
    selection = assemble_catalog([tool("a"), tool("a", "0.9.0")], CTX)
    result = selection.discovery(5, 2)
    assert result == DiscoveryResult((selection.chosen[0].binding,), selection.omitted, 5, 2)
    assert dict(selection.bindings) == {"a": selection.chosen[0].binding}
    assert selection.definitions == (selection.chosen[0].definition,)


def test_a_candidate_derives_its_binding_once() -> None:
    params = {"type": "object", "properties": {"q": {"type": "string"}}}
    candidate = tool("search", "1.2.0", params=params, origin="plugin")
    assert candidate.binding == ToolBinding("search", "search", "1.2.0", schema_hash(params), "plugin")
    with pytest.raises(ValueError):
        tool("x", layer=-1)


# ---------------------------------------------------------------- re-authorization
def bound(candidate: ToolCandidate) -> ToolBinding:
    return assemble_catalog([candidate], CTX).chosen[0].binding


def test_reauthorization_passes_an_unchanged_call() -> None:
    candidate = tool("refund", tenants=frozenset({"acme"}), required_scopes=frozenset({"orders:read"}))
    assert reauthorize(bound(candidate), candidate, CTX, CTX.scopes) is None
    deprecated = dataclasses.replace(candidate, status=S.DEPRECATED)
    assert reauthorize(bound(candidate), deprecated, CTX, CTX.scopes) is None


@pytest.mark.parametrize(("status", "reason"), [(S.DISABLED, "tool_disabled"), (S.RETIRED, "tool_retired")])
def test_disabling_after_assembly_blocks_the_old_snapshot(status: ToolStatus, reason: str) -> None:
    candidate = tool("t")
    binding = bound(candidate)
    assert reauthorize(binding, dataclasses.replace(candidate, status=status), CTX, CTX.scopes) == reason


def test_a_scope_revoked_between_assembly_and_execution_is_refused() -> None:
    candidate = tool("refund", required_scopes=frozenset({"orders:refund"}))
    binding = assemble_catalog([candidate], CTX, scopes={"orders:refund"}).chosen[0].binding
    assert reauthorize(binding, candidate, CTX, frozenset({"orders:refund"})) is None
    assert reauthorize(binding, candidate, CTX, frozenset()) == "scope_revoked"


def test_a_tenant_removed_from_the_allow_list_is_refused() -> None:
    candidate = tool("t", tenants=frozenset({"acme"}))
    live = dataclasses.replace(candidate, metadata=candidate.metadata.updated(tenants=frozenset({"globex"})))
    assert reauthorize(bound(candidate), live, CTX, CTX.scopes) == "tenant_denied"


def test_a_deny_rule_added_after_assembly_applies_at_execution_and_fails_closed() -> None:
    candidate = tool("t")
    binding = bound(candidate)

    def broken(binding: ToolBinding, metadata: ToolMetadata, context: RequestContext) -> str | None:
        raise RuntimeError("policy store down")

    assert reauthorize(binding, candidate, CTX, CTX.scopes, [lambda b, m, c: "frozen account"]) == "deny_rule"
    assert reauthorize(binding, candidate, CTX, CTX.scopes, [broken]) == "deny_rule"
    assert reauthorize(binding, candidate, CTX, CTX.scopes, [lambda b, m, c: None]) is None


def test_a_binding_whose_version_or_schema_is_gone_is_stale() -> None:
    candidate = tool("t", params={"type": "object", "properties": {"q": {"type": "string"}}})
    binding = bound(candidate)
    assert reauthorize(binding, None, CTX, CTX.scopes) == "stale_binding"
    changed = tool("t", params={"type": "object", "properties": {"q": {"type": "integer"}}})
    assert reauthorize(binding, changed, CTX, CTX.scopes) == "stale_binding"
    assert reauthorize(binding, tool("t", "1.0.1", params=candidate.definition.parameters), CTX, CTX.scopes) == "stale_binding"


def test_an_upgrade_does_not_change_an_old_snapshot() -> None:
    v2, v21 = tool("t", "2.0.0"), tool("t", "2.1.0")
    old = assemble_catalog([v2], CTX)
    new = assemble_catalog([v2, v21], CTX)
    assert chosen(old) == ["t@2.0.0"] and chosen(new) == ["t@2.1.0"]
    # The old request still executes 2.0: its record is live and callable.
    assert reauthorize(old.chosen[0].binding, v2, CTX, CTX.scopes) is None


def test_reauthorization_checks_existence_before_status() -> None:
    candidate = tool("t")
    assert reauthorize(bound(candidate), None, CTX, frozenset()) == "stale_binding"
    disabled = dataclasses.replace(candidate, status=S.DISABLED, metadata=candidate.metadata.updated(tenants=frozenset()))
    assert reauthorize(bound(candidate), disabled, CTX, frozenset()) == "tool_disabled"
