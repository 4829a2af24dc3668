"""What the gateway serves, in MCP's shapes: its tools as MCP tools, a call's answer as a
``CallToolResult``."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server

from toolwire._text import clean_description
from toolwire.calls import (
    AudioContent,
    Content,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    ToolResult,
    canonical_json,
)
from toolwire.mcp._relay import Relay, round_for_client
from toolwire.mcp.server._tasks import EXTENSION as TASKS
from toolwire.tool import Tool

__all__ = [
    "GatewayServer",
    "client_answer",
    "error_result",
    "gateway_version",
    "mcp_result",
    "mcp_tool",
    "named_as_shown",
    "served_kind",
]


def served_kind(tool: Tool) -> bool:
    return tool.kind == "function"  # a custom (free-text) tool has no MCP form


def mcp_tool(
    exposed: str,
    tool: Tool,
    *,
    meta: Mapping[str, Any] | None = None,
    task_support: str | None = None,
    modern: bool = True,
) -> types.Tool:
    """``tool`` as the gateway lists it under ``exposed``: what its server listed passed on
    (title, icons, annotations, output schema, ``_meta``), and ``task_support`` (its server's
    ``execution.taskSupport``) where the client's revision has it: ``execution`` on a
    handshake-era session, the tasks extension's ``_meta`` key on a 2026-07-28 one
    (``modern``)."""
    annotations = None
    if tool.annotations:
        try:
            annotations = types.ToolAnnotations.model_validate(dict(tool.annotations))
        except ValueError:  # a server's malformed hints are dropped, not served
            annotations = None
    icons = None
    if tool.icons:
        try:
            icons = [types.Icon.model_validate(dict(icon)) for icon in tool.icons]
        except ValueError:  # shown only: a malformed one is dropped, not served
            icons = None
    meta = dict(meta) if meta else {}
    execution = None
    if task_support is not None and modern:
        declared = meta.get(TASKS)  # a server's own: anything, not always an object
        meta[TASKS] = {
            **(declared if isinstance(declared, Mapping) else {}),
            "taskSupport": task_support,
        }
    elif task_support is not None:
        execution = types.ToolExecution.model_validate({"taskSupport": task_support})
    return types.Tool(
        name=exposed,
        title=tool.title,
        description=clean_description(tool.description) or None,
        input_schema=dict(tool.input_schema),
        output_schema=output_schema(tool),
        annotations=annotations,
        icons=icons,
        execution=execution,
        _meta=meta or None,
    )


def output_schema(tool: Tool) -> dict[str, Any] | None:
    """The output schema to declare: only an object's (MCP's structured content is an object;
    a function returning ``int`` answers with text, which a declared schema would fail)."""
    schema = tool.output_schema
    if isinstance(schema, Mapping) and schema.get("type") == "object":
        return dict(schema)
    return None


def error_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def mcp_result(result: ToolResult) -> types.CallToolResult:
    structured = dict(result.structured_content) if result.structured_content is not None else None
    content = [mcp_part(part) for part in result.content]
    if not content and structured is not None:  # older clients read only the content
        content = [types.TextContent(text=canonical_json(structured))]
    return types.CallToolResult(
        content=content, structured_content=structured, is_error=result.is_error
    )


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def mcp_part(part: Content) -> types.ContentBlock:
    block = _block(part)
    if part.annotations is not None:
        try:
            annotations = types.Annotations.model_validate(dict(part.annotations))
        except ValueError:  # a server's malformed annotations are dropped, not served
            return block
        block = block.model_copy(update={"annotations": annotations})
    return block


def _block(part: Content) -> types.ContentBlock:
    match part:
        case TextContent(text=text):
            return types.TextContent(text=text)
        case ImageContent(data=data, mime_type=mime):
            return types.ImageContent(data=b64(data), mime_type=mime)
        case AudioContent(data=data, mime_type=mime):
            return types.AudioContent(data=b64(data), mime_type=mime)
        case ResourceLink():
            return types.ResourceLink(
                uri=part.uri,
                name=part.name or part.uri,
                mime_type=part.mime_type,
                description=part.description,
            )
        case EmbeddedResource(text=str() as text):
            resource: Any = types.TextResourceContents(
                uri=part.uri, mime_type=part.mime_type, text=text
            )
            return types.EmbeddedResource(resource=resource)
        case EmbeddedResource(blob=blob):
            resource = types.BlobResourceContents(
                uri=part.uri, mime_type=part.mime_type, blob=b64(blob or b"")
            )
            return types.EmbeddedResource(resource=resource)
    raise TypeError(f"not a content part: {part!r}")  # pragma: no cover - exhaustive above


def client_answer(
    result: ToolResult, relay: Relay, name: str, digest: str
) -> types.CallToolResult | types.InputRequiredResult:
    """The answer to the client: the upstream's protocol error as that error, the upstream's
    round handed to a 2026-07-28 client, or the call's result.

    Raises:
        MCPError: the upstream's error for the call.
    """
    if relay.protocol_error is not None:
        raise relay.protocol_error
    if relay.input_required is not None:
        handed: types.InputRequiredResult = round_for_client(relay, name, digest)
        return handed
    return mcp_result(result)


def named_as_shown(answer: Any, exposed: str, shown: str) -> Any:
    """``answer`` (a ``CallToolResult``) with the tool its texts name by its exposed name
    (``'up__search'``, ``the call up__search``) named as its client was shown it
    (``--own-names``: ``search``); anything else as it is."""
    if shown == exposed or not isinstance(answer, types.CallToolResult) or not answer.is_error:
        return answer
    pairs = ((repr(exposed), repr(shown)), (f"call {exposed} ", f"call {shown} "))

    def renamed(text: str) -> str:
        for old, new in pairs:
            text = text.replace(old, new)
        return text

    content = [
        part.model_copy(update={"text": renamed(part.text)})
        if isinstance(part, types.TextContent)
        else part
        for part in answer.content
    ]
    return answer.model_copy(update={"content": content})


class GatewayServer(Server[Any]):
    """The SDK's low-level server, declaring ``tools.listChanged`` to handshake-era clients
    (the gateway tells them when the hub re-lists)."""

    def create_initialization_options(self, *args: Any, **kwargs: Any) -> Any:
        if not args and kwargs.get("notification_options") is None:
            kwargs["notification_options"] = NotificationOptions(
                tools_changed=True, resources_changed=True, prompts_changed=True
            )
        return super().create_initialization_options(*args, **kwargs)


def gateway_version() -> str:
    """toolwire's version, as the gateway tells its clients."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("toolwire")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0"
