"""The audit record of one call: who asked, what it was bound to, what was decided, how long it took.

Built only when someone listens (a batch with no audit listener builds none and
reads no clock); handed to every audit listener, whose failures are logged and
contained like a result listener's.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from tether_clr.catalog.views import SealedToolCatalogView
from tether_clr.execution.pipeline import maybe_await
from tether_clr.execution.pool import Slot
from tether_clr.records.audit import ToolAuditRecord
from tether_clr.records.outcomes import ToolExecutionOutcome

__all__ = ["audit_record", "tell_auditors"]

logger = logging.getLogger("tether_clr")


def audit_record(view: SealedToolCatalogView, slot: Slot, outcome: ToolExecutionOutcome) -> ToolAuditRecord:
    """The record of ``slot``'s call in ``view``, ended with ``outcome``; latency from its admission."""
    entry = slot.entry
    context, binding = view.context, (None if entry is None else view.binding_of(entry))
    failure = outcome.failure
    return ToolAuditRecord(
        request_id=None if context is None else context.request_id,
        tenant_id=None if context is None else context.tenant_id,
        principal_id=None if context is None else context.principal_id,
        agent_id=None if context is None else context.agent_id,
        registry_revision=view.registry_revision,
        policy_revision=view.policy_revision,
        requested_name=slot.call.name if slot.execution is None else slot.execution.name,
        model_name=None if entry is None else entry.name,
        logical_name=None if binding is None else binding.logical_name,
        version=None if binding is None else binding.version,
        schema_hash=None if binding is None else binding.schema_hash,
        call_id=slot.call.call_id if slot.execution is None else slot.execution.call_id,
        decision="dispatched" if slot.dispatched else "refused",
        code=None if failure is None else str(failure.code),
        reason=None if failure is None else failure.reason,
        latency_ms=max(0.0, (time.perf_counter() - slot.started) * 1000.0),
        parent_call_id=slot.call.parent_call_id if slot.execution is None else slot.execution.parent_call_id,
        attempts=slot.attempts,
    )


async def tell_auditors(listeners: tuple[Callable[..., Any], ...], record: ToolAuditRecord) -> None:
    """Hand ``record`` to each audit listener (sync or async); a listener's failure is logged, never raised."""
    for listener in listeners:
        try:
            await maybe_await(listener(record))
        except Exception:
            logger.exception("audit listener raised for call %r; ignored", record.call_id)
