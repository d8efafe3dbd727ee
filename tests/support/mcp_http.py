"""A streamable HTTP MCP server on 127.0.0.1 for the tests: uvicorn in a thread, on a port
the OS picks, stopped on exit; and the SDK's client for it, identity in its headers."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx2
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tether_clr.cli.serving import listening_socket


@contextmanager
def serving(make_app: Callable[[], Any]) -> Iterator[str]:
    """Serve ``make_app()`` on 127.0.0.1 (its own asyncio loop, in a thread) and yield its ``/mcp`` URL; stops by itself.

    The app is built in that thread (uvicorn's ``factory=True``): the SDK's session manager makes its
    anyio primitives when built, so building it under the test's trio loop would tie them to trio.
    The socket is the one ``tether-clr mcp serve`` listens on (``listening_socket``: TCP_NODELAY on it and on
    the connections it accepts), so that the tests and benchmarks meet no Nagle stall the command does not."""
    sock = listening_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(make_app, factory=True, log_level="warning", access_log=False, lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the HTTP server did not start")
            time.sleep(0.01)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


def http_client(url: str, headers: dict[str, str], mode: str, *, event_hooks: dict[str, list[Any]] | None = None,
                **options: Any) -> Client:
    """The SDK's ``Client`` over streamable HTTP to ``url``, sending ``headers`` on every request (``event_hooks``:
    httpx2's, to watch the requests and responses); ``options`` go to the ``Client`` (``message_handler``...)."""
    http = httpx2.AsyncClient(headers=headers, timeout=30, event_hooks=event_hooks)
    return Client(streamable_http_client(url, http_client=http), mode=mode, **options)
