"""Execution against a snapshot: the context at every stage, re-authorization right before each body,
aliases, unknown names, max_result_bytes, the audit trail, and the reason recorded by the sinks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import FailingSink, call, codes
from tether_clr import (
    AgentPipelineScope,
    InMemoryToolLog,
    PythonFunction,
    RequestContext,
    SqliteToolLog,
    ToolAssembly,
    ToolAuditRecord,
    ToolExecutionOutcome,
    ToolMetadata,
    ToolPostDecision,
    ToolPreDecision,
    ToolRegistrationOptions,
    ToolRegistry,
    ToolStatus,
)

pytestmark = pytest.mark.anyio

S = ToolStatus
CTX = RequestContext("acme", "alice", scopes=frozenset({"orders:read", "orders:refund"}), agent_id="support",
                     request_id="req-1")


class Ran:
    """Records which tool bodies ran."""

    def __init__(self) -> None:
        self.bodies: list[str] = []

    def tool(self, registry: ToolRegistry, name: str, version: str = "1.0.0", *, result: Any = None,
             status: ToolStatus | None = None, scope: AgentPipelineScope | None = None, **meta: Any) -> Any:
        label = f"{name}@{version}"

        def body() -> Any:
            self.bodies.append(label)
            return label if result is None else result

        tool = PythonFunction.from_callable(body, name=name)
        return registry.register(tool, scope, ToolRegistrationOptions(metadata=ToolMetadata(version=version, **meta),
                                                                      status=status))


async def run(registry: ToolRegistry, view: Any, *names: str, **kwargs: Any) -> list[ToolExecutionOutcome]:
    with anyio.fail_after(10):
        return await registry.execute_batch([call(f"c{i}", n) for i, n in enumerate(names)], view, **kwargs)


def reasons(outcomes: list[ToolExecutionOutcome]) -> list[str | None]:
    return [o.reason for o in outcomes]


# ---------------------------------------------------------------- the context
async def test_execution_context_is_reachable_from_every_stage() -> None:
    registry = ToolRegistry()
    ran = Ran()
    ran.tool(registry, "t")
    seen: dict[str, Any] = {}

    async def pre(execution: Any, next_: Any) -> ToolPreDecision:
        seen["pre"] = execution.context
        return await next_()

    def guard(execution: Any) -> None:
        seen["guard"] = execution.context

    async def around(dispatch: Any, next_: Any) -> ToolExecutionOutcome:
        seen["execute"] = dispatch.execution.context
        return await next_()

    async def post(execution: Any, outcome: Any, next_: Any) -> ToolPostDecision:
        seen["post"] = execution.context
        return ToolPostDecision.accept()

    async def policy(execution: Any, outcome: Any) -> None:
        seen["policy"] = execution.context

    registry.register_pre_execute_listener(None, pre)
    registry.register_guard(None, guard)
    registry.register_execute_listener(None, around)
    registry.register_post_execute_listener(None, post)
    registry.register_result_policy(None, policy)
    assert codes(await run(registry, registry.assemble(CTX), "t")) == [None]
    assert seen == dict.fromkeys(("pre", "guard", "execute", "post", "policy"), CTX)
    await run(registry, registry.seal(), "t")
    assert set(seen.values()) == {None}  # a plain view has no context


# ---------------------------------------------------------------- re-authorization
async def test_scope_revoked_between_assembly_and_execution_is_denied_and_the_body_never_runs() -> None:
    registry = ToolRegistry()
    ran = Ran()
    ran.tool(registry, "refund", required_scopes={"orders:refund"})
    assembly = registry.assemble(CTX)
    assert "refund" in assembly

    async def authority(context: RequestContext) -> set[str]:
        return {"orders:read"}

    registry.authority = authority
    (outcome,) = await run(registry, assembly, "refund")
    assert (outcome.code, outcome.reason) == ("DENIED", "scope_revoked")
    assert ran.bodies == []


async def test_the_authority_is_asked_before_each_body_sync_or_async() -> None:
    registry = ToolRegistry()
    ran = Ran()
    ran.tool(registry, "refund", required_scopes={"orders:refund"})
    asked: list[RequestContext] = []

    def authority(context: RequestContext) -> frozenset[str]:
        asked.append(context)
        return frozenset({"orders:refund"})

    registry.authority = authority
    outcomes = await run(registry, registry.assemble(CTX), "refund", "refund")
    assert codes(outcomes) == [None, None] and ran.bodies == ["refund@1.0.0"] * 2
    assert asked == [CTX] * 3  # once when assembling, once before each body


@pytest.mark.parametrize("answer", ["raise", "raise_async", ["orders:refund"], {"orders:refund", 3}, None, "async_list"])
async def test_an_authority_that_fails_is_unavailable_authority_unavailable(answer: Any) -> None:
    registry = ToolRegistry()
    ran = Ran()
    ran.tool(registry, "open")
    assembly = registry.assemble(CTX)

    def sync(context: RequestContext) -> Any:
        if answer == "raise":
            raise RuntimeError("directory down")
        return answer

    async def asynchronous(context: RequestContext) -> Any:
        if answer == "raise_async":
            raise RuntimeError("directory down")
        return ["orders:refund"]

    registry.authority = asynchronous if answer in ("raise_async", "async_list") else sync
    (outcome,) = await run(registry, assembly, "open")
    assert (outcome.code, outcome.reason) == ("UNAVAILABLE", "authority_unavailable")
    assert ran.bodies == []


@pytest.mark.parametrize(("status", "reason"), [(S.DISABLED, "tool_disabled"), (S.RETIRED, "tool_retired")])
async def test_disable_after_assembly_blocks_old_and_new_snapshots(status: ToolStatus, reason: str) -> None:
    registry = ToolRegistry()
    ran = Ran()
    ran.tool(registry, "t")
    old = registry.assemble(CTX)
    plain = registry.seal()
    registry.set_status("t", "1.0.0", status)
    new = registry.assemble(CTX)
    (from_old,) = await run(registry, old, "t")
    (from_plain,) = await run(registry, plain, "t")
    (from_new,) = await run(registry, new, "t")
    assert (from_old.code, from_old.reason) == ("DENIED", reason)
    assert (from_plain.code, from_plain.reason) == ("DENIED", reason)
    assert from_new.code == "UNKNOWN_TOOL" and [o.reason for o in new.omitted] == ["not_active"]
    assert ran.bodies == []


@pytest.mark.parametrize("moves", [(S.DISABLED, S.ACTIVE), (S.DEPRECATED,)], ids=["re-enabled", "deprecated"])
async def test_a_re_enabled_or_deprecated_version_still_runs_from_an_old_snapshot(moves: tuple[ToolStatus, ...]) -> None:
    registry = ToolRegistry()
    ran = Ran()
    ran.tool(registry, "t")
    assembly = registry.assemble(CTX)
    for status in moves:
        registry.set_status("t", "1.0.0", status)
    assert codes(await run(registry, assembly, "t")) == [None]


async def test_a_tenant_removed_after_assembly_is_denied_tenant_denied() -> None:
    registry = ToolRegistry()
    ran = Ran()
    ran.tool(registry, "t", tenants={"acme"})
    assembly = registry.assemble(CTX)
    registry.update_metadata("t", "1.0.0", tenants={"globex"})
    (outcome,) = await run(registry, assembly, "t")
    assert (outcome.code, outcome.reason) == ("DENIED", "tenant_denied") and ran.bodies == []


async def test_a_deny_rule_added_after_assembly_applies_at_execution() -> None:
    registry = ToolRegistry()
    ran = Ran()
    ran.tool(registry, "t")
    ran.tool(registry, "u")
    assembly = registry.assemble(CTX)
    registry.add_deny_rule(lambda binding, metadata, context: "frozen" if binding.model_name == "t" else None)
    outcomes = await run(registry, assembly, "t", "u")
    assert codes(outcomes) == ["DENIED", None] and reasons(outcomes) == ["deny_rule", None]
    assert ran.bodies == ["u@1.0.0"]


async def test_a_disposed_binding_is_stale() -> None:
    registry = ToolRegistry()
    ran = Ran()
    registration = ran.tool(registry, "t")
    assembly = registry.assemble(CTX)
    registration.dispose()
    ran.tool(registry, "t")  # the same version again is a new registration, not the bound one
    (outcome,) = await run(registry, assembly, "t")
    assert (outcome.code, outcome.reason) == ("DENIED", "stale_binding") and ran.bodies == []


async def test_upgrade_while_an_old_request_is_in_flight_runs_the_old_version() -> None:
    registry = ToolRegistry()
    ran = Ran()
    release = anyio.Event()
    started = anyio.Event()

    async def gate() -> str:
        started.set()
        await release.wait()
        return "gate"

    registry.register(PythonFunction.from_callable(gate))
    ran.tool(registry, "t", "2.0.0")
    old = registry.assemble(CTX)
    outcomes: list[ToolExecutionOutcome] = []

    async def old_request() -> None:
        outcomes.extend(await run(registry, old, "gate", "t"))

    async with anyio.create_task_group() as tg:
        tg.start_soon(old_request)
        await started.wait()
        ran.tool(registry, "t", "2.1.0")  # becomes ACTIVE while the old request is in flight
        release.set()
    assert codes(outcomes) == [None, None] and outcomes[1].value == "t@2.0.0"
    (fresh,) = await run(registry, registry.assemble(CTX), "t")
    assert fresh.value == "t@2.1.0"
    assert [b.version for b in old.bindings.values() if b.model_name == "t"] == ["2.0.0"]


async def test_a_name_the_model_invents_or_takes_from_another_tenant_is_unknown_tool() -> None:
    registry = ToolRegistry()
    ran = Ran()
    ran.tool(registry, "orders")
    ran.tool(registry, "globex_export", tenants={"globex"})
    outcomes = await run(registry, registry.assemble(CTX), "globex_export", "order", "ORDERS", "orders ")
    assert codes(outcomes) == ["UNKNOWN_TOOL"] * 4 and ran.bodies == []


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.text(min_size=1, max_size=20))  # an empty name is the invariant policy's (it aborts the batch)
def test_any_name_not_bound_or_aliased_is_unknown_tool_and_runs_nothing(name: str, anyio_backend: str) -> None:
    registry = ToolRegistry()
    ran = Ran()
    ran.tool(registry, "orders", aliases=("find_orders",))
    ran.tool(registry, "secret", tenants={"globex"})
    assembly = registry.assemble(CTX)

    async def main() -> list[ToolExecutionOutcome]:
        return await registry.execute_batch([call("c", name)], assembly)

    (outcome,) = anyio.run(main, backend=anyio_backend)
    if name in ("orders", "find_orders"):
        assert outcome.code is None
    else:
        assert outcome.code == "UNKNOWN_TOOL" and ran.bodies == []


async def test_a_renamed_tool_still_resolves_through_its_alias_and_the_outcome_keeps_the_name_used() -> None:
    registry = ToolRegistry()
    ran = Ran()
    ran.tool(registry, "find_orders", aliases=("search_orders", "lookup"))
    ran.tool(registry, "lookup")  # a primary name is never shadowed by an alias
    records: list[ToolAuditRecord] = []
    registry.register_audit_listener(records.append)
    sink = InMemoryToolLog()
    outcomes = await run(registry, registry.assemble(CTX), "search_orders", "lookup", "search_order", sink=sink)
    assert codes(outcomes) == [None, None, "UNKNOWN_TOOL"]  # no fuzzy matching
    assert [o.name for o in outcomes] == ["search_orders", "lookup", "search_order"]
    assert ran.bodies == ["find_orders@1.0.0", "lookup@1.0.0"]
    assert [(r.requested_name, r.model_name) for r in records] == [
        ("search_orders", "find_orders"), ("lookup", "lookup"), ("search_order", None)]
    assert [o.name for o in sink.outcomes] == ["search_orders", "lookup", "search_order"]


# ---------------------------------------------------------------- max_result_bytes
async def test_a_result_larger_than_max_result_bytes_is_tool_error_result_too_large() -> None:
    registry = ToolRegistry()
    ran = Ran()
    ran.tool(registry, "fits", result="é" * 4, max_result_bytes=10)  # "éééé" is 10 bytes of canonical JSON
    ran.tool(registry, "big", result="é" * 5, max_result_bytes=10)
    outcomes = await run(registry, registry.assemble(CTX), "fits", "big")
    assert codes(outcomes) == [None, "TOOL_ERROR"] and reasons(outcomes) == [None, "result_too_large"]
    assert "12 bytes" in outcomes[1].failure.message
    assert codes(await run(registry, registry.seal(), "big")) == ["TOOL_ERROR"]  # plain views too


# ---------------------------------------------------------------- the audit trail
async def test_one_audit_record_per_call_with_identity_binding_decision_and_reason() -> None:
    registry = ToolRegistry()
    ran = Ran()
    ran.tool(registry, "ok")
    ran.tool(registry, "refund", required_scopes={"orders:refund"})
    records: list[ToolAuditRecord] = []
    registry.register_audit_listener(records.append)
    assembly = registry.assemble(CTX)
    registry.authority = lambda context: {"orders:read"}
    await run(registry, assembly, "ok", "refund", "ghost")
    assert [(r.call_id, r.decision, r.code, r.reason) for r in records] == [
        ("c0", "dispatched", None, None), ("c1", "refused", "DENIED", "scope_revoked"),
        ("c2", "refused", "UNKNOWN_TOOL", None)]
    first = records[0]
    binding = assembly.bindings["ok"]
    assert (first.request_id, first.tenant_id, first.principal_id, first.agent_id) == ("req-1", "acme", "alice", "support")
    assert (first.registry_revision, first.policy_revision) == (assembly.registry_revision, assembly.policy_revision)
    assert (first.logical_name, first.version, first.schema_hash) == (binding.logical_name, binding.version, binding.schema_hash)
    assert all(r.latency_ms >= 0 for r in records)


async def test_audit_records_of_a_plain_view_have_no_catalog_fields() -> None:
    registry = ToolRegistry()
    ran = Ran()
    ran.tool(registry, "ok")
    records: list[ToolAuditRecord] = []
    registry.register_audit_listener(records.append)
    await run(registry, registry.seal(), "ok")
    (record,) = records
    assert record.model_name == "ok" and record.decision == "dispatched"
    assert all(getattr(record, f) is None for f in ("request_id", "tenant_id", "principal_id", "agent_id",
                                                    "registry_revision", "policy_revision", "logical_name",
                                                    "version", "schema_hash"))


async def test_audit_listener_failures_are_contained_and_async_listeners_are_awaited() -> None:
    registry = ToolRegistry()
    ran = Ran()
    ran.tool(registry, "ok")
    got: list[str] = []

    async def asynchronous(record: ToolAuditRecord) -> None:
        got.append(record.call_id)

    registry.register_audit_listener(lambda record: 1 / 0)
    registry.register_audit_listener(asynchronous)
    registry.register_audit_listener(lambda record: got.append("sync"))
    assert codes(await run(registry, registry.assemble(CTX), "ok")) == [None]
    assert got == ["c0", "sync"]


async def test_a_batch_aborted_by_its_sink_still_audits_the_calls_that_reached_an_outcome() -> None:
    registry = ToolRegistry()
    ran = Ran()
    ran.tool(registry, "ok")
    records: list[ToolAuditRecord] = []
    registry.register_audit_listener(records.append)

    from tether_clr import SinkError

    with pytest.raises(SinkError):
        await run(registry, registry.assemble(CTX), "ok", sink=FailingSink("outcome_ready"))
    assert [(r.call_id, r.decision) for r in records] == [("c0", "dispatched")]


async def test_without_an_audit_listener_no_audit_record_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    import tether_clr.execution.auditing as batch

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("an audit record was built without an audit listener")

    monkeypatch.setattr(batch, "ToolAuditRecord", refuse)
    registry = ToolRegistry()
    Ran().tool(registry, "ok")
    assert codes(await run(registry, registry.assemble(CTX), "ok", "ghost")) == [None, "UNKNOWN_TOOL"]


# ---------------------------------------------------------------- sinks record the reason
async def test_sinks_record_the_failure_reason(tmp_path: Path) -> None:
    registry = ToolRegistry()
    ran = Ran()
    ran.tool(registry, "t")
    assembly = registry.assemble(CTX)
    registry.set_status("t", "1.0.0", S.DISABLED)
    memory = InMemoryToolLog()
    await run(registry, assembly, "t", sink=memory)
    assert memory.outcomes[0].reason == "tool_disabled"
    with SqliteToolLog(tmp_path / "log.sqlite3") as log:
        await run(registry, assembly, "t", sink=log)
    with SqliteToolLog(tmp_path / "log.sqlite3") as reopened:
        (stored,) = reopened.outcomes()
    assert (stored.code, stored.reason) == ("DENIED", "tool_disabled")


def test_a_log_made_before_the_reason_column_gains_it_on_open(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "old.sqlite3"
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE tool_outcomes (seq INTEGER PRIMARY KEY AUTOINCREMENT, call_id TEXT NOT NULL, name TEXT NOT NULL,"
        " value TEXT NOT NULL, failure_code TEXT, failure_message TEXT, recorded_at TEXT NOT NULL);"
        "INSERT INTO tool_outcomes (call_id, name, value, failure_code, failure_message, recorded_at)"
        " VALUES ('a', 't', '{}', 'DENIED', 'no', 'then');"
    )
    db.commit()
    db.close()
    with SqliteToolLog(path) as log:
        (old,) = log.outcomes()
    assert (old.code, old.reason) == ("DENIED", None)


# ---------------------------------------------------------------- Python and C# alike
async def test_python_and_csharp_tools_are_governed_alike(clr_tools: dict[str, Any]) -> None:
    registry = ToolRegistry()
    ran = Ran()
    options = ToolRegistrationOptions(metadata=ToolMetadata(required_scopes={"math:use"}, aliases=("plus",)))
    registry.register(clr_tools["functions"]["Add"], options=options)
    registry.register(clr_tools["functions"]["Greet"],
                      options=ToolRegistrationOptions(metadata=ToolMetadata(tenants={"globex"})))
    ran.tool(registry, "py_add", required_scopes={"math:use"})
    records: list[ToolAuditRecord] = []
    registry.register_audit_listener(records.append)
    without = registry.assemble(CTX)
    assert without.names == [] and {o.reason for o in without.omitted} == {"missing_scope", "tenant_denied"}
    context = RequestContext("acme", "alice", scopes={"math:use"})
    assembly = registry.assemble(context)
    assert assembly.names == ["Add", "py_add"]
    with anyio.fail_after(30):
        outcomes = await registry.execute_batch(
            [call("1", "Add", {"a": 1, "b": 2}), call("2", "plus", {"a": 2, "b": 2}), call("3", "py_add"),
             call("4", "Greet", {"name": "x"})], assembly)
    assert [o.value for o in outcomes[:3]] == [3, 4, "py_add@1.0.0"] and outcomes[3].code == "UNKNOWN_TOOL"
    registry.authority = lambda ctx: set()
    revoked = await registry.execute_batch([call("5", "Add", {"a": 1, "b": 2}), call("6", "py_add")], assembly)
    assert codes(revoked) == ["DENIED", "DENIED"] and reasons(revoked) == ["scope_revoked", "scope_revoked"]
    registry.authority = None
    registry.set_status("Add", "1.0.0", S.DISABLED)
    registry.set_status("py_add", "1.0.0", S.DISABLED)
    disabled = await registry.execute_batch([call("7", "Add", {"a": 1, "b": 2}), call("8", "py_add")], assembly)
    assert reasons(disabled) == ["tool_disabled", "tool_disabled"]
    assert ran.bodies == ["py_add@1.0.0"]
    assert [(r.requested_name, r.model_name, r.decision) for r in records[:2]] == [
        ("Add", "Add", "dispatched"), ("plus", "Add", "dispatched")]


async def test_an_assembly_must_come_from_the_same_registry() -> None:
    registry, other = ToolRegistry(), ToolRegistry()
    assembly = other.assemble(CTX)
    assert isinstance(assembly, ToolAssembly)
    with pytest.raises(ValueError, match="sealed by this registry"):
        await registry.execute_batch([], assembly)
