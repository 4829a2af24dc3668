"""What an MCP server offers besides its tools: its resources, resource templates and prompts,
read at each listing, and which server a resource URI belongs to.

A listing that fails, with the server's own error (a server that declares resources and then
refuses to list them) or with an answer that is no listing, leaves that part empty: the
server's tools stay served.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MAX_URI", "Catalog", "all_pages", "listened_changes", "read_catalog"]

PAGE_CAP = 100
"""Pages of one listing read at most (a server repeating cursors must not loop)."""
MAX_LISTED = 1000
"""Entries of one listing kept at most, as for tools."""
MAX_URI = 8192
"""Characters of a resource URI taken at most (the SDK's own bound for matching templates)."""


@dataclass(frozen=True)
class Catalog:
    """A server's resources, resource templates and prompts, as its last listing gave them
    (the SDK's types), and what it declared it can do with them."""

    resources: tuple[Any, ...] = ()
    templates: tuple[Any, ...] = ()
    prompts: tuple[Any, ...] = ()
    subscribe: bool = False
    """It declared ``resources.subscribe``."""
    completions: bool = False
    """It declared ``completions``."""
    _patterns: tuple[Any, ...] = field(default=(), repr=False, compare=False)
    """Its templates, parsed (those the SDK cannot parse match nothing)."""

    def offers(self, uri: str) -> bool:
        """Whether ``uri`` is one of its resources, or matches one of its templates."""
        if any(resource.uri == uri for resource in self.resources):
            return True
        return any(
            pattern.match(uri, max_uri_length=MAX_URI) is not None for pattern in self._patterns
        )

    def prompt(self, name: str) -> Any:
        """Its prompt ``name``, or None."""
        return next((prompt for prompt in self.prompts if prompt.name == name), None)

    def template(self, uri_template: str) -> Any:
        """Its resource template ``uri_template``, or None."""
        return next((t for t in self.templates if t.uri_template == uri_template), None)


async def read_catalog(client: Any) -> Catalog:
    """What the server on ``client`` (an ``mcp.Client``) offers besides tools, by its declared
    capabilities."""
    import pydantic
    from mcp.shared.exceptions import MCPError

    capabilities = client.server_capabilities
    resources = getattr(capabilities, "resources", None)
    listed: dict[str, tuple[Any, ...]] = {}
    wanted: dict[str, Callable[..., Awaitable[Any]]] = {}
    if resources is not None:
        wanted["resources"] = client.list_resources
        wanted["resourceTemplates"] = client.list_resource_templates
    if getattr(capabilities, "prompts", None) is not None:
        wanted["prompts"] = client.list_prompts
    for key, list_page in wanted.items():
        try:
            listed[key] = tuple(await all_pages(list_page, _ENTRIES.get(key, key), MAX_LISTED))
        except (MCPError, pydantic.ValidationError):  # refused, or garbage: that part is empty,
            listed[key] = ()  # the rest (its tools) is served
    return Catalog(
        resources=_unique(listed.get("resources", ()), "uri"),
        templates=_unique(listed.get("resourceTemplates", ()), "uri_template"),
        prompts=_unique(listed.get("prompts", ()), "name"),
        subscribe=bool(getattr(resources, "subscribe", False)),
        completions=getattr(capabilities, "completions", None) is not None,
        _patterns=_parsed(listed.get("resourceTemplates", ())),
    )


_ENTRIES = {"resources": "resources", "resourceTemplates": "resource_templates"}
"""The attribute of a page that holds a listing's entries, where it is not the key's name."""


async def all_pages(
    list_page: Callable[..., Awaitable[Any]], entries: str, limit: int | None = None
) -> list[Any]:
    """Every page of a listing (``list_page(cursor=)``), the ``entries`` of each, up to
    ``limit`` of them."""
    found: list[Any] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(PAGE_CAP):
        page = await list_page(cursor=cursor)
        found.extend(getattr(page, entries))
        cursor = page.next_cursor
        # A server repeating a cursor would loop.
        if cursor is None or cursor in seen or (limit is not None and len(found) >= limit):
            break
        seen.add(cursor)
    return found[:limit]


def _unique(entries: Sequence[Any], key: str) -> tuple[Any, ...]:
    """The first entry under each key (a server listing one twice is taken at its first)."""
    kept: dict[Any, Any] = {}
    for entry in entries:
        kept.setdefault(getattr(entry, key), entry)
    return tuple(kept.values())


def _parsed(templates: Sequence[Any]) -> tuple[Any, ...]:
    from mcp.shared.uri_template import UriTemplate

    parsed = []
    for template in templates:
        try:
            parsed.append(UriTemplate.parse(template.uri_template))
        except ValueError:  # not RFC 6570 as the SDK reads it: listed, but matches nothing
            continue
    return tuple(parsed)


def listened_changes(client: Any) -> dict[str, bool]:
    """The listing changes to listen for: those the server declared it tells of."""
    capabilities = client.server_capabilities
    return {
        f"{kind}_list_changed": bool(
            getattr(getattr(capabilities, kind, None), "list_changed", False)
        )
        or kind == "tools"
        for kind in ("tools", "prompts", "resources")
    }
