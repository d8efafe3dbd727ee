"""Approval through the client: ``elicitation/create`` when the client declared elicitation.

In the handshake era, a client that declared the ``elicitation`` capability on a
connection that can carry server requests is asked, in form mode, with the
tool, its arguments and the reason; ``{"approve": true}`` with ``accept``
approves, anything else (``decline``, ``cancel``, ``approve: false``) rejects.
A failing elicitation (an error answer, a closed connection) raises, which the
pipeline turns into UNAVAILABLE: the call fails closed. Otherwise the
registry's approval provider decides, and with none the call is DENIED.
"""

from __future__ import annotations

from typing import Any

from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from tether_clr.execution.ports import ApprovalProvider
from tether_clr.records.decisions import ApprovalResult
from tether_clr.records.outcomes import ToolExecution

__all__ = ["APPROVAL_SCHEMA", "ElicitingApproval", "approval_for"]

APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approve": {"type": "boolean", "title": "Approve", "description": "Run this tool call?"}},
    "required": ["approve"],
}
"""The form the client is asked to fill."""


class ElicitingApproval:
    """An approval provider that asks the MCP client through ``elicitation/create``."""

    def __init__(self, session: Any, request_id: Any) -> None:
        self._session = session
        self._request_id = request_id

    async def request(self, execution: ToolExecution, reason: str | None) -> ApprovalResult:
        message = f"Approve a call of the tool {execution.name!r} with arguments {execution.arguments_json}?"
        if reason:
            message += f" Reason: {reason}"
        result = await self._session.elicit_form(message, APPROVAL_SCHEMA, related_request_id=self._request_id)
        approved = result.action == "accept" and isinstance(result.content, dict) and result.content.get("approve") is True
        return ApprovalResult.APPROVED if approved else ApprovalResult.REJECTED


def approval_for(sdk_context: Any) -> ApprovalProvider | None:
    """An :class:`ElicitingApproval` when this request's client can be asked, else ``None`` (the registry's provider)."""
    session = sdk_context.session
    if sdk_context.protocol_version in MODERN_PROTOCOL_VERSIONS or not session.can_send_request:
        return None
    capabilities = session.client_capabilities
    if capabilities is None or capabilities.elicitation is None:
        return None
    elicitation = capabilities.elicitation
    if elicitation.url is not None and elicitation.form is None:
        return None  # URL mode only: no form to ask in
    return ElicitingApproval(session, sdk_context.request_id)
