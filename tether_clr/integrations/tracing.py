"""The adapters' side of span adoption, working with or without OpenTelemetry installed.

A framework that traces its tool calls already has a span per call when it
reaches the adapter; the adapter records it (:func:`span_to_adopt`, in the
call's own task, where the framework made it current) and runs the batch inside
:func:`adopted_spans`, so the library annotates and nests under that span
instead of starting a second ``execute_tool`` span
(:mod:`tether_clr.telemetry.adoption`). Without ``opentelemetry-api`` (the
``otel`` extra) there is nothing to adopt: :func:`span_to_adopt` is None and
the context managers do nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any

__all__ = ["adopted_spans", "approvals_captured", "span_to_adopt"]


_NOTHING: AbstractContextManager[None] = nullcontext()
"""Entered for batches with nothing to adopt (a nullcontext is reusable: one for every batch)."""


try:
    from tether_clr.telemetry.adoption import adopted_spans as _adopted_spans
    from tether_clr.telemetry.adoption import approvals_captured as _approvals_captured
    from tether_clr.telemetry.adoption import span_to_adopt as _span_to_adopt
except ImportError:  # no opentelemetry-api: no spans to adopt
    _adopted_spans = _approvals_captured = _span_to_adopt = None  # type: ignore[assignment]


def span_to_adopt(call_id: str | None = None) -> Any | None:
    """The framework's current span of ``call_id`` (see :func:`tether_clr.telemetry.span_to_adopt`), or None
    (no OpenTelemetry installed, nothing recording, or the current span is not that call's)."""
    return None if _span_to_adopt is None else _span_to_adopt(call_id)


def adopted_spans(spans: Mapping[str, Any]) -> AbstractContextManager[None]:
    """Batches started inside adopt ``spans[call_id]`` (from :func:`span_to_adopt`); nothing without spans."""
    if not spans or _adopted_spans is None:
        return _NOTHING
    return _adopted_spans(spans)


def approvals_captured() -> AbstractContextManager[None]:
    """Batches started inside capture approvals (a call refused at the approval stage was asked, not denied)."""
    return _NOTHING if _approvals_captured is None else _approvals_captured()
