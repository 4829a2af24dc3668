"""JSON values as toolwire checks, encodes and keeps them: the limits a call's arguments must
fit, one canonical encoding, and the JSON form a run keeps of principals and arguments.

A leaf: the tools, the calls, the grammars and the run ledger all build on it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

import pydantic_core

from toolwire.errors import ConfigurationError

__all__ = [
    "MAX_ARGUMENT_DEPTH",
    "MAX_INTEGER_BITS",
    "MAX_INTEGER_DIGITS",
    "SURROGATE",
    "argument_problem",
    "canonical_json",
    "describe_exception",
    "has_lone_surrogate",
    "principal_json",
    "safe_text",
    "within_depth",
]

MAX_INTEGER_DIGITS = 4_000
"""Decimal digits an integer in a call's arguments may have. Python refuses to turn an integer
of more than 4,300 digits into text (``sys.get_int_max_str_digits``), so a longer one could not
be encoded, hashed or answered."""
MAX_INTEGER_BITS = int(MAX_INTEGER_DIGITS * 3.3219280948873626)  # log2(10) bits per digit
SURROGATE = re.compile("[\ud800-\udfff]")


MAX_ARGUMENT_DEPTH = 64
"""Nesting levels a call's arguments may have; deeper ones are rejected, not processed."""


def has_lone_surrogate(text: str) -> bool:
    """True when ``text`` holds a UTF-16 surrogate code point on its own: valid in a JSON
    escape (``"\\ud800"``) but not Unicode, so no UTF-8 encoder (a store, a provider's SDK, an
    MCP transport) takes it."""
    return not str.isascii(text) and SURROGATE.search(text) is not None


def argument_problem(arguments: Mapping[str, Any]) -> str | None:
    """Why ``arguments`` are not a JSON object toolwire can carry, or None when they are.

    A call's arguments come from a model (and from the text it read), so they are checked
    before anything hashes, stores or validates them: nesting at most
    [`MAX_ARGUMENT_DEPTH`][], string keys, finite numbers (``NaN`` and ``Infinity`` are not
    JSON), integers of at most [`MAX_INTEGER_DIGITS`][] digits, and strings that are valid
    Unicode (no lone surrogates). Each value is visited once.
    """
    if arguments.__class__ is dict:  # the common call: a few ASCII strings and small numbers,
        for key, value in arguments.items():  # checked by exact class, before the walk
            kind = value.__class__
            if key.__class__ is not str or not key.isascii():
                break
            if kind is str:
                if not value.isascii():
                    break
            elif kind is int:
                if value.bit_length() > 64:
                    break
            elif kind is float:
                if not math.isfinite(value):
                    break
            elif not (kind is bool or value is None):
                break
        else:
            return None
    stack: list[tuple[Any, int]] = [(arguments, 0)]
    while stack:
        node, depth = stack.pop()
        kind = node.__class__
        if kind is str or (kind is not bool and isinstance(node, str)):
            if has_lone_surrogate(node):
                return "a string holds a lone UTF-16 surrogate (not valid Unicode)"
        elif kind is bool or node is None:
            continue
        elif isinstance(node, int):
            if int.bit_length(node) > MAX_INTEGER_BITS:
                return f"an integer has more than {MAX_INTEGER_DIGITS} digits"
        elif isinstance(node, float):
            if not math.isfinite(node):
                return f"{float.__repr__(node)} is not a JSON number"
        elif isinstance(node, Mapping | list | tuple):
            if depth >= MAX_ARGUMENT_DEPTH:
                return f"nested deeper than {MAX_ARGUMENT_DEPTH} levels"
            if isinstance(node, Mapping):
                for key, value in node.items():
                    if not isinstance(key, str):
                        return f"an object key is not a string ({type(key).__name__})"
                    if has_lone_surrogate(key):
                        return "an object key holds a lone UTF-16 surrogate (not valid Unicode)"
                    stack.append((value, depth + 1))
            else:
                stack.extend((value, depth + 1) for value in node)
        else:
            return f"a value of type {type(node).__name__} is not JSON"
    return None


def within_depth(value: Any, limit: int) -> bool:
    """True when ``value`` (JSON-like) nests no deeper than ``limit`` containers."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, Mapping):
            children: Any = node.values()
        elif isinstance(node, (list, tuple)):
            children = node
        else:
            continue
        if depth >= limit:
            return False
        stack.extend(
            (child, depth + 1) for child in children if isinstance(child, (Mapping, list, tuple))
        )
    return True


_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
)


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces: equal values give equal strings."""
    return _CANONICAL.encode(value)


def principal_json(value: Any) -> Any:
    """``value`` as JSON values (what a store keeps of a principal or of arguments): pydantic's
    JSON mode, sets as sorted lists (the same in every process), anything else by its
    ``str()``.

    Raises:
        ConfigurationError: for a value that cannot be kept (NaN or infinity, too deep, an
            object whose ``str()`` fails).
    """
    try:
        jsonable = pydantic_core.to_jsonable_python(_sets_sorted(value, 0), fallback=str)
        json.dumps(jsonable, allow_nan=False)  # what every store can write and read back
    except (ValueError, TypeError, RecursionError, pydantic_core.PydanticSerializationError) as exc:
        raise ConfigurationError(
            f"a value the run keeps is not JSON: {describe_exception(exc, limit=300)}"
        ) from None
    except Exception as exc:  # e.g. a str() that raises
        raise ConfigurationError(
            f"a value the run keeps cannot be written: {describe_exception(exc, limit=300)}"
        ) from None
    return jsonable


_MAX_DEPTH = 100


def _sets_sorted(value: Any, depth: int) -> Any:
    """``value`` with every set made a list in a stable order (a set's own order depends on
    the process's string hashing)."""
    if depth > _MAX_DEPTH:
        raise ValueError(f"nested more than {_MAX_DEPTH} levels")
    kind = value.__class__
    if kind in (str, int, float, bool) or value is None:
        return value
    if isinstance(value, set | frozenset):
        items = [_sets_sorted(item, depth + 1) for item in value]
        return sorted(items, key=lambda item: canonical_json(item))
    if isinstance(value, Mapping):
        return {key: _sets_sorted(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_sets_sorted(item, depth + 1) for item in value]
    return value


def safe_text(text: str) -> str:
    """``text`` with lone surrogates replaced by U+FFFD (the rest unchanged)."""
    return SURROGATE.sub("\ufffd", text) if has_lone_surrogate(text) else text


def describe_exception(exc: BaseException, *, limit: int | None = None, named: bool = True) -> str:
    """``TypeName: message`` for an exception, safely: the one way toolwire puts an exception
    into words (for the model, a log or an error of its own).

    An exception whose ``__str__`` raises (or returns something odd) is named by its type
    alone; a group of one exception is described by it. ``limit`` cuts the description
    (``...`` marks the cut); ``named=False`` leaves the type name out when there is a
    message.
    """
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    try:
        text = str(exc)
    except Exception:  # an exception whose text cannot be had is still named
        text = ""
    name = type(exc).__name__
    text = safe_text(text)
    described = (f"{name}: {text}" if named else text) if text else name
    if limit is not None and len(described) > limit:
        described = described[: max(0, limit - 3)] + "..."
    return described
