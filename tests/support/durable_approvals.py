"""The durable-approval scenario the session tests share: tools whose ``delete`` asks, a step that parks it, its scope and context."""

from __future__ import annotations

from typing import Any

from tether_clr import (
    AgentPipelineScope,
    ApprovalResult,
    BatchSuspended,
    PythonFunction,
    RequestContext,
    ToolCall,
    ToolMetadata,
    ToolRegistrationOptions,
    ToolRegistry,
)
from tether_clr.recording.session.sql_store import SqlSessionStore

from .builders import call
from .doubles import Approver

CONTEXT = RequestContext("acme", "alice", scopes={"files"})


def tools(bodies: list[str], answer: ApprovalResult = ApprovalResult.DEFERRED) -> ToolRegistry:
    """``echo`` (concurrency-safe), ``solo`` (exclusive) and ``delete`` (concurrency-safe, requires approval)."""
    registry = ToolRegistry()

    async def echo(text: str) -> str:
        bodies.append(f"echo {text}")
        return text

    async def delete(path: str) -> str:
        bodies.append(f"delete {path}")
        return f"deleted {path}"

    def options(**kwargs: Any) -> ToolRegistrationOptions:
        return ToolRegistrationOptions(metadata=ToolMetadata(version="1.0.0", required_scopes=("files",)), **kwargs)

    registry.register(PythonFunction.from_callable(echo, name="echo"), None, options(is_concurrency_safe=True))
    registry.register(PythonFunction.from_callable(echo, name="solo"), None, options())
    registry.register(
        PythonFunction.from_callable(delete, name="delete"), None, options(is_concurrency_safe=True, requires_approval=True)
    )
    registry.approval = Approver(answer)
    return registry


def step_calls() -> list[ToolCall]:
    """A parallel group (echo, delete, echo), then an exclusive call: delete is the one that asks."""
    return [
        call("call_0", "echo", {"text": "a"}),
        call("call_1", "delete", {"path": "/tmp/x"}),
        call("call_2", "echo", {"text": "b"}),
        call("call_3", "solo", {"text": "c"}),
    ]


def scope_of(session: str) -> AgentPipelineScope:
    return AgentPipelineScope(session_id=session, owner="alice")


async def suspend(store: SqlSessionStore, registry: ToolRegistry, session: str, calls: list[ToolCall] | None = None) -> BatchSuspended:
    turn = await store.begin_turn(session)
    catalog = registry.assemble(CONTEXT, scope_of(session))
    result = await registry.execute_batch(calls or step_calls(), catalog, sink=store.sink(session, turn, 1))
    assert isinstance(result, BatchSuspended)
    return result


def leases(store: SqlSessionStore, session: str) -> int:
    with store._write() as execute:
        return int(execute("SELECT COUNT(*) FROM session_leases WHERE session_id = ?", (session,))[0][0])
