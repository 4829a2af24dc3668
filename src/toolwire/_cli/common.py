"""What the commands share: output fit for a terminal, and values read from the command line."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from toolwire import _text
from toolwire.errors import ConfigurationError

__all__ = [
    "arguments_option",
    "close_store",
    "colour",
    "principal_option",
    "print_json",
    "safe",
    "store_at",
]


def safe(text: str) -> str:
    """``text`` with each hidden character escaped (``\\u202e``, see ``toolwire._text``), so a
    server's names and schemas cannot drive or garble the terminal."""
    return _text.escaped(text)


def colour(stream: Any) -> bool:
    """Colours only on a terminal, and never when NO_COLOR is set."""
    return bool(getattr(stream, "isatty", lambda: False)()) and not os.environ.get("NO_COLOR")


def print_json(value: Any) -> None:
    # Hidden characters as JSON escapes: the same JSON, shown as it is on a terminal. Written
    # piece by piece (as json.dump does): a reader that stops early stops the writing.
    encoder = json.JSONEncoder(indent=2, ensure_ascii=False, default=str)
    for piece in encoder.iterencode(value):
        sys.stdout.write(_text.visible_json_text(piece))
    sys.stdout.write("\n")


def arguments_option(text: str, what: str = "--args") -> dict[str, Any]:
    """``--args`` (or ``what``): a JSON object.

    Raises:
        ConfigurationError: for anything else.
    """
    try:
        arguments = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"{what} is not valid JSON: {exc}") from None
    if not isinstance(arguments, dict):
        raise ConfigurationError(f"{what} must be a JSON object")
    return arguments


def principal_option(text: str | None) -> Any:
    """A principal given on the command line: JSON, or else the text itself."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def store_at(url: str, *, create: bool = False) -> Any:
    """The store at ``url``. Without ``create``, only one that is already there: commands that
    look at runs made elsewhere refuse a mistyped SQLite path instead of making a new, empty
    database of it."""
    from toolwire.store import from_url

    return from_url(url, create=create)


async def close_store(store: Any) -> None:
    if hasattr(store, "aclose"):
        await store.aclose()
    elif hasattr(store, "close"):
        store.close()
