"""A TCP proxy in front of the test PostgreSQL server that the test can cut and restore: a real network partition.

``SocketProxy(upstream)`` listens on 127.0.0.1 (a port of its own) and pipes
each connection to ``upstream`` (a Unix socket path or ``(host, port)``).
``cut()`` shuts every piped connection and stops accepting, so the clients see
their connections break and new ones refused; ``restore()`` accepts again on
the same port.
"""

from __future__ import annotations

import socket
import threading

Upstream = str | tuple[str, int]


def postgres_upstream(dsn: str) -> Upstream:
    """Where ``dsn``'s server listens: its Unix socket, or its host and port."""
    from psycopg.conninfo import conninfo_to_dict

    info = conninfo_to_dict(dsn)
    host, port = str(info.get("host") or "/var/run/postgresql"), int(info.get("port") or 5432)
    return f"{host}/.s.PGSQL.{port}" if host.startswith("/") else (host, port)


class SocketProxy:
    def __init__(self, upstream: Upstream) -> None:
        self.upstream = upstream
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._listener: socket.socket | None = None
        self.port = 0
        self.restore()

    def restore(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(16)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                family = socket.AF_UNIX if isinstance(self.upstream, str) else socket.AF_INET
                server = socket.socket(family, socket.SOCK_STREAM)
                server.connect(self.upstream)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets.update((client, server))
            for source, target in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(source, target), daemon=True).start()

    def _pipe(self, source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            pass
        for end in (source, target):
            _shut(end)

    def cut(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            _shut(listener)
        with self._lock:
            ends, self._sockets = self._sockets, set()
        for end in ends:
            _shut(end)

    close = cut


def _shut(end: socket.socket) -> None:
    try:
        end.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    end.close()
