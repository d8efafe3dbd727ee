"""tether_clr: a scoped tool registry and fail-closed execution pipeline for AI agents,
hosting Python tools and Microsoft.Extensions.AI tools from .NET assemblies alike.

A model only proposes calls; :meth:`ToolRegistry.execute_batch` decides, runs and
records them. See README.md for the tour.
"""

from .batch import ToolCallSink
from .canonical import schema_hash
from .cancellation import CancellationSource, CancellationToken, OperationCancelledError
from .compatibility import (
    CompatibilityMode,
    CompatibilityReport,
    IncompatibleSchemaError,
    check_compatibility,
    require_compatible,
)
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
from .registry import (
    ApprovalProvider,
    Registration,
    SealedToolCatalogView,
    ToolRegistrationOptions,
    ToolRegistry,
    ToolsChangedEvent,
)
from .schema import ToolSchemaSnapshot, canonical_json
from .scope import AgentPipelineScope
from .sinks import InMemoryToolLog, LoggedCall, SqliteToolLog
from .tools import PythonFunction, Tool
from .versions import SemVer, parse_version

__version__ = "0.1.0"

__all__ = [
    "AgentPipelineScope",
    "ApprovalProvider",
    "ApprovalResult",
    "BatchAbortedError",
    "CancellationSource",
    "CancellationToken",
    "CompatibilityMode",
    "CompatibilityReport",
    "DuplicateToolError",
    "FunctionResultContent",
    "IncompatibleSchemaError",
    "InMemoryToolLog",
    "InvariantViolation",
    "LoggedCall",
    "OperationCancelledError",
    "PythonFunction",
    "Registration",
    "ResultPolicyError",
    "SemVer",
    "SealedToolCatalogView",
    "SinkError",
    "SqliteToolLog",
    "TetherError",
    "Tool",
    "ToolArgumentError",
    "ToolError",
    "ToolCall",
    "ToolCallSink",
    "ToolDispatch",
    "ToolExecution",
    "ToolExecutionMode",
    "ToolExecutionOutcome",
    "ToolFailure",
    "ToolFailureCodes",
    "ToolPostDecision",
    "ToolPreDecision",
    "ToolRegistrationOptions",
    "ToolRegistry",
    "ToolSchemaSnapshot",
    "ToolsChangedEvent",
    "canonical_json",
    "check_compatibility",
    "parse_version",
    "require_compatible",
    "schema_hash",
]
