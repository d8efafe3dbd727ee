"""A child process for the kill-and-repair tests: ``python -m tests.support.session_child KIND SPEC SESSION SEED BACKEND``.

It runs one turn of two steps against the store (the second step reuses the
first one's call ids) and SIGKILLs itself at a point the seed picks: inside a
body, a pre-execute listener or a result listener of some call, or right
before or after some commit of the store. Killing itself at a chosen point,
rather than being killed after a delay, keeps every run reproducible. The last
call is a retried tool whose first attempt fails: a kill in its body falls in
its second attempt, after ``tool/attempt`` 1 was committed.
"""

from __future__ import annotations

import os
import random
import signal
import sys
from typing import Any

import anyio

from tests.support.session_stores import open_store
from tether_clr import (
    PythonFunction,
    RetryPolicy,
    ToolCall,
    ToolMetadata,
    ToolRegistrationOptions,
    ToolRegistry,
)

STEPS = 2
CALLS = ["echo", "echo", "solo", "echo", "echo", "flaky"]  # a parallel pair, an exclusive call, a parallel pair, a retried call


def kill_point(seed: int) -> tuple[str, int, int]:
    """(where, step or commit number, call index) for a seed."""
    rng = random.Random(seed)
    where = rng.choice(["body", "pre", "result", "commit-before", "commit-after"])
    if where.startswith("commit"):
        return where, rng.randrange(1, 8), 0
    return where, rng.randrange(1, STEPS + 1), rng.randrange(len(CALLS))


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


async def main(kind: str, spec: str, session: str, seed: int) -> None:
    where, number, index = kill_point(seed)
    store = open_store(kind, spec, lease_seconds=0.3)
    commits = 0
    original = store._append

    def append(*args: Any) -> None:
        nonlocal commits
        commits += 1
        if where == "commit-before" and commits == number:
            _die()
        original(*args)
        if where == "commit-after" and commits == number:
            _die()

    store._append = append  # type: ignore[method-assign]
    current_step = 0

    def at(stage: str, call_id: str) -> None:
        if where == stage and current_step == number and call_id == f"call_{index}":
            _die()

    registry = ToolRegistry()

    async def echo(text: str) -> str:
        at("body", f"call_{text}")
        await anyio.sleep(0)
        return text

    registry.register(PythonFunction.from_callable(echo, name="echo"), None, ToolRegistrationOptions(is_concurrency_safe=True))
    registry.register(PythonFunction.from_callable(echo, name="solo"))
    tries: dict[int, int] = {}

    async def flaky(text: str) -> str:
        tries[current_step] = tries.get(current_step, 0) + 1
        if tries[current_step] == 1:
            raise RuntimeError("the first attempt fails")
        return await echo(text)

    retried = ToolRegistrationOptions(metadata=ToolMetadata(idempotent=True), retry=RetryPolicy(attempts=2, backoff=0))
    registry.register(PythonFunction.from_callable(flaky, name="flaky"), None, retried)

    async def pre(execution: Any, next_: Any) -> Any:
        at("pre", execution.call_id)
        return await next_()

    registry.register_pre_execute_listener(None, pre)
    registry.register_result_listener(None, lambda outcome: at("result", outcome.call_id))
    turn = await store.begin_turn(session)
    for step in range(1, STEPS + 1):
        current_step = step
        calls = [ToolCall(f"call_{i}", name, f'{{"text": "{i}"}}') for i, name in enumerate(CALLS)]
        await registry.execute_batch(calls, registry.seal(), max_parallelism=2, sink=store.sink(session, turn, step))
    await store.end_turn(session, turn)
    store.close()


if __name__ == "__main__":
    kind, spec, session, seed, backend = sys.argv[1:6]
    anyio.run(main, kind, spec, session, int(seed), backend=backend)
