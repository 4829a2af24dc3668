"""Gemini conversation helpers: messages ⇄ ``contents``, responses, usage, and the request
settings around tool calling (tool choice, thinking, safety, JSON output).

```python
system, contents = to_format([Message.system("Be helpful"), Message.user("Hello")])
# ("Be helpful", [{"role": "user", "parts": [{"text": "Hello"}]}])
```

Model contents that came from Gemini are replayed unchanged (thought signatures included);
for history toolwire did not produce, the documented ``skip_thought_signature_validator``
sentinel goes on the first function call of each model step (``signature_sentinel=True``).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from toolwire.calls import ToolResult
from toolwire.errors import ConfigurationError, MalformedResponse
from toolwire.messages import MediaPart, Message, Role, ToolCallPart, ToolResultPart, Usage
from toolwire.providers import gemini
from toolwire.providers._wire import as_data, get_field, sent_id

__all__ = [
    "SKIP_THOUGHT_SIGNATURE",
    "from_messages",
    "from_response",
    "json_config_for_settings",
    "normalize_safety_settings",
    "normalize_thinking_config",
    "normalize_tool_choice",
    "parse_usage",
    "to_format",
]

SKIP_THOUGHT_SIGNATURE = "skip_thought_signature_validator"
"""The signature Gemini documents for history it did not produce."""

_PROVIDER = "gemini"
_OCTET_STREAM = "application/octet-stream"


# -- messages → contents -------------------------------------------------------------------------


def _media_part(media: MediaPart) -> dict[str, Any]:
    if media.data is not None:
        return {
            "inlineData": {
                "mimeType": media.mime_type,
                "data": base64.b64encode(media.data).decode("ascii"),
            }
        }
    return {"fileData": {"mimeType": media.mime_type, "fileUri": media.uri or ""}}


def _model_content(message: Message, sentinel: bool) -> dict[str, Any]:
    raw = message.raw
    if raw is not None and raw.get("provider") == _PROVIDER:
        return dict(raw["content"])  # replayed unchanged: signatures live on its parts
    parts: list[dict[str, Any]] = []
    if message.content:
        parts.append({"text": message.content})
    for i, call in enumerate(message.tool_calls):
        body: dict[str, Any] = {"name": call.name, "args": dict(call.arguments)}
        if call.call_id:
            body["id"] = call.call_id
        part: dict[str, Any] = {"functionCall": body}
        signature = call.extras.get("thoughtSignature")
        if signature is not None:
            part["thoughtSignature"] = signature
        elif sentinel and i == 0:
            part["thoughtSignature"] = SKIP_THOUGHT_SIGNATURE
        parts.append(part)
    return {"role": "model", "parts": parts}


def to_format(
    messages: Iterable[Message], *, signature_sentinel: bool = True
) -> tuple[str | None, list[dict[str, Any]]]:
    """``(system_instruction, contents)`` for a generateContent request.

    System messages are joined into the system instruction (wrap it as
    ``{"parts": [{"text": ...}]}`` in the request). Tool results of consecutive messages go
    together in one ``user`` content holding nothing else (Gemini pairs them with the calls of
    the model turn before); a message's text after its results goes in the next content.
    """
    system: list[str] = []
    contents: list[dict[str, Any]] = []
    pending_results: list[dict[str, Any]] = []

    def flush_results() -> None:
        if pending_results:
            contents.append({"role": "user", "parts": list(pending_results)})
            pending_results.clear()

    for message in messages:
        if message.role == "system":
            if message.content:
                system.append(message.content)
            continue
        if message.role == "assistant":
            flush_results()
            contents.append(_model_content(message, signature_sentinel))
            continue
        pending_results.extend(
            gemini.function_response(r.name, r.result, id=r.call_id) for r in message.tool_results
        )
        parts = ([{"text": message.content}] if message.content else []) + [
            _media_part(m) for m in message.media
        ]
        if parts:
            flush_results()
            contents.append({"role": "user", "parts": parts})
    flush_results()
    return ("\n\n".join(system) or None), contents


# -- contents → messages -------------------------------------------------------------------------


def _decode(data: Any) -> bytes:
    if isinstance(data, bytes):
        return data
    if not isinstance(data, str):
        return b""
    try:
        return base64.b64decode(data, validate=False)
    except (binascii.Error, ValueError):
        return b""


def _result_of(response: Any) -> ToolResult:
    if not isinstance(response, Mapping):
        return ToolResult.from_value(response)
    if "error" in response:
        error = response["error"]
        return ToolResult.error("failed", error if isinstance(error, str) else str(error))
    output = response.get("output", response)
    if isinstance(output, Mapping):
        return ToolResult(structured_content=dict(output))
    return ToolResult.from_value(output)


def _text(value: Any, default: str = "") -> str:
    return value if isinstance(value, str) else default


def _call_part(part: Mapping[str, Any], call: Mapping[str, Any]) -> ToolCallPart:
    args = call.get("args")
    if args is None:
        args = {}
    if not isinstance(args, Mapping):
        raise MalformedResponse(f"functionCall.args is not an object ({type(args).__name__})")
    signature = get_field(part, "thoughtSignature", "thought_signature")
    return ToolCallPart(
        name=_text(call.get("name")),
        arguments=dict(args),
        call_id=sent_id(call.get("id")),
        extras={"thoughtSignature": signature} if signature is not None else {},
    )


def _message_of(content: Any) -> Message:
    data = as_data(content)  # dicts or google-genai objects
    if not isinstance(data, Mapping):
        raise MalformedResponse(f"not a Gemini content: {type(content).__name__}")
    role: Role = "assistant" if data.get("role") == "model" else "user"
    parts = data.get("parts")
    if parts is None:
        parts = []
    if not isinstance(parts, list | tuple):
        raise MalformedResponse("a content's parts is not a list")
    texts: list[str] = []
    thoughts: list[str] = []
    calls: list[ToolCallPart] = []
    results: list[ToolResultPart] = []
    media: list[MediaPart] = []
    for part in parts:
        part = as_data(part)
        if not isinstance(part, Mapping):
            continue
        call = get_field(part, "functionCall", "function_call")
        answer = get_field(part, "functionResponse", "function_response")
        inline = get_field(part, "inlineData", "inline_data")
        file = get_field(part, "fileData", "file_data")
        if isinstance(call, Mapping):
            calls.append(_call_part(part, call))
        elif isinstance(answer, Mapping):
            results.append(
                ToolResultPart(
                    name=_text(answer.get("name")),
                    call_id=sent_id(answer.get("id")),
                    result=_result_of(answer.get("response")),
                )
            )
        elif isinstance(inline, Mapping):
            media.append(
                MediaPart(
                    mime_type=_text(get_field(inline, "mimeType", "mime_type"), _OCTET_STREAM),
                    data=_decode(inline.get("data")),
                )
            )
        elif isinstance(file, Mapping):
            uri = get_field(file, "fileUri", "file_uri")
            media.append(
                MediaPart(
                    mime_type=_text(get_field(file, "mimeType", "mime_type"), _OCTET_STREAM),
                    uri=uri if isinstance(uri, str) else None,
                )
            )
        elif isinstance(part.get("text"), str):
            (thoughts if part.get("thought") else texts).append(part["text"])
    raw = {"provider": _PROVIDER, "content": dict(data)} if role == "assistant" else None
    return Message(
        role=role,
        content="".join(texts),
        thoughts="".join(thoughts),
        tool_calls=tuple(calls),
        tool_results=tuple(results),
        media=tuple(media),
        raw=raw,
    )


def from_messages(contents: Iterable[Any]) -> list[Message]:
    """Gemini ``contents`` (dicts or SDK objects) as messages; model contents keep ``raw``.

    Raises:
        MalformedResponse: for a content that is not shaped as Gemini's.
    """
    return [_message_of(content) for content in contents]


def from_response(response: Any) -> Message:
    """The first candidate of a generateContent response as an assistant message, with usage.

    A response without candidates (e.g. a blocked prompt) is an empty assistant message.

    Raises:
        MalformedResponse: for a response that is not shaped as Gemini's.
    """
    data = as_data(response)
    if not isinstance(data, Mapping):
        raise MalformedResponse(
            f"expected a generateContent response, not {type(response).__name__}"
        )
    usage = parse_usage(get_field(data, "usageMetadata", "usage_metadata"))
    candidates = data.get("candidates")
    if not candidates:
        return Message(role="assistant", usage=usage)
    if not isinstance(candidates, list | tuple):
        raise MalformedResponse("candidates is not a list")
    candidate = as_data(candidates[0])
    if not isinstance(candidate, Mapping):
        raise MalformedResponse("candidates[0] is not an object")
    content = as_data(candidate.get("content") or {"role": "model", "parts": []})
    if not isinstance(content, Mapping):
        raise MalformedResponse("candidates[0].content is not an object")
    content = dict(content)
    content.setdefault("role", "model")
    message = _message_of(content)
    return Message(
        role="assistant",
        content=message.content,
        thoughts=message.thoughts,
        tool_calls=message.tool_calls,
        media=message.media,
        raw=message.raw,
        usage=usage,
    )


def parse_usage(usage: Any) -> Usage:
    """``usageMetadata`` (camelCase, snake_case or the SDK object) as [`Usage`][]."""
    data = as_data(usage)
    if not isinstance(data, Mapping):
        return Usage()

    def count(camel: str, snake: str) -> int:
        value = get_field(data, camel, snake)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    prompt = count("promptTokenCount", "prompt_token_count")
    output = count("candidatesTokenCount", "candidates_token_count")
    reasoning = count("thoughtsTokenCount", "thoughts_token_count")
    total = count("totalTokenCount", "total_token_count") or prompt + output + reasoning
    return Usage(
        input_tokens=prompt,
        output_tokens=output,
        total_tokens=total,
        cached_tokens=count("cachedContentTokenCount", "cached_content_token_count"),
        reasoning_tokens=reasoning,
        tool_use_prompt_tokens=count("toolUsePromptTokenCount", "tool_use_prompt_token_count"),
    )


# -- request settings ----------------------------------------------------------------------------

_MODES = {"auto": "AUTO", "any": "ANY", "required": "ANY", "none": "NONE", "validated": "VALIDATED"}


def normalize_tool_choice(
    choice: str | tuple[str, Sequence[str]] | Mapping[str, Any] | None,
    *,
    has_declarations: bool = True,
) -> dict[str, Any] | None:
    """A tool-choice setting as Gemini's ``toolConfig``.

    ``"auto"`` → AUTO, ``"any"``/``"required"`` → ANY, ``"none"`` → NONE, ``"validated"`` →
    VALIDATED, ``("any", names)`` → ANY with ``allowedFunctionNames``, a map passes through,
    None gives None. Without function declarations no ``functionCallingConfig`` is sent
    (Gemini rejects it).
    """
    if choice is None:
        return None
    if isinstance(choice, Mapping):
        config = dict(choice)
        if not has_declarations:
            config.pop("functionCallingConfig", None)
            config.pop("function_calling_config", None)
        return config or None
    if not has_declarations:
        return None
    if isinstance(choice, str):
        mode = _MODES.get(choice.lower())
        if mode is None:
            raise ConfigurationError(f"unknown tool choice {choice!r}")
        return {"functionCallingConfig": {"mode": mode}}
    if isinstance(choice, tuple) and len(choice) == 2:
        kind, names = choice
        mode = _MODES.get(str(kind).lower())
        if mode not in ("ANY", "VALIDATED"):
            raise ConfigurationError("allowed function names go with 'any' or 'validated'")
        return {"functionCallingConfig": {"mode": mode, "allowedFunctionNames": list(names)}}
    raise ConfigurationError(f"unknown tool choice {choice!r}")


_THINKING_KEYS = {
    "thinking_budget": "thinkingBudget",
    "include_thoughts": "includeThoughts",
    "thinking_level": "thinkingLevel",
}


def normalize_thinking_config(config: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """snake_case or camelCase thinking settings as ``thinkingConfig``; unknown keys pass."""
    if config is None:
        return None
    return {_THINKING_KEYS.get(key, key): value for key, value in config.items()}


def normalize_safety_settings(
    settings: Iterable[Mapping[str, Any]] | None,
) -> list[dict[str, Any]] | None:
    """Safety settings as ``safetySettings`` entries (``category``, ``threshold``, and any
    other key passed through)."""
    if settings is None:
        return None
    return [{str(key): value for key, value in entry.items()} for entry in settings]


def json_config_for_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """``responseMimeType`` and ``responseJsonSchema`` from generic output settings.

    In priority order: ``json_schema`` (a schema), ``response_format``
    (``{"type": "json_schema", "schema" | "json_schema": ...}`` or ``{"type": "json_object"}``),
    ``json_response`` (True: JSON without a schema). ``{}`` when none applies.
    """
    schema = settings.get("json_schema")
    if isinstance(schema, Mapping):
        return {"responseMimeType": "application/json", "responseJsonSchema": dict(schema)}
    response_format = settings.get("response_format")
    if isinstance(response_format, Mapping):
        kind = response_format.get("type")
        if kind == "json_schema":
            inner = response_format.get("schema") or response_format.get("json_schema")
            if isinstance(inner, Mapping) and "schema" in inner:  # OpenAI's nesting
                inner = inner["schema"]
            if isinstance(inner, Mapping):
                return {"responseMimeType": "application/json", "responseJsonSchema": dict(inner)}
        if kind in ("json_schema", "json_object"):
            return {"responseMimeType": "application/json"}
    if settings.get("json_response") is True:
        return {"responseMimeType": "application/json"}
    return {}
