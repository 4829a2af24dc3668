"""A server's transport with each tool of its ``tools/list`` answers checked on its own.

The SDK checks a listing as a whole: one malformed tool (a name that is not a string, an input
schema that is a list) fails the whole answer and the server contributes nothing. The streams
here sit between the SDK and the server's own transport (stdio, streamable HTTP): they take such
a tool out of the answer before the SDK reads it, and keep why, for the hub's ``left_out``.

They also keep each tool's ``outputSchema`` from the SDK, which would check structured results
against it with the Python ``jsonschema`` package, running the server's patterns in Python
``re`` on the event loop (a pattern like ``^(a+)+$`` and a matching result hang it); the hub
checks results with jsonschema-rs instead. Everything else passes untouched. Imported only once
the ``mcp`` extra is known to be there.
"""

from __future__ import annotations

import dataclasses
from collections.abc import MutableMapping
from typing import Any

import mcp.types
import pydantic
from mcp_types import PROTOCOL_VERSION_META_KEY, methods

__all__ = ["CheckedListings"]

_PENDING_CAP = 64
"""Requests remembered while waiting for their answer (answers that never come are dropped)."""
_NAME_SHOWN = 80


class CheckedListings:
    """``transport`` (an SDK transport: an async context manager of its two streams) with
    each tool of every ``tools/list`` answer checked against the negotiated protocol revision
    (from the ``initialize`` answer, or the envelope of each request from 2026-07-28 on)
    on its own; a tool that fails is removed and ``refused[name]`` says why."""

    def __init__(
        self,
        transport: Any,
        refused: MutableMapping[str, str],
        output_schemas: MutableMapping[str, Any],
    ) -> None:
        self._transport = transport
        self._refused = refused
        self._output_schemas = output_schemas
        self._pending: dict[Any, str] = {}
        """Request id → method, for the requests whose answers are read here."""
        self._version: str | None = None

    async def __aenter__(self) -> tuple[Any, Any]:
        read, write = await self._transport.__aenter__()
        return _Reading(read, self), _Writing(write, self)

    async def __aexit__(self, *exc_info: Any) -> Any:
        return await self._transport.__aexit__(*exc_info)

    def sent(self, item: Any) -> None:
        message = getattr(item, "message", None)
        if isinstance(message, mcp.types.JSONRPCRequest) and message.method in (
            "initialize",
            "tools/list",
        ):
            # From 2026-07-28 there is no initialize: each request names its revision.
            envelope = (message.params or {}).get("_meta")
            version = (
                envelope.get(PROTOCOL_VERSION_META_KEY) if isinstance(envelope, dict) else None
            )
            if isinstance(version, str):
                self._version = version
            if len(self._pending) >= _PENDING_CAP:
                del self._pending[next(iter(self._pending))]
            self._pending[message.id] = message.method

    def received(self, item: Any) -> Any:
        message = getattr(item, "message", None)
        if not isinstance(message, mcp.types.JSONRPCResponse | mcp.types.JSONRPCError):
            return item
        method = self._pending.pop(message.id, None)
        if method is None or not isinstance(message, mcp.types.JSONRPCResponse):
            return item
        if method == "initialize":
            version = message.result.get("protocolVersion")
            self._version = version if isinstance(version, str) else None
            return item
        result = message.result
        if self._version is not None:
            result = _checked(result, self._version, self._refused) or result
        result = _without_output_schemas(result, self._output_schemas)
        if result is message.result:
            return item
        return dataclasses.replace(item, message=message.model_copy(update={"result": result}))


def _without_output_schemas(
    result: dict[str, Any], output_schemas: MutableMapping[str, Any]
) -> dict[str, Any]:
    """``result`` with its tools' ``outputSchema`` moved into ``output_schemas`` (by name; a
    listed tool without one is dropped from it, so a schema taken away is not kept)."""
    tools = result.get("tools")
    if not isinstance(tools, list):
        return result
    kept = []
    for tool in tools:
        if isinstance(tool, dict):
            name = tool.get("name")
            if isinstance(name, str):
                if "outputSchema" in tool:
                    output_schemas[name] = tool["outputSchema"]
                else:
                    output_schemas.pop(name, None)
            if "outputSchema" in tool:
                tool = {key: value for key, value in tool.items() if key != "outputSchema"}
        kept.append(tool)
    return {**result, "tools": kept} if kept != tools else result


def _checked(
    result: dict[str, Any], version: str, refused: MutableMapping[str, str]
) -> dict[str, Any] | None:
    """``result`` without its malformed tools, or None when it needs no change."""
    tools = result.get("tools")
    if not isinstance(tools, list):
        return None  # not a listing the SDK could read either way: it says why
    try:
        methods.validate_server_result("tools/list", version, result)
        return None
    except pydantic.ValidationError:
        pass
    except (KeyError, ValueError):  # a revision the SDK's tables don't have: it decides
        return None
    # Each tool is checked in the answer's own frame: from 2026-07-28 a listing also carries
    # resultType, ttlMs and cacheScope. A frame that fails is the whole answer's fault.
    try:
        methods.validate_server_result("tools/list", version, {**result, "tools": []})
    except pydantic.ValidationError:
        return None
    kept = []
    for index, tool in enumerate(tools):
        try:
            methods.validate_server_result("tools/list", version, {**result, "tools": [tool]})
        except pydantic.ValidationError as exc:
            refused[_name(tool, index)] = _malformed(exc)
        else:
            kept.append(tool)
    return {**result, "tools": kept}


def _name(tool: Any, index: int) -> str:
    """What ``left_out`` calls a malformed tool: its name, or a stand-in saying what it is."""
    name = tool.get("name") if isinstance(tool, dict) else None
    if isinstance(name, str):
        return name
    if name is None:
        return f"<tool #{index} without a name>"
    shown = repr(name)
    return shown if len(shown) <= _NAME_SHOWN else shown[: _NAME_SHOWN - 3] + "..."


def _malformed(exc: pydantic.ValidationError) -> str:
    errors = exc.errors(include_url=False, include_input=False)
    if not errors:
        return "its definition is malformed"
    error = errors[0]
    where = ".".join(str(part) for part in error["loc"][2:])  # past ("tools", 0)
    return f"its definition is malformed: {where or 'the tool'}: {error['msg']}"


class _Reading:
    """The server's read stream; each item passes [`CheckedListings.received`][]."""

    def __init__(self, stream: Any, guard: CheckedListings) -> None:
        self._stream = stream
        self._guard = guard

    @property
    def last_context(self) -> Any:
        return getattr(self._stream, "last_context", None)

    async def receive(self) -> Any:
        return self._guard.received(await self._stream.receive())

    async def aclose(self) -> None:
        await self._stream.aclose()

    def __aiter__(self) -> _Reading:
        return self

    async def __anext__(self) -> Any:
        return self._guard.received(await self._stream.__anext__())

    async def __aenter__(self) -> _Reading:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> Any:
        return await self._stream.__aexit__(*exc_info)


class _Writing:
    """The server's write stream; each item passes [`CheckedListings.sent`][] first."""

    def __init__(self, stream: Any, guard: CheckedListings) -> None:
        self._stream = stream
        self._guard = guard

    async def send(self, item: Any, /) -> None:
        self._guard.sent(item)
        await self._stream.send(item)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> _Writing:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> Any:
        return await self._stream.__aexit__(*exc_info)
