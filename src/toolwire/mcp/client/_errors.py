"""A server's own JSON-RPC errors, passed on to a gateway's client within bounds."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["protocol_error"]


def protocol_error(exc: Exception) -> Exception | None:
    """The server's own JSON-RPC error in ``exc``, or None (a timeout, a lost connection, a
    changed definition: the hub's to answer)."""
    import mcp

    while isinstance(exc, ExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    hub_answers = (
        mcp.types.REQUEST_TIMEOUT,
        mcp.types.CONNECTION_CLOSED,
        mcp.types.HEADER_MISMATCH,
    )
    if isinstance(exc, mcp.MCPError) and exc.code not in hub_answers:
        # Passed on as the server sent it, within bounds: a server's error is no bigger than
        # what a result may carry.
        message = exc.message if isinstance(exc.message, str) else repr(exc.message)
        found: Exception = mcp.MCPError(
            code=exc.code, message=message[:_ERROR_MESSAGE], data=_bounded(exc.data)
        )
        return found
    return None


_ERROR_MESSAGE = 1000
"""Characters of a server's JSON-RPC error message passed on to a gateway's client."""
_ERROR_DATA = 64 * 1024
"""Characters (as JSON) of a server's JSON-RPC error data passed on; larger data is dropped."""


def _bounded(data: Any) -> Any:
    """A server's error ``data``, when it is JSON of at most ``_ERROR_DATA`` characters."""
    if data is None:
        return None
    try:
        shown = json.dumps(data)
    except (TypeError, ValueError):
        return None
    return data if len(shown) <= _ERROR_DATA else None
