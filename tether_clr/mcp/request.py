"""Who is asking over MCP: :class:`McpRequest`, and turning it into a :class:`~tether_clr.RequestContext`.

The host's ``context_for(request)`` (sync or async) reads the transport, the
HTTP headers, the verified access token, the client info and the protocol
version, and answers a ``RequestContext`` or ``None``. Identity never comes
from a tool's arguments: ``McpRequest`` does not carry them.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal

from starlette.datastructures import Headers

from tether_clr.mcp.ids import new_session_id
from tether_clr.records.context import RequestContext
from tether_clr.records.scope import AgentPipelineScope

__all__ = [
    "LOADED_META_KEY",
    "ContextFor",
    "McpRequest",
    "Transport",
    "connection_scope",
    "connection_exit_stack",
    "connection_state",
    "loaded_names",
    "meta_loaded_names",
    "remember_loaded",
    "resolve_context",
    "session_scope",
]

logger = logging.getLogger(__name__)

Transport = Literal["memory", "stdio", "http"]

ContextFor = Callable[["McpRequest"], "RequestContext | None | Awaitable[RequestContext | None]"]
"""``context_for(request) -> RequestContext | None``, sync or async."""

# Set by ``run_stdio`` for the tasks it serves; the HTTP transport is recognised by its request object.
stdio_transport: ContextVar[bool] = ContextVar("tether_mcp_stdio", default=False)


@dataclass(frozen=True, slots=True)
class McpRequest:
    """One MCP request as ``context_for`` sees it; never its tool arguments.

    ``transport``: ``"memory"``, ``"stdio"`` or ``"http"``. ``headers``: the HTTP
    headers (lower-case names; empty otherwise). ``access_token``: the SDK's
    verified ``AccessToken`` when the host configured a token verifier, else
    ``None``. ``client_info``: the client's ``Implementation`` when it sent one.
    ``protocol_version``: the version this request speaks. ``session_id``: the
    ``Mcp-Session-Id`` on stateful HTTP, else ``None``. ``method``: the MCP method.
    """

    transport: Transport
    method: str
    protocol_version: str
    headers: Mapping[str, str] = field(default_factory=dict)
    access_token: Any = None
    client_info: Any = None
    session_id: str | None = None


def describe_request(sdk_context: Any) -> McpRequest:
    """An :class:`McpRequest` from the SDK's ``ServerRequestContext``."""
    http = sdk_context.request
    headers: Mapping[str, str] = {}
    access_token = None
    session_id = None
    if http is not None and hasattr(http, "headers"):
        transport: Transport = "http"
        raw = http.headers
        # Starlette's Headers already is a read-only mapping with lower-case names: no copy per request
        headers = raw if isinstance(raw, Headers) else {str(name).lower(): str(value) for name, value in raw.items()}
        session_id = headers.get("mcp-session-id")
        user = http.scope.get("user") if hasattr(http, "scope") else None
        access_token = getattr(user, "access_token", None)
    elif stdio_transport.get():
        transport = "stdio"
    else:
        transport = "memory"
    params = sdk_context.session.client_params
    return McpRequest(
        transport=transport,
        method=sdk_context.method,
        protocol_version=sdk_context.protocol_version,
        headers=headers,
        access_token=access_token,
        client_info=None if params is None else params.client_info,
        session_id=session_id,
    )


async def resolve_context(context_for: ContextFor, request: McpRequest) -> RequestContext | None:
    """``context_for(request)``, awaited when it is async; anything but a ``RequestContext`` (raising included) is ``None``."""
    try:
        answer = context_for(request)
        if type(answer) is RequestContext:  # the common answer, without the awaitable check's ABC lookup
            return answer
        if inspect.isawaitable(answer):
            answer = await answer
    except Exception:
        logger.warning("context_for raised; the request is refused", exc_info=True)
        return None
    if not isinstance(answer, RequestContext):
        if answer is not None:
            logger.warning("context_for returned %s, not a RequestContext; the request is refused", type(answer).__name__)
        return None
    return answer


_SCOPE_KEY = "tether_clr.mcp.scope"


def connection_state(sdk_context: Any) -> dict[str, Any] | None:
    """The SDK ``Connection.state`` of this request's connection, or ``None`` when the SDK does not expose it.

    mcp 2.3's ``ServerRequestContext`` and ``ServerSession`` have no public path to the
    connection (its ``Context`` has ``connection``, but the runner does not build one for
    handlers), so this reads the session's private ``_connection``. When that is gone
    (another SDK version), the state is ``None`` and the server falls back to what needs
    no connection: a scope and an assembly per request, nothing loaded across requests
    but what the request's ``_meta`` names. A handshake-era connection lasts the session;
    a 2026-07-28 one is made per request.
    """
    state = getattr(getattr(sdk_context.session, "_connection", None), "state", None)
    return state if isinstance(state, dict) else None


def connection_exit_stack(sdk_context: Any) -> AsyncExitStack | None:
    """The SDK ``Connection.exit_stack`` of this request's connection (unwound, shielded, when the
    connection ends: a handshake-era session's end, a 2026-07-28 request's answer), or ``None``
    when the SDK does not expose it (read like :func:`connection_state`)."""
    stack = getattr(getattr(sdk_context.session, "_connection", None), "exit_stack", None)
    return stack if isinstance(stack, AsyncExitStack) else None


def connection_scope(
    state: dict[str, Any] | None, root: AgentPipelineScope | None, context: RequestContext, session_id: str | None
) -> AgentPipelineScope | None:
    """The scope of this request: one per connection (a handshake-era session; ``state``: its
    :func:`connection_state`) and principal, made once; a fresh one when there is no state
    (see :func:`session_scope`)."""
    key = (context.tenant_id, context.principal_id)
    if state is not None:
        kept = state.get(_SCOPE_KEY)
        if isinstance(kept, tuple) and kept[0] == key:
            scope: AgentPipelineScope = kept[1]
            return scope
    made = session_scope(root, context, session_id)
    if state is not None and made is not None:
        state[_SCOPE_KEY] = (key, made)
    return made


_LOADED_KEY = "tether_clr.mcp.loaded"

LOADED_META_KEY = "tether-clr/loaded"
"""The request ``_meta`` key a client names the deferred tools it has loaded with (a list of tool
names), for a server that cannot remember them: every 2026-07-28 request, a stateless HTTP one."""


def meta_loaded_names(sdk_context: Any) -> frozenset[str]:
    """The names under :data:`LOADED_META_KEY` in this request's ``_meta``; anything but a list of
    strings names nothing. What they load is decided against the caller's own assembly."""
    meta = sdk_context.meta
    names = meta.get(LOADED_META_KEY) if isinstance(meta, dict) else None
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        return frozenset()
    return frozenset(names)


def loaded_names(state: dict[str, Any] | None, context: RequestContext) -> frozenset[str]:
    """The deferred tools whose schemas this connection's searches loaded, for this tenant and principal."""
    kept = None if state is None else state.get(_LOADED_KEY)
    if isinstance(kept, tuple) and kept[0] == (context.tenant_id, context.principal_id):
        names: frozenset[str] = kept[1]
        return names
    return frozenset()


def remember_loaded(state: dict[str, Any] | None, context: RequestContext, names: frozenset[str]) -> bool:
    """Keep ``names`` loaded for the rest of this connection; whether the connection keeps state at all."""
    if state is None:
        return False
    state[_LOADED_KEY] = ((context.tenant_id, context.principal_id), names)
    return True


def session_scope(root: AgentPipelineScope | None, context: RequestContext, session_id: str | None) -> AgentPipelineScope | None:
    """A child of ``root`` owned by the principal, with the HTTP session id (or a fresh one), so approvals
    know who asked; ``None`` when ``root`` is owned by someone else."""
    parent = root if root is not None else AgentPipelineScope()
    if parent.owner is not None and parent.owner != context.principal_id:
        logger.warning("the server's scope is owned by %r, not %r; the request is refused", parent.owner, context.principal_id)
        return None
    return parent.child(owner=context.principal_id, session_id=session_id or new_session_id())

