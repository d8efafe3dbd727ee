"""tether_clr: a scoped tool registry and fail-closed execution pipeline for AI agents,
hosting Python tools and Microsoft.Extensions.AI tools from .NET assemblies alike.

A model only proposes calls; :meth:`ToolRegistry.execute_batch` decides, runs and
records them. Every public name is exported here, and only here: the layers
beneath (``foundations``, ``records``, ``tools``, ``catalog``, ``execution``,
``recording``) are the implementation; see docs/architecture.md.
"""

from tether_clr.catalog.assembly import (
    CatalogSelection,
    assemble_catalog,
    assembly_digest,
)
from tether_clr.catalog.attachment import ControlAttachment
from tether_clr.catalog.authority import AuthorityUnavailableError
from tether_clr.catalog.candidates import DenyRule, ToolCandidate
from tether_clr.catalog.control import CatalogControl, ControlChange, ControlFeed
from tether_clr.catalog.kill_switches import KillSwitch, VersionRange
from tether_clr.catalog.lifecycle import StatusTransition, ToolStatus, status_transition
from tether_clr.catalog.metadata import CapabilityQuery, SideEffect, ToolMetadata
from tether_clr.catalog.reauthorization import reauthorize
from tether_clr.catalog.records import (
    CATALOG_FAILURE_REASONS,
    OMISSION_REASONS,
    REAUTHORIZATION_REASONS,
    DeferredTool,
    DiscoveryResult,
    Omission,
    ToolBinding,
    ToolPin,
)
from tether_clr.catalog.registration import (
    Registration,
    ToolRegistrationOptions,
    ToolsChangedEvent,
)
from tether_clr.catalog.views import SealedToolCatalogView, ToolAssembly
from tether_clr.control.postgres import PostgresCatalogControl
from tether_clr.control.sqlite import SqliteCatalogControl
from tether_clr.execution.instrumentation import BatchObserver, CallObserver, Instrumentation
from tether_clr.execution.ports import (
    ApprovalProvider,
    Declaration,
    ForwardingSink,
    SinkHooks,
    ToolCallSink,
    current_declaration,
)
from tether_clr.foundations.arguments import ArgumentLimits, RefusedArguments
from tether_clr.foundations.cancellation import (
    CancellationSource,
    CancellationToken,
    OperationCancelledError,
)
from tether_clr.foundations.canonical import schema_hash
from tether_clr.foundations.children import ChildCalls, current_child_calls
from tether_clr.foundations.trace_context import TraceContext, current_trace_context, lend_trace_context
from tether_clr.foundations.compatibility import (
    CompatibilityMode,
    CompatibilityReport,
    IncompatibleSchemaError,
    check_compatibility,
    require_compatible,
)
from tether_clr.foundations.errors import (
    BatchAbortedError,
    DuplicateToolError,
    InvariantViolation,
    ResultPolicyError,
    SinkError,
    StoreUnavailableError,
    TetherError,
    ToolArgumentError,
    ToolError,
)
from tether_clr.foundations.exports import rehome
from tether_clr.foundations.json_values import (
    JsonConversionError,
    canonical_json,
    to_json_value,
)
from tether_clr.foundations.text import describe_exception
from tether_clr.foundations.versions import SemVer, parse_version
from tether_clr.loop import StepLoop, StepResult
from tether_clr.recording.session.events import (
    EVENT_KINDS,
    SessionEvent,
    SessionLeasedError,
)
from tether_clr.recording.session.grants import GrantRecord
from tether_clr.recording.session.postgres import PostgresSessionStore
from tether_clr.recording.session.protocol import SessionClaim, SessionStore
from tether_clr.recording.session.sink import SessionSink
from tether_clr.recording.session.sqlite import SqliteSessionStore
from tether_clr.recording.session.verify import log_violations
from tether_clr.recording.tool_log import InMemoryToolLog, LoggedCall, SqliteToolLog
from tether_clr.records.audit import ToolAuditRecord
from tether_clr.records.children import (
    ChildCallCancelled,
    ChildCallError,
    ChildCallFailed,
    ChildCallRefused,
)
from tether_clr.records.content import ImagePart, TextPart
from tether_clr.records.contexts import BatchOutcomes
from tether_clr.records.context import (
    IDENTITY_PARAMETERS,
    RequestContext,
    refuse_identity_parameters,
)
from tether_clr.records.decisions import (
    ApprovalResult,
    ToolExecutionMode,
    ToolPostDecision,
    ToolPreDecision,
)
from tether_clr.records.declaration import ToolSchemaSnapshot
from tether_clr.records.grants import ApprovalGrant, GrantKey, GrantScope
from tether_clr.records.outcomes import (
    FunctionResultContent,
    ToolCall,
    ToolDispatch,
    ToolExecution,
    ToolExecutionOutcome,
    ToolFailure,
    ToolFailureCodes,
)
from tether_clr.records.retry import RetryPolicy
from tether_clr.records.scope import AgentPipelineScope
from tether_clr.records.suspension import (
    BatchSuspended,
    PendingApproval,
    call_fingerprint,
)
from tether_clr.registry import ToolRegistry
from tether_clr.tools.protocol import Tool
from tether_clr.tools.python_function import PythonFunction

__version__ = "0.1.0"

__all__ = [
    "AgentPipelineScope",
    "ApprovalGrant",
    "ApprovalProvider",
    "ApprovalResult",
    "ArgumentLimits",
    "AuthorityUnavailableError",
    "BatchAbortedError",
    "BatchObserver",
    "BatchOutcomes",
    "BatchSuspended",
    "CATALOG_FAILURE_REASONS",
    "CallObserver",
    "CancellationSource",
    "CancellationToken",
    "CapabilityQuery",
    "CatalogControl",
    "CatalogSelection",
    "ChildCallCancelled",
    "ChildCallError",
    "ChildCallFailed",
    "ChildCallRefused",
    "ChildCalls",
    "CompatibilityMode",
    "CompatibilityReport",
    "ControlAttachment",
    "ControlChange",
    "ControlFeed",
    "Declaration",
    "DeferredTool",
    "DenyRule",
    "DiscoveryResult",
    "DuplicateToolError",
    "EVENT_KINDS",
    "ForwardingSink",
    "FunctionResultContent",
    "GrantKey",
    "GrantRecord",
    "GrantScope",
    "IDENTITY_PARAMETERS",
    "ImagePart",
    "InMemoryToolLog",
    "IncompatibleSchemaError",
    "Instrumentation",
    "InvariantViolation",
    "JsonConversionError",
    "KillSwitch",
    "LoggedCall",
    "OMISSION_REASONS",
    "Omission",
    "OperationCancelledError",
    "PendingApproval",
    "PostgresCatalogControl",
    "PostgresSessionStore",
    "PythonFunction",
    "REAUTHORIZATION_REASONS",
    "RefusedArguments",
    "Registration",
    "RequestContext",
    "ResultPolicyError",
    "RetryPolicy",
    "SealedToolCatalogView",
    "SemVer",
    "SessionClaim",
    "SessionEvent",
    "SessionLeasedError",
    "SessionSink",
    "SessionStore",
    "SideEffect",
    "SinkError",
    "SinkHooks",
    "SqliteCatalogControl",
    "SqliteSessionStore",
    "SqliteToolLog",
    "StatusTransition",
    "StepLoop",
    "StepResult",
    "StoreUnavailableError",
    "TetherError",
    "TextPart",
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
    "TraceContext",
    "VersionRange",
    "assemble_catalog",
    "assembly_digest",
    "call_fingerprint",
    "canonical_json",
    "check_compatibility",
    "current_child_calls",
    "current_declaration",
    "current_trace_context",
    "describe_exception",
    "lend_trace_context",
    "log_violations",
    "parse_version",
    "reauthorize",
    "refuse_identity_parameters",
    "require_compatible",
    "schema_hash",
    "status_transition",
    "to_json_value",
]


rehome(globals(), __name__)
