"""A child process for the kill-during-resume test: ``python -m tests.support.session_resume_child KIND SPEC SESSION MODE``.

``park``: runs one step whose second call (``delete``) asks for approval and
gets ``DEFERRED``, and exits normally (the step is suspended in the log).
``resume``: a new process, with a new store and registry, approves the parked
call and SIGKILLs itself inside its body: the decision and the declarations are
in the log, the result never is.
"""

from __future__ import annotations

import os
import signal
import sys

import anyio

from tests.support import Approver
from tests.support.session_stores import open_store
from tether_clr import (
    AgentPipelineScope,
    ApprovalResult,
    PythonFunction,
    ToolCall,
    ToolRegistrationOptions,
    ToolRegistry,
)

CALLS = [("call_0", "echo", '{"text": "a"}'), ("call_1", "delete", '{"path": "/tmp/x"}'), ("call_2", "echo", '{"text": "b"}')]


def registry(die_in_delete: bool) -> ToolRegistry:
    registry = ToolRegistry()

    async def echo(text: str) -> str:
        return text

    async def delete(path: str) -> str:
        if die_in_delete:
            os.kill(os.getpid(), signal.SIGKILL)
        return path

    safe = ToolRegistrationOptions(is_concurrency_safe=True)
    registry.register(PythonFunction.from_callable(echo, name="echo"), None, safe)
    registry.register(
        PythonFunction.from_callable(delete, name="delete"), None,
        ToolRegistrationOptions(is_concurrency_safe=True, requires_approval=True),
    )
    registry.approval = Approver(ApprovalResult.DEFERRED)
    return registry


async def main(kind: str, spec: str, session: str, mode: str) -> None:
    store = open_store(kind, spec, lease_seconds=0.3)
    if mode == "park":
        tools = registry(False)
        turn = await store.begin_turn(session)
        scope = AgentPipelineScope(session_id=session, owner="alice")
        calls = [ToolCall(call_id, name, arguments) for call_id, name, arguments in CALLS]
        await tools.execute_batch(calls, tools.seal(scope), sink=store.sink(session, turn, 1))
    else:
        tools = registry(True)
        scope = AgentPipelineScope(session_id=session, owner="alice")
        await tools.resume(store, session, {"call_1": ApprovalResult.APPROVED}, tools.seal(scope))
    store.close()


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:5])
