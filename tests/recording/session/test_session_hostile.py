"""Property: whatever call ids, names and argument text a hostile model sends (lone surrogates,
NUL characters, ids repeated within a step), the session log records every call on both
stores, the log stays sound, and repair has nothing to add."""

from __future__ import annotations


import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether_clr import ToolCall, ToolRegistry, log_violations

from tests.support import add
from tests.support.session_stores import new_session, open_store

SURROGATES = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF, exclude_categories=())
ANY_CHAR = st.one_of(st.characters(exclude_categories=()), SURROGATES, st.just("\x00"))
HOSTILE_TEXT = st.text(ANY_CHAR, min_size=1, max_size=10)
NAMES = st.one_of(st.sampled_from(["echo", "solo"]), HOSTILE_TEXT)
ARGUMENTS = st.one_of(st.just('{"text": "x"}'), HOSTILE_TEXT, st.builds(lambda t: '{"text": %s}' % repr(t), HOSTILE_TEXT))
CALLS = st.lists(st.tuples(st.one_of(st.sampled_from(["call_0", "call_1"]), HOSTILE_TEXT), NAMES, ARGUMENTS), min_size=1, max_size=5)


def test_hostile_calls_are_all_logged_and_the_log_stays_sound(kind: str, spec: str) -> None:
    registry = ToolRegistry()

    async def echo(text: str) -> str:
        return text

    add(registry, echo, "echo", parallel=True)
    add(registry, echo, "solo")

    with open_store(kind, spec) as store:

        @settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(CALLS)
        def check(raw: list[tuple[str, str, str]]) -> None:
            async def run() -> None:
                session = new_session()
                turn = await store.begin_turn(session)
                calls = [ToolCall(call_id, name, arguments) for call_id, name, arguments in raw]
                outcomes = await registry.execute_batch(calls, registry.seal(), sink=store.sink(session, turn, 1))
                await store.end_turn(session, turn)
                events = await store.events(session)
                assert log_violations(events) == []
                results = [e for e in events if e.kind == "tool/result"]
                assert [e.payload["index"] for e in results] == list(range(len(calls)))
                assert [e.payload["ok"] for e in results] == [o.failure is None for o in outcomes]
                assert len(events[2].payload["calls"]) == len(calls)
                assert await store.repair(session) == 0

            anyio.run(run)

        check()
