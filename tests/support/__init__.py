"""What the tests share, in one place: ``from tests.support import ...``.

* ``builders``: calls, registrations, registries, scopes, running a batch, outcome codes.
* ``doubles``: approval providers, pre-execute listeners, failing sinks, exceptions.
* paths: the repository's root and the package folder.

Submodules imported by name, not re-exported here: ``tests.support.json_strategies``
(Hypothesis strategies for JSON values), ``tests.support.session_stores`` (both session
stores; their fixtures are in ``tests/recording/session/conftest.py``),
``tests.support.durable_approvals`` (the parked-approval scenario of the session tests),
``tests.support.projection_tools`` (the projection tests' tools, provider replies and SDK checks),
``tests.support.telemetry`` (the OpenTelemetry SDK recording in memory, for tests/telemetry),
and the child processes the tests start as ``sys.executable -m tests.support.<name>``
with the repository root as working folder and on ``PYTHONPATH`` (``session_child``,
``session_resume_child``, ``sink_child``, ``telemetry_child``).
"""

from __future__ import annotations

from pathlib import Path

from .builders import (
    BATCH_TIMEOUT,
    DEADLOCK_GUARD,
    add,
    call,
    codes,
    echo_registry,
    registry_of,
    run_batch,
    run_one,
    session_scope,
)
from .doubles import Approver, BlockingApprover, FailingSink, Unprintable, asking

ROOT = Path(__file__).resolve().parents[2]
"""The repository's root folder (where pyproject.toml is)."""
PACKAGE = ROOT / "tether_clr"

SCHEMA_HASH = "sha256:" + "0" * 64
"""A well-formed schema hash, for records that need one."""

__all__ = [
    "BATCH_TIMEOUT",
    "DEADLOCK_GUARD",
    "PACKAGE",
    "ROOT",
    "SCHEMA_HASH",
    "Approver",
    "BlockingApprover",
    "FailingSink",
    "Unprintable",
    "add",
    "asking",
    "call",
    "codes",
    "echo_registry",
    "registry_of",
    "run_batch",
    "run_one",
    "session_scope",
]
