"""Child processes for the SQLite log tests: ``python -m tests.support.sink_child MODE PATH``.

* ``hang``: run a batch whose second call blocks forever; print ``started`` once
  its body runs (so the parent can kill the process mid-batch).
* ``open``: open the log with a short busy timeout, logging each retry to stdout
  (the parent releases its lock once it sees ``retrying``), then print ``opened``.
* ``race``: wait for a line on stdin, then open the log and declare one call.
"""

from __future__ import annotations

import logging
import os
import sys

import anyio

from tether_clr import PythonFunction, SqliteToolLog, ToolCall, ToolRegistry


async def _hang(path: str) -> None:
    registry = ToolRegistry()

    async def quick() -> str:
        return "ok"

    async def hang() -> str:
        print("started", flush=True)
        await anyio.sleep_forever()
        return "never"

    registry.register(PythonFunction.from_callable(quick))
    registry.register(PythonFunction.from_callable(hang))
    calls = [ToolCall("call_0", "quick", "{}"), ToolCall("call_1", "hang", "{}"), ToolCall("call_2", "quick", "{}")]
    with SqliteToolLog(path) as log:
        await registry.execute_batch(calls, registry.seal(), sink=log)


class _RetryReporter(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        if "retrying" in record.getMessage():
            print("retrying", flush=True)


def _open(path: str) -> None:
    logger = logging.getLogger("tether_clr")
    logger.setLevel(logging.DEBUG)
    logger.addHandler(_RetryReporter())
    with SqliteToolLog(path, busy_timeout=0.05, open_timeout=60):
        print("opened", flush=True)


async def _race(path: str) -> None:
    sys.stdin.readline()
    with SqliteToolLog(path) as log:
        await log.call_declared(ToolCall(f"pid-{os.getpid()}", "t", "{}"))


def main() -> None:
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "hang":
        anyio.run(_hang, path)
    elif mode == "open":
        _open(path)
    elif mode == "race":
        anyio.run(_race, path)
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main()
