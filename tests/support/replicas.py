"""``tether-clr mcp serve --transport http`` replicas as subprocesses, for the operations tests.

Each replica listens on a port the system picks and says its URL on stderr;
its stderr is drained by a thread into a buffer (so a chatty replica never
blocks on a full pipe, and a test can check how much it wrote). Stopped by
SIGTERM on exit (SIGKILL if it does not stop).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

from mcp import Client

from tests.support import ROOT
from tests.support.mcp_http import http_client

SERVE = [sys.executable, "-m", "tether_clr.cli", "mcp", "serve"]
OPS_TOOLS = ["--tools", "tests.support.ops_tools:register"]


class Replica:
    """One ``mcp serve`` process: ``url`` once it serves, ``stderr`` as written so far."""

    def __init__(self, args: Sequence[str], env: dict[str, str] | None = None) -> None:
        self.args = list(args)
        self.process = subprocess.Popen(
            [*SERVE, *self.args], cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
        )
        self._stderr = bytearray()
        self._lock = threading.Lock()
        self._url: str | None = None
        self._ready = threading.Event()
        self._drain = threading.Thread(target=self._read, daemon=True)
        self._drain.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in iter(self.process.stderr.readline, b""):
            with self._lock:
                self._stderr += line
            text = line.decode("utf-8", "replace")
            if self._url is None and text.startswith("serving MCP at "):
                self._url = text.split()[3].rstrip(";")
                self._ready.set()
        self._ready.set()

    def wait_ready(self, timeout: float = 60) -> str:
        if not self._ready.wait(timeout) or self._url is None:
            raise RuntimeError(f"the replica did not start serving: {self.stderr[-2000:]}")
        return self._url

    @property
    def url(self) -> str:
        return self.wait_ready()

    @property
    def stderr(self) -> str:
        with self._lock:
            return self._stderr.decode("utf-8", "replace")

    @property
    def stderr_bytes(self) -> int:
        with self._lock:
            return len(self._stderr)

    def client(self, headers: dict[str, str] | None = None, mode: str = "legacy", **options: Any) -> Client:
        """The SDK's client for this replica over streamable HTTP."""
        return http_client(self.url, headers or {}, mode, **options)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> int:
        """Send ``sig`` and wait for the exit code (SIGKILL after ``timeout``)."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(30)
        self._drain.join(10)
        return self.process.returncode


@contextmanager
def replicas(count: int, args: Sequence[str], env: dict[str, str] | None = None) -> Iterator[list[Replica]]:
    """``count`` replicas started with the same ``args``, each serving when yielded; stopped on exit."""
    with ExitStack() as stack:
        started = []
        for _ in range(count):
            replica = Replica(args, env)
            stack.callback(replica.stop)
            started.append(replica)
        deadline = time.monotonic() + 90
        for replica in started:
            replica.wait_ready(max(1.0, deadline - time.monotonic()))
        yield started


def kill(replica: Replica) -> None:
    """SIGKILL: a crash, nothing cleaned up."""
    replica.stop(signal.SIGKILL)
