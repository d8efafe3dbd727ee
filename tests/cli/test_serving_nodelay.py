"""``tether-clr mcp serve --transport http`` turns Nagle's algorithm off (issue 28, item 1).

With it on, each response (headers, body, SSE events: several writes) waits for the client's
delayed ACK, about 40 ms a call. These tests check the socket option itself, never a timing:
on the socket the command listens on, and on the connections uvicorn accepts from it, seen
from inside ``serve_http`` as the command runs it (uvicorn's own HTTP protocol, recording the
option of each connection's socket).
"""

from __future__ import annotations

import io
import socket
import threading
import time
from typing import Any, NoReturn

import httpx2
import pytest
import uvicorn
from rich.console import Console
from sse_starlette.sse import AppStatus
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from uvicorn.protocols.http.h11_impl import H11Protocol

from tether_clr.cli.serving import listening_socket, serve_http


def nodelay(sock: Any) -> bool:
    return bool(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))


def ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.parametrize("host", ["127.0.0.1", pytest.param("::1", marks=pytest.mark.skipif(
    not ipv6_loopback(), reason="no IPv6 loopback here"))])
def test_the_listening_socket_has_tcp_nodelay_and_is_a_tcp_socket_for_asyncio(host: str) -> None:
    with listening_socket(host, 0) as sock:
        assert nodelay(sock)
        # asyncio sets TCP_NODELAY on an accepted socket only when its proto says TCP
        assert sock.proto == socket.IPPROTO_TCP and sock.type == socket.SOCK_STREAM
        assert sock.getsockname()[1] != 0


def test_a_port_in_use_is_an_os_error() -> None:
    with listening_socket("127.0.0.1", 0) as taken, pytest.raises(OSError):
        listening_socket("127.0.0.1", taken.getsockname()[1])


def test_mcp_serve_over_http_accepts_connections_with_tcp_nodelay(monkeypatch: pytest.MonkeyPatch) -> None:
    listening: list[bool] = []
    accepted: list[bool] = []

    class Recording(H11Protocol):
        """uvicorn's h11 protocol, noting the option on each accepted connection's socket."""

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            accepted.append(nodelay(transport.get_extra_info("socket")))
            super().connection_made(transport)

    run = uvicorn.Server.run
    answers: list[int] = []

    def recorded_run(self: uvicorn.Server, sockets: list[socket.socket] | None = None) -> None:
        assert sockets
        listening.extend(nodelay(sock) for sock in sockets)
        self.config.http = Recording
        port = sockets[0].getsockname()[1]

        def client() -> None:
            try:
                deadline = time.monotonic() + 30
                while not self.started and time.monotonic() < deadline:
                    time.sleep(0.01)
                for _ in range(2):  # two connections, each accepted anew
                    with httpx2.Client(timeout=10) as http:
                        answers.append(http.get(f"http://127.0.0.1:{port}/ping").status_code)
            finally:
                self.should_exit = True

        thread = threading.Thread(target=client, daemon=True)
        thread.start()
        try:
            run(self, sockets)
        finally:
            thread.join(30)

    async def ping(request: Request) -> PlainTextResponse:
        return PlainTextResponse("pong")

    async def drain(grace: float) -> int:
        return 0

    def fault(message: str) -> NoReturn:
        raise AssertionError(message)

    monkeypatch.setattr(uvicorn.Server, "run", recorded_run)
    # serve_http sets sse-starlette's process-wide switches; put them back for the other tests
    monkeypatch.setattr(AppStatus, "enable_automatic_graceful_drain", AppStatus.enable_automatic_graceful_drain)
    monkeypatch.setattr(AppStatus, "should_exit", AppStatus.should_exit)
    serve_http(lambda: Starlette(routes=[Route("/ping", ping)]), drain, 0.0, "127.0.0.1", 0, "/mcp", "none",
               Console(file=io.StringIO()), fault)
    assert answers == [200, 200]
    assert listening == [True]
    assert accepted == [True, True]
