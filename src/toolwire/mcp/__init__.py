"""MCP servers as a tool source (extra ``toolwire[mcp]``, the official ``mcp`` SDK 2.x).

```python
async with toolwire.mcp.Hub.from_config("mcp.json") as hub:
    listing = toolwire.tools(hub, "gemini")
    outcome = await toolwire.execute_tool_calls(hub, "gemini", response, policy=policy)
```

The ``mcp`` 1.x line is not supported.
"""

from toolwire.mcp._content import result_from_mcp
from toolwire.mcp._gateway import Gateway
from toolwire.mcp._hub import (
    HttpServer,
    Hub,
    InProcessServer,
    ServerSpec,
    SseServer,
    StdioServer,
)
from toolwire.mcp._progress import ProgressContext, ProgressHook
from toolwire.mcp._serve import serve

__all__ = [
    "Gateway",
    "HttpServer",
    "Hub",
    "InProcessServer",
    "ProgressContext",
    "ProgressHook",
    "ServerSpec",
    "SseServer",
    "StdioServer",
    "result_from_mcp",
    "serve",
]
