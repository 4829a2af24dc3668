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
    from toolwire.mcp._auth import Authentication, Identity, TokenVerifier
    from toolwire.mcp._content import result_from_mcp
    from toolwire.mcp._gateway import Gateway
    from toolwire.mcp._hub import Hub
    from toolwire.mcp._login import login, logout
    from toolwire.mcp._progress import ProgressContext, ProgressHook
    from toolwire.mcp._serve import serve
    from toolwire.mcp._specs import (
        Authorizer,
        ClientCredentials,
        HttpServer,
        InProcessServer,
        OAuth,
        ServerSpec,
        SseServer,
        StdioServer,
    )
    from toolwire.mcp._tasks import TaskSettings
    from toolwire.mcp._tokens import (
        FileTokenStore,
        MemoryTokenStore,
        SQLiteTokenStore,
        TokenStore,
        config_dir,
        token_store_for,
    )
    from toolwire.mcp._verifiers import JwtVerifier, StaticTokens

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

# Each public name's module, imported on first use: the package itself imports without the
# SDK, so the command line can tell an MCP config from a file of tool definitions without it
# and say which extra is missing instead of failing on a module deep inside.
_HOMES = {
    "Authorizer": "_specs",
    "ClientCredentials": "_specs",
    "FileTokenStore": "_tokens",
    "Authentication": "_auth",
    "Gateway": "_gateway",
    "HttpServer": "_specs",
    "Hub": "_hub",
    "Identity": "_auth",
    "InProcessServer": "_specs",
    "MemoryTokenStore": "_tokens",
    "OAuth": "_specs",
    "JwtVerifier": "_verifiers",
    "ProgressContext": "_progress",
    "ProgressHook": "_progress",
    "SQLiteTokenStore": "_tokens",
    "ServerSpec": "_specs",
    "SseServer": "_specs",
    "StaticTokens": "_verifiers",
    "StdioServer": "_specs",
    "TaskSettings": "_tasks",
    "TokenStore": "_tokens",
    "config_dir": "_tokens",
    "login": "_login",
    "logout": "_login",
    "TokenVerifier": "_auth",
    "result_from_mcp": "_content",
    "serve": "_serve",
    "token_store_for": "_tokens",
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
