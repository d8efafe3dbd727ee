"""Tools for the client matrix (tests/mcp/test_mcp_client_matrix.py): ``--tools tests.support.mcp_matrix_cli_tools:register``.

The governed tools of :func:`tests.support.mcp_servers.governed_registry`, as ``tether-clr mcp serve`` loads
them: ``price``, ``refund`` (tenant acme only), ``delete_all`` (a guard refuses it: DENIED) and ``wire``
(requires approval; the registry has no approval provider, so without the client's elicitation it fails
closed: DENIED).
"""

from __future__ import annotations

from tests.support.mcp_servers import register_governed

register = register_governed
