"""Adopting a framework's own ``execute_tool`` span instead of starting a second one.

An agent framework that traces its tool calls (pydantic-ai's ``Instrumentation``
capability, for one) already has a span per call when it hands the call to an
adapter (:mod:`tether_clr.integrations`). A second ``execute_tool`` span under it
would describe the same call twice. So the adapter hands the instrumentation the
framework's span for each call id, for the batches it runs:

.. code-block:: python

    with adopted_spans({call_id: framework_span, ...}):
        await registry.execute_batch(calls, assembly)

and each of those calls ADOPTS its span: the library sets on it what it would
have set on its own (``gen_ai.*`` only where the framework has not set it,
every ``tether.*`` attribute, ``error.type``, the error status on failure),
starts ``tether.approval`` and ``tether.body`` as its children (a .NET body is
lent that trace context, as always), and never ends it: the framework does.
A call with no adopted span (another call id, a span that is not recording)
gets the library's own ``execute_tool`` span, a child of the current span, as
without adoption.

:func:`approvals_captured` marks batches whose approval provider answers
``REJECTED`` only to capture what would be asked (an adapter asking the
framework's human-in-the-loop, :class:`~tether_clr.integrations.approvals.CapturingApprovals`):
a call refused at the approval stage in them is recorded as asked
(``tether.approval.asked``), not as a DENIED failure.

Both are context variables, read once when a batch starts (``execute_batch``
reads them in the task that calls it): they cost nothing when unused, and what
a batch adopted is fixed for its lifetime.
"""

from __future__ import annotations

import contextvars
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from types import MappingProxyType

from opentelemetry import trace
from opentelemetry.trace import Span

from tether_clr.telemetry.attributes import GEN_AI_TOOL_CALL_ID

__all__ = ["Adoption", "adopted_spans", "approvals_captured", "current_adoption", "span_to_adopt"]


@dataclass(frozen=True, slots=True)
class Adoption:
    """What a batch started in this context adopts: spans by call id, and whether its approvals are captures."""

    spans: Mapping[str, Span]
    captured: bool = False


_NONE = Adoption(MappingProxyType({}))
_adoption: contextvars.ContextVar[Adoption] = contextvars.ContextVar("tether_clr.telemetry.adoption", default=_NONE)


def current_adoption() -> Adoption:
    """What a batch started now would adopt (an empty mapping outside :func:`adopted_spans`)."""
    return _adoption.get()


@contextmanager
def adopted_spans(spans: Mapping[str, Span]) -> Iterator[None]:
    """Batches started inside adopt ``spans[call_id]`` as their call's ``execute_tool`` span (see the module).

    The mapping is copied on entry; spans that are not recording, and a span given for more than one
    call id (a call's span is that call's alone), are left out: their calls get the library's own span.
    Nested scopes replace the outer one's spans; :func:`approvals_captured` is kept.
    """
    given = Counter(id(span) for span in spans.values())
    kept = {call_id: span for call_id, span in spans.items() if given[id(span)] == 1 and span.is_recording()}
    token = _adoption.set(Adoption(MappingProxyType(kept), _adoption.get().captured))
    try:
        yield
    finally:
        _adoption.reset(token)


_CAPTURED = Adoption(_NONE.spans, True)


class _Captured:
    """The context manager :func:`approvals_captured` returns (a class: adapters enter one per batch)."""

    __slots__ = ("_token",)

    def __enter__(self) -> None:
        current = _adoption.get()
        self._token = _adoption.set(_CAPTURED if current is _NONE else Adoption(current.spans, True))

    def __exit__(self, *_: object) -> None:
        _adoption.reset(self._token)


def approvals_captured() -> AbstractContextManager[None]:
    """Batches started inside capture approvals: a call refused at the approval stage was asked, not denied.

    Its span (adopted or its own) gets ``tether.stage = "approval"`` and ``tether.approval.asked = true``,
    and no ``error.type`` nor error status; its metrics are unchanged.
    """
    return _Captured()


def span_to_adopt(call_id: str | None = None) -> Span | None:
    """The current OpenTelemetry span, when it is the framework's span of this call, to adopt; else None.

    Called in the task the framework runs the tool call in, where its span is current. It must be
    recording and valid; with ``call_id``, it must also say it is that call's span
    (``gen_ai.tool.call.id``, readable on the SDK's spans), so that a host's or an agent's
    span that happens to be current is never taken for a tool call's. Without ``call_id`` the caller
    vouches that the current span is the call's.
    """
    span = trace.get_current_span()
    if not span.is_recording() or not span.get_span_context().is_valid:
        return None
    if call_id is None:
        return span
    attributes = getattr(span, "attributes", None)
    if isinstance(attributes, Mapping) and attributes.get(GEN_AI_TOOL_CALL_ID) == call_id:
        return span
    return None
