"""JSON read from outside (a model, a provider, a client, a query string, a link) without
surprises: [`load_json`][] answers what it read or a [`NotJson`][] saying why it is not
JSON toolwire takes, and never raises.

Python's ``json.loads`` takes ``NaN`` and ``Infinity`` (not JSON), and raises a
``RecursionError`` on nesting deeper than its stack and a ``ValueError`` on an integer
longer than Python converts: every surface that decodes untrusted text reads it here, so
none of these reaches its caller as a foreign exception.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = ["NotJson", "load_json"]


@dataclass(frozen=True, slots=True)
class NotJson:
    """Why a text is not JSON toolwire takes."""

    why: str


class _NotAJsonNumber(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    raise _NotAJsonNumber(name)


# Python's decoder takes NaN, Infinity and -Infinity, which are not JSON.
_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)


def load_json(text: str | bytes) -> Any:
    """``text`` decoded as JSON, or a [`NotJson`][] saying why it is not.

    Nothing escapes: ``NaN`` and ``Infinity`` are refused, and so are integers too long for
    Python to read, nesting too deep to decode, and bytes that are not UTF-8.
    """
    if isinstance(text, bytes | bytearray):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError:
            return NotJson("not UTF-8 text")
    try:
        return _DECODER.decode(text)
    except _NotAJsonNumber as exc:
        return NotJson(f"{exc} is not a JSON number")
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data" and text.lstrip().startswith("{"):
            return NotJson("several JSON objects were concatenated")
        if exc.pos >= len(text.rstrip()):
            return NotJson("the JSON ends early (truncated?)")
        return NotJson(f"malformed JSON ({exc.msg} at character {exc.pos})")
    except RecursionError:
        return NotJson("nested too deeply")
    except ValueError:  # Python's limit on the digits of an integer it converts
        return NotJson("an integer has too many digits")
