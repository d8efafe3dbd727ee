"""The ``tether-clr run`` script: the rows, read into turns of steps.

The parser lives in :mod:`tether_clr.records.script`, below the adapters, because the parity check
(:mod:`tether_clr.clr.parity`) reads the same rows; the command line re-exports it under its old name.
"""

from __future__ import annotations

from tether_clr.records.script import Script, ScriptError, ScriptTurn, load_script, parse_script

__all__ = ["Script", "ScriptError", "ScriptTurn", "load_script", "parse_script"]
