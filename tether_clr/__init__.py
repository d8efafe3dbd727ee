"""tether_clr: a scoped tool registry and fail-closed execution pipeline for AI agents,
hosting Python tools and Microsoft.Extensions.AI tools from .NET assemblies alike.

A model only proposes calls; :meth:`ToolRegistry.execute_batch` decides, runs and
records them. See README.md for the tour.
"""

from .batch import Declaration, ToolCallSink, current_declaration
from .cancellation import CancellationSource, CancellationToken, OperationCancelledError
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
from .schema import ArgumentLimits, JsonConversionError, ToolSchemaSnapshot, canonical_json, to_json_value
from .scope import AgentPipelineScope
from .sinks import InMemoryToolLog, LoggedCall, SqliteToolLog
from .text import describe_exception
from .tools import PythonFunction, Tool

__version__ = "0.1.0"

__all__ = [
    "AgentPipelineScope",
    "ApprovalProvider",
    "ArgumentLimits",
    "ApprovalResult",
    "BatchAbortedError",
    "CancellationSource",
    "CancellationToken",
    "Declaration",
    "DuplicateToolError",
    "FunctionResultContent",
    "InMemoryToolLog",
    "InvariantViolation",
    "JsonConversionError",
    "LoggedCall",
    "OperationCancelledError",
    "PythonFunction",
    "Registration",
    "ResultPolicyError",
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
    "current_declaration",
    "describe_exception",
    "to_json_value",
]
