"""tether_clr: a scoped tool registry and fail-closed execution pipeline for AI agents,
hosting Python tools and Microsoft.Extensions.AI tools from .NET assemblies alike.

A model only proposes calls; :meth:`ToolRegistry.execute_batch` decides, runs and
records them. See README.md for the tour.
"""

from .batch import Declaration, ToolCallSink, current_declaration  # importing the executor installs it behind ToolRegistry.execute_batch
from .canonical import schema_hash
from .catalog.assembly import (
    CatalogSelection,
    DenyRule,
    ToolCandidate,
    assemble_catalog,
    assembly_digest,
    reauthorize,
)
from .catalog.audit import ToolAuditRecord
from .catalog.lifecycle import StatusTransition, ToolStatus, status_transition
from .catalog.metadata import CapabilityQuery, SideEffect, ToolMetadata
from .catalog.records import (
    CATALOG_FAILURE_REASONS,
    OMISSION_REASONS,
    REAUTHORIZATION_REASONS,
    DiscoveryResult,
    Omission,
    ToolBinding,
    ToolPin,
)
from .cancellation import CancellationSource, CancellationToken, OperationCancelledError
from .compatibility import (
    CompatibilityMode,
    CompatibilityReport,
    IncompatibleSchemaError,
    check_compatibility,
    require_compatible,
)
from .context import IDENTITY_PARAMETERS, RequestContext, refuse_identity_parameters
from .decisions import (
    ApprovalResult,
    ToolExecutionMode,
    ToolPostDecision,
    ToolPreDecision,
)
from .errors import (
    BatchAbortedError,
    DuplicateToolError,
    InvariantViolation,
    ResultPolicyError,
    SinkError,
    TetherError,
    ToolArgumentError,
    ToolError,
)
from .outcomes import (
    FunctionResultContent,
    ToolCall,
    ToolDispatch,
    ToolExecution,
    ToolExecutionOutcome,
    ToolFailure,
    ToolFailureCodes,
)
from .catalog.authority import AuthorityUnavailableError
from .registry import (
    ApprovalProvider,
    Registration,
    ToolRegistrationOptions,
    ToolRegistry,
    ToolsChangedEvent,
)
from .schema import ArgumentLimits, JsonConversionError, ToolSchemaSnapshot, canonical_json, to_json_value
from .scope import AgentPipelineScope
from .session import (
    EVENT_KINDS,
    PostgresSessionStore,
    SessionEvent,
    SessionLeasedError,
    SessionSink,
    SessionStore,
    SqliteSessionStore,
    log_violations,
)
from .sinks import InMemoryToolLog, LoggedCall, SqliteToolLog
from .suspension import BatchSuspended, PendingApproval, call_fingerprint
from .text import describe_exception
from .tools import PythonFunction, Tool
from .versions import SemVer, parse_version
from .views import SealedToolCatalogView, ToolAssembly

__version__ = "0.1.0"

__all__ = [
    "log_violations",
    "call_fingerprint",
    "SqliteSessionStore",
    "SessionStore",
    "SessionSink",
    "SessionLeasedError",
    "SessionEvent",
    "PostgresSessionStore",
    "EVENT_KINDS",
    "AgentPipelineScope",
    "ApprovalProvider",
    "ApprovalResult",
    "ArgumentLimits",
    "AuthorityUnavailableError",
    "BatchAbortedError",
    "BatchSuspended",
    "CATALOG_FAILURE_REASONS",
    "CancellationSource",
    "CancellationToken",
    "CapabilityQuery",
    "CatalogSelection",
    "CompatibilityMode",
    "CompatibilityReport",
    "Declaration",
    "DenyRule",
    "DiscoveryResult",
    "DuplicateToolError",
    "FunctionResultContent",
    "IDENTITY_PARAMETERS",
    "InMemoryToolLog",
    "IncompatibleSchemaError",
    "InvariantViolation",
    "JsonConversionError",
    "LoggedCall",
    "OMISSION_REASONS",
    "Omission",
    "OperationCancelledError",
    "PendingApproval",
    "PythonFunction",
    "REAUTHORIZATION_REASONS",
    "Registration",
    "RequestContext",
    "ResultPolicyError",
    "SealedToolCatalogView",
    "SemVer",
    "SideEffect",
    "SinkError",
    "SqliteToolLog",
    "StatusTransition",
    "TetherError",
    "Tool",
    "ToolArgumentError",
    "ToolAssembly",
    "ToolAuditRecord",
    "ToolBinding",
    "ToolCall",
    "ToolCallSink",
    "ToolCandidate",
    "ToolDispatch",
    "ToolError",
    "ToolExecution",
    "ToolExecutionMode",
    "ToolExecutionOutcome",
    "ToolFailure",
    "ToolFailureCodes",
    "ToolMetadata",
    "ToolPin",
    "ToolPostDecision",
    "ToolPreDecision",
    "ToolRegistrationOptions",
    "ToolRegistry",
    "ToolSchemaSnapshot",
    "ToolStatus",
    "ToolsChangedEvent",
    "assemble_catalog",
    "assembly_digest",
    "canonical_json",
    "check_compatibility",
    "current_declaration",
    "describe_exception",
    "parse_version",
    "reauthorize",
    "refuse_identity_parameters",
    "require_compatible",
    "schema_hash",
    "status_transition",
    "to_json_value",
]
