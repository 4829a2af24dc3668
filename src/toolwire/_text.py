"""Text hygiene for what reaches a model from a tool definition."""

from __future__ import annotations

import re

__all__ = ["DESCRIPTION_LIMIT", "clean_description", "strip_invisible"]

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
