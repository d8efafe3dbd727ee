"""The instrumentation port: what a batch tells an observer of its calls (spans, metrics).

The execution layer never imports a tracing library, nor the adapter that
wraps one (:mod:`tether_clr.telemetry`, layer 7). It defines this port instead:

* :class:`Instrumentation`: asked once per batch, in the caller's task, for a
  :class:`BatchObserver`; ``None`` means nothing records now (no tracer or
  meter provider configured), and then no machinery runs for that batch: each
  call pays one ``is None`` branch;
* :class:`BatchObserver`: asked for one :class:`CallObserver` per declared call;
* :class:`CallObserver`: told the approval wait, each body (with the context
  copy it runs in, where the observer may make its span current), and how the
  call ended: its outcome, or the error that kept it from one, and the
  :data:`Stage` that decided.

What an observer raises is logged and contained by the batch
(:mod:`tether_clr.execution.observing`): instrumentation never changes an
outcome and never escapes ``execute_batch``.

The default instrumentation is found without a static import of the adapter:
:func:`discovered_instrumentation` loads the factory that tether_clr's own
distribution declares under the ``tether_clr.instrumentation`` entry-point
group (``pyproject.toml``), once per process. Loading it fails when
``opentelemetry-api`` is not installed, and then the default is ``None``.
"""

from __future__ import annotations

import contextvars
import functools
import logging
from importlib import metadata
from typing import TYPE_CHECKING, Literal, Protocol

from tether_clr.records.outcomes import ToolExecution, ToolExecutionOutcome

if TYPE_CHECKING:
    from tether_clr.catalog.entries import ToolEntry
    from tether_clr.catalog.views import SealedToolCatalogView

__all__ = [
    "ENTRY_POINT_GROUP",
    "STAGES",
    "BatchObserver",
    "CallObserver",
    "Instrumentation",
    "Stage",
    "discovered_instrumentation",
]

logger = logging.getLogger("tether_clr")

Stage = Literal["resolve", "pre_execute", "approval", "guard", "authorization", "body", "post_execute", "policy"]
"""The stage that decided a call's outcome (``tether.stage`` on its span).

``resolve``: name and arguments (UNKNOWN_TOOL, INVALID_ARGS, and a child call
too deep); ``pre_execute``, ``approval``, ``guard``: the admission stages;
``authorization``: the re-authorization against the live catalog right before
a body (and a cancellation noticed there); ``body``: the execute waterfall, the
timeout and the body (a success, or the body's failure); ``post_execute``: a
post-execute listener (or ``finalize_content``) changed the outcome;
``policy``: a result policy raised."""

STAGES: tuple[Stage, ...] = ("resolve", "pre_execute", "approval", "guard", "authorization", "body", "post_execute", "policy")

ENTRY_POINT_GROUP = "tether_clr.instrumentation"
"""The entry-point group whose factory (no arguments, returns an :class:`Instrumentation` or None) is the default."""


class CallObserver(Protocol):
    """One call's observer. Events come in order; ``ended`` exactly once, last.

    ``body_started`` gets the body's own context copy (the body runs in it, and
    so do the worker threads it starts): an observer may make its span current
    there, or lend a trace context (:mod:`tether_clr.foundations.trace_context`).
    ``attempt`` counts from 1 (a tool with a retry policy runs several bodies).

    ``ended(stage, outcome, error, attempts)``: ``outcome`` is the outcome
    delivered; ``error`` instead when none was: the exception a result policy
    raised (stage ``policy``), or the fault that aborted the batch before this
    call's outcome was delivered; both ``None`` when the step was suspended
    first (the call was parked, or never admitted).
    """

    def approval_started(self) -> None: ...

    def approval_ended(self) -> None: ...

    def body_started(self, attempt: int, context: contextvars.Context) -> None: ...

    def body_ended(self, attempt: int) -> None: ...

    def ended(self, stage: Stage, outcome: ToolExecutionOutcome | None, error: BaseException | None, attempts: int) -> None: ...


class BatchObserver(Protocol):
    """One batch's observer: a :class:`CallObserver` per declared call (``entry`` is None for an unknown tool)."""

    def call_started(self, execution: ToolExecution, entry: ToolEntry | None) -> CallObserver: ...


class Instrumentation(Protocol):
    """Asked once per batch, in the task that runs it: a :class:`BatchObserver`, or None when nothing records."""

    def batch_started(self, view: SealedToolCatalogView) -> BatchObserver | None: ...


@functools.cache
def discovered_instrumentation() -> Instrumentation | None:
    """The default instrumentation: the factory tether_clr's distribution declares under :data:`ENTRY_POINT_GROUP`.

    Looked up once per process (this distribution's metadata only, so it costs
    well under a millisecond) and cached. ``None`` when tether_clr is not
    installed (a bare source tree), when the factory cannot be loaded (no
    ``opentelemetry-api``: the ``otel`` extra is not installed) or returns None.
    """
    try:
        points = [point for point in metadata.distribution("tether_clr").entry_points if point.group == ENTRY_POINT_GROUP]
    except metadata.PackageNotFoundError:
        return None
    for point in sorted(points, key=lambda point: point.name):
        try:
            found: Instrumentation | None = point.load()()
        except ImportError as exc:
            logger.debug("instrumentation %r is not available: %s", point.name, exc)
            continue
        except Exception:
            logger.warning("instrumentation %r failed to start; calls are not instrumented", point.name, exc_info=True)
            continue
        if found is not None:
            return found
    return None
