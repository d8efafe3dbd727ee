"""The names on the spans and metrics: the GenAI semantic conventions' and the library's own (``tether.*``)."""

from __future__ import annotations

__all__ = [
    "ERROR_TYPE",
    "GEN_AI_OPERATION_NAME",
    "GEN_AI_TOOL_CALL_ARGUMENTS",
    "GEN_AI_TOOL_CALL_ID",
    "GEN_AI_TOOL_CALL_RESULT",
    "GEN_AI_TOOL_DESCRIPTION",
    "GEN_AI_TOOL_NAME",
    "GEN_AI_TOOL_TYPE",
    "TETHER_APPROVAL_ASKED",
    "TETHER_ATTEMPT",
    "TETHER_ATTEMPTS",
    "TETHER_FAILURE_REASON",
    "TETHER_OUTCOME_CODE",
    "TETHER_PRINCIPAL_ID",
    "TETHER_REGISTRY_REVISION",
    "TETHER_STAGE",
    "TETHER_SUSPENDED",
    "TETHER_TENANT_ID",
    "TETHER_TOOL_LANGUAGE",
    "TETHER_TOOL_LOGICAL_NAME",
    "TETHER_TOOL_SCHEMA_HASH",
    "TETHER_TOOL_VERSION",
]

# GenAI semantic conventions (execute_tool spans).
GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
GEN_AI_TOOL_NAME = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID = "gen_ai.tool.call.id"
GEN_AI_TOOL_DESCRIPTION = "gen_ai.tool.description"
GEN_AI_TOOL_TYPE = "gen_ai.tool.type"
GEN_AI_TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT = "gen_ai.tool.call.result"
ERROR_TYPE = "error.type"

# What only this library knows.
TETHER_FAILURE_REASON = "tether.failure.reason"
TETHER_STAGE = "tether.stage"
TETHER_TOOL_LANGUAGE = "tether.tool.language"
TETHER_TOOL_LOGICAL_NAME = "tether.tool.logical_name"
TETHER_TOOL_VERSION = "tether.tool.version"
TETHER_TOOL_SCHEMA_HASH = "tether.tool.schema_hash"
TETHER_REGISTRY_REVISION = "tether.registry.revision"
TETHER_TENANT_ID = "tether.tenant.id"
TETHER_PRINCIPAL_ID = "tether.principal.id"
TETHER_OUTCOME_CODE = "tether.outcome.code"
TETHER_ATTEMPT = "tether.attempt"  # on a tether.body span: which attempt this body was
TETHER_ATTEMPTS = "tether.attempts"  # on a call span, when the call took more than one
TETHER_APPROVAL_ASKED = "tether.approval.asked"  # on a call span: its approval was asked (captured), not refused
TETHER_SUSPENDED = "tether.suspended"  # on a call span: the step was suspended before the call ended
