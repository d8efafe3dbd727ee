"""A C# tool's own Activity joins the host's trace: the bridge hands the body span's W3C trace context
to the tool as the parent of an Activity (``tether.dotnet.body``), against the real
Microsoft.Extensions.AI and System.Diagnostics.DiagnosticSource assemblies, for a ``[Description]``
method and a real AIFunction, on each runtime (CI runs ``-m dotnet`` on Mono and CoreCLR). Where
DiagnosticSource cannot be loaded the call runs all the same and a warning says so, once."""

from __future__ import annotations

import contextvars
import logging
import os
from typing import Any

import pytest

from tests.support import call, run_batch
from tests.support.telemetry import Recorded
from tether_clr import CancellationSource, ToolRegistry, TraceContext, lend_trace_context
from tether_clr.clr import tasks
from tether_clr.execution.isolation import InOwnContext

pytestmark = pytest.mark.anyio

NAMES = {"method": "OwnActivity", "aifunction": "OwnActivityMeai"}


@pytest.mark.parametrize("carrier", ["plain", "recorded"])
@pytest.mark.parametrize("kind", ["method", "aifunction"])
async def test_a_csharp_tools_own_activity_is_in_the_hosts_trace_under_the_body_span(meai: dict[str, Any], kind: str, carrier: str) -> None:
    from Tether.Fixtures.Meai import TracedTools  # type: ignore[import-not-found]

    TracedTools.SampleCarrier = carrier == "recorded"  # a .NET listener on "Tether.Clr" records the carrier too
    name = NAMES[kind]
    recorded = Recorded()
    registry = recorded.registry()
    function = meai["functions"][name]
    assert function.kind == kind
    registry.register(function)
    stopped = int(TracedTools.CarriersStopped)
    with recorded.tracer.start_as_current_span("agent step") as host:
        (outcome,) = await run_batch(registry, call("c1", name))
    assert outcome.failure is None, outcome.failure
    trace_id, parent_span_id, carrier_name, carrier_parent, how = outcome.value.split()
    body, span = recorded.one("tether.body"), recorded.one(f"execute_tool {name}")
    assert trace_id == format(host.get_span_context().trace_id, "032x")  # the same trace
    assert carrier_name == "tether.dotnet.body" and carrier_parent == format(body.context.span_id, "016x")
    assert parent_span_id != "0" * 16 and how == carrier
    assert span.attributes is not None and span.attributes["tether.tool.language"] == "dotnet"
    assert int(TracedTools.CarriersStopped) == stopped + (1 if carrier == "recorded" else 0)  # the carrier ended with the call


async def test_an_untraced_call_hands_the_tool_no_activity_and_a_traced_one_leaves_none_behind(meai: dict[str, Any]) -> None:
    recorded = Recorded()
    traced, untraced = recorded.registry(), ToolRegistry(instrumentation=None)
    for registry in (traced, untraced):
        registry.register(meai["functions"]["OwnActivity"])
    (before,) = await run_batch(untraced, call("c1", "OwnActivity"))
    (during,) = await run_batch(traced, call("c2", "OwnActivity"))
    (after,) = await run_batch(untraced, call("c3", "OwnActivity"))
    assert before.value == "none" and after.value == "none"  # Activity.Current on the calling thread was put back
    assert during.value.split()[2] == "tether.dotnet.body"


class _NoDiagnosticSource:
    """The bridge's ``calls`` where the tool's runtime has no DiagnosticSource: the call runs, untraced."""

    def __init__(self) -> None:
        self.traced: list[tuple[str, str]] = []

    def start(self, function: Any, arguments: str, fd: int, cancelled: bool) -> None:
        os.write(fd, b"x")

    def start_traced(self, function: Any, arguments: str, fd: int, cancelled: bool, parent: str, state: str) -> bool:
        self.traced.append((parent, state))
        os.write(fd, b"x")
        return False

    def finish(self, fd: int) -> str:
        return '"ok"'

    def cancel(self, fd: int) -> None:
        return None


async def test_without_diagnostic_source_a_traced_call_runs_and_a_warning_says_so_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(tasks, "_told_no_activity", False)
    calls, token = _NoDiagnosticSource(), CancellationSource().token
    trace = TraceContext("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "vendor=1")
    with caplog.at_level(logging.WARNING, logger="tether_clr"):
        for _ in range(2):
            context = contextvars.copy_context()
            lend_trace_context(context, trace)
            assert await InOwnContext(tasks.call_dotnet_json(calls, object(), "{}", token), context) == "ok"
    assert calls.traced == [(trace.traceparent, trace.tracestate)] * 2
    warnings = [record for record in caplog.records if "DiagnosticSource" in record.getMessage()]
    assert len(warnings) == 1
