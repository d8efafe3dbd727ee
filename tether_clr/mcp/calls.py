"""``tools/call``: one call through ``execute_batch``, and the client's cancellation.

An unknown tool and a tool the caller cannot see get the same JSON-RPC error
(``-32602``, the same message); every other failure is a result with
``isError: true`` (:meth:`~tether_clr.ToolExecutionOutcome.to_mcp`). The call
to an unknown or hidden tool still goes through ``execute_batch``, so the sink
records it (UNKNOWN_TOOL, or DENIED with the catalog's reason: see
:meth:`~tether_clr.catalog.store.ToolCatalog.hidden_reason`), bounded
(:func:`hidden_call`).

Cancellation: the SDK answers a client's ``notifications/cancelled`` by
cancelling the handler. The batch runs shielded from that, with its own
:class:`~tether_clr.CancellationSource`; the client's cancellation cancels that
token instead (the connection's watcher, or one beside the call: see
:mod:`tether_clr.mcp.inflight`), so the call ends ABORTED (or
ABORTED_BEFORE_DISPATCH) and the sink, listeners and audit record it as usual
before the handler gives up.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from typing import Any

import anyio

from tether_clr.catalog.builtin import CatalogTool
from tether_clr.catalog.entries import ToolEntry
from tether_clr.catalog.views import ToolAssembly
from tether_clr.execution.ports import ApprovalProvider, ForwardingSink, ToolCallSink
from tether_clr.foundations.arguments import ArgumentLimits
from tether_clr.foundations.cancellation import CancellationSource
from tether_clr.foundations.json_values import canonical_json
from tether_clr.mcp.ids import new_call_id
from tether_clr.mcp.inflight import CLIENT_CANCELLED, ConnectionCalls
from tether_clr.records.contexts import BatchOutcomes
from tether_clr.records.outcomes import ToolCall, ToolExecutionOutcome, ToolFailureCodes
from tether_clr.records.scope import AgentPipelineScope
from tether_clr.records.suspension import BatchSuspended
from tether_clr.registry import ToolRegistry

__all__ = [
    "HIDDEN_TOOL_ARGUMENTS",
    "MAX_RECORDED_NAME",
    "RecordedAs",
    "UNKNOWN_TOOL_MESSAGE",
    "hidden_call",
    "is_search",
    "make_call",
    "never_parks",
    "new_call_id",
    "recorded_name",
    "run_call",
]

UNKNOWN_TOOL_MESSAGE = "Unknown tool"
"""The message of the -32602 error, the same for a tool that exists nowhere and one the caller cannot see."""



def is_search(entry: ToolEntry) -> bool:
    """Whether ``entry`` is the registry's tool search (``registry.enable_tool_search``)."""
    tool = entry.tool
    return entry.catalog_tool and isinstance(tool, CatalogTool) and tool.searches_deferred


class _NeverParks(ForwardingSink):
    """The host's sink, saying it cannot hold a parked call (whatever it could)."""

    @property
    def parks_approvals(self) -> bool:
        return False


def never_parks(sink: ToolCallSink | None) -> ToolCallSink | None:
    """``sink`` as the server runs calls with: one that never parks a call.

    An MCP ``tools/call`` is answered once, now; nothing would carry a later
    decision's result back to the client. So a call whose approval the provider
    ``DEFERRED`` ends UNAVAILABLE with reason ``approval_deferred`` (its body never
    run, the outcome recorded in ``sink``), also when ``sink`` is a session
    store's, which would otherwise park it.
    """
    if sink is None or getattr(sink, "parks_approvals", False) is not True:
        return sink
    return _NeverParks(sink)


_HIDDEN_MESSAGES = {
    "tool_disabled": "{tool!r} is disabled: it is hidden from the caller, who was answered as for an unknown tool",
    "kill_switch": "a kill switch stops {tool!r}: it is hidden from the caller, who was answered as for an unknown tool",
}


class RecordedAs(ForwardingSink):
    """The host's sink for the call of a hidden tool: its UNKNOWN_TOOL outcome (the snapshot lacks the name)
    is recorded as DENIED with ``reason`` (``tool_disabled``, ``kill_switch``), what the operator's log is for.
    The client is answered -32602 whatever is recorded; it never sees this outcome."""

    def __init__(self, inner: ToolCallSink, reason: str) -> None:
        super().__init__(inner)
        self.reason = reason

    @property
    def parks_approvals(self) -> bool:
        return False

    async def outcome_ready(self, outcome: ToolExecutionOutcome) -> None:
        if outcome.code == ToolFailureCodes.UNKNOWN_TOOL:
            message = _HIDDEN_MESSAGES[self.reason].format(tool=outcome.name)
            outcome = ToolExecutionOutcome.failed(outcome.call_id, outcome.name, ToolFailureCodes.DENIED, message, self.reason)
        await self.inner.outcome_ready(outcome)


def _arguments_text(arguments: dict[str, Any] | None) -> str:
    if arguments is None:
        return "{}"
    try:
        return canonical_json(arguments)
    except (TypeError, ValueError):
        # Text JSON cannot hold exactly: passed on as text the pipeline refuses (INVALID_ARGS).
        return json.dumps(arguments, ensure_ascii=True, allow_nan=True, default=str)


MAX_RECORDED_NAME = 256
"""The longest unknown tool name recorded as is (characters); a longer one is recorded cut, with its size and hash."""


def recorded_name(name: str) -> str:
    """``name``, or for a hostile long one its first characters, its UTF-8 size and SHA-256 (never a tool's name:
    tool names have no brackets), so a name that resolves to nothing cannot grow the log without bound."""
    if len(name) <= MAX_RECORDED_NAME:
        return name
    data = name.encode("utf-8", "surrogatepass")
    return f"{name[:64]}...[{len(data)} bytes, sha256:{hashlib.sha256(data).hexdigest()}]"


def make_call(name: str, arguments: dict[str, Any] | None, scope: AgentPipelineScope | None) -> ToolCall:
    """The call one ``tools/call`` proposes (a fresh call id, the arguments as JSON text)."""
    return ToolCall(new_call_id(), name, _arguments_text(arguments), scope)


def hidden_call(call: ToolCall, limits: ArgumentLimits) -> ToolCall:
    """``call`` as it is recorded when its tool is unknown or hidden from the caller: the name bounded
    (:func:`recorded_name`) and the arguments, which nothing will read, kept as their size, hash and a prefix."""
    bounded = replace(call, name=recorded_name(call.name))
    return bounded.with_arguments_refused(HIDDEN_TOOL_ARGUMENTS, limits.max_logged_bytes)


HIDDEN_TOOL_ARGUMENTS = "not read: no such tool is visible to the caller"
"""The ``argument_error`` recorded with the call of an unknown or hidden tool (its arguments are never read)."""


async def run_call(
    registry: ToolRegistry,
    assembly: ToolAssembly,
    call: ToolCall,
    sink: ToolCallSink | None,
    approval: ApprovalProvider | None = None,
    in_flight: tuple[ConnectionCalls, Any] | None = None,
    source: CancellationSource | None = None,
) -> ToolExecutionOutcome:
    """Run one call through ``execute_batch``; a cancellation of the caller cancels the call's token.

    The outcome is returned, or, when the caller was cancelled, recorded and the
    cancellation re-raised; an infrastructure fault raises (see :mod:`tether_clr.mcp.failures`).
    ``approval``: this call's approval provider (``None``: the registry's).
    ``in_flight``: the connection's :class:`~tether_clr.mcp.inflight.ConnectionCalls` (while its
    watcher runs) and this request's id, which then cancel the token instead of a watcher task
    of this call's own (see :mod:`tether_clr.mcp.inflight`). ``source``: the call's token source, when
    the server keeps it too (to cancel it at shutdown: :class:`~tether_clr.mcp.inflight.ServerCalls`).
    """
    if source is None:
        source = CancellationSource()
    if in_flight is not None:
        calls, request_id = in_flight
        # Cancelled before the call is registered: never start it. From here to the shield
        # nothing awaits, so a later cancellation finds the call registered.
        await anyio.lowlevel.checkpoint_if_cancelled()
        key = calls.add(request_id, source)
        try:
            with anyio.CancelScope(shield=True):
                result = await registry.execute_batch([call], assembly, 1, sink, source.token, approval=approval)
        finally:
            calls.discard(key, source)
        await anyio.lowlevel.checkpoint_if_cancelled()  # recorded; now the caller's cancellation
    else:
        result = await _watched(registry, call, assembly, sink, source, approval)
    if isinstance(result, BatchSuspended):
        # Unreachable through the server, whose sink never parks (never_parks): DEFERRED is UNAVAILABLE.
        raise RuntimeError("the call was parked (BatchSuspended): run_call needs a sink that never parks")
    return result[0]


async def _watched(
    registry: ToolRegistry,
    call: ToolCall,
    assembly: ToolAssembly,
    sink: ToolCallSink | None,
    source: CancellationSource,
    approval: ApprovalProvider | None,
) -> BatchOutcomes | BatchSuspended:
    """The batch, shielded, with a watcher task beside it that the caller's cancellation reaches."""
    finished = anyio.Event()

    async def watch() -> None:
        try:
            await finished.wait()
        except anyio.get_cancelled_exc_class():
            if not finished.is_set():
                source.cancel(CLIENT_CANCELLED)
            raise

    async with anyio.create_task_group() as group:
        group.start_soon(watch, name="tether_clr.mcp.watcher")  # named: anyio need not make a name per call
        try:
            with anyio.CancelScope(shield=True):
                result = await registry.execute_batch([call], assembly, 1, sink, source.token, approval=approval)
        finally:
            finished.set()  # the watcher ends without being cancelled (cheaper than cancelling it)
    return result
