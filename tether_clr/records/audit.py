"""One audit record per call: who asked, what the model named, what was bound, what happened.

Floor 2 (records).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from operator import attrgetter
from typing import Any, Literal

from tether_clr.foundations.checks import optional_str
from tether_clr.records.outcomes import ToolFailureCodes

__all__ = ["AuditDecision", "ToolAuditRecord"]

AuditDecision = Literal["dispatched", "refused"]
_CODES = frozenset(code.value for code in ToolFailureCodes)


_OPTIONAL_TEXT = (
    "request_id", "tenant_id", "principal_id", "agent_id", "model_name", "logical_name", "version", "schema_hash",
    "reason", "parent_call_id",
)


_optional_text = attrgetter(*_OPTIONAL_TEXT)


def _plain_optional(*values: object) -> bool:
    """Whether every value is None or a non-empty str (what :func:`optional_str` accepts)."""
    for value in values:
        if value is not None and (type(value) is not str or not value):
            return False
    return True


@dataclass(frozen=True, slots=True)
class ToolAuditRecord:
    """The audit trail of one call of a batch.

    ``requested_name`` is what the model sent; ``model_name`` the bound name
    (they differ when the model used an alias). ``decision`` is
    ``"dispatched"`` when the body started, else ``"refused"``; ``code`` is
    ``None`` on success and one of the eight failure codes otherwise (a refused
    call always has one); ``reason`` refines it. The identity and catalog
    fields are ``None`` when the call ran against a plain ``seal()`` view.
    ``parent_call_id`` names the call whose body made this one (a child call), else ``None``.
    ``attempts`` is how many attempts the call took (more than 1 only for a
    tool with a retry policy).
    """

    request_id: str | None
    tenant_id: str | None
    principal_id: str | None
    agent_id: str | None
    registry_revision: int | None
    policy_revision: int | None
    requested_name: str
    model_name: str | None
    logical_name: str | None
    version: str | None
    schema_hash: str | None
    call_id: str
    decision: AuditDecision
    code: str | None
    reason: str | None
    latency_ms: float
    parent_call_id: str | None = None
    attempts: int = 1

    def __post_init__(self) -> None:
        if not _plain_optional(*_optional_text(self)):  # one pass over the usual record (one per call); the field-by-field check names what is wrong
            for name in _OPTIONAL_TEXT:
                optional_str(getattr(self, name), name)
        # The model may send any name or call id, even an empty one; each is recorded as sent.
        for name in ("requested_name", "call_id"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"{name} must be a str, got {type(getattr(self, name)).__name__}")
        for name in ("registry_revision", "policy_revision"):
            value = getattr(self, name)
            if value is not None and (type(value) is not int or value < 0):
                raise ValueError(f"{name} must be a non-negative int or None, got {value!r}")
        if self.decision not in ("dispatched", "refused"):
            raise ValueError(f"decision must be 'dispatched' or 'refused', got {self.decision!r}")
        if self.code is not None and self.code not in _CODES:
            raise ValueError(f"code must be one of the failure codes or None, got {self.code!r}")
        if self.decision == "refused" and self.code is None:
            raise ValueError("a refused call has a failure code")
        latency = self.latency_ms
        if isinstance(latency, bool) or not isinstance(latency, (int, float)) or not math.isfinite(latency) or latency < 0:
            raise ValueError(f"latency_ms must be a finite non-negative number, got {latency!r}")
        if isinstance(self.attempts, bool) or not isinstance(self.attempts, int) or self.attempts < 1:
            raise ValueError(f"attempts must be a positive int, got {self.attempts!r}")

    def as_json(self) -> dict[str, Any]:
        record = asdict(self)
        if self.code is not None:
            record["code"] = str(self.code)
        return record
