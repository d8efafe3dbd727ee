"""The ``execute_tool`` span of every call: its name, kind and GenAI attributes, and for every failure
code and every deciding stage its status, ``error.type``, ``tether.stage`` and ``tether.failure.reason``;
the ``tether.approval`` and ``tether.body`` children; the binding of a call made through an assembly.
Read back through the real SDK's in-memory exporter."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest
from opentelemetry.trace import SpanKind, StatusCode

from tests.support import Approver, asking, call, run_batch, session_scope
from tests.support.telemetry import Recorded
from tether_clr import (
    ApprovalResult,
    CancellationSource,
    ChildCalls,
    PythonFunction,
    RequestContext,
    ResultPolicyError,
    RetryPolicy,
    SqliteSessionStore,
    ToolMetadata,
    ToolPostDecision,
    ToolPreDecision,
    ToolRegistrationOptions,
    ToolRegistry,
    ToolStatus,
)

pytestmark = pytest.mark.anyio

CTX = RequestContext("acme", "alice", scopes=frozenset({"orders:read"}), agent_id="support", request_id="req-1")


async def echo(text: str) -> str:
    """Says the text back."""
    return text


async def broken(text: str) -> str:
    raise ValueError("the body broke")


async def slow(text: str) -> str:
    await anyio.sleep(30)
    return text


def _registry(recorded: Recorded) -> ToolRegistry:
    registry = recorded.registry()
    registry.register(PythonFunction.from_callable(echo, name="echo"))
    registry.register(PythonFunction.from_callable(broken, name="broken"))
    registry.register(PythonFunction.from_callable(slow, name="slow"), None, ToolRegistrationOptions(timeout=0.05))
    registry.register(PythonFunction.from_callable(echo, name="gated"), None, ToolRegistrationOptions(requires_approval=True))
    return registry


Setup = Callable[[ToolRegistry], Any]


def _pre(decision: ToolPreDecision) -> Setup:
    async def listener(execution: Any, next_: Any) -> ToolPreDecision:
        return decision

    return lambda registry: registry.register_pre_execute_listener(None, listener)


def _raising_pre(registry: ToolRegistry) -> None:
    async def listener(execution: Any, next_: Any) -> ToolPreDecision:
        raise RuntimeError("listener broke")

    registry.register_pre_execute_listener(None, listener)


def _approval(answer: ApprovalResult | None = None, error: Exception | None = None) -> Setup:
    def setup(registry: ToolRegistry) -> None:
        registry.approval = Approver(answer or ApprovalResult.APPROVED, error)

    return setup


def _guard(registry: ToolRegistry) -> None:
    registry.register_guard(None, lambda execution: "not on a Friday")


def _disable_before_the_body(registry: ToolRegistry) -> None:
    async def disable(execution: Any, next_: Any) -> ToolPreDecision:
        registry.set_status("echo", "1.0.0", ToolStatus.DISABLED)
        return await next_()

    registry.register_pre_execute_listener(None, disable)


def _post(decision: ToolPostDecision) -> Setup:
    async def listener(execution: Any, outcome: Any, next_: Any) -> ToolPostDecision:
        return decision

    return lambda registry: registry.register_post_execute_listener(None, listener)


def _nothing(registry: ToolRegistry) -> None:
    return None


# (test id, tool, setup, code (None: success), reason, stage, child spans)
CASES: list[tuple[str, str, Setup, str | None, str | None, str, tuple[str, ...]]] = [
    ("success", "echo", _nothing, None, None, "body", ("tether.body",)),
    ("unknown tool", "nope", _nothing, "UNKNOWN_TOOL", None, "resolve", ()),
    ("bad arguments", "echo:bad", _nothing, "INVALID_ARGS", None, "resolve", ()),
    ("pre-execute deny", "echo", _pre(ToolPreDecision.deny("no")), "DENIED", None, "pre_execute", ()),
    ("pre-execute raises", "echo", _raising_pre, "TOOL_ERROR", None, "pre_execute", ()),
    ("approval rejected", "gated", _approval(ApprovalResult.REJECTED), "DENIED", None, "approval", ("tether.approval",)),
    ("approval fails", "gated", _approval(error=RuntimeError("down")), "UNAVAILABLE", "approval_unavailable", "approval", ("tether.approval",)),
    ("no approver", "gated", _nothing, "DENIED", None, "approval", ()),
    ("approved", "gated", _approval(ApprovalResult.APPROVED), None, None, "body", ("tether.approval", "tether.body")),
    ("asked and approved", "echo", lambda r: (r.register_pre_execute_listener(None, asking("why")), _approval()(r)), None, None,
     "body", ("tether.approval", "tether.body")),
    ("guard veto", "echo", _guard, "DENIED", None, "guard", ()),
    ("re-authorization", "echo", _disable_before_the_body, "DENIED", "tool_disabled", "authorization", ()),
    ("body fails", "broken", _nothing, "TOOL_ERROR", None, "body", ("tether.body",)),
    ("timeout", "slow", _nothing, "ABORTED", "timeout", "body", ("tether.body",)),
    ("post-execute block", "echo", _post(ToolPostDecision.block("not that")), "BLOCKED", None, "post_execute", ("tether.body",)),
    ("post-execute replace", "echo", _post(ToolPostDecision.replace("other")), None, None, "post_execute", ("tether.body",)),
]


@pytest.mark.parametrize(("tool", "setup", "code", "reason", "stage", "children"), [case[1:] for case in CASES], ids=[c[0] for c in CASES])
async def test_each_call_has_one_execute_tool_span_with_its_code_stage_and_children(
    tool: str, setup: Setup, code: str | None, reason: str | None, stage: str, children: tuple[str, ...]
) -> None:
    recorded = Recorded()
    registry = _registry(recorded)
    setup(registry)
    name, _, arguments = tool.partition(":")
    the_call = call("c1", name, "{not json" if arguments == "bad" else {"text": "hi"})
    (outcome,) = await run_batch(registry, the_call, scope=session_scope())
    assert outcome.code == code and outcome.reason == reason
    span = recorded.one(f"execute_tool {name}")
    attributes = dict(span.attributes or {})
    assert span.kind is SpanKind.INTERNAL
    assert attributes["gen_ai.operation.name"] == "execute_tool"
    assert attributes["gen_ai.tool.name"] == name
    assert attributes["gen_ai.tool.call.id"] == "c1"
    assert attributes["gen_ai.tool.type"] == "function"
    assert attributes["tether.stage"] == stage
    if code is None:
        assert span.status.status_code is StatusCode.UNSET and "error.type" not in attributes
    else:
        assert span.status.status_code is StatusCode.ERROR and attributes["error.type"] == code
    assert attributes.get("tether.failure.reason") == reason
    if name == "nope":
        assert "tether.tool.language" not in attributes and "gen_ai.tool.description" not in attributes
    else:
        assert attributes["tether.tool.language"] == "python"
    inner = [s for s in recorded.spans() if s is not span]
    assert sorted(s.name for s in inner) == sorted(children)
    for child in inner:
        assert child.parent is not None and child.parent.span_id == span.context.span_id
        assert child.context.trace_id == span.context.trace_id


async def test_the_description_is_the_tools_and_no_content_is_recorded_by_default() -> None:
    recorded = Recorded()
    registry = _registry(recorded)
    await run_batch(registry, call("c1", "echo", {"text": "secret"}))
    attributes = dict(recorded.one("execute_tool echo").attributes or {})
    assert attributes["gen_ai.tool.description"] == "Says the text back."
    assert not {"gen_ai.tool.call.arguments", "gen_ai.tool.call.result"} & set(attributes)


async def test_the_eight_codes_are_each_an_error_type_and_nothing_else() -> None:
    recorded = Recorded()
    registry = _registry(recorded)
    source = CancellationSource()
    source.cancel("the host gave up")
    await registry.execute_batch([call("c1", "echo", {"text": "x"})], registry.seal(), cancellation=source.token)
    span = recorded.one("execute_tool echo")
    assert span.attributes is not None
    assert span.attributes["error.type"] == "ABORTED_BEFORE_DISPATCH" and span.attributes["tether.stage"] == "pre_execute"
    codes_seen = {case[3] for case in CASES} | {"ABORTED_BEFORE_DISPATCH"}
    assert codes_seen - {None} == {"UNKNOWN_TOOL", "INVALID_ARGS", "TOOL_ERROR", "ABORTED", "ABORTED_BEFORE_DISPATCH", "DENIED",
                                   "UNAVAILABLE", "BLOCKED"}
    assert {case[5] for case in CASES} | {"policy"} == {"resolve", "pre_execute", "approval", "guard", "authorization", "body",
                                                          "post_execute", "policy"}


async def test_a_raising_result_policy_ends_the_span_in_error_with_its_class_name_at_the_policy_stage() -> None:
    recorded = Recorded()
    registry = _registry(recorded)

    class Refused(Exception):
        pass

    def policy(execution: Any, outcome: Any) -> None:
        raise Refused("not this result")

    registry.register(PythonFunction.from_callable(echo, name="pecho"), None, ToolRegistrationOptions(is_concurrency_safe=True))
    registry.register_result_policy(None, policy)
    with pytest.raises(ResultPolicyError):  # one parallel group: both are declared before either is delivered
        await run_batch(registry, call("c1", "pecho", {"text": "x"}), call("c2", "pecho", {"text": "y"}))
    first, second = sorted(recorded.spans("execute_tool pecho"), key=lambda s: s.attributes["gen_ai.tool.call.id"] if s.attributes else "")
    assert first.attributes is not None and second.attributes is not None
    assert first.attributes["error.type"] == "Refused" and first.attributes["tether.stage"] == "policy"
    assert first.status.status_code is StatusCode.ERROR and first.status.description is None  # no content by default
    # The second call's outcome was never delivered: the batch was aborted; its span still ends, saying why.
    assert second.attributes["error.type"] == "ResultPolicyError" and second.status.status_code is StatusCode.ERROR
    assert "tether.suspended" not in second.attributes


async def test_a_call_through_an_assembly_carries_its_binding_and_the_requests_ids_never_its_scopes() -> None:
    recorded = Recorded()
    registry = _registry(recorded)
    assembly = registry.assemble(CTX)
    await registry.execute_batch([call("c1", "echo", {"text": "x"})], assembly)
    attributes = dict(recorded.one("execute_tool echo").attributes or {})
    binding = assembly.bindings["echo"]
    assert attributes["tether.tool.logical_name"] == binding.logical_name == "echo"
    assert attributes["tether.tool.version"] == binding.version == "1.0.0"
    assert attributes["tether.tool.schema_hash"] == binding.schema_hash
    assert attributes["tether.registry.revision"] == assembly.registry_revision
    assert attributes["tether.tenant.id"] == "acme" and attributes["tether.principal.id"] == "alice"
    assert not any("scope" in key for key in attributes) and "orders:read" not in attributes.values()


async def test_a_plain_view_has_no_binding_attributes() -> None:
    recorded = Recorded()
    await run_batch(_registry(recorded), call("c1", "echo", {"text": "x"}))
    attributes = dict(recorded.one("execute_tool echo").attributes or {})
    assert not any(key.startswith(("tether.tool.logical", "tether.tool.version", "tether.registry", "tether.tenant")) for key in attributes)


async def test_each_attempt_of_a_retried_call_has_its_body_span_and_the_call_says_how_many() -> None:
    recorded = Recorded()
    registry = recorded.registry()
    runs: list[int] = []

    async def flaky() -> str:
        runs.append(1)
        if len(runs) < 3:
            raise RuntimeError("not yet")
        return "ok"

    registry.register(PythonFunction.from_callable(flaky, name="flaky"), None,
                      ToolRegistrationOptions(metadata=ToolMetadata(idempotent=True), retry=RetryPolicy(attempts=3, backoff=0)))
    (outcome,) = await run_batch(registry, call("c1", "flaky"))
    assert outcome.code is None and outcome.attempts == 3
    span = recorded.one("execute_tool flaky")
    assert span.attributes is not None and span.attributes["tether.attempts"] == 3 and span.attributes["tether.stage"] == "body"
    assert [s.attributes["tether.attempt"] for s in recorded.spans("tether.body") if s.attributes] == [1, 2, 3]


async def test_a_child_call_has_its_own_span_under_the_parents_body_span() -> None:
    recorded = Recorded()
    registry = _registry(recorded)

    async def parent(calls: ChildCalls) -> Any:
        return await calls.call_tool("echo", {"text": "from the child"})

    registry.register(PythonFunction.from_callable(parent, name="parent"))
    (outcome,) = await run_batch(registry, call("c1", "parent"))
    assert outcome.value == "from the child"
    parent_span, child_span = recorded.one("execute_tool parent"), recorded.one("execute_tool echo")
    parent_bodies = [s for s in recorded.spans("tether.body") if s.parent and s.parent.span_id == parent_span.context.span_id]
    assert len(parent_bodies) == 1
    assert child_span.parent is not None and child_span.parent.span_id == parent_bodies[0].context.span_id
    assert child_span.attributes is not None and child_span.attributes["gen_ai.tool.call.id"] == "c1/1"


async def test_a_parked_call_ends_its_span_as_suspended(tmp_path: Any) -> None:
    recorded = Recorded()
    registry = _registry(recorded)
    registry.approval = Approver(ApprovalResult.DEFERRED)
    scope = session_scope()
    with SqliteSessionStore(tmp_path / "log.sqlite3") as store:
        turn = await store.begin_turn("s1")
        result = await registry.execute_batch([call("c1", "gated", {"text": "x"}), call("c2", "echo", {"text": "y"})],
                                              registry.seal(scope), sink=store.sink("s1", turn, 1))
    assert not isinstance(result, list)
    gated, later = recorded.spans("execute_tool gated"), recorded.spans("execute_tool echo")
    for span in (*gated, *later):
        assert span.attributes is not None and span.attributes["tether.suspended"] is True
        assert span.status.status_code is StatusCode.UNSET
    assert gated[0].attributes is not None and gated[0].attributes["tether.stage"] == "approval"
