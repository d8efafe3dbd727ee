"""The MCP server for a governed catalog, on the ``mcp`` SDK's low-level ``Server``.

:func:`create_server` builds a :class:`TetherMcpServer`: ``tools/list`` and
``tools/call`` for whoever ``context_for`` says is asking, each request with
the assembly a fresh one would be (the catalog's cache answers while that is exact,
in both protocol eras: :mod:`tether_clr.catalog.reuse`), each call through ``execute_batch``.
"""

from __future__ import annotations

import importlib.metadata
import logging
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
from anyio.lowlevel import EventLoopToken, current_token
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    CallToolRequestParams,
    CancelledNotificationParams,
    ListToolsResult,
    NotificationParams,
    PaginatedRequestParams,
    SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
    Tool,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.applications import Starlette

from tether_clr.catalog.entries import ToolEntry
from tether_clr.catalog.views import ToolAssembly
from tether_clr.execution.ports import ToolCallSink
from tether_clr.foundations.cancellation import CancellationSource
from tether_clr.foundations.errors import SinkError
from tether_clr.foundations.text import describe_exception
from tether_clr.mcp.approval import approval_for
from tether_clr.mcp.calls import UNKNOWN_TOOL_MESSAGE, RecordedAs, hidden_call, is_search, make_call, never_parks, run_call
from tether_clr.mcp.failures import CallFaults, Tracked, for_client
from tether_clr.mcp.headers import InputSchemaLookup, ParamHeaderLookup
from tether_clr.mcp.inflight import CALLS_KEY, CLIENT_CANCELLED, ConnectionCalls, ServerCalls
from tether_clr.mcp.listing import InvalidCursorError, list_page
from tether_clr.mcp.request import (
    ContextFor,
    McpRequest,
    connection_exit_stack,
    connection_scope,
    connection_state,
    describe_request,
    loaded_names,
    meta_loaded_names,
    remember_loaded,
    resolve_context,
    stdio_transport,
)
from tether_clr.mcp.versions import result_for_version, tool_for_version
from tether_clr.records.context import RequestContext
from tether_clr.records.outcomes import ToolCall, ToolExecutionOutcome
from tether_clr.records.scope import AgentPipelineScope
from tether_clr.registry import ToolRegistry

__all__ = ["NO_CONTEXT_MESSAGE", "SinkFor", "TetherMcpServer", "create_server"]

logger = logging.getLogger(__name__)

NO_CONTEXT_MESSAGE = "Unauthorized: no request context for this request"
"""The error a request with no context gets: nothing is listed and nothing runs."""

SinkFor = Callable[[McpRequest, RequestContext], AbstractAsyncContextManager["ToolCallSink | None"]]
"""``sink_for(request, context)``: the sink a connection's calls are recorded in, as an async context manager.

Entered at the first ``tools/call`` of a connection (a handshake-era MCP session; a
2026-07-28 request, which is a connection of its own) with that request and its
context, exited when the connection ends (the client closed it or deleted its HTTP
session, the session idled out, the server stopped; a 2026-07-28 request once it is
answered). Every call of the connection goes to the sink it yielded (``None``: not
recorded). Where the SDK exposes no connection, it is entered and exited around each call.
"""

_SINK_KEY = "tether_clr.mcp.sink"
_SESSIONS = "tether.sessions"
_LISTEN = "tether.listen"
_BUS = "tether.bus"


class _SdkServer(Server[dict[str, Any]]):
    """The SDK's ``Server``, declaring ``tools.listChanged`` however its runners build the options, and
    offering its ``Mcp-Param-*`` header check a lookup only while it cannot matter (:mod:`tether_clr.mcp.headers`).

    The SDK's own helpers (the in-memory transport, the streamable HTTP manager)
    call ``create_initialization_options()`` with no notification options.
    """

    param_headers: ParamHeaderLookup | None = None
    _input_schema_lookup: InputSchemaLookup | None = None

    @property
    def get_tool_input_schema(self) -> InputSchemaLookup | None:
        """A lookup the host set, else :meth:`ParamHeaderLookup.lookup`'s answer for the catalog as it is now."""
        if self._input_schema_lookup is not None or self.param_headers is None:
            return self._input_schema_lookup
        return self.param_headers.lookup()

    @get_tool_input_schema.setter
    def get_tool_input_schema(self, lookup: InputSchemaLookup | None) -> None:
        self._input_schema_lookup = lookup

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        options = notification_options or NotificationOptions(tools_changed=True)
        options.tools_changed = True
        return super().create_initialization_options(options, experimental_capabilities, extensions)


class TetherMcpServer:
    """A governed catalog served over MCP; build it with :func:`create_server`.

    ``sdk_server`` is the SDK's low-level ``Server``; :meth:`run_stdio` serves
    the process's stdin and stdout; :meth:`streamable_http_app` gives a Starlette
    app for streamable HTTP. An in-process ``mcp.Client(server.sdk_server)``
    talks to it in memory.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        context_for: ContextFor,
        scope: AgentPipelineScope | None = None,
        page_size: int = 50,
        sink: ToolCallSink | None = None,
        sink_for: SinkFor | None = None,
        elicit_approval: bool = True,
        name: str = "tether-clr",
        version: str | None = None,
    ) -> None:
        if not isinstance(registry, ToolRegistry):
            raise TypeError(f"registry must be a ToolRegistry, got {type(registry).__name__}")
        if not callable(context_for):
            raise TypeError("context_for must be callable: context_for(request) -> RequestContext | None")
        if isinstance(page_size, bool) or not isinstance(page_size, int) or page_size < 1:
            raise ValueError(f"page_size must be a positive int, got {page_size!r}")
        self.registry = registry
        self.context_for = context_for
        self.scope = scope
        self.page_size = page_size
        if sink is not None and sink_for is not None:
            raise ValueError("give sink (one sink for every call) or sink_for (one per connection), not both")
        if sink_for is not None and not callable(sink_for):
            raise TypeError("sink_for must be callable: sink_for(request, context) -> async context manager of a sink")
        self.sink = sink
        self.sink_for = sink_for
        self.calls = ServerCalls()
        """Every call in flight; :meth:`drain` is the graceful shutdown."""
        # An MCP request cannot wait for a later decision: a DEFERRED approval fails closed
        # (UNAVAILABLE, approval_deferred) instead of parking the call in the sink's log.
        self._sink = never_parks(sink)
        self._faults = CallFaults()  # infrastructure faults: answered UNAVAILABLE, logged once per incident
        self.elicit_approval = elicit_approval
        # Each run's change stream, with the thread and event loop that read it.
        self._notifiers: dict[MemoryObjectSendStream[int], tuple[int, EventLoopToken]] = {}
        sdk_server = _SdkServer(
            name,
            version=_package_version() if version is None else version,
            lifespan=self._lifespan,
            on_list_tools=self._list_tools,
            on_subscriptions_listen=self._listen,
        )
        sdk_server.param_headers = ParamHeaderLookup(registry)
        self.sdk_server: Server[dict[str, Any]] = sdk_server
        # a plain handler, so that it may answer the result's dict (on_call_tool wants the model)
        self.sdk_server.add_request_handler("tools/call", CallToolRequestParams, self._call_tool)
        # a handshake-era connection's watcher, and the client's cancellations (tether_clr.mcp.inflight)
        self.sdk_server.add_notification_handler("notifications/initialized", NotificationParams, self._watch_connection)
        self.sdk_server.add_notification_handler("notifications/cancelled", CancelledNotificationParams, self._cancelled)
        self._change_registration = registry.on_change(self._changed)

    # ---------------------------------------------------------------- transports
    async def run_stdio(self) -> None:
        """Serve MCP over this process's stdin and stdout until the client closes them."""
        token = stdio_transport.set(True)
        try:
            async with stdio_server() as (read_stream, write_stream):
                await self.sdk_server.run(read_stream, write_stream, self.sdk_server.create_initialization_options())
        finally:
            stdio_transport.reset(token)

    def streamable_http_app(self, path: str = "/mcp", **options: Any) -> Starlette:
        """A Starlette app serving streamable HTTP at ``path``; ``options`` go to the SDK's
        ``Server.streamable_http_app`` (``stateless_http``, ``json_response``, ``token_verifier``, ``auth``, ``host``...)."""
        return self.sdk_server.streamable_http_app(streamable_http_path=path, **options)

    # ---------------------------------------------------------------- identity
    async def _assembly(self, ctx: Any) -> tuple[ToolAssembly, AgentPipelineScope]:
        """The caller's assembly and scope, with the deferred schemas this session's searches, or the
        request's ``_meta``, loaded; ``MCPError`` when there is no context.

        The assembly is ``registry.assemble(context, scope)``, which the catalog answers from its cache
        while that is exact (:mod:`tether_clr.catalog.reuse`): in both eras, a request of the same identity
        at the same revisions, whose scope (the session's, or a 2026-07-28 request's own) sees the same
        layers, reuses the snapshot rebound to its context and scope, unless a feature flag, a deny rule
        or a synchronous scope authority took part. The deferred schemas it loads are on its own copy."""
        request = describe_request(ctx)
        context = await resolve_context(self.context_for, request)
        state = connection_state(ctx)
        scope = None if context is None else connection_scope(state, self.scope, context, request.session_id)
        if context is None or scope is None:
            raise MCPError(code=INVALID_PARAMS, message=NO_CONTEXT_MESSAGE)
        assembly = self.registry.assemble(context, scope)
        waiting = assembly.unloaded
        if waiting:
            loaded = loaded_names(state, context) | meta_loaded_names(ctx)
            # only among what this caller's assembly defers: any other name (another tenant's
            # tool, a name that exists nowhere) loads nothing, the same way
            still = {entry.name for name in loaded if (entry := assembly.resolve(name)) is not None} & waiting
            if still:
                assembly = assembly.with_loaded(sorted(still))
        return assembly, scope

    # ---------------------------------------------------------------- handlers
    async def _list_tools(self, ctx: Any, params: PaginatedRequestParams | None) -> ListToolsResult:
        assembly, _ = await self._assembly(ctx)
        try:
            tools, next_cursor = list_page(assembly, None if params is None else params.cursor, self.page_size)
        except InvalidCursorError as exc:
            raise MCPError(code=INVALID_PARAMS, message=str(exc)) from None
        version = ctx.protocol_version
        return ListToolsResult(
            tools=[Tool.model_validate(tool_for_version(tool, version)) for tool in tools], next_cursor=next_cursor
        )

    async def _call_tool(self, ctx: Any, params: CallToolRequestParams) -> dict[str, Any]:
        """``tools/call``: the result as the ``CallToolResult`` dict :meth:`ToolExecutionOutcome.to_mcp`
        makes, which the SDK validates against its schema once, on the way out (no model round trip here).

        An unknown or hidden tool is recorded, then answered -32602 (:meth:`_refuse_hidden`); an
        infrastructure fault (the sink, the connection's log session, a store) is answered UNAVAILABLE
        with a fixed message and logged once per incident (:mod:`tether_clr.mcp.failures`)."""
        assembly, scope = await self._assembly(ctx)
        entry = assembly.resolve(params.name)
        call = make_call(params.name, params.arguments, scope)
        source = self.calls.start()
        try:
            if self.sink_for is None:  # one sink for every call: no per-call exit stack
                outcome = await self._run(ctx, assembly, entry, call, self._sink, source)
            else:
                async with AsyncExitStack() as per_call:
                    try:
                        sink = await self._connection_sink(ctx, assembly.context, per_call)
                    except Exception as exc:  # the connection's log session cannot be opened: nothing runs
                        fault = SinkError(f"cannot open the connection's call log: {describe_exception(exc)}")
                        fault.__cause__ = exc
                        if entry is None:
                            self._faults.answer(fault, call, None)
                            raise MCPError(code=INVALID_PARAMS, message=UNKNOWN_TOOL_MESSAGE) from None
                        return self._result(ctx, self._faults.answer(fault, call, None))
                    outcome = await self._run(ctx, assembly, entry, call, sink, source)
        finally:
            self.calls.finish(source)
        return self._result(ctx, outcome)

    async def _run(
        self, ctx: Any, assembly: ToolAssembly, entry: ToolEntry | None, call: ToolCall, sink: ToolCallSink | None,
        source: CancellationSource,
    ) -> ToolExecutionOutcome:
        """The outcome of ``call`` for the client (see :meth:`_call_tool`); -32602 for an unknown or hidden tool."""
        if entry is None:
            await self._refuse_hidden(assembly, call, sink)
            raise MCPError(code=INVALID_PARAMS, message=UNKNOWN_TOOL_MESSAGE)
        approval = approval_for(ctx) if self.elicit_approval else None
        calls = self._connection_calls(ctx)
        in_flight = None
        if calls is not None and calls.watching and ctx.request_id is not None:
            in_flight = (calls, ctx.request_id)
        tracked = None if sink is None else Tracked(sink)
        try:
            outcome = await run_call(self.registry, assembly, call, tracked, approval, in_flight, source)
        except Exception as exc:  # an infrastructure fault: an answer, never a leak (tether_clr.mcp.failures)
            return self._faults.answer(exc, call, tracked)
        self._faults.succeeded()
        if outcome.failure is None and is_search(entry):
            await self._remember_search(ctx, assembly, outcome)
        return for_client(outcome)

    @staticmethod
    def _result(ctx: Any, outcome: ToolExecutionOutcome) -> dict[str, Any]:
        result = result_for_version(outcome.to_mcp(), ctx.protocol_version)
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            result["resultType"] = "complete"  # required from 2026-07-28 on (the model's default)
        return result

    async def _connection_sink(self, ctx: Any, context: RequestContext, per_call: AsyncExitStack) -> ToolCallSink | None:
        """The sink ``sink_for`` gave this connection, entered at its first call (into the connection's exit
        stack: exited when it ends); entered into ``per_call`` where the SDK exposes no connection."""
        assert self.sink_for is not None
        state, stack = connection_state(ctx), connection_exit_stack(ctx)
        if state is None or stack is None:
            return never_parks(await per_call.enter_async_context(self.sink_for(describe_request(ctx), context)))
        kept = state.get(_SINK_KEY)
        if kept is None:
            kept = state[_SINK_KEY] = [anyio.Lock(), None, False]  # [lock, sink, entered]
        lock: anyio.Lock = kept[0]
        async with lock:  # two first calls at once on one connection: one enters, the other waits for it
            if not kept[2]:
                kept[1] = never_parks(await stack.enter_async_context(self.sink_for(describe_request(ctx), context)))
                kept[2] = True
        sink: ToolCallSink | None = kept[1]
        return sink

    async def drain(self, grace: float) -> int:
        """Graceful shutdown: calls arriving from now on are recorded as not dispatched (reason ``shutdown``),
        calls in flight may finish for up to ``grace`` seconds, then the rest are cancelled (``shutdown``) and
        recorded; returns how many were cancelled. A body that ignores its token (a synchronous function cannot
        be interrupted) is given :data:`~tether_clr.mcp.inflight.LINGER` seconds more, then left running and
        counted in ``calls.abandoned`` (logged): the shutdown is bounded. Closing the connections is the
        transport's part."""
        cancelled = await self.calls.drain(grace)
        if self.calls.abandoned:
            logger.warning("%d call(s) still running after their cancellation (bodies that ignore their token): "
                           "stopping without them; their turns stay open for the next start's repair",
                           self.calls.abandoned)  # fmt: skip
        return cancelled

    async def _refuse_hidden(self, assembly: ToolAssembly, call: ToolCall, sink: ToolCallSink | None) -> None:
        """Record the call of a tool that is unknown, or hidden from the caller, before it is answered -32602.

        It goes through ``execute_batch`` like any call (so the sink, listeners and audit see it; the
        pipeline answers UNKNOWN_TOOL for a name the snapshot lacks), bounded (:func:`hidden_call`).
        Where the tool exists for this caller but is DISABLED or kill-switched, the sink records DENIED
        with ``tool_disabled`` or ``kill_switch`` instead (:meth:`ToolCatalog.hidden_reason`); the
        client's answer is the same -32602 in every case. A fault of the sink here is logged once per
        incident and changes nothing the client sees.
        """
        call = hidden_call(call, assembly.argument_limits)
        if sink is not None:
            reason = self.registry.catalog.hidden_reason(assembly.context, assembly.scope, call.name)
            if reason is not None:
                sink = RecordedAs(sink, reason)
        try:
            await run_call(self.registry, assembly, call, sink)
        except Exception as exc:
            self._faults.answer(exc, call, None)
        else:
            self._faults.succeeded()

    @staticmethod
    def _connection_calls(ctx: Any, make: bool = False) -> ConnectionCalls | None:
        """The handshake-era connection's calls in flight (``None`` in 2026-07-28, or without connection state)."""
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return None
        state = connection_state(ctx)
        if state is None:
            return None
        calls = state.get(CALLS_KEY)
        if not isinstance(calls, ConnectionCalls):
            if not make:
                return None
            calls = state[CALLS_KEY] = ConnectionCalls()
        return calls

    async def _watch_connection(self, ctx: Any, params: NotificationParams) -> None:
        """``notifications/initialized``: remember the connection for list_changed, then be its watcher for as
        long as it lasts (the SDK runs this in the connection's task group and cancels it when the connection ends)."""
        self._track_session(ctx)
        calls = self._connection_calls(ctx, make=True)
        if calls is not None and not calls.watching:
            await calls.watch()

    async def _cancelled(self, ctx: Any, params: CancelledNotificationParams) -> None:
        """``notifications/cancelled``: cancel the token of that call, if it is in flight on this connection."""
        calls = self._connection_calls(ctx)
        if calls is not None:
            calls.cancel(params.request_id, CLIENT_CANCELLED)

    async def _remember_search(self, ctx: Any, assembly: ToolAssembly, outcome: Any) -> None:
        """After a successful tool search, keep its matches loaded for this session, and tell the client its list changed."""
        loaded = assembly.with_loaded_from([outcome]).loaded
        if loaded == assembly.loaded:
            return
        if remember_loaded(connection_state(ctx), assembly.context, loaded) and ctx.session.can_send_request:
            try:
                await ctx.session.send_tool_list_changed()
            except Exception:
                logger.debug("could not send tools/list_changed after a search", exc_info=True)

    async def _listen(self, ctx: Any, params: SubscriptionsListenRequestParams) -> SubscriptionsListenResult:
        """``subscriptions/listen`` (2026-07-28): refused with no context, then the SDK's ``ListenHandler``."""
        await self._assembly(ctx)
        listen: ListenHandler = ctx.lifespan_context[_LISTEN]
        return await listen(ctx, params)

    # ---------------------------------------------------------------- listChanged
    @asynccontextmanager
    async def _lifespan(self, _server: Server[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
        """One per run of the SDK server (a stdio run, an HTTP app, an in-process client): the handshake-era
        connections to tell, the 2026-07-28 listen streams' bus, and the task that tells both."""
        sessions: dict[int, Any] = {}
        bus = InMemorySubscriptionBus()
        listen = ListenHandler(bus)
        send, receive = anyio.create_memory_object_stream[int](16)
        self._notifiers[send] = (threading.get_ident(), current_token())
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._notify_changes, receive, sessions, bus)
                try:
                    yield {_SESSIONS: sessions, _LISTEN: listen, _BUS: bus}
                finally:
                    listen.close()
                    group.cancel_scope.cancel()
        finally:
            self._notifiers.pop(send, None)
            send.close()

    @staticmethod
    def _track_session(ctx: Any) -> None:
        """Remember a handshake-era connection, to tell it when the tools change (once, at its
        ``notifications/initialized``: no middleware on every message)."""
        sessions = ctx.lifespan_context.get(_SESSIONS) if isinstance(ctx.lifespan_context, Mapping) else None
        if sessions is not None and ctx.session.can_send_request:
            # The SDK hands out one ServerSession per message; its connection is what lasts, and
            # list_changed goes out on the connection's channel whichever session sends it.
            connection = getattr(ctx.session, "_connection", ctx.session)
            key = id(connection)
            if key not in sessions:
                exit_stack = getattr(connection, "exit_stack", None)
                if exit_stack is not None:  # forget the connection when the SDK closes it
                    exit_stack.callback(sessions.pop, key, None)
                sessions[key] = ctx.session

    def _changed(self, event: Any) -> None:
        """``registry.on_change``: poke each run's notifier, on its own event loop (a change may be made
        from another thread or loop, e.g. a host thread while uvicorn serves HTTP in its own)."""
        for send, (thread, token) in list(self._notifiers.items()):
            try:
                if threading.get_ident() == thread:
                    send.send_nowait(event.revision)
                else:
                    anyio.from_thread.run_sync(send.send_nowait, event.revision, token=token)
            except anyio.WouldBlock:
                pass  # a notification is already pending: one list_changed covers both
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                self._notifiers.pop(send, None)
            except RuntimeError:
                logger.debug("an MCP server's event loop is gone; not telling it about the change", exc_info=True)

    async def _notify_changes(
        self, receive: MemoryObjectReceiveStream[int], sessions: dict[int, Any], bus: InMemorySubscriptionBus
    ) -> None:
        async with receive:
            async for _revision in receive:
                await bus.publish(ToolsListChanged())
                for key, session in list(sessions.items()):
                    try:
                        await session.send_tool_list_changed()
                    except Exception:
                        logger.debug("dropping a closed MCP connection from list_changed", exc_info=True)
                        sessions.pop(key, None)

    def close(self) -> None:
        """Stop listening to the registry's changes."""
        self._change_registration.dispose()


def _package_version() -> str:
    """This package's version, as ``serverInfo.version`` announces it: the installed distribution's
    (``importlib.metadata``), else, run from a source tree that is not installed, ``tether_clr.__version__``."""
    try:
        return importlib.metadata.version("tether_clr")
    except importlib.metadata.PackageNotFoundError:
        import tether_clr

        return str(tether_clr.__dict__.get("__version__", "0+unknown"))  # the package's public declaration


def create_server(
    registry: ToolRegistry,
    *,
    context_for: ContextFor,
    scope: AgentPipelineScope | None = None,
    page_size: int = 50,
    sink: ToolCallSink | None = None,
    sink_for: SinkFor | None = None,
    elicit_approval: bool = True,
) -> TetherMcpServer:
    """An MCP server for ``registry``'s governed catalog (needs ``tether_clr[mcp]``).

    ``context_for(request)`` (sync or async) turns an :class:`~tether_clr.mcp.McpRequest`
    into a :class:`~tether_clr.RequestContext`, or ``None`` to refuse it. ``scope``:
    each session (each request in the stateless era) runs in a child of it, owned
    by the principal. ``page_size``: tools per ``tools/list`` page. ``sink``:
    where every call is recorded. ``sink_for``: instead of ``sink``, the sink of
    each connection (see :data:`SinkFor`; ``tether-clr mcp serve --db`` gives each
    MCP session its own log session this way). ``elicit_approval``: ask a client that declared
    elicitation (handshake era) to approve, instead of the registry's approval provider.
    """
    return TetherMcpServer(
        registry, context_for=context_for, scope=scope, page_size=page_size, sink=sink, sink_for=sink_for,
        elicit_approval=elicit_approval,
    )
