"""Calls to deferred tools: refused INVALID_ARGS ``schema_not_loaded`` until loaded, bodies never run (issue 16, section 1)."""

from __future__ import annotations

import json

import anyio
import pytest

from tests.support import BATCH_TIMEOUT, call, codes
from tests.support.deferred_tools import ACME, deferred_registry
from tether_clr import ToolExecutionOutcome, ToolRegistry

pytestmark = pytest.mark.anyio

REFUND = {"order": "o-1", "amount": 2.5}


async def run(registry: ToolRegistry, view: object, *calls: object) -> list[ToolExecutionOutcome]:
    with anyio.fail_after(BATCH_TIMEOUT):
        return await registry.execute_batch(list(calls), view)  # type: ignore[arg-type]


async def test_a_call_to_a_deferred_tool_not_loaded_is_invalid_args_schema_not_loaded_and_its_body_never_runs() -> None:
    bodies: list[str] = []
    registry = deferred_registry(bodies)
    (outcome,) = await run(registry, registry.assemble(ACME), call("c1", "refund_order", REFUND))
    assert outcome.failure is not None
    assert (outcome.code, outcome.failure.reason) == ("INVALID_ARGS", "schema_not_loaded")
    assert "'tool_search'" in outcome.failure.message and "refund_order" in outcome.failure.message
    assert bodies == []


async def test_schema_not_loaded_comes_before_argument_checks() -> None:
    registry = deferred_registry()
    outcomes = await run(registry, registry.assemble(ACME), call("c1", "refund_order", "{not json"),
                         call("c2", "refund_order", {"wrong": 1}))
    assert [o.failure.reason for o in outcomes if o.failure] == ["schema_not_loaded", "schema_not_loaded"]


async def test_an_alias_of_a_deferred_tool_is_refused_the_same_way() -> None:
    registry = deferred_registry()
    (outcome,) = await run(registry, registry.assemble(ACME), call("c1", "refund", REFUND))
    assert outcome.failure is not None and outcome.failure.reason == "schema_not_loaded" and outcome.name == "refund"


async def test_without_a_search_tool_the_message_points_to_with_loaded() -> None:
    registry = deferred_registry(search=False)
    (outcome,) = await run(registry, registry.assemble(ACME), call("c1", "refund_order", REFUND))
    assert outcome.failure is not None and outcome.failure.reason == "schema_not_loaded"
    assert "with_loaded" in outcome.failure.message


async def test_a_deferred_tool_the_caller_cannot_see_stays_unknown_tool() -> None:
    bodies: list[str] = []
    registry = deferred_registry(bodies)
    outcomes = await run(registry, registry.assemble(ACME), call("c1", "globex_payroll", {"employee": "e"}),
                         call("c2", "no_such_tool", {}))
    assert codes(outcomes) == ["UNKNOWN_TOOL", "UNKNOWN_TOOL"]
    assert [o.failure.reason for o in outcomes if o.failure] == [None, None]
    assert outcomes[0].failure is not None and outcomes[1].failure is not None
    assert outcomes[0].failure.message.replace("globex_payroll", "X") == outcomes[1].failure.message.replace("no_such_tool", "X")
    assert bodies == []


async def test_a_loaded_deferred_tool_runs() -> None:
    bodies: list[str] = []
    registry = deferred_registry(bodies)
    loaded = registry.assemble(ACME).with_loaded(["refund_order"])
    outcomes = await run(registry, loaded, call("c1", "refund_order", REFUND), call("c2", "archive_order", {"order": "o"}))
    assert codes(outcomes) == [None, "INVALID_ARGS"] and outcomes[0].value == "refunded 2.5 on o-1"
    assert bodies == ["refund_order"]


async def test_calls_against_a_native_deferral_snapshot_are_not_refused_schema_not_loaded() -> None:
    bodies: list[str] = []
    registry = deferred_registry(bodies)
    native = registry.assemble(ACME).with_native_deferral()
    outcomes = await run(registry, native, call("c1", "refund_order", REFUND), call("c2", "refund_order", {"order": 1}))
    assert codes(outcomes) == [None, "INVALID_ARGS"]
    assert outcomes[1].failure is not None and outcomes[1].failure.reason is None  # the schema, checked as usual
    assert bodies == ["refund_order"]


async def test_a_plain_sealed_view_refuses_an_unloaded_deferred_tool_too() -> None:
    registry = deferred_registry()
    (outcome,) = await run(registry, registry.seal(), call("c1", "archive_order", {"order": "o"}))
    assert outcome.failure is not None and outcome.failure.reason == "schema_not_loaded"
    (outcome,) = await run(registry, registry.seal().with_loaded(["archive_order"]), call("c1", "archive_order", {"order": "o"}))
    assert outcome.failure is None


async def test_a_search_then_with_loaded_from_lets_the_next_step_call_the_match() -> None:
    registry = deferred_registry()
    assembly = registry.assemble(ACME)
    outcomes = await run(registry, assembly, call("s1", "tool_search", {"query": "refund_order", "limit": 1}),
                         call("c1", "refund_order", REFUND))
    assert codes(outcomes) == [None, "INVALID_ARGS"]
    following = assembly.with_loaded_from(outcomes)
    assert following.loaded == frozenset({"refund_order"})
    (outcome,) = await run(registry, following, call("c2", "refund_order", REFUND))
    assert outcome.failure is None


async def test_the_audit_record_of_a_schema_not_loaded_call_is_refused_with_its_reason() -> None:
    registry = deferred_registry()
    records: list[object] = []
    registry.register_audit_listener(records.append)
    await run(registry, registry.assemble(ACME), call("c1", "refund_order", REFUND))
    (record,) = records
    assert (record.decision, record.code, record.reason) == ("refused", "INVALID_ARGS", "schema_not_loaded")  # type: ignore[attr-defined]
    assert json.loads(json.dumps(record.reason)) == "schema_not_loaded"  # type: ignore[attr-defined]
