"""A provider-neutral conversation: messages with text, tool calls, tool results and media.

Provider modules convert to and from their wire format (for Gemini,
[`toolwire.providers.gemini_messages`][]). A message that came from a provider keeps the
provider's own content in ``raw``, so it is replayed unchanged (Gemini's thought signatures
depend on that).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from toolwire.calls import ToolResult

__all__ = ["MediaPart", "Message", "Role", "ToolCallPart", "ToolResultPart", "Usage"]

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallPart:
    """A call the assistant made."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    call_id: str | None = None
    extras: Mapping[str, Any] = field(default_factory=dict)
    """Provider data to replay with the call (Gemini's ``thoughtSignature``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResultPart:
    """The answer to one call."""

    name: str
    result: ToolResult
    call_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MediaPart:
    """An image, audio clip, document... inline (``data``) or by reference (``uri``)."""

    mime_type: str
    data: bytes | None = None
    uri: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """Token counts of one response (zeros where the provider said nothing)."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    tool_use_prompt_tokens: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """One turn of a conversation."""

    role: Role
    content: str = ""
    """The text."""
    tool_calls: tuple[ToolCallPart, ...] = ()
    tool_results: tuple[ToolResultPart, ...] = ()
    media: tuple[MediaPart, ...] = ()
    thoughts: str = ""
    """Thought summaries the model shared (never sent back as text)."""
    raw: Mapping[str, Any] | None = None
    """The provider's own content for this message, replayed unchanged when converting back
    to the same provider (``{"provider": "gemini", "content": {...}}``)."""
    usage: Usage | None = None

    @classmethod
    def system(cls, text: str) -> Message:
        return cls(role="system", content=text)

    @classmethod
    def user(cls, text: str, *, media: tuple[MediaPart, ...] = ()) -> Message:
        return cls(role="user", content=text, media=media)

    @classmethod
    def assistant(cls, text: str = "", *, tool_calls: tuple[ToolCallPart, ...] = ()) -> Message:
        return cls(role="assistant", content=text, tool_calls=tool_calls)

    @classmethod
    def results(cls, *results: ToolResultPart) -> Message:
        """A user turn answering tool calls."""
        return cls(role="user", tool_results=results)
