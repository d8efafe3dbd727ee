"""Delivery in model order: post-execute review, the tool's ``finalize_content``, the awaited result policies,
the audit record, the sink and the result listeners, one outcome after another in the order the model
declared the calls, even when bodies overlap; results ready together become durable together. Floor 4."""

from __future__ import annotations

import anyio
import anyio.abc
import anyio.lowlevel

from tether_clr.execution.admitting import Admitting
from tether_clr.execution.pool import Slot
from tether_clr.execution.ports import told
from tether_clr.foundations.errors import ResultPolicyError, SinkError
from tether_clr.foundations.text import describe_exception

__all__ = ["Delivery"]


class Delivery(Admitting):
    """Hands each outcome on in model order (:meth:`Delivery._deliver_in_order`)."""

    async def _deliver(self, slots: list[Slot], behind: anyio.abc.TaskGroup | None = None) -> None:
        """A parallel group's deliverer task: :meth:`_deliver_in_order` in a scope ``_abort`` can cancel."""
        try:
            with anyio.CancelScope() as scope:
                self._deliver_scope = scope
                if self._fault is not None:  # the admit loop failed before this task first ran
                    return
                await self._deliver_in_order(slots, behind)
        finally:
            self._deliver_scope = None
            for slot in slots:  # a worker waiting for the delivery to take its outcome up goes on
                slot.take_up()

    async def _flush_behind(self) -> None:
        try:
            await anyio.sleep(0)  # let the bodies that can finish now do so: their results join this commit
            await self._flush()
        finally:
            self._committing = False

    async def _deliver_in_order(self, slots: list[Slot], behind: anyio.abc.TaskGroup | None) -> None:
        """Post-execute, policies, sink and listeners, strictly in model order."""
        for slot in slots:
            self._delivering = slot
            if not slot.is_done:
                # About to wait for a body still running: the results ready so far become durable
                # together, in a commit that runs behind the delivery (one at a time) instead of stalling it.
                if behind is not None and self._flushes and not self._committing:
                    self._committing = True
                    behind.start_soon(self._flush_behind)
                await slot.wait()
            if slot.parked is not None:  # the step is suspended here: nothing after it is delivered
                return
            execution, outcome, observed = slot.execution, slot.outcome, slot.observed
            assert execution is not None and outcome is not None
            contexts: tuple[str, ...] = ()
            if slot.dispatched:
                outcome, contexts = await self._pipeline.review(execution, outcome)
                if self._origin is not None:  # a child call adds no context
                    contexts = ()
            outcome = self._pipeline.finalize(execution, slot.entry, outcome).with_attempts(slot.attempts)
            if observed is not None:
                observed.settled(slot.outcome, outcome)
            if self._audit:
                await self._audit_call(slot, outcome)
            try:
                await self._pipeline.enforce_policies(execution, outcome)
            except ResultPolicyError as fault:
                if observed is not None:  # no outcome: the policy's own exception ends the call
                    observed.ended(None, fault.__cause__ or fault, "policy")
                self._abort(fault)
                return
            if self._sink is not None:
                try:
                    if contexts and self._hooks is not None and self._hooks.contexts is not None:
                        await told(slot.declaration, self._hooks.contexts, contexts)
                    await told(slot.declaration, self._sink.outcome_ready, outcome)
                except Exception as exc:
                    self._abort(SinkError(f"sink failed to record the outcome of {outcome.call_id!r}: {describe_exception(exc)}"))
                    return
            # Taken up only now: the worker that ran this body admits again only after the result
            # policies (even awaiting ones) let the outcome through and the sink recorded it.
            slot.take_up()
            if observed is not None:
                observed.ended(outcome)
            self._delivered.append(outcome)
            self._contexts.extend(contexts)
            await self._pipeline.notify(execution, outcome)

