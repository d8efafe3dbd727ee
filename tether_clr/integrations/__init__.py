"""Governed tools inside agent frameworks: the shared core, and one module per framework (each an optional extra).

Importing this package imports no framework: ``tether_clr.integrations.pydantic_ai``
needs ``pydantic-ai-slim`` (the ``pydantic-ai`` extra). The core, used by every
adapter: :class:`GovernedCalls` (identity, the step's assembly, one batch per
model turn, approvals bound to fingerprints, the session log),
:class:`ContextSource`, the failure text and fields (:func:`failure_text`,
:class:`GovernedFailure`), and the approval providers in
:mod:`tether_clr.integrations.approvals`. See docs/integrations.md.
"""

from tether_clr.integrations.approvals import BoundApprovals, CapturingApprovals, Decision, DeferringApprovals
from tether_clr.integrations.failures import GovernedFailure, GovernedToolError, failure_of, failure_text
from tether_clr.integrations.governed import GovernedBatch, GovernedCalls, loaded_names
from tether_clr.integrations.identity import ContextSource, IdentityError

__all__ = [
    "BoundApprovals",
    "CapturingApprovals",
    "ContextSource",
    "Decision",
    "DeferringApprovals",
    "GovernedBatch",
    "GovernedCalls",
    "GovernedFailure",
    "GovernedToolError",
    "IdentityError",
    "failure_of",
    "failure_text",
    "loaded_names",
]
