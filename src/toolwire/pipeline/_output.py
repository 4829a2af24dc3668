"""Shaping what the model is told: the output limits, and the texts of answers that say why a
call did not run or failed."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any

from toolwire._values import describe_exception
from toolwire.calls import (
    AudioContent,
    Content,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    ToolResult,
    canonical_json,
    placeholder,
)
from toolwire.errors import ConfigurationError, InvalidArguments
from toolwire.policy import Verdict
from toolwire.tool import Tool

__all__ = [
    "DEFAULT_MEDIA_LIMIT",
    "DEFAULT_OUTPUT_LIMIT",
    "cap_output",
    "denied_answer",
    "failure_message",
    "invalid_answer",
    "log",
    "not_run",
    "short",
]

log = logging.getLogger("toolwire")
"""Failures of the application's own code (hooks, policies, approvers) answered to the model
are also logged here, with their tracebacks, for the developer."""

_MESSAGE_LIMIT = 2_000
"""Characters of an exception message passed on to the model."""
DEFAULT_OUTPUT_LIMIT = 100_000
"""Characters of tool output passed on to the model before it is truncated (with a notice)."""
DEFAULT_MEDIA_LIMIT = 5 * 1024 * 1024
"""Characters of base64 media one result may carry (5 MiB: Anthropic's limit for one image)."""


def _describe(exc: InvalidArguments, name: str) -> str:
    details = "; ".join(f"{path}: {message}" for path, message in exc.errors)
    return _truncate(f"Invalid arguments for {name!r}: {details}", _MESSAGE_LIMIT)


def failure_message(name: str, exc: BaseException) -> str:
    """What the model is told of a tool that raised ``exc``."""
    return _truncate(f"Tool {name!r} failed: {describe_exception(exc)}", _MESSAGE_LIMIT)


def short(exc: BaseException) -> str:
    """``exc`` in a few words, for an answer saying why a step failed."""
    return describe_exception(exc, limit=_SHORT)


_SHORT = 300
"""Characters of an exception's message an answer quotes when saying why a step failed."""


def denied_answer(verdict: Verdict) -> ToolResult:
    """The answer to a call the policy denies."""
    return ToolResult.error(
        "denied", f"Denied: {verdict.reason or 'the policy does not allow this call'}."
    )


def not_run(what: str, exc: BaseException) -> ToolResult:
    """The answer to a call that did not run because ``what`` (a step before it) failed."""
    return ToolResult.error("failed", f"Not run: {what} failed ({short(exc)}).")


def invalid_answer(tool: Tool, exc: Exception, prefix: str, name: str) -> ToolResult:
    """The answer to a call whose arguments ``tool.validate_arguments`` refused with ``exc``;
    ``name`` is the name the model called the tool by."""
    if isinstance(exc, InvalidArguments):
        return ToolResult.error("invalid_arguments", prefix + _describe(exc, name))
    if isinstance(exc, ConfigurationError):  # the tool's own schema is broken
        return ToolResult.error("failed", _truncate(str(exc), _MESSAGE_LIMIT))
    # Never expected of a validator: the call does not run.
    log.error("validating the arguments of %s failed", tool.qualified_name, exc_info=exc)
    return not_run("validating its arguments", exc)


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 15] + " [truncated]"


def _json_fits(value: Any, budget: int) -> bool:
    """True when ``value``'s JSON surely has at most ``budget`` characters: an upper bound
    walked until it passes the budget, cheaper than encoding (False when unsure)."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = item.__class__
        if kind is str:
            budget -= 6 * len(item) + 2  # every character escaped, at worst
        elif kind is int:
            budget -= len(str(item))
        elif kind is float or kind is bool or item is None:
            budget -= 24
        elif kind is dict:
            budget -= 2
            for key, inner in item.items():
                if key.__class__ is not str:
                    return False
                budget -= 6 * len(key) + 4
                stack.append(inner)
        elif kind is list or kind is tuple:
            budget -= 2 + len(item)
            stack.extend(item)
        else:
            return False  # written by ``default=str``: unknown length
        if budget < 0:
            return False
    return True


def _encoded_size(data: bytes) -> int:
    return 4 * ((len(data) + 2) // 3)  # base64, as every provider receives media


def cap_output(result: ToolResult, limit: int, media_limit: int) -> ToolResult:
    """The result within the output limits, saying what was cut: text of every kind (text
    parts, embedded resources' text, links, structured content as JSON) up to ``limit``
    characters, media (images, audio, resource blobs) up to ``media_limit`` characters of
    base64. Text is cut; a part that cannot be cut and does not fit is left out, named."""
    content = result.content
    structured = result.structured_content
    # The common cases, judged without walking the parts (inline: every result passes here):
    # nothing, or one short text, with structured content that surely fits.
    if structured is None or _json_fits(structured, limit):
        if not content:
            return result
        only = content[0]
        if len(content) == 1 and isinstance(only, TextContent) and len(only.text) <= limit:
            return result
    parts = list(content)
    if structured is not None:
        encoded = canonical_json(dict(structured))
        if len(encoded) > limit:
            parts.append(TextContent(encoded))
            structured = None
    cut = _Cut(budget=limit, media_budget=media_limit)
    for part in parts:
        cut.take(part)
    if cut.text_total <= limit and not cut.left_out and structured is result.structured_content:
        return result
    return ToolResult(
        content=(*cut.kept, *cut.notices(limit, media_limit)),
        structured_content=structured,
        is_error=result.is_error,
        error_kind=result.error_kind,
    )


@dataclass(slots=True)
class _Cut:
    """What fits of a result's parts, taken in order: each kind of part from its budget."""

    budget: int
    media_budget: int
    text_total: int = 0
    kept: list[Content] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)

    def take(self, part: Content) -> None:
        if isinstance(part, TextContent):
            self._text(part)
        elif isinstance(part, EmbeddedResource) and part.text is not None:
            self._resource_text(part, part.text)
        elif isinstance(part, ResourceLink):
            self._link(part)
        else:
            self._media(part)

    def _text(self, part: TextContent) -> None:
        self.text_total += len(part.text)
        if self.budget > 0:
            fits = len(part.text) <= self.budget
            self.kept.append(part if fits else TextContent(part.text[: self.budget]))
            self.budget -= min(len(part.text), self.budget)

    def _resource_text(self, part: EmbeddedResource, text: str) -> None:
        size = len(part.uri) + len(text)
        self.text_total += size
        if size <= self.budget:
            self.kept.append(part)
            self.budget -= size
        elif self.budget > len(part.uri):
            self.kept.append(replace(part, text=text[: self.budget - len(part.uri)]))
            self.budget = 0

    def _link(self, part: ResourceLink) -> None:
        size = sum(len(x or "") for x in (part.uri, part.name, part.mime_type, part.description))
        self.text_total += size
        if size <= self.budget:
            self.kept.append(part)
            self.budget -= size
        else:
            self.left_out.append(f"a resource link of {size} characters")

    def _media(self, part: Content) -> None:
        data = part.data if isinstance(part, ImageContent | AudioContent) else part.blob  # type: ignore[union-attr]
        size = _encoded_size(data or b"")
        if size <= self.media_budget:
            self.kept.append(part)
            self.media_budget -= size
        else:
            self.left_out.append(f"{placeholder(part)} ({size} characters as base64)")

    def notices(self, limit: int, media_limit: int) -> list[Content]:
        """What the model is told was cut or left out."""
        said: list[Content] = []
        if self.text_total > limit:
            said.append(TextContent(f"[truncated: {limit} of {self.text_total} characters shown]"))
        if self.left_out:
            shown = "; ".join(self.left_out[:10]) + (" ..." if len(self.left_out) > 10 else "")
            said.append(
                TextContent(
                    f"[left out, over the output limits ({limit} characters of text, "
                    f"{media_limit} of media): {shown}]"
                )
            )
        return said
