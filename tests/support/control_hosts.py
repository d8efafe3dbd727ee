"""A host's registry for the control-plane tests: ``echo`` in versions 1.0.0 and 1.1.0, whose body returns its version."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tether_clr import (
    AgentPipelineScope,
    PythonFunction,
    RequestContext,
    SealedToolCatalogView,
    ToolCall,
    ToolMetadata,
    ToolRegistrationOptions,
    ToolRegistry,
)
from tether_clr.recording.session.sql_store import SqlSessionStore

VERSIONS = ("1.0.0", "1.1.0")
ACME = RequestContext("acme", "alice")


def _echo(version: str) -> Any:
    async def echo(text: str) -> str:
        return version

    return echo


def host_registry(registry: ToolRegistry | None = None) -> ToolRegistry:
    """``registry`` (a new one by default) with both versions of ``echo`` registered."""
    registry = registry if registry is not None else ToolRegistry()
    for version in VERSIONS:
        tool = PythonFunction.from_callable(_echo(version), name="echo", description="Echo back.")
        registry.register(tool, options=ToolRegistrationOptions(metadata=ToolMetadata(version=version)))
    return registry


async def call_echo(registry: ToolRegistry, view: SealedToolCatalogView, call_id: str = "c1") -> dict[str, Any]:
    """One call of ``echo`` against ``view``: its code and reason, or the version that ran."""
    [outcome] = await registry.execute_batch([ToolCall(call_id, "echo", '{"text": "hi"}')], view)
    failure = outcome.failure
    if failure is None:
        return {"ran": outcome.value}
    return {"code": failure.code.value, "reason": failure.reason}


def session_location(kind: str, control_spec: str) -> str:
    """Where the hosts of a control-plane test keep their shared session log: beside the SQLite control
    file, or in the same PostgreSQL schema as the control log (their tables do not overlap)."""
    return str(Path(control_spec).with_name("session.sqlite")) if kind == "sqlite" else control_spec


def register_wipe(registry: ToolRegistry) -> None:
    """``wipe`` 1.0.0, which requires approval: what a remembered grant decides."""

    async def wipe(path: str) -> str:
        return f"wiped {path}"

    tool = PythonFunction.from_callable(wipe, name="wipe", description="Wipe a path.")
    registry.register(tool, options=ToolRegistrationOptions(metadata=ToolMetadata(version="1.0.0"), requires_approval=True))


async def call_wipe(registry: ToolRegistry, store: SqlSessionStore, session: str) -> dict[str, Any]:
    """One step of alice's session ``session`` that calls ``wipe``, recorded in ``store``'s session log."""
    turn = await store.begin_turn(session)
    assembly = registry.assemble(ACME, AgentPipelineScope(session_id=session, owner=ACME.principal_id))
    outcomes = await registry.execute_batch([ToolCall("c1", "wipe", '{"path": "/tmp/x"}')], assembly, sink=store.sink(session, turn, 1))
    await store.end_turn(session, turn)
    assert isinstance(outcomes, list)
    failure = outcomes[0].failure
    return {"ran": outcomes[0].value} if failure is None else {"code": failure.code.value, "reason": failure.reason}
