"""tether_clr: a scoped tool registry and fail-closed execution pipeline for AI agents,
hosting Python tools and Microsoft.Extensions.AI tools from .NET assemblies alike.

A model only proposes calls; :meth:`ToolRegistry.execute_batch` decides, runs and
records them. See README.md for the tour.
"""

from .batch import ToolCallSink  # importing the executor installs it behind ToolRegistry.execute_batch
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
from .views import SealedToolCatalogView, ToolAssembly
from .schema import ToolSchemaSnapshot, canonical_json
from .scope import AgentPipelineScope
from .sinks import InMemoryToolLog, LoggedCall, SqliteToolLog
from .tools import PythonFunction, Tool
from .versions import SemVer, parse_version

__version__ = "0.1.0"

__all__ = [
    "CATALOG_FAILURE_REASONS",
    "IDENTITY_PARAMETERS",
    "OMISSION_REASONS",
    "REAUTHORIZATION_REASONS",
    "AgentPipelineScope",
    "ApprovalProvider",
    "ApprovalResult",
    "AuthorityUnavailableError",
    "BatchAbortedError",
    "CancellationSource",
    "CancellationToken",
    "CatalogSelection",
    "CapabilityQuery",
    "CompatibilityMode",
    "CompatibilityReport",
    "DiscoveryResult",
    "DenyRule",
    "DuplicateToolError",
    "FunctionResultContent",
    "IncompatibleSchemaError",
    "InMemoryToolLog",
    "InvariantViolation",
    "LoggedCall",
    "Omission",
    "OperationCancelledError",
    "PythonFunction",
    "Registration",
    "RequestContext",
    "ResultPolicyError",
    "SemVer",
    "SealedToolCatalogView",
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
    "ToolError",
    "ToolCall",
    "ToolCallSink",
    "ToolCandidate",
    "ToolDispatch",
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
    "parse_version",
    "reauthorize",
    "require_compatible",
    "refuse_identity_parameters",
    "schema_hash",
    "status_transition",
]
