"""What the hub keeps of each server (its connection, its last listing, its calls in flight),
and how an exception reads in a server's status or a call's answer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import anyio

from toolwire.mcp.client._catalog import Catalog
from toolwire.mcp.client._input import InFlight
from toolwire.mcp.client._owners import Owners
from toolwire.mcp.client._specs import ServerSpec
from toolwire.tool import Tool

__all__ = ["DESCRIBED", "Listed", "ServerState"]

DESCRIBED = 300
"""Characters of an exception's text kept in a status or an answer."""


@dataclass(frozen=True, slots=True)
class Listed:
    """A tool the server listed and the hub accepted, with the fingerprint of its definition."""

    tool: Tool
    fingerprint: str


@dataclass(eq=False)
class ServerState:
    """One server of a hub: its spec, its connection while it is up, and what it listed."""

    name: str
    spec: ServerSpec
    client: Any = None
    tools: list[Listed] = field(default_factory=list)
    left_out: dict[str, str] = field(default_factory=dict)
    """Tools of the last listing left out, name → why."""
    catalog: Catalog = field(default_factory=Catalog)
    """Its resources, resource templates and prompts, as its last listing gave them."""
    subscriptions: set[str] = field(default_factory=set)
    """The resources it is asked to tell of updates to: on the ``subscriptions/listen`` stream
    of a 2026-07-28 connection (see ``_listen``), subscribed again on each new handshake-era
    one."""
    relisten: anyio.Event = field(default_factory=anyio.Event)
    """Set to open that stream again (its subscriptions changed)."""
    listened: anyio.Event = field(default_factory=anyio.Event)
    """Set once that stream is open again (after ``relisten``)."""
    refused: dict[str, str] = field(default_factory=dict)
    """Tools the transport took out of a listing as malformed (see ``_listing``), name → why."""
    output_schemas: dict[str, Any] = field(default_factory=dict)
    """The output schemas the transport kept from the SDK (see ``_listing``), by tool name:
    the hub checks results against them itself."""
    output_validators: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    """By tool name: the output schema last compiled, and its validator (or why it has none)."""
    declarable: dict[tuple[str, str], str | None] = field(default_factory=dict)
    task_support: dict[str, str] = field(default_factory=dict)
    """What the last listing declared of its tools' ``execution.taskSupport`` (``forbidden``,
    ``optional``, ``required``), by tool name; a tool not in it declared none."""
    tool_meta: dict[str, Any] = field(default_factory=dict)
    """The ``_meta`` its last listing gave each tool that had one, by tool name, as given (a
    gateway passes it on)."""
    listed: bool = False
    """A listing succeeded once: tools that appear after it are new, not trusted."""
    error: str | None = "not connected yet"
    limiter: anyio.Semaphore = field(default_factory=lambda: anyio.Semaphore(8))
    ready: anyio.Event = field(default_factory=anyio.Event)
    wake: anyio.Event = field(default_factory=anyio.Event)
    """Set to make the connection loop re-list (list_changed) or reconnect (a failure)."""
    gone: list[Tool] = field(default_factory=list)
    """The tools of the last listing before the server went down: calls to them are answered
    ``unavailable`` (not "unknown tool") while it is down."""
    broken: bool = False
    checking: bool = False
    """A probe after an abandoned call is on its way."""
    protocol_version: str | None = None
    """The protocol revision negotiated on the current connection (None: not connected)."""
    in_flight: dict[int, InFlight] = field(default_factory=dict)
    """The calls sent and not answered yet, by the hub's call number."""
    owners: Owners = field(default_factory=Owners)
    """Whose calls a handshake-era connection carries (one client's at a time, see
    ``_owners``)."""
    oauth: Any = None
    """The OAuth provider of the latest connection, if the server has one."""
    refused_status: int | None = None
    """The HTTP status (401, 403) with which its server last refused the hub's credentials,
    on the current connection attempt (see ``_remote``)."""
    authorization_error: Exception | None = None
    """Why the last connection attempt failed, when its authorization did (an
    ``AuthorizationError``); None otherwise."""
    handshake_only: bool = False
    """Connect with the ``initialize`` handshake, without probing for newer revisions first
    (after a connection attempt that probed timed out)."""
