"""What the tests share: builders, approval providers, sinks, paths; one place, imported as ``from tests.support import ...``.

The submodules that are not re-exported here are imported by name:
``tests.support.json_strategies`` (Hypothesis strategies), ``tests.support.session_stores``
(both session stores; its fixtures are in ``tests/recording/session/conftest.py``), and the
child processes the tests start with ``sys.executable -m tests.support.<name>``
(``session_child``, ``session_resume_child``, ``sink_child``).
"""

from __future__ import annotations

from pathlib import Path

from .builders import add, call, codes

ROOT = Path(__file__).resolve().parents[2]
"""The repository's root folder (where pyproject.toml is)."""
PACKAGE = ROOT / "tether_clr"

SCHEMA_HASH = "sha256:" + "0" * 64
"""A well-formed schema hash, for records that need one."""

__all__ = ["PACKAGE", "ROOT", "SCHEMA_HASH", "add", "call", "codes"]
