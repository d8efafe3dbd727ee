"""Catalog records: lifecycle rules, metadata, capability queries, bindings, omissions, pins.

The request context and the audit record (``tether_clr.records``) are tested in tests/records/."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import pytest

from tests.support import SCHEMA_HASH
from tether_clr import (
    CATALOG_FAILURE_REASONS,
    OMISSION_REASONS,
    REAUTHORIZATION_REASONS,
    CapabilityQuery,
    DiscoveryResult,
    Omission,
    RequestContext,
    SideEffect,
    StatusTransition,
    ToolBinding,
    ToolMetadata,
    ToolPin,
    ToolStatus,
    status_transition,
)

S = ToolStatus


# ---------------------------------------------------------------- lifecycle
def expected_transition(current: ToolStatus, target: ToolStatus) -> StatusTransition | None:
    """The issue's rules, spelled out as a table (None: refused)."""
    if current is target:
        return StatusTransition.NOOP
    if (current, target) == (S.DRAFT, S.VALIDATED):
        return StatusTransition.VALIDATE
    forward = {
        S.VALIDATED: {S.ACTIVE, S.DEPRECATED, S.DISABLED, S.RETIRED},
        S.ACTIVE: {S.DEPRECATED, S.DISABLED, S.RETIRED},
        S.DEPRECATED: {S.DISABLED, S.RETIRED},
        S.DISABLED: {S.RETIRED, S.ACTIVE},
    }
    return StatusTransition.MOVE if target in forward.get(current, set()) else None


@pytest.mark.parametrize(("current", "target"), list(itertools.product(ToolStatus, repeat=2)))
def test_status_transitions_follow_the_lifecycle_rules(current: ToolStatus, target: ToolStatus) -> None:
    expected = expected_transition(current, target)
    if expected is None:
        with pytest.raises(ValueError):
            status_transition(current, target)
    else:
        assert status_transition(current, target) is expected


def test_retired_is_final_and_draft_moves_only_through_validation() -> None:
    with pytest.raises(ValueError, match="final"):
        status_transition(S.RETIRED, S.ACTIVE)
    with pytest.raises(ValueError, match="VALIDATED"):
        status_transition(S.DRAFT, S.ACTIVE)
    assert status_transition(S.DISABLED, S.ACTIVE) is StatusTransition.MOVE  # re-enable
    assert status_transition(S.VALIDATED, S.RETIRED) is StatusTransition.MOVE  # steps may be skipped


def test_status_transition_takes_status_members() -> None:
    with pytest.raises(TypeError):
        status_transition("active", S.RETIRED)  # type: ignore[arg-type]


def test_only_active_and_deprecated_are_callable() -> None:
    assert {s for s in ToolStatus if s.is_callable} == {S.ACTIVE, S.DEPRECATED}


# ---------------------------------------------------------------- metadata
def test_tool_metadata_defaults_are_the_issue_defaults() -> None:
    m = ToolMetadata()
    assert dataclasses.asdict(m) == {
        "logical_name": None, "version": "1.0.0", "provider": None, "tenants": None,
        "required_scopes": frozenset(), "environments": None, "regions": None, "side_effect": SideEffect.NONE,
        "risk_level": "low", "read_only": None, "destructive": None, "idempotent": None, "open_world": None,
        "domain": None, "tags": frozenset(), "aliases": (), "origin": "builtin", "compatibility": "strict",
        "max_result_bytes": None, "enabled_when": None, "title": None, "deferred": False, "search_hint": None,
    }
    assert [f.name for f in dataclasses.fields(ToolMetadata)] == list(dataclasses.asdict(m))


def test_tool_metadata_title_is_optional_text_and_can_be_updated() -> None:
    assert ToolMetadata(title="Weather forecast").title == "Weather forecast"
    with pytest.raises(TypeError, match="title"):
        ToolMetadata(title=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="title"):
        ToolMetadata(title="")
    assert ToolMetadata().updated(title="Forecast").title == "Forecast"
    with pytest.raises(ValueError, match="title"):
        ToolMetadata().updated(title="")


def test_side_effect_vocabulary() -> None:
    assert [s.name for s in SideEffect] == ["NONE", "WRITE", "EXTERNAL_COMMUNICATION", "FINANCIAL", "DESTRUCTIVE"]


def test_tool_metadata_normalises_sets_and_refuses_bare_strings() -> None:
    m = ToolMetadata(tenants=["t1"], required_scopes=("a",), tags=["x"], environments=frozenset({"prod"}), side_effect="write")  # type: ignore[arg-type]
    assert m.tenants == frozenset({"t1"}) and m.required_scopes == frozenset({"a"}) and m.side_effect is SideEffect.WRITE
    for name in ("tenants", "required_scopes", "environments", "regions", "tags"):
        with pytest.raises(TypeError, match=name):
            ToolMetadata(**{name: "abc"})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="aliases"):
        ToolMetadata(aliases="old_name")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "bad",
    [{"version": "1.0"}, {"origin": "thirdparty"}, {"compatibility": "loose"}, {"max_result_bytes": 0},
     {"max_result_bytes": True}, {"aliases": ("a", "a")}, {"logical_name": ""}, {"risk_level": ""},
     {"side_effect": "explosive"}],
)
def test_tool_metadata_refuses_invalid_values(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        ToolMetadata(**bad)


@pytest.mark.parametrize("bad", [{"read_only": 1}, {"enabled_when": "yes"}, {"domain": 3}])
def test_tool_metadata_refuses_wrong_types(bad: dict[str, Any]) -> None:
    with pytest.raises(TypeError):
        ToolMetadata(**bad)


@pytest.mark.parametrize("claim", ["read_only", "destructive", "idempotent", "open_world"])
def test_a_behaviour_claim_is_true_false_or_not_said(claim: str) -> None:
    assert getattr(ToolMetadata(), claim) is None  # nobody said: not the same as False
    for said in (True, False, None):
        assert getattr(ToolMetadata(**{claim: said}), claim) is said
        assert getattr(ToolMetadata().updated(**{claim: said}), claim) is said
    with pytest.raises(TypeError, match=claim):
        ToolMetadata(**{claim: "yes"})


def test_empty_tenant_set_allows_nobody_while_none_allows_everybody() -> None:
    assert ToolMetadata(tenants=frozenset()).tenants == frozenset()
    assert ToolMetadata().tenants is None


def test_logical_name_defaults_to_the_model_name() -> None:
    assert ToolMetadata().logical_name_for("search") == "search"
    assert ToolMetadata(logical_name="kb.search").logical_name_for("search") == "kb.search"


def test_metadata_update_changes_governance_fields_only() -> None:
    m = ToolMetadata(logical_name="refund", version="2.0.0")
    updated = m.updated(tenants=frozenset({"t1"}), required_scopes=frozenset({"orders:refund"}))
    assert updated.tenants == frozenset({"t1"}) and updated.version == "2.0.0" and m.tenants is None
    for field in ("logical_name", "version", "origin"):
        with pytest.raises(ValueError, match="new version"):
            m.updated(**{field: "x"})
    with pytest.raises(TypeError):
        m.updated(colour="red")
    with pytest.raises(ValueError):
        m.updated(max_result_bytes=-1)


# ---------------------------------------------------------------- capability query
def test_capability_query_matches_when_every_given_field_has_a_listed_value() -> None:
    tool = ToolMetadata(domain="billing", side_effect=SideEffect.FINANCIAL, tags=frozenset({"refunds", "orders"}))
    assert CapabilityQuery().matches(tool)
    assert CapabilityQuery(domains=frozenset({"billing", "crm"})).matches(tool)
    assert CapabilityQuery(side_effects=frozenset({SideEffect.FINANCIAL, SideEffect.WRITE})).matches(tool)
    assert CapabilityQuery(tags=frozenset({"orders", "other"})).matches(tool)
    assert CapabilityQuery(domains=frozenset({"billing"}), tags=frozenset({"refunds"}), side_effects=frozenset({"financial"})).matches(tool)  # type: ignore[arg-type]
    assert not CapabilityQuery(domains=frozenset({"billing"}), tags=frozenset({"other"})).matches(tool)
    assert not CapabilityQuery(domains=frozenset({"crm"})).matches(tool)
    assert not CapabilityQuery(domains=frozenset({"billing"})).matches(ToolMetadata())  # no domain: does not match a domain query


def test_capability_query_with_an_empty_list_matches_nothing() -> None:
    assert not CapabilityQuery(tags=frozenset()).matches(ToolMetadata(tags=frozenset({"a"})))


# ---------------------------------------------------------------- bindings, omissions, results, pins
def test_tool_binding_is_validated() -> None:
    ToolBinding("search", "kb.search", "1.2.0", SCHEMA_HASH, "builtin")
    for bad in (
        ("", "l", "1.0.0", SCHEMA_HASH, "builtin"),
        ("m", "l", "1.0", SCHEMA_HASH, "builtin"),
        ("m", "l", "1.0.0", "sha256:xyz", "builtin"),
        ("m", "l", "1.0.0", SCHEMA_HASH.upper(), "builtin"),
        ("m", "l", "1.0.0", SCHEMA_HASH, "vendor"),
    ):
        with pytest.raises(ValueError):
            ToolBinding(*bad)  # type: ignore[arg-type]


def test_omission_reasons_are_the_issue_vocabulary() -> None:
    assert OMISSION_REASONS == ("tenant_denied", "missing_scope", "context_mismatch", "not_active", "flag_disabled",
                                "deny_rule", "kill_switch", "shadowed", "superseded", "query_mismatch")
    with pytest.raises(ValueError, match="reason"):
        Omission("refund", "1.0.0", "hidden")  # type: ignore[arg-type]


def test_failure_reasons_are_the_issue_vocabulary() -> None:
    assert REAUTHORIZATION_REASONS == ("tool_disabled", "tool_retired", "tenant_denied", "scope_revoked",
                                       "deny_rule", "stale_binding", "kill_switch")
    assert set(CATALOG_FAILURE_REASONS) == set(REAUTHORIZATION_REASONS) | {"authority_unavailable", "result_too_large",
                                                                                 "schema_not_loaded", "control_stale"}


def test_discovery_result_is_immutable_and_checked() -> None:
    binding = ToolBinding("m", "m", "1.0.0", SCHEMA_HASH, "builtin")
    result = DiscoveryResult([binding], [Omission("x", "1.0.0", "superseded")], 3, 1)  # type: ignore[arg-type]
    assert result.tools == (binding,) and isinstance(result.omitted, tuple)
    with pytest.raises(ValueError):
        DiscoveryResult((), (), -1, 0)
    with pytest.raises(TypeError):
        DiscoveryResult(("m",), (), 0, 0)  # type: ignore[arg-type]


def test_pin_specificity_orders_tenant_and_agent_then_tenant_then_agent_then_global() -> None:
    pins = [ToolPin("r", "1.0.0"), ToolPin("r", "1.0.0", agent_version="a1"), ToolPin("r", "1.0.0", tenant_id="t"),
            ToolPin("r", "1.0.0", tenant_id="t", agent_version="a1")]
    assert [p.specificity for p in pins] == [0, 1, 2, 3]
    context = RequestContext("t", "p", agent_version="a1")
    assert all(p.matches(context) for p in pins)
    assert not ToolPin("r", "1.0.0", tenant_id="other").matches(context)
    assert not ToolPin("r", "1.0.0", agent_version="a2").matches(context)
    with pytest.raises(ValueError):
        ToolPin("r", "latest")
