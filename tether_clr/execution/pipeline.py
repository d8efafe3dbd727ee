"""One call through the stages: resolve -> pre-execute -> approval -> guards ->
re-authorize -> execute -> post-execute -> result policies -> result listeners.

Every stage that runs user code converts what that code raises or returns wrongly
into a failure outcome with a stable code; only result policies (whose job is to
stop the batch) and the sink (infrastructure) may raise out of a batch. The batch
module decides *when* each stage runs; this module decides *what* it does.

Governance at execution: the execution carries the snapshot's request
context (``execution.context``); right before a body, the call is checked
again against the live catalog (:meth:`CallPipeline.reauthorize`), and a
result larger than the version's ``max_result_bytes`` is refused. Floor 4: it
imports the catalog, never the reverse.
"""

from __future__ import annotations

from tether_clr.execution.authorization import Authorization
from tether_clr.execution.body import BodyStage
from tether_clr.execution.resolution import Resolution
from tether_clr.execution.review import Review
from tether_clr.execution.stages import ApprovalRequest, describe_exception, maybe_await

__all__ = ["ApprovalRequest", "CallPipeline", "describe_exception", "maybe_await"]


class CallPipeline(Resolution, Authorization, BodyStage, Review):
    """The stages of a single call, bound to one batch's view and listener snapshot.

    One mixin per stage (:mod:`~tether_clr.execution.resolution`, :mod:`~tether_clr.execution.authorization`,
    :mod:`~tether_clr.execution.body`, :mod:`~tether_clr.execution.review`) over their shared
    :class:`~tether_clr.execution.stages.StageBase`; the batch decides when each runs.
    """

    __slots__ = ()
