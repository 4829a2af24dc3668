"""The MCP server: the gateway in front of a toolset or a hub, who calls it, and its tasks.

Every name here needs the ``mcp`` SDK; reach them through [`toolwire.mcp`][], which says which
extra to install when it is missing.
"""

from toolwire.mcp.server._auth import Authentication, Identity, TokenVerifier
from toolwire.mcp.server._gateway import Gateway
from toolwire.mcp.server._serve import serve
from toolwire.mcp.server._tasks import TaskSettings
from toolwire.mcp.server._verifiers import JwtVerifier, StaticTokens

__all__ = [
    "Authentication",
    "Gateway",
    "Identity",
    "JwtVerifier",
    "StaticTokens",
    "TaskSettings",
    "TokenVerifier",
    "serve",
]
