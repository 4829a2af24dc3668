"""Gemini's stream accumulator: ``streamGenerateContent`` chunks added up to the response
they make, function calls whose arguments stream as ``partialArgs`` pieces (Vertex) assembled
into whole ``args``."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import pairwise
from typing import Any

from toolwire.calls import printable
from toolwire.errors import MalformedResponse
from toolwire.providers._gemini_jsonpath import path_steps
from toolwire.providers._wire import StreamBudget, StreamLimits, as_data, get_field

__all__ = ["StreamAccumulator"]


class StreamAccumulator:
    """Turns ``streamGenerateContent`` chunks into the response they add up to.

    Every part is kept in order with its ``thoughtSignature``; function calls whose arguments
    are streamed (Vertex ``partialArgs`` with ``willContinue``) are assembled into one
    ``functionCall`` part with complete ``args``. ``usageMetadata`` and the finish reason come
    from the last chunk that has them.

    ```python
    stream = gemini.StreamAccumulator()
    async for chunk in await client.aio.models.generate_content_stream(...):
        stream.add(chunk)
    items = gemini.parse(stream.response(), gemini.declare(toolset))
    ```

    Bounded: at most ``limits.max_parts`` parts and streamed argument nodes (100,000 by
    default) and ``limits.max_chars`` characters (32 million) of text and streamed arguments
    in all; a ``jsonPath`` names at most 64 levels, and an array index at most the next
    element (arguments stream in order). A chunk not shaped as Gemini streams them (a
    ``partialArgs`` path that does not parse, or that runs into a value of another kind), or
    a stream past a limit, raises [`MalformedResponse`][toolwire.errors.MalformedResponse].
    Parts that are not objects are skipped, as [`parse`][toolwire.providers.gemini.parse]
    skips them.

    Args:
        limits: the bounds (the defaults are far above any real stream).
    """

    def __init__(self, *, limits: StreamLimits | None = None) -> None:
        self._budget = StreamBudget("Gemini stream", limits)
        self._parts: list[dict[str, Any]] = []
        self._open: _StreamedCall | None = None  # a function call still streaming its args
        self._candidate: dict[str, Any] = {}
        self._extra: dict[str, Any] = {}
        self._role = "model"

    def add(self, chunk: Any) -> None:
        """Add one chunk (a dict or the SDK's ``GenerateContentResponse``).

        Raises:
            MalformedResponse: for a chunk not shaped as Gemini streams them, or past a limit.
        """
        data = as_data(chunk)
        if not isinstance(data, Mapping):
            raise MalformedResponse(f"a stream chunk must be an object, not {type(chunk).__name__}")
        for key, value in data.items():
            if key != "candidates":
                self._extra[key] = value  # usageMetadata, modelVersion, responseId...
        candidates = data.get("candidates")
        if candidates is None:
            return
        if not isinstance(candidates, list | tuple):
            raise MalformedResponse("candidates is not a list")
        if not candidates:
            return
        candidate = as_data(candidates[0])
        if not isinstance(candidate, Mapping):
            raise MalformedResponse("candidates[0] is not an object")
        for key, value in candidate.items():
            if key != "content":
                self._candidate[key] = value  # finishReason, safetyRatings...
        content = as_data(candidate.get("content"))
        if content is None:
            return
        if not isinstance(content, Mapping):
            raise MalformedResponse("candidates[0].content is not an object")
        role = content.get("role")
        if isinstance(role, str) and role:
            self._role = role
        parts = content.get("parts")
        if parts is None:
            return
        if not isinstance(parts, list | tuple):
            raise MalformedResponse("candidates[0].content.parts is not a list")
        for part in parts:
            part = as_data(part)
            if isinstance(part, Mapping):
                self._add_part(part)

    def _keep(self, part: Mapping[str, Any]) -> None:
        self._budget.part()
        text = part.get("text")
        if isinstance(text, str):
            self._budget.text(text, "text")
        self._parts.append(dict(part))

    def _add_part(self, part: Mapping[str, Any]) -> None:
        call = get_field(part, "functionCall", "function_call")
        if not isinstance(call, Mapping):
            self._keep(part)
            return
        partial = get_field(call, "partialArgs", "partial_args")
        if partial is not None and not isinstance(partial, list | tuple):
            raise MalformedResponse("functionCall.partialArgs is not a list")
        continues = get_field(call, "willContinue", "will_continue") is True
        if self._open is None and not partial and not continues:
            self._keep(part)  # a whole call in one chunk
            return
        name = call.get("name")
        if self._open is None or (name and self._open.name and name != self._open.name):
            self._close()
            self._budget.part()
            self._open = _StreamedCall(self._budget)
        self._open.add(part, call, partial or ())
        if not continues:
            self._close()

    def _close(self) -> None:
        if self._open is not None:
            self._parts.append(self._open.as_part())
            self._open = None

    def response(self) -> dict[str, Any]:
        """The generateContent-shaped response so far (a call still streaming is included
        with the arguments received)."""
        parts = list(self._parts)
        if self._open is not None:
            parts.append(self._open.as_part())
        candidate = {**self._candidate, "content": {"role": self._role, "parts": parts}}
        return {**self._extra, "candidates": [candidate]}


class _Text:
    """A string argument still streaming: its pieces, joined when the call is read."""

    __slots__ = ("pieces",)

    def __init__(self, pieces: list[str]) -> None:
        self.pieces = pieces


_VALUE_FIELDS = (
    ("stringValue", "string_value", str),
    ("numberValue", "number_value", (int, float)),
    ("boolValue", "bool_value", bool),
    ("nullValue", "null_value", object),
)


class _StreamedCall:
    """A function call whose ``args`` arrive as ``partialArgs`` pieces.

    The containers it builds are its own: a container that came from a chunk is copied before
    a piece changes it, so the caller's chunks are never mutated.
    """

    __slots__ = ("_budget", "_owned", "_texts", "args", "call", "extra")

    def __init__(self, budget: StreamBudget) -> None:
        self._budget = budget
        self.call: dict[str, Any] = {}
        self.extra: dict[str, Any] = {}  # the part's other fields, e.g. thoughtSignature
        self.args: dict[str, Any] = {}
        self._owned = {id(self.args)}
        self._texts: list[tuple[Any, str | int, _Text]] = []

    @property
    def name(self) -> Any:
        return self.call.get("name")

    def add(self, part: Mapping[str, Any], call: Mapping[str, Any], partial: Any) -> None:
        for key in ("name", "id"):
            if call.get(key):
                self.call[key] = call[key]
        for key, value in part.items():
            if key not in ("functionCall", "function_call"):
                self.extra[key] = value
        args = call.get("args")
        if isinstance(args, Mapping):
            self.args.update(args)
        for piece in partial:
            piece = as_data(piece)
            if not isinstance(piece, Mapping):
                raise MalformedResponse("a partialArgs piece is not an object")
            self._apply(piece)

    def _apply(self, piece: Mapping[str, Any]) -> None:
        """Set one streamed argument (``jsonPath`` like ``$.a.b[0]``); a string is appended
        to the string before it at that path."""
        path = get_field(piece, "jsonPath", "json_path")
        if not isinstance(path, str):
            raise MalformedResponse("a partialArgs piece has no jsonPath")
        steps = path_steps(self._budget.text(path, "partialArgs jsonPath"))
        node: Any = self.args
        for step, following in pairwise(steps):
            node = self._child(node, step, [] if isinstance(following, int) else {}, path)
        last = steps[-1]
        self._slot(node, last, path)
        previous = node[last]
        for camel, snake, kind in _VALUE_FIELDS:
            if camel in piece or snake in piece:
                value = get_field(piece, camel, snake)
                if kind is object:
                    value = None
                elif not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
                    raise MalformedResponse(f"partialArgs {camel} is a {type(value).__name__}")
                break
        else:  # no value: the end of a string streamed before, or a null
            if isinstance(previous, _Text | str):
                return
            value = None
        if isinstance(value, str):
            value = self._budget.text(value, "partialArgs stringValue")
            if isinstance(previous, _Text):
                previous.pieces.append(value)
                return
            text = _Text([previous, value] if isinstance(previous, str) else [value])
            self._texts.append((node, last, text))
            value = text
        node[last] = value

    def _slot(self, node: Any, step: str | int, path: str) -> None:
        """Make sure ``node[step]`` exists (None when new)."""
        if isinstance(step, int):
            if not isinstance(node, list):
                raise MalformedResponse(
                    f"partialArgs jsonPath {printable(path)[:100]!r} indexes a non-array"
                )
            if step > len(node):
                raise MalformedResponse(
                    f"partialArgs jsonPath {printable(path)[:100]!r} skips array elements"
                )
            if step == len(node):
                self._budget.part()
                node.append(None)
        else:
            if not isinstance(node, dict):
                raise MalformedResponse(
                    f"partialArgs jsonPath {printable(path)[:100]!r} names a member of a non-object"
                )
            if step not in node:
                self._budget.part()
                node[step] = None

    def _child(self, node: Any, step: str | int, empty: Any, path: str) -> Any:
        """``node[step]`` as a container of this call's own (``empty`` when there is none)."""
        self._slot(node, step, path)
        child = node[step]
        if child is None:
            child = empty
        elif isinstance(child, dict | list) and id(child) not in self._owned:
            child = dict(child) if isinstance(child, dict) else list(child)
        elif not isinstance(child, dict | list):
            raise MalformedResponse(
                f"partialArgs jsonPath {printable(path)[:100]!r} runs into a {type(child).__name__}"
            )
        if id(child) not in self._owned:
            self._owned.add(id(child))
            node[step] = child
        return child

    def as_part(self) -> dict[str, Any]:
        """The call as a ``functionCall`` part, its streamed strings joined."""
        for container, key, text in self._texts:
            if container[key] is text:
                container[key] = "".join(text.pieces)
        self._texts.clear()
        return {**self.extra, "functionCall": {**self.call, "args": self.args}}
