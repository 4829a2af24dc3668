"""Text hygiene: for what reaches a model from a tool definition (hidden characters removed),
and for what a human reads to decide (hidden characters shown as escapes)."""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = [
    "DESCRIPTION_LIMIT",
    "blank",
    "clean_description",
    "escaped",
    "hides",
    "json_hides",
    "shown_name",
    "strip_invisible",
    "visible",
    "visible_json",
    "visible_json_text",
]

DESCRIPTION_LIMIT = 4096
"""Bytes of UTF-8 a description may take once cleaned (4 KiB)."""

# Characters a reader cannot see but a model reads: C0/C1 controls other than tab and newline,
# zero-width characters, bidi embeddings/overrides/isolates, word joiners, the BOM, and the
# Unicode "tag" block used to smuggle hidden instructions; and lone UTF-16 surrogates, which are
# not text at all (no UTF-8 encoder takes them, so a request holding one cannot be sent).
_INVISIBLE = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\ud800-\udfff\ufeff\ufff9-\ufffb\U000e0000-\U000e007f]"
)
_TRUNCATION_MARK = " [truncated]"


def clean_description(text: str | None, *, limit: int = DESCRIPTION_LIMIT) -> str:
    """Remove invisible and bidi-control characters and cap the UTF-8 size at ``limit`` bytes;
    carriage returns become newlines.

    ``None`` gives ``""``. A capped text ends with ``" [truncated]"`` and never splits a
    character.
    """
    if not text:
        return ""
    # Printable ASCII (the common case) has nothing to remove; newlines and tabs are fine. A
    # carriage return becomes a newline: alone, it makes a terminal overwrite the line.
    has_invisible = not text.isascii() or (
        not text.isprintable() and (_INVISIBLE.search(text) is not None or "\r" in text)
    )
    if has_invisible:
        text = _INVISIBLE.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    if len(text) <= limit // 4:  # fast path: 4 bytes per character at most
        return text
    encoded = text.encode("utf-8")
    if len(encoded) <= limit:
        return text
    cut = encoded[: limit - len(_TRUNCATION_MARK)].decode("utf-8", errors="ignore")
    return cut + _TRUNCATION_MARK


def strip_invisible(text: str) -> str:
    """``text`` without the characters a reader cannot see (controls other than tab and
    newline, zero-width and bidi controls, Unicode tags): what a name looks like on screen."""
    return _INVISIBLE.sub("", text) if not text.isascii() or not text.isprintable() else text


# -- what a human decides on --------------------------------------------------------------------

# What a person approving a call must not be shown as it is: every character that is not
# printable (str.isprintable: controls, the format characters among which the bidi controls,
# zero-width characters and tags, surrogates, private-use and unassigned code points, line and
# paragraph separators, every space but U+0020), which includes all of _INVISIBLE; and the
# printable ones Unicode lists as Default_Ignorable_Code_Point (variation selectors, Hangul
# fillers, the combining grapheme joiner...) or that draw nothing (the blank Braille pattern).
_PRINTABLE_HIDDEN = re.compile(
    "[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u2800\u3164\ufe00-\ufe0f\uffa0"
    "\U000e0100-\U000e01ef]"
)
_SHORT_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
_JSON_SPACE = frozenset("\n\r\t")  # whitespace between a JSON text's tokens


def _hidden(char: str) -> bool:
    return not char.isprintable() or _PRINTABLE_HIDDEN.match(char) is not None


def hides(text: str) -> bool:
    """Whether ``text`` holds a character [`visible`][] shows as an escape: a control (newline
    and tab included), a bidi control, a zero-width, invisible or ignorable character, a tag, a
    surrogate, a private-use or unassigned code point, or a space other than U+0020."""
    if text.isascii() and text.isprintable():
        return False
    return any(_hidden(char) for char in text)


def blank(text: str) -> bool:
    """Whether ``text`` shows nothing: empty, or only spaces and hidden characters."""
    return all(char.isspace() or _hidden(char) for char in text)


def _escape(char: str) -> str:
    short = _SHORT_ESCAPES.get(char)
    if short is not None:
        return short
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def escaped(text: str) -> str:
    """``text`` with each hidden character (see [`hides`][]) as an escape (``\\n``, ``\\t``,
    ``\\r``, ``\\u202e``, ``\\U000e0041``), for a line of output or a message; backslashes
    are kept as they are (see [`visible`][] for a value a human decides on)."""
    if text.isascii() and text.isprintable():
        return text
    return "".join(_escape(char) if _hidden(char) else char for char in text)


def shown_name(name: str) -> str:
    """A tool's name fit for a terminal: quoted and escaped when it is blank or holds characters
    that are not printable (controls, bidi overrides, zero-width characters)."""
    return name if name and name.isprintable() and name.strip() == name else repr(name)


def visible(text: str) -> str:
    """``text`` as a human deciding on it must see it: each hidden character (see [`hides`][])
    as an escape (``\\n``, ``\\t``, ``\\r``, ``\\u202e``, ``\\U000e0041``) and each backslash
    doubled, so that no two texts look the same: the escapes read back (as a Python string
    literal's do) to ``text`` exactly."""
    if text.isascii() and text.isprintable() and "\\" not in text:
        return text
    return "".join(
        "\\\\" if char == "\\" else _escape(char) if _hidden(char) else char for char in text
    )


def _json_escape(char: str) -> str:
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000  # JSON writes a code point past the BMP as its UTF-16 surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def visible_json_text(text: str) -> str:
    """JSON text (or what someone typed as JSON) with each hidden character but the whitespace
    between tokens (newline, tab, carriage return) written as a JSON ``\\u`` escape: inside a
    string it reads back as the same character, so the text stays the same JSON."""
    if text.isascii() and text.isprintable():
        return text
    return "".join(
        _json_escape(char) if char not in _JSON_SPACE and _hidden(char) else char for char in text
    )


def json_hides(value: Any) -> bool:
    """Whether [`visible_json`][] shows a hidden character of ``value`` as an escape (the
    ones JSON itself escapes, such as a newline, don't count: JSON shows them already)."""
    return hides(json.dumps(value, ensure_ascii=False))


def visible_json(value: Any, *, indent: int | None = None) -> str:
    """``value`` as JSON for a human deciding on it: keys sorted, text other than ASCII kept
    as it is, but every hidden character (see [`hides`][]) as a ``\\u`` escape. It is still
    JSON, and reads back as ``value``.

    Raises:
        TypeError, ValueError: ``value`` is not JSON (as ``json.dumps``).
    """
    return visible_json_text(json.dumps(value, ensure_ascii=False, sort_keys=True, indent=indent))
