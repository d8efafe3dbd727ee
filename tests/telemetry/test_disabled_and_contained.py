"""Nothing is recorded when the instrumentation is off or nothing is configured to record; content is
recorded only on opt-in; and nothing in telemetry (an observer, a span processor, an exporter) can
change an outcome or escape ``execute_batch``, whatever the model sends (a Hypothesis property)."""

from __future__ import annotations

import contextvars
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import NoOpTracerProvider, StatusCode

from tests.support import call, codes, run_batch
from tests.support.telemetry import Recorded
from tether_clr import PythonFunction, ToolCall, ToolRegistrationOptions, ToolRegistry
from tether_clr.execution.instrumentation import discovered_instrumentation
from tether_clr.telemetry import CAPTURE_CONTENT_VARIABLE, OtelInstrumentation, default_instrumentation

pytestmark = pytest.mark.anyio


async def echo(text: str) -> str:
    return text


async def broken(text: str) -> str:
    raise RuntimeError(f"leaked {text}")


def _tools(registry: ToolRegistry) -> ToolRegistry:
    registry.register(PythonFunction.from_callable(echo, name="echo"))
    registry.register(PythonFunction.from_callable(broken, name="broken"))
    registry.register(PythonFunction.from_callable(echo, name="pecho"), None, ToolRegistrationOptions(is_concurrency_safe=True))
    return registry


# ------------------------------------------------------------------ disabled
def test_with_no_provider_configured_a_batch_gets_no_observer_at_all() -> None:
    # This process never sets a global provider (the tests that do run in a child process).
    assert OtelInstrumentation().batch_started(ToolRegistry().seal()) is None
    assert OtelInstrumentation(tracer_provider=NoOpTracerProvider()).batch_started(ToolRegistry().seal()) is None


def test_the_default_registry_finds_the_default_instrumentation_through_the_entry_point() -> None:
    assert discovered_instrumentation() is default_instrumentation()
    assert ToolRegistry().instrumentation is default_instrumentation()
    assert ToolRegistry(instrumentation=None).instrumentation is None


@pytest.mark.parametrize("how", ["registry without instrumentation", "instrumentation disabled"])
async def test_nothing_is_recorded_when_the_instrumentation_is_off(how: str) -> None:
    recorded = Recorded()
    if how == "registry without instrumentation":
        registry = _tools(ToolRegistry(instrumentation=None))
    else:
        recorded.instrumentation.enabled = False
        registry = _tools(recorded.registry())
    outcomes = await run_batch(registry, call("c1", "echo", {"text": "a"}), call("c2", "broken", {"text": "b"}))
    assert codes(outcomes) == [None, "TOOL_ERROR"]
    assert recorded.spans() == [] and recorded.points("tether.tool.calls") == []


# ------------------------------------------------------------------ content
@pytest.mark.parametrize("how", ["capture_content=True", "environment"])
async def test_arguments_results_and_failure_messages_are_recorded_only_on_opt_in(how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if how == "environment":
        monkeypatch.setenv(CAPTURE_CONTENT_VARIABLE, "TRUE")
        recorded = Recorded()
        recorded.instrumentation = OtelInstrumentation(tracer_provider=recorded.tracer_provider)  # reads it when made
    else:
        recorded = Recorded(capture_content=True)
    registry = _tools(recorded.registry())
    await run_batch(registry, call("c1", "echo", {"text": "a secret"}), call("c2", "broken", {"text": "b"}))
    ok = dict(recorded.one("execute_tool echo").attributes or {})
    assert json.loads(ok["gen_ai.tool.call.arguments"]) == {"text": "a secret"}
    assert json.loads(ok["gen_ai.tool.call.result"]) == "a secret"
    failed = recorded.one("execute_tool broken")
    assert failed.status.description == "RuntimeError: leaked b"
    assert "gen_ai.tool.call.result" not in (failed.attributes or {})


async def test_the_environment_switch_is_read_when_the_instrumentation_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    recorded = Recorded()
    monkeypatch.setenv(CAPTURE_CONTENT_VARIABLE, "true")  # too late for the instrumentation already made
    registry = _tools(recorded.registry())
    await run_batch(registry, call("c1", "echo", {"text": "a secret"}), call("c2", "broken", {"text": "b"}))
    for span in recorded.call_spans():
        assert not {"gen_ai.tool.call.arguments", "gen_ai.tool.call.result"} & set(span.attributes or {})
        assert "secret" not in str(span.status.description) and "leaked" not in str(span.status.description)


# ---------------------------------------------------------------- contained
class Exploding:
    """An instrumentation whose every event raises (``at``: only there)."""

    def __init__(self, at: str | None = None) -> None:
        self.at = at

    def _maybe(self, name: str) -> None:
        if self.at is None or self.at == name:
            raise RuntimeError(f"instrumentation broke in {name}")

    def batch_started(self, view: Any) -> Exploding:
        self._maybe("batch_started")
        return self

    def call_started(self, execution: Any, entry: Any) -> Exploding:
        self._maybe("call_started")
        return self

    def approval_started(self) -> None:
        self._maybe("approval_started")

    def approval_ended(self) -> None:
        self._maybe("approval_ended")

    def body_started(self, attempt: int, context: contextvars.Context) -> None:
        self._maybe("body_started")

    def body_ended(self, attempt: int) -> None:
        self._maybe("body_ended")

    def ended(self, stage: Any, outcome: Any, error: Any, attempts: int) -> None:
        self._maybe("ended")


@pytest.mark.parametrize("at", [None, "batch_started", "call_started", "body_started", "body_ended", "ended"])
async def test_an_instrumentation_that_raises_changes_no_outcome_and_never_escapes(at: str | None) -> None:
    registry = _tools(ToolRegistry(instrumentation=Exploding(at)))
    outcomes = await run_batch(registry, call("c1", "echo", {"text": "a"}), call("c2", "broken", {"text": "b"}),
                               call("c3", "pecho", {"text": "c"}), call("c4", "pecho", {"text": "d"}))
    assert codes(outcomes) == [None, "TOOL_ERROR", None, None]
    assert [o.value for o in outcomes if o.failure is None] == ["a", "c", "d"]


class FailingExporter(SpanExporter):
    def export(self, spans: Any) -> SpanExportResult:
        raise OSError("the collector is down")


class FailingProcessor(SpanProcessor):
    def on_start(self, span: Span, parent_context: Any = None) -> None:
        raise RuntimeError("processor broke on start")

    def on_end(self, span: ReadableSpan) -> None:
        raise RuntimeError("processor broke on end")


@pytest.mark.parametrize("failure", ["exporter", "processor"])
async def test_a_failing_exporter_or_span_processor_changes_no_outcome(failure: str) -> None:
    recorded = Recorded()
    recorded.tracer_provider.add_span_processor(SimpleSpanProcessor(FailingExporter()) if failure == "exporter" else FailingProcessor())
    registry = _tools(recorded.registry())
    outcomes = await run_batch(registry, call("c1", "echo", {"text": "a"}), call("c2", "broken", {"text": "b"}))
    assert codes(outcomes) == [None, "TOOL_ERROR"]
    if failure == "exporter":  # the in-memory exporter beside it still got every span
        assert sorted(span.name for span in recorded.call_spans()) == ["execute_tool broken", "execute_tool echo"]


SURROGATES = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF, exclude_categories=())
TEXT = st.text(st.one_of(st.characters(exclude_categories=()), SURROGATES), min_size=1, max_size=12)
CALLS = st.lists(
    st.tuples(st.one_of(st.sampled_from(["echo", "broken", "pecho"]), TEXT),
              st.one_of(TEXT.map(lambda text: json.dumps({"text": text})), TEXT, st.sampled_from(["{", "[]", '{"text": 1}']))),
    min_size=1, max_size=5,
)


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(proposed=CALLS)
async def test_recording_every_call_with_content_never_changes_the_outcomes(proposed: list[tuple[str, str]]) -> None:
    calls = [ToolCall(f"c{i}", name, arguments) for i, (name, arguments) in enumerate(proposed)]
    plain = await run_batch(_tools(ToolRegistry(instrumentation=None)), *calls)
    recorded = Recorded(capture_content=True)
    observed = await run_batch(_tools(recorded.registry()), *calls)
    assert [(o.call_id, o.code, o.reason, o.value_json) for o in observed] == [(o.call_id, o.code, o.reason, o.value_json) for o in plain]
    spans = recorded.call_spans()
    assert len(spans) == len(calls)
    assert all((span.status.status_code is StatusCode.ERROR) == ("error.type" in (span.attributes or {})) for span in spans)
