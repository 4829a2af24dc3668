"""An ordered set of tools and the names the model sees for them."""

from __future__ import annotations

import copy
import fnmatch
import re
import reprlib
import threading
import warnings
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from typing import Any, Literal, TypeVar

from toolwire.calls import CallIds, ToolCall, printable
from toolwire.errors import (
    ConfigurationError,
    NameCollisionError,
    ToolNotFound,
    ToolwireWarning,
)
from toolwire.tool import NAME_LIMIT, Tool, exposed_name_for, tool, tool_from_definition

__all__ = ["OnCollision", "ToolLike", "ToolSet", "make_call"]

T = TypeVar("T")
_NAMES_LISTED = 50
"""Names a warning lists at most."""
_GLOB = re.compile(r"[*?\[]")
"""What makes a pattern a glob (``fnmatch``'s special characters)."""

ToolLike = Tool | Callable[..., Any] | Mapping[str, Any]
"""What a toolset is made of: tools, functions (made tools by ``@tool``), and definitions
as JSON has them (see ``tool_from_definition``)."""


def _as_tool(item: ToolLike) -> Tool:
    if isinstance(item, Tool):
        return item
    if isinstance(item, Mapping):
        return tool_from_definition(item)
    if callable(item):
        return tool(item)
    raise ConfigurationError(f"not a tool, a function or a tool definition: {reprlib.repr(item)}")


def _items(tools: ToolLike | Iterable[ToolLike]) -> Iterable[ToolLike]:
    """The items of ``tools``; a single tool, function or definition is one item."""
    if isinstance(tools, Tool | Mapping) or (callable(tools) and not isinstance(tools, Iterable)):
        return (tools,)
    given: object = tools  # a string is iterable, but not of tools
    if isinstance(given, str | bytes) or not isinstance(tools, Iterable):
        raise ConfigurationError(
            "expected tools: a Tool, a function, a tool definition or a list of them, not "
            f"{reprlib.repr(tools)}"
        )
    return tools


OnCollision = Literal["suffix", "error", "skip"]


class ToolSet:
    """An ordered set of tools and the names the model sees for them.

    Exposed names are portable (``^[A-Za-z_][A-Za-z0-9_-]{0,63}$``, what every provider
    accepts); tools with a ``server_id`` are namespaced ``server__name``. A name that two tools
    want is never silently overwritten: by ``on_collision`` the later tool gets a numbered
    suffix (``"suffix"``, the default), the toolset refuses to build (``"error"``), or the later
    tool is left out (``"skip"``). Names are assigned before filtering, so ``include`` and
    ``exclude`` never rename a tool.

    Args:
        tools: tools, functions to turn into tools with ``@tool``, and definitions to
            read with ``tool_from_definition``; or a single one of them.
        include: glob patterns; when given, only tools matching one are visible.
        exclude: glob patterns; tools matching one are hidden.
        on_collision: what to do when two tools want the same exposed name.
        deferred: glob patterns; tools matching one are deferred (loaded on demand where the
            provider has tool search), as ``Tool.deferred`` tools are: ``"github/*"`` defers
            one server's tools.

    Patterns match the exposed name or the qualified name (``server/name``). A hidden tool is
    never declared and calls to it are treated like calls to an unknown name.
    """

    def __init__(
        self,
        tools: ToolLike | Iterable[ToolLike] = (),
        *,
        include: Iterable[str] | None = None,
        exclude: Iterable[str] | None = None,
        on_collision: OnCollision = "suffix",
        deferred: Iterable[str] = (),
    ) -> None:
        if on_collision not in ("suffix", "error", "skip"):
            raise ConfigurationError(
                f"on_collision must be suffix, error or skip: {on_collision!r}"
            )
        self._include = tuple(include) if include is not None else None
        self._exclude = tuple(exclude or ())
        self._deferred_ids: frozenset[int] = frozenset()
        self._on_collision: OnCollision = on_collision
        self._all = tuple(_as_tool(t) for t in _items(tools))
        self._by_exposed: dict[str, Tool] = {}
        self._exposed_by_tool: dict[int, str] = {}
        self.skipped: tuple[Tool, ...] = ()
        """Tools left out because their name collided (``on_collision="skip"``)."""
        self._assign_names()
        self._visible = tuple(
            t for t in self._all if id(t) in self._exposed_by_tool and self._is_visible(t)
        )
        self._visible_ids = frozenset(id(t) for t in self._visible)
        self._cache: dict[Hashable, Any] = {}
        self._cache_lock = threading.Lock()
        if deferred:
            self._deferred_ids = self._matched(_patterns("deferred", deferred), "deferred")

    def _assign_names(self) -> None:
        skipped: list[Tool] = []
        for t in self._all:
            if id(t) in self._exposed_by_tool:
                raise ConfigurationError(f"tool {t.qualified_name!r} is in the toolset twice")
            base = exposed_name_for(t.name, t.server_id)
            name = base
            if name in self._by_exposed:
                other = self._by_exposed[name].qualified_name
                if self._on_collision == "error":
                    raise NameCollisionError(name, other, t.qualified_name)
                if self._on_collision == "skip":
                    skipped.append(t)
                    continue
                n = 2
                while name in self._by_exposed:
                    suffix = f"_{n}"
                    name = base[: NAME_LIMIT - len(suffix)] + suffix
                    n += 1
            self._by_exposed[name] = t
            self._exposed_by_tool[id(t)] = name
        self.skipped = tuple(skipped)

    def _matches(self, t: Tool, patterns: Iterable[str]) -> bool:
        names = (self._exposed_by_tool[id(t)], t.qualified_name)
        return any(fnmatch.fnmatchcase(n, p) for p in patterns for n in names)

    def _is_visible(self, t: Tool) -> bool:
        if self._include is not None and not self._matches(t, self._include):
            return False
        return not self._matches(t, self._exclude)

    def is_deferred(self, tool: Tool) -> bool:
        """True when ``tool`` is loaded on demand where the provider has tool search: it is
        ``Tool.deferred``, or a ``deferred`` pattern of the toolset matches it."""
        return tool.deferred or id(tool) in self._deferred_ids

    @property
    def deferred_names(self) -> tuple[str, ...]:
        """The exposed names of the visible tools that are deferred, in order."""
        return tuple(self._exposed_by_tool[id(t)] for t in self._visible if self.is_deferred(t))

    def deferring(self, patterns: Iterable[str]) -> ToolSet:
        """This toolset with the tools ``patterns`` match deferred too (glob patterns over
        exposed and qualified names, as for ``include``); the names stay as they are.

        Warns:
            ToolwireWarning: for a pattern that matches no tool of the toolset.
        """
        added = _patterns("deferred", patterns)
        if not added:
            return self
        matched = self._matched(added, "deferred")
        subset = copy.copy(self)
        subset._deferred_ids = self._deferred_ids | matched
        subset._cache = {}
        subset._cache_lock = threading.Lock()
        return subset

    def _matched(self, patterns: Iterable[str], option: str) -> frozenset[int]:
        """The ids of the named tools (visible or hidden) that ``patterns`` match.

        Warns:
            ToolwireWarning: for a pattern that matches no tool.
        """
        by_name: dict[str, set[int]] = {}
        for t in self._all:
            if id(t) in self._exposed_by_tool:
                for name in (self._exposed_by_tool[id(t)], t.qualified_name):
                    by_name.setdefault(name, set()).add(id(t))
        matched: set[int] = set()
        for pattern in dict.fromkeys(patterns):
            if _GLOB.search(pattern):
                match = re.compile(fnmatch.translate(pattern)).match
                found = {key for name, keys in by_name.items() if match(name) for key in keys}
            else:  # a name without glob characters matches itself only: a look-up, not a scan
                found = by_name.get(pattern, set())
            if not found:
                shown = ", ".join(self.exposed_names[:_NAMES_LISTED]) or "(none)"
                warnings.warn(
                    f"{option}: {printable(pattern[:100])!r} matches no tool of the toolset; "
                    f"declared: {shown}",
                    ToolwireWarning,
                    stacklevel=4,
                )
            matched |= found
        return frozenset(matched)

    @classmethod
    def of(cls, source: ToolSet | ToolLike | Iterable[ToolLike]) -> ToolSet:
        """``source`` itself when it is a ToolSet, else a new ToolSet of it."""
        return source if isinstance(source, ToolSet) else cls(source)

    def __iter__(self) -> Iterator[Tool]:
        """The visible tools, in order."""
        return iter(self._visible)

    def __len__(self) -> int:
        return len(self._visible)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __repr__(self) -> str:
        return f"ToolSet({[self.exposed_name(t) for t in self._visible]!r})"

    @property
    def tools(self) -> tuple[Tool, ...]:
        """The visible tools, in order."""
        return self._visible

    @property
    def exposed_names(self) -> tuple[str, ...]:
        """The exposed names of the visible tools, in order."""
        return tuple(self._exposed_by_tool[id(t)] for t in self._visible)

    def exposed_name(self, tool: Tool) -> str:
        """The name the model sees for ``tool``.

        Raises:
            ToolNotFound: when the tool is not visible in this toolset.
        """
        if id(tool) not in self._visible_ids:
            raise ToolNotFound(tool.qualified_name)
        return self._exposed_by_tool[id(tool)]

    def get(self, exposed_name: str) -> Tool | None:
        """The visible tool exposed as ``exposed_name``, or None."""
        t = self._by_exposed.get(exposed_name)
        return t if t is not None and id(t) in self._visible_ids else None

    def has_name(self, exposed_name: str) -> bool:
        """True when a tool of this toolset, visible or hidden, is exposed as
        ``exposed_name``."""
        return exposed_name in self._by_exposed

    def __getitem__(self, exposed_name: str) -> Tool:
        t = self.get(exposed_name)
        if t is None:
            raise ToolNotFound(exposed_name)
        return t

    def without(self, exposed_names: Iterable[str]) -> ToolSet:
        """This toolset with the tools exposed as ``exposed_names`` hidden; the others keep
        their names (hidden tools are never declared, and calls to them are unknown)."""
        hidden = {id(t) for name in exposed_names if (t := self.get(name)) is not None}
        if not hidden:
            return self
        subset = copy.copy(self)
        subset._visible = tuple(t for t in self._visible if id(t) not in hidden)
        subset._visible_ids = frozenset(id(t) for t in subset._visible)
        subset._cache = {}
        subset._cache_lock = threading.Lock()
        return subset

    def cached(self, key: Hashable, build: Callable[[], T]) -> T:
        """``build()``'s result, computed once per key for this toolset.

        Providers cache their declarations here: a toolset is immutable, so the same request
        fragment is served on every turn. The cached value is shared; treat it as read-only.
        """
        try:
            return self._cache[key]  # type: ignore[no-any-return]
        except KeyError:
            pass
        value = build()
        with self._cache_lock:
            return self._cache.setdefault(key, value)  # type: ignore[no-any-return]


def _patterns(option: str, patterns: Iterable[str]) -> tuple[str, ...]:
    given: Any = patterns
    if isinstance(given, str):  # one pattern would be read as its characters
        raise ConfigurationError(
            f"{option} takes a list of glob patterns, not the string {given!r}"
        )
    chosen = tuple(given)
    if not all(isinstance(p, str) for p in chosen):
        raise ConfigurationError(f"{option} takes glob patterns (strings), not {given!r}")
    return chosen


def make_call(
    toolset: ToolSet, name: str, arguments: Mapping[str, Any], *, call_id: str | None = None
) -> ToolCall:
    """A [`ToolCall`][toolwire.calls.ToolCall] for the visible tool exposed as ``name``, to run
    directly.

    Raises:
        ToolNotFound: when no visible tool has that name.
    """
    tool = toolset[name]
    arguments = dict(arguments)
    return ToolCall(
        exposed_name=name,
        tool=tool,
        arguments=arguments,
        call_id=call_id,
        local_id=call_id or CallIds().make(name, arguments),  # as a parser makes one
    )
