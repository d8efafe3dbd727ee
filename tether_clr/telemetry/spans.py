"""One batch's and one call's OpenTelemetry observers: the ``execute_tool`` span, its children, the metrics.

A call's span starts when the call is declared and ends when its outcome is
delivered (after the post-execute listeners, the result policies and the
sink), so in a parallel group the call spans overlap, as their bodies do. It is
a child of the span that was current when ``execute_batch`` started (the
host's); ``tether.approval`` (the approval wait, for calls that asked) and
``tether.body`` (each body, one per attempt) are its children. The body span is
made current in the body's own context copy (so a Python tool's own spans, and
those of the worker thread a synchronous tool runs in, nest under it), and a
.NET tool is lent its W3C trace context
(:mod:`tether_clr.foundations.trace_context`), which the .NET host hands to
the tool as an ``Activity`` parent.

A call whose id the batch adopts a framework's span for
(:mod:`tether_clr.telemetry.adoption`) has no span of its own: the library sets
its attributes on the adopted span (``gen_ai.*`` only where absent), nests its
children there and never ends it.

Arguments and results (``gen_ai.tool.call.arguments``, ``gen_ai.tool.call.result``:
canonical JSON text) and failure messages (the span status description) are
recorded only with ``capture_content``: they can hold what the model and the
tools saw.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from tether_clr.foundations.trace_context import TraceContext, lend_trace_context
from tether_clr.records.outcomes import ToolExecution, ToolExecutionOutcome, ToolFailureCodes
from tether_clr.telemetry import attributes as names
from tether_clr.telemetry.adoption import current_adoption
from tether_clr.telemetry.metrics import ToolMetrics

if TYPE_CHECKING:
    from tether_clr.catalog.entries import ToolEntry
    from tether_clr.catalog.views import SealedToolCatalogView
    from tether_clr.execution.instrumentation import Stage

__all__ = ["OtelBatch", "OtelCall", "tool_language"]


def tool_language(tool: object) -> str:
    """``dotnet`` for a tool that says so (a :class:`~tether_clr.clr.ClrFunction`), else ``python``."""
    return "dotnet" if getattr(tool, "language", None) == "dotnet" else "python"


def _request_attributes(view: SealedToolCatalogView) -> dict[str, Any]:
    """What every call of an assembly's batch carries: the registry revision, tenant and principal (ids only)."""
    context = view.context
    if context is None:
        return {}
    found: dict[str, Any] = {}
    if view.registry_revision is not None:
        found[names.TETHER_REGISTRY_REVISION] = view.registry_revision
    if context.tenant_id is not None:
        found[names.TETHER_TENANT_ID] = context.tenant_id
    if context.principal_id is not None:
        found[names.TETHER_PRINCIPAL_ID] = context.principal_id
    return found


class OtelBatch:
    """One batch: the host's context at its start (its calls' parent), a tracer and/or the metrics."""

    __slots__ = ("_tracer", "_metrics", "_parent", "_view", "_capture", "_request", "_assembled", "_adopted", "_captured")

    def __init__(
        self, tracer: Tracer | None, metrics: ToolMetrics | None, view: SealedToolCatalogView, capture_content: bool
    ) -> None:
        self._tracer = tracer
        self._metrics = metrics
        self._parent: Context = otel_context.get_current()
        self._view = view
        self._capture = capture_content
        self._assembled = view.context is not None  # an assembly: its calls carry their binding
        self._request = _request_attributes(view) if tracer is not None else {}
        adoption = current_adoption()  # what the caller's context adopts, fixed for the batch's lifetime
        self._adopted = adoption.spans
        self._captured = adoption.captured

    def call_started(self, execution: ToolExecution, entry: ToolEntry | None) -> OtelCall:
        span = None
        owned = True
        language = None if entry is None else tool_language(entry.tool)
        if self._tracer is not None:
            attributes = self._attributes(execution, entry, language)
            adopted = self._adopted.get(execution.call_id) if self._adopted else None
            if adopted is not None and adopted.is_recording():
                _annotate(adopted, attributes)
                span, owned = adopted, False
            else:
                span = self._tracer.start_span(
                    f"execute_tool {execution.name}", context=self._parent, kind=SpanKind.INTERNAL, attributes=attributes,
                )
        return OtelCall(
            self._tracer, self._metrics, self._parent, span, execution.name, language == "dotnet", self._capture,
            owned=owned, captured=self._captured,
        )

    def _attributes(self, execution: ToolExecution, entry: ToolEntry | None, language: str | None) -> dict[str, Any]:
        found: dict[str, Any] = {
            names.GEN_AI_OPERATION_NAME: "execute_tool",
            names.GEN_AI_TOOL_NAME: execution.name,
            names.GEN_AI_TOOL_CALL_ID: execution.call_id,
            names.GEN_AI_TOOL_TYPE: "function",
        }
        if entry is not None:
            if entry.description:
                found[names.GEN_AI_TOOL_DESCRIPTION] = entry.description
            found[names.TETHER_TOOL_LANGUAGE] = language
            binding = self._view.binding_of(entry) if self._assembled else None
            if binding is not None:
                found[names.TETHER_TOOL_LOGICAL_NAME] = binding.logical_name
                found[names.TETHER_TOOL_VERSION] = binding.version
                found[names.TETHER_TOOL_SCHEMA_HASH] = binding.schema_hash
            found.update(self._request)
        if self._capture:
            found[names.GEN_AI_TOOL_CALL_ARGUMENTS] = execution.arguments_json
        return found


def _annotate(span: Span, attributes: dict[str, Any]) -> None:
    """Set the library's attributes on an adopted span: the framework's own ``gen_ai.*`` values win.

    An SDK span exposes what is already set (``attributes``); a span that does not
    gets them all (the same call's name and id, so nothing of the framework's is lost).
    """
    present = getattr(span, "attributes", None)
    for key, value in attributes.items():
        if key.startswith("gen_ai.") and isinstance(present, Mapping) and key in present:
            continue
        span.set_attribute(key, value)


class OtelCall:
    """One call: its span (None with metrics alone), the approval and body spans, and its metrics.

    ``owned=False``: the span is a framework's, adopted (:mod:`tether_clr.telemetry.adoption`): annotated and
    parented to, never ended. ``captured``: the batch's approvals are captures (a refusal at the approval
    stage is recorded as asked, not as a failure).
    """

    __slots__ = ("_tracer", "_metrics", "_parent", "_span", "_tool", "_dotnet", "_capture", "_started", "_approval", "_body",
                 "_inner", "_owned", "_captured", "_asked")

    def __init__(
        self, tracer: Tracer | None, metrics: ToolMetrics | None, parent: Context, span: Span | None, tool: str,
        dotnet: bool, capture_content: bool, *, owned: bool = True, captured: bool = False,
    ) -> None:
        self._tracer, self._metrics, self._span = tracer, metrics, span
        self._parent = parent
        self._tool = tool
        self._dotnet = dotnet
        self._capture = capture_content
        self._started = time.perf_counter()
        self._approval: Span | None = None
        self._body: Span | None = None
        self._inner: Context | None = None  # the host's context with this call's span current
        self._owned = owned
        self._captured = captured
        self._asked = False  # the approval provider was asked

    def _child(self, name: str, attributes: dict[str, Any] | None = None) -> Span | None:
        if self._tracer is None or self._span is None:
            return None
        if self._inner is None:
            self._inner = trace.set_span_in_context(self._span, self._parent)
        return self._tracer.start_span(name, context=self._inner, kind=SpanKind.INTERNAL, attributes=attributes)

    def approval_started(self) -> None:
        self._asked = True
        self._approval = self._child("tether.approval")

    def approval_ended(self) -> None:
        if self._approval is not None:
            self._approval.end()
            self._approval = None

    def body_started(self, attempt: int, context: contextvars.Context) -> None:
        if self._metrics is not None:
            self._metrics.in_flight.add(1, {names.GEN_AI_TOOL_NAME: self._tool})
        body = self._body = self._child("tether.body", {names.TETHER_ATTEMPT: attempt})
        if body is None:
            return
        current = trace.set_span_in_context(body, self._parent)
        context.run(otel_context.attach, current)  # the body's own copy: never detached, dropped with it
        if self._dotnet:
            span = body.get_span_context()
            if span.is_valid:
                parent = f"00-{span.trace_id:032x}-{span.span_id:016x}-{int(span.trace_flags):02x}"
                lend_trace_context(context, TraceContext(parent, span.trace_state.to_header()))

    def body_ended(self, attempt: int) -> None:
        if self._metrics is not None:
            self._metrics.in_flight.add(-1, {names.GEN_AI_TOOL_NAME: self._tool})
        if self._body is not None:
            self._body.end()
            self._body = None

    def ended(self, stage: Stage, outcome: ToolExecutionOutcome | None, error: BaseException | None, attempts: int) -> None:
        self.approval_ended()  # a call that ended while approval was awaited
        failure = None if outcome is None else outcome.failure
        if self._metrics is not None and (outcome is not None or error is not None):
            code = None if failure is None else str(failure.code)
            self._metrics.ended(self._tool, code, None if outcome is not None else type(error).__name__, time.perf_counter() - self._started)
        span = self._span
        if span is None:
            return
        span.set_attribute(names.TETHER_STAGE, stage)
        if attempts > 1:
            span.set_attribute(names.TETHER_ATTEMPTS, attempts)
        if outcome is not None:
            if failure is None:
                if self._capture:
                    span.set_attribute(names.GEN_AI_TOOL_CALL_RESULT, outcome.value_json)
            elif self._captured and self._asked and stage == "approval" and failure.code is ToolFailureCodes.DENIED:
                span.set_attribute(names.TETHER_APPROVAL_ASKED, True)  # the capture's refusal: a question, not a denial
            else:
                span.set_attribute(names.ERROR_TYPE, str(failure.code))
                if failure.reason:
                    span.set_attribute(names.TETHER_FAILURE_REASON, failure.reason)
                span.set_status(Status(StatusCode.ERROR, failure.message if self._capture else None))
        elif error is not None:
            span.set_attribute(names.ERROR_TYPE, type(error).__name__)
            span.set_status(Status(StatusCode.ERROR, str(error) if self._capture else None))
        else:
            span.set_attribute(names.TETHER_SUSPENDED, True)
        if self._owned:
            span.end()
