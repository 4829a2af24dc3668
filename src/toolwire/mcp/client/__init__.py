"""The MCP client: the hub, its servers' specs, their sessions, tokens and input requests.

What describes a server (its spec, a config file, the tokens kept for it) imports without the
``mcp`` SDK, so the command line can tell an MCP config from a file of tool definitions
without it; the rest is imported on first use, and without the SDK raises
[`MissingDependency`][toolwire.errors.MissingDependency] naming the extra to install.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from toolwire.errors import MissingDependency

# For the library's own use (not public API): reading configs, tokens beside a store, what a
# server offers besides tools.
from toolwire.mcp.client._catalog import MAX_URI as MAX_URI
from toolwire.mcp.client._catalog import Catalog as Catalog
from toolwire.mcp.client._config import is_mcp_config as is_mcp_config
from toolwire.mcp.client._config import read_config as read_config
from toolwire.mcp.client._specs import (
    Authorizer,
    ClientCredentials,
    HttpServer,
    InProcessServer,
    OAuth,
    ServerSpec,
    SseServer,
    StdioServer,
)
from toolwire.mcp.client._tokens import (
    FileTokenStore,
    MemoryTokenStore,
    SQLiteTokenStore,
    TokenStore,
    config_dir,
    token_store_for,
)
from toolwire.mcp.client._tokens import tokens_beside as tokens_beside

if TYPE_CHECKING:
    from toolwire.mcp.client._content import result_from_mcp
    from toolwire.mcp.client._hub import Hub
    from toolwire.mcp.client._input import arguments_digest as arguments_digest
    from toolwire.mcp.client._login import login, logout
    from toolwire.mcp.client._progress import ProgressContext, ProgressHook

__all__ = [
    "Authorizer",
    "ClientCredentials",
    "FileTokenStore",
    "HttpServer",
    "Hub",
    "InProcessServer",
    "MemoryTokenStore",
    "OAuth",
    "ProgressContext",
    "ProgressHook",
    "SQLiteTokenStore",
    "ServerSpec",
    "SseServer",
    "StdioServer",
    "TokenStore",
    "config_dir",
    "login",
    "logout",
    "result_from_mcp",
    "token_store_for",
]

# The names that need the SDK, each with its module, imported on first use.
_WITH_THE_SDK = {
    "Hub": "_hub",
    "ProgressContext": "_progress",
    "ProgressHook": "_progress",
    "arguments_digest": "_input",
    "login": "_login",
    "logout": "_login",
    "result_from_mcp": "_content",
}


def __getattr__(name: str) -> Any:
    home = _WITH_THE_SDK.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        import mcp  # noqa: F401  the SDK these names need
        import mcp_types  # noqa: F401
    except ImportError:
        raise MissingDependency("mcp", "mcp") from None
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # found directly from now on
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
