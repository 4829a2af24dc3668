"""A server's listing checked tool by tool: the tools the hub offers, and why it leaves out
each of the others (see [`Hub.left_out`][toolwire.mcp.Hub.left_out])."""

from __future__ import annotations

import fnmatch
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from toolwire._text import clean_description, strip_invisible
from toolwire._values import describe_exception
from toolwire.calls import ToolResult
from toolwire.errors import ToolwireError
from toolwire.mcp.client._specs import ServerSpec
from toolwire.mcp.client._state import DESCRIBED, Listed, ServerState
from toolwire.providers import get_provider, make_options, provider_names
from toolwire.tool import Tool, clean_title, exposed_name_for, safe_icons
from toolwire.toolset import ToolSet

__all__ = ["Listing", "accept"]

_TOOL_CAP = 1000
"""Tool names of one server's listing that are looked at (after ``include``/``exclude``); the
rest are left out. Each is checked for every provider, and no model can use more."""
_NAME_CAP = 256
"""Characters a tool's name may have (the MCP spec asks for at most 128)."""


@dataclass(frozen=True, slots=True)
class Listing:
    """What one ``tools/list`` round gave: accepted tools, left-out ones, checks done."""

    tools: list[Listed]
    left_out: dict[str, str]
    declarable: dict[tuple[str, str], str | None]
    """Per (name, fingerprint), why a provider cannot declare the tool (None: all can)."""


def accept(
    server: ServerState,
    listed: Sequence[Any],
    refused: dict[str, str],
    *,
    call: Callable[..., Awaitable[ToolResult]],
) -> Listing:
    """The tools of ``listed`` (one listing of ``server``) the hub can offer, and why the
    others are left out; ``refused`` are the tools the transport took out as malformed, name
    → why, and ``call`` is the hub's call of a server's tool (``call(server, name,
    **arguments)``), each offered tool's handler."""
    left_out = dict(refused)
    groups: dict[str, list[Any]] = {}
    for tool in listed:
        name = tool.name
        if not isinstance(name, str):
            left_out[_key(name)] = "its name is not a string"
            continue
        if not _selected(server.spec, name):
            continue  # the user's filter: not left out, just not wanted
        if name in groups or len(groups) < _TOOL_CAP:
            groups.setdefault(name, []).append(tool)
        else:
            left_out[_key(name)] = f"the server lists more than {_TOOL_CAP} tools"
    accepted: list[Listed] = []
    taken: dict[str, str] = {}  # exposed name → the tool's own name
    declarable: dict[tuple[str, str], str | None] = {}
    for name, group in groups.items():
        if any(other != group[0] for other in group[1:]):
            left_out[_key(name)] = (
                f"the server lists it {len(group)} times with different definitions"
            )
            continue
        try:
            entry = _definition(server, group[0], call)
            exposed = exposed_name_for(name, server.name)
            if exposed in taken:
                raise _LeftOut(
                    f"its exposed name {exposed!r} is already that of {taken[exposed]!r}"
                )
            key = (name, entry.fingerprint)
            if key not in declarable:  # checked once per definition, not per listing
                declarable[key] = (
                    server.declarable[key]
                    if key in server.declarable
                    else _undeclarable(entry.tool)
                )
            reason = declarable[key]
            if reason is not None:
                raise _LeftOut(reason)
        except _LeftOut as exc:
            left_out[_key(name)] = exc.reason
            continue
        taken[exposed] = name
        accepted.append(entry)
    return Listing(accepted, left_out, declarable)


def _definition(
    server: ServerState, listed: Any, call: Callable[..., Awaitable[ToolResult]]
) -> Listed:
    """The hub's tool for one listed tool.

    Raises:
        _LeftOut: saying why the tool cannot be offered.
    """
    name = listed.name
    if not strip_invisible(name).strip():
        raise _LeftOut("its name is empty or blank")
    if len(name) > _NAME_CAP:
        raise _LeftOut(f"its name is longer than {_NAME_CAP} characters")
    schema = listed.input_schema
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        raise _LeftOut("its input schema is not an object schema")
    annotations = (
        listed.annotations.model_dump(by_alias=True, exclude_none=True)
        if listed.annotations is not None
        else None
    )
    description = clean_description(
        listed.description if isinstance(listed.description, str) else None
    )
    # For people, not the model: MCP's display order is title, then annotations.title.
    title = clean_title(listed.title) or clean_title((annotations or {}).get("title"))
    icons = safe_icons(
        [icon.model_dump(by_alias=True, exclude_none=True) for icon in listed.icons]
        if listed.icons
        else None
    )
    try:
        tool = Tool(
            name=name,
            description=description,
            input_schema=schema,
            output_schema=server.output_schemas.get(name, listed.output_schema),
            annotations=annotations,
            title=title,
            icons=icons,
            server_id=server.name,
            taints=_taints(server),
            trusted=server.spec.trusted is True,
            handler=partial(call, server, name),
            # The executor applies the cap (the hub, the idle timeout); cancelled, the SDK
            # tells the server.
            timeout=server.spec.max_total_timeout,
        )
        fingerprint = tool.definition_hash  # what approve_definition records
        support = _task_support(listed)
        if support in ("forbidden", "optional", "required"):
            server.task_support[name] = support
        else:
            server.task_support.pop(name, None)
        meta = getattr(listed, "meta", None)
        if isinstance(meta, Mapping) and meta:
            server.tool_meta[name] = dict(meta)
        else:
            server.tool_meta.pop(name, None)
    except ToolwireError as exc:
        raise _LeftOut(str(exc)) from None
    except Exception as exc:  # e.g. a schema too deep to encode
        raise _LeftOut(
            f"its definition cannot be read: {describe_exception(exc, limit=DESCRIBED)}"
        ) from None
    return Listed(tool, fingerprint)


def _task_support(listed: Any) -> Any:
    """What a listed tool declares of running as a task: ``execution.taskSupport`` (the
    handshake revisions), or on 2026-07-28, where a tool has no ``execution``, the same under
    its ``_meta`` key of the tasks extension."""
    execution = getattr(listed, "execution", None)
    if execution is not None:
        return getattr(execution, "task_support", None)
    meta = getattr(listed, "meta", None)
    declared = meta.get("io.modelcontextprotocol/tasks") if isinstance(meta, Mapping) else None
    return declared.get("taskSupport") if isinstance(declared, Mapping) else None


def _taints(server: ServerState) -> frozenset[str]:
    """What the server's tools taint the model's context with: the server, and its ``taints``."""
    extra = server.spec.taints
    return frozenset((server.name, *((extra,) if isinstance(extra, str) else extra)))


def _selected(spec: ServerSpec, name: str) -> bool:
    if spec.include is not None and not any(fnmatch.fnmatchcase(name, p) for p in spec.include):
        return False
    return not any(fnmatch.fnmatchcase(name, p) for p in spec.exclude)


class _LeftOut(Exception):
    """A listed tool the hub does not offer; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _key(name: Any) -> str:
    """A tool's name as [`Hub.left_out`][] shows it (a non-string by its repr, cut short)."""
    text = name if isinstance(name, str) else repr(name)
    return text if len(text) <= _NAME_CAP else text[:_NAME_CAP] + "..."


def _undeclarable(tool: Tool) -> str | None:
    """Why ``tool`` cannot be offered (a registered provider cannot declare it, or its schema
    cannot validate arguments, so every call would fail), or None."""
    single = ToolSet([tool])
    for name in provider_names():
        provider = get_provider(name)
        for options in provider.PROFILE.option_sets:
            try:
                provider.declare(single, make_options(provider, dict(options)))
            except ToolwireError as exc:
                return f"{_declaration(name, options)} cannot declare it: {exc}"
            except Exception as exc:  # a provider failing on an untrusted schema in any way
                why = describe_exception(exc, limit=DESCRIBED)
                return f"{_declaration(name, options)} cannot declare it: {why}"
    try:
        tool.check_schema()
    except ToolwireError as exc:
        return str(exc)
    return None


def _declaration(provider: str, options: Mapping[str, Any]) -> str:
    """``gemini``, or ``gemini (schema=openapi)``: the declaration a reason is about."""
    if not options:
        return provider
    return f"{provider} ({', '.join(f'{k}={v}' for k, v in options.items())})"
