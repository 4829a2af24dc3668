"""What the commands share: output fit for a terminal, and values read from the command line."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from toolwire import _jsonfile, _text
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
    """``--args`` (or ``what``): a JSON object, each key given once (which of a repeated
    key's values a reader takes is a guess: an approver reads the first, ``json`` keeps the
    last).

    Raises:
        ConfigurationError: for anything else, naming a repeated key.
    """
    try:
        arguments = _jsonfile.loads(text)
    except _jsonfile.RepeatedKey as exc:
        raise ConfigurationError(f"{what}: {exc}") from None
    except (ValueError, RecursionError) as exc:  # RecursionError: nested past the stack
        raise ConfigurationError(f"{what} is not valid JSON: {exc}") from None
    if not isinstance(arguments, dict):
        raise ConfigurationError(f"{what} must be a JSON object")
    return arguments


def principal_option(text: str | None) -> Any:
    """A principal given on the command line: JSON, or else the text itself.

    Raises:
        ConfigurationError: JSON giving a key twice (who it names would be a guess).
    """
    if text is None:
        return None
    try:
        return _jsonfile.loads(text)
    except _jsonfile.RepeatedKey as exc:
        raise ConfigurationError(f"--principal: {exc}") from None
    except (ValueError, RecursionError):  # RecursionError: nested past the stack
        return text


def store_at(url: str, *, create: bool = False) -> Any:
    """The store at ``url``. Without ``create``, only one that is already there: commands that
    look at runs made elsewhere refuse a mistyped SQLite path instead of making a new, empty
    database of it."""
    from toolwire.runs.store import from_url

    return from_url(url, create=create)


async def close_store(store: Any) -> None:
    if hasattr(store, "aclose"):
        await store.aclose()
    elif hasattr(store, "close"):
        store.close()
