"""MCP servers as a tool source (extra ``toolwire[mcp]``, the official ``mcp`` SDK 2.x).

```python
async with toolwire.mcp.Hub.from_config("mcp.json") as hub:
    listing = toolwire.tools(hub, "gemini")
    outcome = await toolwire.execute_tool_calls(hub, "gemini", response, policy=policy)
```

Without the SDK, importing any of these names raises
[`MissingDependency`][toolwire.errors.MissingDependency] naming the extra to install.

The ``mcp`` 1.x line is not supported.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from toolwire.errors import MissingDependency

if TYPE_CHECKING:
    from toolwire.mcp.client import (
        Authorizer,
        ClientCredentials,
        FileTokenStore,
        HttpServer,
        Hub,
        InProcessServer,
        MemoryTokenStore,
        OAuth,
        ProgressContext,
        ProgressHook,
        ServerSpec,
        SQLiteTokenStore,
        SseServer,
        StdioServer,
        TokenStore,
        config_dir,
        login,
        logout,
        result_from_mcp,
        token_store_for,
    )
    from toolwire.mcp.server import (
        Authentication,
        Gateway,
        Identity,
        JwtVerifier,
        StaticTokens,
        TaskSettings,
        TokenVerifier,
        serve,
    )

__all__ = [
    "Authentication",
    "Authorizer",
    "ClientCredentials",
    "FileTokenStore",
    "Gateway",
    "HttpServer",
    "Hub",
    "Identity",
    "InProcessServer",
    "JwtVerifier",
    "MemoryTokenStore",
    "OAuth",
    "ProgressContext",
    "ProgressHook",
    "SQLiteTokenStore",
    "ServerSpec",
    "SseServer",
    "StaticTokens",
    "StdioServer",
    "TaskSettings",
    "TokenStore",
    "TokenVerifier",
    "config_dir",
    "login",
    "logout",
    "result_from_mcp",
    "serve",
    "token_store_for",
]

# Each public name's side, imported on first use: the package itself imports without the
# SDK, so the command line can tell an MCP config from a file of tool definitions without it
# and say which extra is missing instead of failing on a module deep inside.
_HOMES = {
    "Authentication": "server",
    "Authorizer": "client",
    "ClientCredentials": "client",
    "FileTokenStore": "client",
    "Gateway": "server",
    "HttpServer": "client",
    "Hub": "client",
    "Identity": "server",
    "InProcessServer": "client",
    "JwtVerifier": "server",
    "MemoryTokenStore": "client",
    "OAuth": "client",
    "ProgressContext": "client",
    "ProgressHook": "client",
    "SQLiteTokenStore": "client",
    "ServerSpec": "client",
    "SseServer": "client",
    "StaticTokens": "server",
    "StdioServer": "client",
    "TaskSettings": "server",
    "TokenStore": "client",
    "TokenVerifier": "server",
    "config_dir": "client",
    "login": "client",
    "logout": "client",
    "result_from_mcp": "client",
    "serve": "server",
    "token_store_for": "client",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        import mcp  # noqa: F401  the SDK every public name needs
        import mcp_types  # noqa: F401
    except ImportError:
        raise MissingDependency("mcp", "mcp") from None
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # found directly from now on
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
