"""How ``tether-clr mcp serve`` serves and stops: stdio or streamable HTTP (uvicorn), drained on SIGINT/SIGTERM.

On a stop signal the MCP server's calls drain first (``TetherMcpServer.drain(grace)``:
no new call starts, calls in flight get ``grace`` seconds, then are cancelled with
reason shutdown and recorded), then the transport closes. ``run`` and ``fault`` are
the command's own (exceptions as exit 1).
"""

from __future__ import annotations

import os
import signal
import socket
from collections.abc import Awaitable, Callable
from typing import Any, NoReturn

import anyio
from rich.console import Console

from tether_clr.cli.exiting import exit_now
from tether_clr.foundations.text import describe_exception

__all__ = ["listening_socket", "serve_http", "serve_stdio"]


def serve_stdio(
    server: Any, grace: float, err: Console, run: Callable[..., Any], on_stop: Callable[[], Awaitable[None]]
) -> None:
    """Serve until the client closes stdin; on SIGINT or SIGTERM drain (``server.drain(grace)``), run
    ``on_stop`` (free the log sessions' leases), let the answers go out, and exit 0 at once.

    At once (``exit_now``: the exit handlers, a flush, then ``os._exit``): the SDK reads
    stdin in a worker thread that no cancellation stops while the client keeps stdin
    open, so an orderly unwinding would wait for the client's next line. Everything owed is done by then: the calls are recorded and
    answered, the leases freed.
    """

    async def serve() -> None:
        async with anyio.create_task_group() as group:

            async def stdio() -> None:
                await server.run_stdio()
                group.cancel_scope.cancel()

            group.start_soon(stdio)
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for signum in signals:
                    await _drain(server.drain, grace, signal.Signals(signum).name, err)
                    with anyio.CancelScope(shield=True):
                        await on_stop()
                    await anyio.sleep(0.2)  # the answers of the drained calls: written by the SDK's stdout task
                    exit_now(0)  # flushes stdout and stderr, runs the exit handlers but not the .NET runtime's

    run(serve)


async def _drain(drain: Callable[[float], Any], grace: float, why: str, err: Console) -> None:
    err.print(f"{why}: no new calls; waiting up to {grace:g} s for the calls in flight", markup=False)
    cancelled = await drain(grace)
    err.print("stopped" + (f"; {cancelled} call(s) cancelled (shutdown)" if cancelled else ""), markup=False)


def serve_http(
    make_app: Callable[[], Any], drain: Callable[[float], Any], grace: float, host: str, port: int, path: str,
    tools: str, err: Console, fault: Callable[[str], NoReturn],
) -> None:
    """Serve streamable HTTP with uvicorn on a socket bound here (so port 0 works and the URL printed is
    the real one); on SIGINT or SIGTERM stop accepting, drain (``drain(grace)``), then stop (exit 0)."""
    import uvicorn

    from sse_starlette.sse import AppStatus

    # sse-starlette (the SDK's SSE responses) ends every open SSE stream within 0.5 s of uvicorn's
    # stop signal, so a call in flight would lose its answer (the client reads "SSE stream ended
    # without a response"): the streams are ended here instead, once the calls have drained.
    AppStatus.enable_automatic_graceful_drain = False  # what its disable_automatic_graceful_drain() sets

    class Server(uvicorn.Server):
        """uvicorn's server, draining the MCP server's calls before its own shutdown.

        On SIGINT/SIGTERM: stop accepting connections, let the calls in flight end (``grace`` seconds,
        then cancelled with reason shutdown, recorded, answered), then end the SSE streams (a client's
        open GET stream never ends by itself), and let uvicorn close what is left of the connections
        (``timeout_graceful_shutdown``) and run the lifespan's end (the MCP sessions close, their log
        sessions' leases are freed)."""

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            for server in self.servers:
                server.close()
            for listening in sockets or []:
                listening.close()
            await _drain(drain, grace, "stopping", err)
            AppStatus.should_exit = True
            await super().shutdown(sockets)

    try:
        sock = listening_socket(host, port)
    except OSError as exc:
        fault(f"cannot listen on {host}:{port}: {describe_exception(exc)}")
    with sock:
        bound = sock.getsockname()[1]
        shown = f"[{host}]" if ":" in host else host
        err.print(f"serving MCP at http://{shown}:{bound}{path}; tools: {tools}", markup=False)
        # The app is built on uvicorn's loop (factory=True): the SDK makes its anyio primitives when built.
        config = uvicorn.Config(make_app, factory=True, log_level="warning", lifespan="on", timeout_graceful_shutdown=3)
        # uvicorn shuts down on SIGINT/SIGTERM, then raises the signal again for the handlers it
        # found: these make that a quiet exit 0 rather than a death by signal.
        previous = {number: signal.signal(number, _stopped) for number in (signal.SIGINT, signal.SIGTERM)}
        try:
            Server(config).run(sockets=[sock])
        except Exception as exc:
            fault(describe_exception(exc))
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket listening on ``host:port`` (port 0: one the OS picks), with TCP_NODELAY on it and on
    every connection it accepts.

    Why: a response goes out in several writes (headers, body, SSE events); with Nagle's algorithm on,
    a write waits for the ACK of the one before, which the client's delayed ACK holds back about 40 ms,
    so every call would stall. ``socket.create_server`` makes a socket whose ``proto`` is 0, and asyncio
    (under uvicorn) sets TCP_NODELAY only on accepted sockets whose ``proto`` is ``IPPROTO_TCP``. So the
    socket is made with ``IPPROTO_TCP`` (asyncio then sets the option on each accepted socket) and has
    the option itself (Linux copies it to accepted sockets; either one suffices there). Otherwise as
    ``socket.create_server``: the first address family ``host`` resolves to, SO_REUSEADDR on POSIX,
    IPv6 only for an IPv6 address. Raises ``OSError`` when it cannot resolve, bind or listen.
    """
    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)[0][0]
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        if os.name != "nt":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
        sock.listen()
    except OSError:
        sock.close()
        raise
    return sock


def _stopped(_signum: int, _frame: Any) -> None:
    """A stop signal, once the server has shut down: nothing left to do."""
