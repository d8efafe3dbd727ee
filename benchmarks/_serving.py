"""Servers as subprocesses, for the benchmarks that measure a server the way its users run it.

``served(command, ready)`` starts ``command``, reads its stderr until a line matches ``ready`` (whose
first group is the URL it serves at), yields a :class:`Served`, and stops it with SIGTERM at the end.
``tether-clr mcp serve --transport http --port 0`` prints ``serving MCP at URL; ...`` (:data:`MCP_SERVE_READY`);
``uvicorn.run(..., port=0)`` logs ``Uvicorn running on URL`` (:data:`UVICORN_READY`). Once the URL is read,
a thread keeps draining stderr, so that a chatty server never blocks on a full pipe.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MCP_SERVE_READY = r"^serving MCP at (\S+?);?\s"
UVICORN_READY = r"Uvicorn running on (http://\S+)"
_TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Served:
    """A running server subprocess: the URL it printed and its process id."""

    url: str
    pid: int

    def cpu_seconds(self) -> float:
        """User plus system CPU time of the whole process (every thread) so far, from ``/proc/<pid>/stat``."""
        stat = Path(f"/proc/{self.pid}/stat").read_text(encoding="ascii")
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) ": field 3 onwards
        return (int(fields[11]) + int(fields[12])) / _TICK  # utime (14), stime (15)


@contextmanager
def served(command: Sequence[str], ready: str, *, cwd: Path = ROOT, env: dict[str, str] | None = None) -> Iterator[Served]:
    """Run ``command``; yield once a stderr line matches ``ready`` (group 1: the URL); SIGTERM it at the end."""
    pattern = re.compile(ready)
    process = subprocess.Popen(list(command), cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)  # fmt: skip
    assert process.stderr is not None
    stderr = process.stderr
    try:
        seen: list[str] = []
        for line in stderr:
            match = pattern.search(line)
            if match:
                threading.Thread(target=lambda: [None for _ in stderr], daemon=True).start()
                yield Served(match.group(1), process.pid)
                break
            seen.append(line)
        else:
            raise SystemExit(f"{' '.join(command)} did not start (exit {process.wait()}):\n{''.join(seen[-20:])}")
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
