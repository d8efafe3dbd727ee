"""Issue 27, section 4: arguments refused before they parse are logged bounded, once.

Refused for size, depth, encoding or JSON syntax, a call's arguments are recorded
as their size in bytes, their SHA-256 and a prefix of at most
``ArgumentLimits.max_logged_bytes`` (cut on a UTF-8 boundary), never in full; valid
arguments are recorded whole. 100 refused requests of 3 MiB grow a SQLite and a
PostgreSQL session log by less than 5 MB.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import tempfile
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.types import Implementation

from tests.support.mcp_servers import context_for
from tether_clr import (
    ArgumentLimits,
    PythonFunction,
    SqliteSessionStore,
    ToolCall,
    ToolRegistry,
)
from tether_clr.cli.serve import SessionCallSink
from tether_clr.foundations.arguments import InvalidArgumentsJson, RefusedArguments, read_arguments
from tether_clr.foundations.text import safe_text
from tether_clr.mcp import create_server
from tether_clr.recording.session.sql_store import SqlSessionStore
from tether_clr.testing.stores import open_session_store, store_location

pytestmark = pytest.mark.anyio

MIB = 1024 * 1024


def echo(text: str = "") -> str:
    """Echo."""
    return text


def registry(limits: ArgumentLimits | None = None) -> ToolRegistry:
    registry = ToolRegistry(argument_limits=limits)
    registry.register(PythonFunction.from_callable(echo))
    return registry


async def record_one(store: SqlSessionStore, reg: ToolRegistry, session: str, arguments: str) -> None:
    """One call, one turn of ``session``, as the MCP server's log records it."""
    turn = await store.begin_turn(session)
    await reg.execute_batch([ToolCall(f"c-{uuid.uuid4().hex[:8]}", "echo", arguments)], reg.seal(), sink=store.sink(session, turn, 1))
    await store.end_turn(session, turn)


def utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


# ---------------------------------------------------------------- the summary
def test_the_summary_is_size_hash_and_a_prefix_cut_on_a_character_boundary() -> None:
    text = "é" * 10 + "\ud800" + "x" * 10
    summary = RefusedArguments.of(text, 7)
    assert summary.size == len(utf8(text)) and summary.sha256 == hashlib.sha256(utf8(text)).hexdigest()
    assert summary.prefix == "ééé"  # 6 bytes: the 4th é would need bytes 7 and 8
    assert RefusedArguments.of("ab", 4096).prefix == "ab"
    assert RefusedArguments.of("é" * 5 + "\ud800", 100).prefix == "ééééé\\ud800"
    with pytest.raises(ValueError, match="max_logged_bytes"):
        ArgumentLimits(max_logged_bytes=0)


def test_a_refused_call_is_recorded_refused_again_if_read_back() -> None:
    call = ToolCall("c1", "echo", "{" * 10_000).with_arguments_refused("too deep", 16)
    assert call.arguments == "{" * 16 and call.argument_error == "too deep"
    assert call.arguments_refused is not None and call.arguments_refused.size == 10_000
    assert call.with_arguments_refused("other", 4) is call


# ---------------------------------------------------------------- hostile input, as a property
SURROGATES = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF, exclude_categories=())
ANY_CHAR = st.one_of(st.characters(exclude_categories=()), SURROGATES)
HOSTILE_ARGUMENTS = st.one_of(
    st.text(ANY_CHAR, max_size=400),
    st.integers(20, 300).map(lambda n: '{"text": "' + "é" * n + '"}'),  # over max_chars when long
    st.integers(5, 40).map(lambda n: '{"text": ' + "[" * n + "]" * n + "}"),  # deeper than max_depth
    st.text(ANY_CHAR, max_size=40).map(lambda t: json.dumps({"text": t}, ensure_ascii=False)),
    st.sampled_from(["{", '{"text": NaN}', '{"text": "\\ud800"}', "[]", "", '{"text": 1e999}']),
)
LIMITS = ArgumentLimits(max_chars=200, max_depth=8, max_logged_bytes=64)


@pytest.fixture(scope="module")
def hostile_store() -> Any:
    with tempfile.TemporaryDirectory() as folder:
        store = SqliteSessionStore(Path(folder) / "log.db")
        yield store
        store.close()


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(arguments=HOSTILE_ARGUMENTS)
def test_whatever_is_sent_a_refused_argument_text_is_logged_as_size_hash_and_bounded_prefix(
    hostile_store: SqliteSessionStore, arguments: str
) -> None:
    reg, session = registry(LIMITS), f"s-{uuid.uuid4().hex}"

    async def run() -> list[Any]:
        await record_one(hostile_store, reg, session, arguments)
        return await hostile_store.events(session)

    events = anyio.run(run)
    [proposed] = [e.payload["calls"][0] for e in events if e.kind == "assistant/message"]
    [declared] = [e.payload for e in events if e.kind == "tool/call"]
    [result] = [e.payload for e in events if e.kind == "tool/result"]
    try:
        read_arguments(arguments, LIMITS)
        valid = "\ud800" not in arguments and all(not 0xD800 <= ord(c) <= 0xDFFF for c in arguments)
    except InvalidArgumentsJson:
        valid = False
    if valid:  # kept whole: repair and resume need them
        assert declared["arguments"] == arguments and "arguments_refused" not in declared
        assert proposed["arguments"] == arguments
        return
    assert result["ok"] is False and result["code"] == "INVALID_ARGS"
    raw = utf8(arguments)
    if "arguments_refused" not in declared:  # an argument text that parsed, refused for a lone surrogate elsewhere
        assert len(utf8(declared["arguments"])) <= LIMITS.max_chars * 12
        return
    refused = declared["arguments_refused"]
    assert refused == {"bytes": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}
    assert len(declared["arguments"].encode("utf-8")) <= LIMITS.max_logged_bytes
    assert safe_text(arguments).startswith(declared["arguments"])
    assert isinstance(declared["argument_error"], str)
    assert proposed["arguments"] == declared["arguments"] and proposed["arguments_refused"] == refused


# ---------------------------------------------------------------- the size target
def _big_arguments() -> list[str]:
    body = secrets.token_urlsafe(3 * MIB)[: 3 * MIB]  # incompressible: no TOAST or page compression hides a copy
    return [json.dumps({"text": f"{n}:{body}"}) for n in range(100)]


def _sqlite_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def _postgres_size(location: str) -> int:
    import psycopg

    with psycopg.connect(location, autocommit=True) as db:
        row = db.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind = 'r'"
        ).fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_a_hundred_refused_3_mib_requests_grow_the_log_by_less_than_5_mb(kind: str, tmp_path: Path) -> None:
    if kind == "postgres":
        from tether_clr.testing.plugin import postgres_dsn_or_skip

        postgres_dsn_or_skip()
    reg = registry()
    with store_location(kind, tmp_path) as location:  # type: ignore[arg-type]
        store = open_session_store(kind, location)  # type: ignore[arg-type]
        try:
            await record_one(store, reg, "s-1", "{}")  # the tables and their first pages exist
            size = _sqlite_size(Path(location)) if kind == "sqlite" else _postgres_size(location)
            for arguments in _big_arguments():
                await record_one(store, reg, "s-1", arguments)
            events = await store.events("s-1")
        finally:
            store.close()
        grown = (_sqlite_size(Path(location)) if kind == "sqlite" else _postgres_size(location)) - size
    refused = [e.payload for e in events if e.kind == "tool/call" and "arguments_refused" in e.payload]
    assert len(refused) == 100 and all(p["arguments_refused"]["bytes"] > 3 * MIB for p in refused)
    assert grown < 5_000_000, f"the log grew by {grown} bytes"


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_over_mcp_a_refused_3_mib_argument_is_logged_bounded(mode: str, tmp_path: Path) -> None:
    store = SqliteSessionStore(tmp_path / "log.db")
    try:
        server = create_server(registry(), context_for=context_for, sink=SessionCallSink(store, "s-1"))
        text = secrets.token_urlsafe(3 * MIB)
        async with Client(server.sdk_server, mode=mode, client_info=Implementation(name="acme:alice", version="1")) as c:
            result = await c.call_tool("echo", {"text": text})
        events = await store.events("s-1")
    finally:
        store.close()
    assert result.is_error is True and result.structured_content is not None
    assert result.structured_content["code"] == "INVALID_ARGS"
    assert sum(len(json.dumps(e.payload)) for e in events) < 10_000
    [declared] = [e.payload for e in events if e.kind == "tool/call"]
    assert declared["arguments_refused"]["bytes"] > 3 * MIB
