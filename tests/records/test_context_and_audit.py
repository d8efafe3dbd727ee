"""Records every layer shares: the request context (identity from the host, never the model) and the audit record."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from tests.support import SCHEMA_HASH
from tether_clr import RequestContext, ToolAuditRecord, ToolFailureCodes, refuse_identity_parameters


# ---------------------------------------------------------------- RequestContext
def test_request_context_requires_tenant_and_principal() -> None:
    with pytest.raises(ValueError, match="tenant_id"):
        RequestContext("", "p")
    with pytest.raises(ValueError, match="principal_id"):
        RequestContext("t", "")
    with pytest.raises(TypeError, match="tenant_id"):
        RequestContext(None, "p")  # type: ignore[arg-type]


def test_request_context_scopes_are_a_frozenset_of_strings() -> None:
    context = RequestContext("t", "p", scopes=["a", "b", "a"])  # type: ignore[arg-type]
    assert context.scopes == frozenset({"a", "b"}) and isinstance(context.scopes, frozenset)
    with pytest.raises(TypeError, match="scopes"):
        RequestContext("t", "p", scopes="orders:refund")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        RequestContext("t", "p", scopes=frozenset({1}))  # type: ignore[arg-type]


def test_request_context_is_immutable() -> None:
    context = RequestContext("t", "p")
    with pytest.raises(dataclasses.FrozenInstanceError):
        context.tenant_id = "other"  # type: ignore[misc]


def test_request_context_identity_excludes_the_request_id() -> None:
    a = RequestContext("t", "p", scopes=frozenset({"b", "a"}), environment="prod", request_id="r1")
    b = RequestContext("t", "p", scopes=frozenset({"a", "b"}), environment="prod", request_id="r2")
    assert a.identity() == b.identity()
    assert a.identity()["scopes"] == ["a", "b"] and "request_id" not in a.identity()


def test_identity_parameters_are_refused_unless_allowed() -> None:
    schema = {"type": "object", "properties": {"user_id": {"type": "string"}, "q": {"type": "string"}}}
    with pytest.raises(ValueError, match="user_id"):
        refuse_identity_parameters(schema)
    refuse_identity_parameters(schema, allow=True)
    refuse_identity_parameters({"type": "object", "properties": {"nested": {"properties": {"tenant_id": {}}}}})


# ---------------------------------------------------------------- audit
def audit(**changes: Any) -> ToolAuditRecord:
    fields: dict[str, Any] = dict(
        request_id="r1", tenant_id="t", principal_id="p", agent_id=None, registry_revision=4, policy_revision=1,
        requested_name="old_name", model_name="new_name", logical_name="new_name", version="1.0.0", schema_hash=SCHEMA_HASH,
        call_id="c1", decision="dispatched", code=None, reason=None, latency_ms=1.5,
    )
    fields.update(changes)
    return ToolAuditRecord(**fields)


def test_audit_record_has_every_field_the_issue_names() -> None:
    assert [f.name for f in dataclasses.fields(ToolAuditRecord)] == [
        "request_id", "tenant_id", "principal_id", "agent_id", "registry_revision", "policy_revision",
        "requested_name", "model_name", "logical_name", "version", "schema_hash", "call_id", "decision", "code",
        "reason", "latency_ms", "parent_call_id", "attempts",
    ]
    assert audit().as_json()["requested_name"] == "old_name"


def test_audit_record_for_a_plain_sealed_view_has_no_catalog_fields() -> None:
    record = audit(request_id=None, tenant_id=None, principal_id=None, registry_revision=None, policy_revision=None,
                   model_name=None, logical_name=None, version=None, schema_hash=None, requested_name="",
                   decision="refused", code=ToolFailureCodes.UNKNOWN_TOOL, call_id="")
    assert record.as_json()["code"] == "UNKNOWN_TOOL"


@pytest.mark.parametrize(
    "bad",
    [{"decision": "maybe"}, {"decision": "refused", "code": None}, {"code": "NOPE"}, {"latency_ms": -1.0},
     {"latency_ms": float("nan")}, {"registry_revision": -1}, {"latency_ms": True}, {"attempts": 0}, {"attempts": True}],
)
def test_audit_record_refuses_inconsistent_values(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        audit(**bad)
