"""JSON read from a user's configuration file, where a key given twice in one object is an
error.

Python's ``json`` keeps the last of repeated keys, other readers the first, and a person
reading the file sees whichever they read first: ``{"default": "deny", "default": "allow"}``
would be a policy that allows while it reads as one that denies. TOML already refuses this;
JSON configuration is read through [`loads`][] so that it does too.
"""

from __future__ import annotations

import json
from typing import Any

from toolwire.errors import ConfigurationError

__all__ = ["RepeatedKey", "loads"]


class RepeatedKey(ConfigurationError):
    """A key given more than once in one JSON object: ``key``, and ``path``, where that object
    is (``rules[0]``, ``mcpServers.files``; empty at the top); ``source`` names the file."""

    def __init__(self, key: str, path: str, source: str = "") -> None:
        self.key = key
        self.path = path
        self.source = source
        place = f"in {path}" if path else "at the top level"
        super().__init__(
            (f"{source}: " if source else "")
            + f"the key {key!r} is given more than once {place} (a repeated key is refused: "
            "which of its values holds would be a guess)"
        )

    def of(self, source: str) -> RepeatedKey:
        """The same error, naming the file it is in."""
        return RepeatedKey(self.key, self.path, source)


class _Repeated(dict[str, Any]):
    """An object that held a repeated key (found by the walk after parsing, which knows
    where the object is)."""

    __slots__ = ("repeated",)

    def __init__(self, pairs: list[tuple[str, Any]], repeated: str) -> None:
        super().__init__(pairs)
        self.repeated = repeated


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            return _Repeated(pairs, key)
        seen.add(key)
    return dict(pairs)


def loads(text: str) -> Any:
    """``text`` parsed as ``json.loads`` does, refusing a key repeated in any object.

    Raises:
        RepeatedKey: naming the key and the object that repeats it.
        ValueError: ``text`` is not JSON (``json.JSONDecodeError``).
        RecursionError: nested past Python's stack.
    """
    data = json.loads(text, object_pairs_hook=_pairs)
    found = _first_repeated(data)
    if found is not None:
        raise RepeatedKey(*found)
    return data


def _first_repeated(data: Any) -> tuple[str, str] | None:
    """The first repeated key in ``data`` (in document order) and the path of its object."""
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, _Repeated):
            return node.repeated, path
        if isinstance(node, dict):
            children = [(value, _member(path, key)) for key, value in node.items()]
        elif isinstance(node, list):
            children = [(value, f"{path}[{index}]") for index, value in enumerate(node)]
        else:
            continue
        stack.extend(reversed(children))
    return None


def _member(path: str, key: str) -> str:
    if key.isidentifier():
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key, ensure_ascii=True)}]"
