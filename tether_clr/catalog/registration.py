"""What registering something gives and takes: its options, its handle, and the change event.

* :class:`ToolRegistrationOptions`: per-registration settings of a tool version;
* :class:`Registration`: the handle whose ``dispose()`` removes exactly that
  registration (a tool, a listener, a pin, a deny rule), once;
* :class:`ToolsChangedEvent`: ``tools/change``, emitted by every catalog change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import math

from tether_clr.catalog.control import ControlChange
from tether_clr.catalog.lifecycle import ToolStatus
from tether_clr.catalog.metadata import ToolMetadata
from tether_clr.records.outcomes import ToolExecutionOutcome
from tether_clr.records.retry import RetryPolicy
from tether_clr.records.scope import AgentPipelineScope

__all__ = ["ChangeKind", "ContentHook", "Registration", "ToolRegistrationOptions", "ToolsChangedEvent"]

ContentHook = Callable[[ToolExecutionOutcome], Any]
"""``hook(outcome) -> parts``: a :class:`~tether_clr.TextPart`, an :class:`~tether_clr.ImagePart`, or a sequence of them."""

ChangeKind = Literal["added", "removed", "status", "metadata", "pin", "deny_rule", "authority", "kill_switch"]


@dataclass(frozen=True, slots=True)
class ToolRegistrationOptions:
    """Per-registration settings.

    ``is_concurrency_safe`` is a predicate over the parsed arguments (or a bool
    for "always"/"never"); only an exact ``True`` lets a call join a parallel group.

    ``requires_approval`` puts every call of the tool through the approval step
    of a pre-execute ``ask`` (the same provider, the same outcomes): ``None`` (the
    default) or ``False`` means no approval of its own, ``True`` always, a
    predicate over the parsed arguments decides per call, and any answer but an
    exact ``False`` (including raising) means approval is required. A tool that
    requires approval itself (``requires_approval`` on the tool, as a real
    ``ApprovalRequiredAIFunction`` has) keeps requiring it whatever this says.

    ``metadata`` is the version's governance record (default ``ToolMetadata()``:
    version 1.0.0, the strictest posture); ``status`` its lifecycle status
    (default ACTIVE, today's behaviour). A schema that asks the model for
    ``tenant_id``, ``principal_id`` or ``user_id`` is refused unless
    ``allow_identity_parameters`` says it is a business field.

    ``project_content(outcome) -> parts`` and ``finalize_content(outcome) ->
    parts`` shape what a model is shown of the tool's outcomes (content parts:
    :class:`~tether_clr.TextPart`, :class:`~tether_clr.ImagePart`); both are
    synchronous and content-only (they cannot change the value, the code or the
    call id) and are pinned with the version in every snapshot.
    ``project_content`` runs on a successful body's outcome, after the body and
    before the execute listeners return it (so the post-execute waterfall sees the
    prepared content). ``finalize_content`` runs last, after the post-execute
    waterfall and the pipeline's normalisation, on every outcome of a call that
    resolved to this tool, failures included: truncation, redaction and the
    like. A hook that raises, or returns something that is not parts, turns the
    outcome into TOOL_ERROR (reason ``content_hook``) naming the hook.

    ``timeout``: seconds a body may run before its token is cancelled and the
    call ends ABORTED, reason ``timeout`` (see docs/pipeline.md); ``None`` (the
    default) takes the registry's ``default_timeout``, ``math.inf`` never times
    out whatever the registry's default. ``retry``: a :class:`~tether_clr.RetryPolicy`;
    refused (``ValueError``) unless ``metadata`` says ``idempotent=True``.
    """

    is_concurrency_safe: Callable[[Any], Any] | bool | None = None
    requires_approval: Callable[[Any], Any] | bool | None = None
    metadata: ToolMetadata | None = None
    status: ToolStatus | None = None
    allow_identity_parameters: bool = False
    project_content: ContentHook | None = None
    finalize_content: ContentHook | None = None
    timeout: float | None = None
    retry: RetryPolicy | None = None

    def __post_init__(self) -> None:
        if self.metadata is not None and not isinstance(self.metadata, ToolMetadata):
            raise TypeError(f"metadata must be a ToolMetadata, got {type(self.metadata).__name__}")
        if self.status is not None and not isinstance(self.status, ToolStatus):
            raise TypeError(f"status must be a ToolStatus, got {type(self.status).__name__}")
        if not isinstance(self.allow_identity_parameters, bool):
            raise TypeError("allow_identity_parameters must be a bool")
        for name in ("project_content", "finalize_content"):
            hook = getattr(self, name)
            if hook is not None and not callable(hook):
                raise TypeError(f"{name} must be a callable taking the outcome, got {type(hook).__name__}")
        timeout = self.timeout
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or math.isnan(timeout) or timeout <= 0
        ):
            raise ValueError(f"timeout must be a positive number of seconds (math.inf: none) or None, got {timeout!r}")
        if self.retry is not None:
            if not isinstance(self.retry, RetryPolicy):
                raise TypeError(f"retry must be a RetryPolicy, got {type(self.retry).__name__}")
            if not (self.metadata is not None and self.metadata.idempotent is True):
                raise ValueError(
                    "a retry policy needs a tool version whose metadata says idempotent=True: "
                    "a retry repeats a body that may have had effects, and only the catalog knows it is safe"
                )


class Registration:
    """Handle for one registration; ``dispose()`` removes exactly that one, once."""

    __slots__ = ("_dispose", "__weakref__")

    def __init__(self, dispose: Callable[[], None]) -> None:
        self._dispose: Callable[[], None] | None = dispose

    @property
    def is_disposed(self) -> bool:
        return self._dispose is None

    def dispose(self) -> None:
        dispose, self._dispose = self._dispose, None
        if dispose is not None:
            dispose()

    def __enter__(self) -> Registration:
        return self

    def __exit__(self, *exc: object) -> None:
        self.dispose()


@dataclass(frozen=True, slots=True)
class ToolsChangedEvent:
    """``tools/change``: what some scope may see or call changed.

    ``change`` is ``added`` / ``removed`` (a registration), ``status``,
    ``metadata``, ``pin`` (``name`` is the logical name), ``deny_rule``,
    ``authority`` or ``kill_switch`` (``name`` is empty: registry-wide). ``revision`` is the
    registry revision the change produced. ``control``: on a registry attached to a
    control plane, the shared change that caused it, as its store committed it (its
    control ``revision``, ``actor``, ``at`` and ``reason``), so a host's ``on_change``
    listener can audit every change it applies, its own and other hosts', in
    control-revision order (a copy: changing it changes nothing here); ``None`` for
    a change that is not shared (registrations, disposals, deny rules, the
    authority, and every change of a registry without a control plane).
    """

    scope: AgentPipelineScope | None
    name: str
    change: ChangeKind
    method: str = "tools/change"
    revision: int = 0
    control: ControlChange | None = None
