"""The ``jsonPath`` of a Gemini streamed argument (Vertex ``partialArgs``): ``$.a.b[0]``,
``$['a.b']``, parsed into steps, with bounds a model's text cannot get past."""

from __future__ import annotations

import re

from toolwire.calls import printable
from toolwire.errors import MalformedResponse
from toolwire.providers._wire import load_json

__all__ = ["MAX_PATH_STEPS", "path_steps"]

_PATH_STEP = re.compile(
    r"""\.([^.\[\]]+)|\[([0-9]+)\]|\['((?:[^'\\]|\\.)*)'\]|\["((?:[^"\\]|\\.)*)"\]"""
)
_QUOTED_ESCAPE = re.compile(r'\\.|"')
MAX_PATH_STEPS = 64
"""Levels a ``jsonPath`` may name, as arguments may nest (``MAX_ARGUMENT_DEPTH``)."""


def _unquote(body: str, quote: str) -> str | None:
    """A quoted ``jsonPath`` member name (RFC 9535 escapes), or None when it is malformed."""
    if quote == "'":  # as a JSON string: \' is a quote, a bare " must be escaped
        body = _QUOTED_ESCAPE.sub(
            lambda m: "'" if m.group() == "\\'" else ('\\"' if m.group() == '"' else m.group()),
            body,
        )
    decoded = load_json(f'"{body}"')
    return decoded if isinstance(decoded, str) else None


def path_steps(path: str) -> list[str | int]:
    """The steps of a ``jsonPath`` (``$.a.b[0]``, ``$['a.b']``).

    Raises:
        MalformedResponse: when it does not parse, names no argument or is too deep.
    """
    shown = printable(path[:100]) + ("..." if len(path) > 100 else "")
    if not path.startswith("$") or path == "$":
        raise MalformedResponse(f"partialArgs jsonPath {shown!r} names no argument")
    steps: list[str | int] = []
    position = 1
    while position < len(path):
        if len(steps) == MAX_PATH_STEPS:
            raise MalformedResponse(
                f"partialArgs jsonPath {shown!r} is deeper than {MAX_PATH_STEPS} levels"
            )
        match = _PATH_STEP.match(path, position)
        if match is None:
            raise MalformedResponse(f"partialArgs jsonPath {shown!r} does not parse")
        name, index, single, double = match.groups()
        if name is not None:
            steps.append(name)
        elif index is not None:
            if len(index) > 9:  # no real argument is an array of a billion elements
                raise MalformedResponse(
                    f"partialArgs jsonPath {shown!r}: index {index} is too large"
                )
            steps.append(int(index))
        else:
            quoted = _unquote(single, "'") if single is not None else _unquote(double, '"')
            if quoted is None:
                raise MalformedResponse(f"partialArgs jsonPath {shown!r} does not parse")
            steps.append(quoted)
        position = match.end()
    return steps
