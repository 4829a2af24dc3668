"""A tiny scripted model, served on 127.0.0.1 in the wire format of every API toolwire
declares tools to, so that the official SDKs (google-genai, anthropic, openai) talk to it
unchanged, pointed at it by their standard environment variables (``environment``).

The model's one rule: a request that declares tools and carries no tool result yet is
answered with one call to the first tool declared (a function tool: its arguments made from
its schema by ``arguments.arguments_for``); any other request, with a text, which quotes the
tool results the request carries (``The tools answered: ...``).

The APIs (by the request's path), each also streamed where the SDK asks for a stream:

- Gemini ``generateContent`` and ``streamGenerateContent?alt=sse`` (google-genai's models);
- the Gemini Interactions API, ``POST /{version}/interactions`` (``client.interactions``);
- Anthropic Messages, ``POST /v1/messages`` (and ``/v1/messages/count_tokens``);
- OpenAI Chat Completions, ``POST /v1/chat/completions``;
- OpenAI Responses, ``POST /v1/responses``.

The HTTP server is the Interactions one of the wire tests (``interactions_server``), given
this model as its ``respond``; every request it received is in its ``requests``.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from docs_support.arguments import arguments_for
from integrations.interactions_server import RawReply, Request, ScriptedInteractions, serve

__all__ = [
    "MODEL_TEXT",
    "RESULTS_TEXT",
    "UNSET",
    "Call",
    "Tool",
    "ToolModel",
    "environment",
    "serve_model",
]

MODEL_TEXT = "Hello from the scripted model."
RESULTS_TEXT = "The tools answered: "
CREATED = 1_767_225_600  # 2026-01-01T00:00:00Z


@dataclass(frozen=True, slots=True)
class Tool:
    """A tool a request declared: a function (with its parameters) or a free-form one."""

    name: str
    parameters: dict[str, Any] | None
    kind: Literal["function", "custom"] = "function"


@dataclass(frozen=True, slots=True)
class Call:
    """The model's call of a tool."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    kind: Literal["function", "custom"] = "function"

    @property
    def input(self) -> str:
        """The text a free-form (custom) tool is given."""
        return "example"


def decide(tools: list[Tool], results: list[str], ids: Iterator[int]) -> Call | str:
    """The model: a call of the first tool, or a text."""
    if tools and not results:
        first = tools[0]
        return Call(f"call_{next(ids)}", first.name, arguments_for(first.parameters), first.kind)
    if results:
        return RESULTS_TEXT + "; ".join(results)
    return MODEL_TEXT


def quote(value: Any) -> str:
    """A tool result as the final text quotes it."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return " ".join(quote(part) for part in value)
    if isinstance(value, dict):
        if isinstance(value.get("text"), str):
            return str(value["text"])
        if value.get("type") in {"image", "input_image", "document", "input_file", "file"}:
            return f"[{value['type']}]"
        if set(value) == {"output"}:
            return quote(value["output"])
        if set(value) == {"error"}:
            return "error: " + quote(value["error"])
    return json.dumps(value, sort_keys=True)


def _json(body: dict[str, Any], status: int = 200) -> RawReply:
    return RawReply([json.dumps(body).encode()], status=status)


def _sse(events: list[tuple[str | None, Any]], done: bool = False) -> RawReply:
    """Server-Sent Events: ``(event name or None, data)`` each; ``data: [DONE]`` last if
    ``done``."""
    blocks = [
        (f"event: {name}\n" if name else "") + f"data: {json.dumps(data)}\n\n"
        for name, data in events
    ]
    if done:
        blocks.append("data: [DONE]\n\n")
    return RawReply([b.encode() for b in blocks], content_type="text/event-stream", stream=True)


def _error(status: int, message: str) -> RawReply:
    return _json({"error": {"code": status, "message": message, "type": "invalid_request"}}, status)


def _tokens(body: Any) -> int:
    return max(1, len(json.dumps(body)) // 4)


def _pieces(text: str) -> list[str]:
    middle = len(text) // 2
    return [piece for piece in (text[:middle], text[middle:]) if piece]


class ToolModel:
    """The model, as the ``respond`` of a scripted server."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)

    def __call__(self, request: Request) -> RawReply:
        path = urlsplit(request.path).path
        body = request.body if isinstance(request.body, dict) else {}
        if path.endswith(":generateContent"):
            return self.gemini(body, stream=False)
        if path.endswith(":streamGenerateContent"):
            return self.gemini(body, stream=True)
        if path.endswith("/interactions"):
            return self.interactions(body)
        if path.endswith("/messages/count_tokens"):
            return _json({"input_tokens": _tokens(body)})
        if path.endswith("/messages"):
            return self.anthropic(body)
        if path.endswith("/chat/completions"):
            return self.chat(body)
        if path.endswith("/responses"):
            return self.responses(body)
        return _error(404, f"the scripted model does not serve POST {path}")

    def _next(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids)}"

    # -- Gemini generateContent ----------------------------------------------------------
    def gemini(self, body: dict[str, Any], *, stream: bool) -> RawReply:
        tools = [
            Tool(
                d["name"],
                d.get("parametersJsonSchema", d.get("parameters_json_schema", d.get("parameters"))),
            )
            for tool in body.get("tools") or []
            for d in tool.get("functionDeclarations", tool.get("function_declarations")) or []
        ]
        results = [
            quote(part[key].get("response"))
            for content in body.get("contents") or []
            for part in content.get("parts") or []
            for key in ("functionResponse", "function_response")
            if key in part
        ]
        turn = decide(tools, results, self._ids)
        usage = {"promptTokenCount": _tokens(body)}
        response_id = self._next("gen")
        if isinstance(turn, Call):
            call = {"id": turn.call_id, "name": turn.name, "args": turn.arguments}
            chunks: list[list[dict[str, Any]]] = [[{"functionCall": call}]]
        else:
            chunks = [[{"text": piece}] for piece in (_pieces(turn) if stream else [turn])]
        replies = []
        for n, parts in enumerate(chunks, 1):
            candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
            if n == len(chunks):
                candidate["finishReason"] = "STOP"
            out = _tokens(parts)
            replies.append(
                {
                    "candidates": [candidate],
                    "usageMetadata": usage
                    | {
                        "candidatesTokenCount": out,
                        "totalTokenCount": usage["promptTokenCount"] + out,
                    },
                    "modelVersion": "gemini-scripted",
                    "responseId": response_id,
                }
            )
        if stream:
            return _sse([(None, reply) for reply in replies])
        return _json(replies[0])

    # -- Gemini Interactions ---------------------------------------------------------------
    def interactions(self, body: dict[str, Any]) -> RawReply:
        tools = [
            Tool(t["name"], t.get("parameters"))
            for t in body.get("tools") or []
            if t.get("type") == "function"
        ]
        results = [
            quote(step.get("result")) for step in _steps(body.get("input"), "function_result")
        ]
        turn = decide(tools, results, self._ids)
        interaction_id = self._next("ix")
        if isinstance(turn, Call):
            step: dict[str, Any] = {
                "type": "function_call",
                "id": turn.call_id,
                "name": turn.name,
                "arguments": turn.arguments,
            }
            status = "requires_action"
        else:
            step = {"type": "model_output", "content": [{"type": "text", "text": turn}]}
            status = "completed"
        usage = {
            "total_input_tokens": _tokens(body),
            "total_output_tokens": _tokens(step),
            "total_tokens": _tokens(body) + _tokens(step),
        }
        if not body.get("stream"):
            return _json(
                {
                    "id": interaction_id,
                    "model": body.get("model") or "gemini-scripted",
                    "status": status,
                    "created": "2026-01-01T00:00:00Z",
                    "updated": "2026-01-01T00:00:01Z",
                    "steps": [step],
                    "usage": usage,
                }
            )
        if isinstance(turn, Call):
            start = {**step, "arguments": {}}
            deltas = [
                {"type": "arguments_delta", "arguments": piece}
                for piece in _pieces(json.dumps(turn.arguments))
            ]
        else:
            start = {"type": "model_output", "content": []}
            deltas = [{"type": "text", "text": piece} for piece in _pieces(turn)]
        events: list[dict[str, Any]] = [
            {
                "event_type": "interaction.created",
                "interaction": {"id": interaction_id, "status": "in_progress"},
            },
            {"event_type": "step.start", "index": 0, "step": start},
            *({"event_type": "step.delta", "index": 0, "delta": d} for d in deltas),
            {"event_type": "step.stop", "index": 0},
            {
                "event_type": "interaction.completed",
                "interaction": {"id": interaction_id, "status": status, "usage": usage},
            },
        ]
        return _sse([(event["event_type"], event) for event in events], done=True)

    # -- Anthropic Messages ----------------------------------------------------------------
    def anthropic(self, body: dict[str, Any]) -> RawReply:
        tools = [
            Tool(t["name"], t["input_schema"])
            for t in body.get("tools") or []
            if isinstance(t.get("input_schema"), dict)
        ]
        results = [
            quote(block.get("content", ""))
            for message in body.get("messages") or []
            if isinstance(message.get("content"), list)
            for block in message["content"]
            if isinstance(block, dict) and block.get("type") == "tool_result"
        ]
        turn = decide(tools, results, self._ids)
        if isinstance(turn, Call):
            block: dict[str, Any] = {
                "type": "tool_use",
                "id": "toolu_" + turn.call_id,
                "name": turn.name,
                "input": turn.arguments,
            }
            stop_reason = "tool_use"
        else:
            block = {"type": "text", "text": turn}
            stop_reason = "end_turn"
        message: dict[str, Any] = {
            "id": self._next("msg"),
            "type": "message",
            "role": "assistant",
            "model": body.get("model") or "claude-scripted",
            "content": [block],
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": _tokens(body), "output_tokens": _tokens(block)},
        }
        if not body.get("stream"):
            return _json(message)
        if block["type"] == "tool_use":
            start = {**block, "input": {}}
            deltas = [
                {"type": "input_json_delta", "partial_json": piece}
                for piece in _pieces(json.dumps(turn.arguments if isinstance(turn, Call) else {}))
            ]
        else:
            start = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in _pieces(block["text"])]
        events: list[dict[str, Any]] = [
            {
                "type": "message_start",
                "message": message
                | {
                    "content": [],
                    "stop_reason": None,
                    "usage": message["usage"] | {"output_tokens": 1},
                },
            },
            {"type": "content_block_start", "index": 0, "content_block": start},
            *({"type": "content_block_delta", "index": 0, "delta": d} for d in deltas),
            {"type": "content_block_stop", "index": 0},
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": message["usage"]["output_tokens"]},
            },
            {"type": "message_stop"},
        ]
        return _sse([(event["type"], event) for event in events])

    # -- OpenAI Chat Completions -----------------------------------------------------------
    def chat(self, body: dict[str, Any]) -> RawReply:
        tools = []
        for t in body.get("tools") or []:
            if t.get("type") == "function":
                tools.append(Tool(t["function"]["name"], t["function"].get("parameters")))
            elif t.get("type") == "custom":
                tools.append(Tool(t["custom"]["name"], None, "custom"))
        results = [
            quote(m.get("content", ""))
            for m in body.get("messages") or []
            if isinstance(m, dict) and m.get("role") == "tool"
        ]
        turn = decide(tools, results, self._ids)
        message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None}
        if isinstance(turn, Call):
            if turn.kind == "custom":
                call: dict[str, Any] = {
                    "id": turn.call_id,
                    "type": "custom",
                    "custom": {"name": turn.name, "input": turn.input},
                }
            else:
                call = {
                    "id": turn.call_id,
                    "type": "function",
                    "function": {"name": turn.name, "arguments": json.dumps(turn.arguments)},
                }
            message["tool_calls"] = [call]
            finish = "tool_calls"
        else:
            message["content"] = turn
            finish = "stop"
        completion_id = self._next("chatcmpl")
        model = body.get("model") or "gpt-scripted"
        prompt, out = _tokens(body), _tokens(message)
        usage = {"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out}
        if not body.get("stream"):
            return _json(
                {
                    "id": completion_id,
                    "object": "chat.completion",
                    "created": CREATED,
                    "model": model,
                    "choices": [
                        {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
                    ],
                    "usage": usage,
                }
            )

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            choice = {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
            return {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": CREATED,
                "model": model,
                "choices": [choice],
            }

        chunks = [chunk({"role": "assistant", "content": "" if message["content"] else None})]
        if isinstance(turn, Call) and turn.kind == "function":
            arguments = _pieces(json.dumps(turn.arguments))
            head = {"index": 0, "id": turn.call_id, "type": "function"}
            chunks.append(
                chunk({"tool_calls": [head | {"function": {"name": turn.name, "arguments": ""}}]})
            )
            chunks += [
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
                for piece in arguments
            ]
        elif isinstance(turn, Call):
            chunks.append(chunk({"tool_calls": [{"index": 0, **message["tool_calls"][0]}]}))
        else:
            chunks += [chunk({"content": piece}) for piece in _pieces(turn)]
        chunks.append(chunk({}, finish))
        if (body.get("stream_options") or {}).get("include_usage"):
            chunks.append(chunk({}) | {"choices": [], "usage": usage})
        return _sse([(None, c) for c in chunks], done=True)

    # -- OpenAI Responses ------------------------------------------------------------------
    def responses(self, body: dict[str, Any]) -> RawReply:
        tools = []
        for t in body.get("tools") or []:
            if t.get("type") == "function":
                tools.append(Tool(t["name"], t.get("parameters")))
            elif t.get("type") == "custom":
                tools.append(Tool(t["name"], None, "custom"))
        items: list[Any] = body["input"] if isinstance(body.get("input"), list) else []
        results = [
            quote(item.get("output", ""))
            for item in items
            if isinstance(item, dict)
            and item.get("type") in {"function_call_output", "custom_tool_call_output"}
        ]
        turn = decide(tools, results, self._ids)
        if isinstance(turn, Call):
            item: dict[str, Any] = {
                "id": "fc_" + turn.call_id,
                "call_id": turn.call_id,
                "name": turn.name,
                "status": "completed",
            }
            if turn.kind == "custom":
                item |= {"type": "custom_tool_call", "input": turn.input}
            else:
                item |= {"type": "function_call", "arguments": json.dumps(turn.arguments)}
        else:
            item = {
                "id": self._next("msg"),
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": turn, "annotations": []}],
            }
        prompt, out = _tokens(body), _tokens(item)
        response = {
            "id": self._next("resp"),
            "object": "response",
            "created_at": CREATED,
            "status": "completed",
            "model": body.get("model") or "gpt-scripted",
            "output": [item],
            "parallel_tool_calls": body.get("parallel_tool_calls", True),
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools") or [],
            "previous_response_id": body.get("previous_response_id"),
            "error": None,
            "incomplete_details": None,
            "instructions": body.get("instructions"),
            "metadata": body.get("metadata") or {},
            "temperature": 1.0,
            "top_p": 1.0,
            "usage": {
                "input_tokens": prompt,
                "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                "output_tokens": out,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": prompt + out,
            },
        }
        if not body.get("stream"):
            return _json(response)
        sequence = itertools.count()
        in_progress = response | {"status": "in_progress", "output": [], "usage": None}
        events: list[dict[str, Any]] = [
            {"type": "response.created", "response": in_progress},
            {"type": "response.in_progress", "response": in_progress},
        ]
        where = {"output_index": 0, "item_id": item["id"]}
        if item["type"] == "message":
            text = item["content"][0]["text"]
            part = {"type": "output_text", "text": "", "annotations": []}
            events += [
                {
                    "type": "response.output_item.added",
                    "output_index": 0,
                    "item": item | {"status": "in_progress", "content": []},
                },
                {"type": "response.content_part.added", **where, "content_index": 0, "part": part},
                *(
                    {
                        "type": "response.output_text.delta",
                        **where,
                        "content_index": 0,
                        "delta": piece,
                        "logprobs": [],
                    }
                    for piece in _pieces(text)
                ),
                {
                    "type": "response.output_text.done",
                    **where,
                    "content_index": 0,
                    "text": text,
                    "logprobs": [],
                },
                {
                    "type": "response.content_part.done",
                    **where,
                    "content_index": 0,
                    "part": part | {"text": text},
                },
            ]
        elif item["type"] == "function_call":
            events += [
                {
                    "type": "response.output_item.added",
                    "output_index": 0,
                    "item": item | {"status": "in_progress", "arguments": ""},
                },
                *(
                    {"type": "response.function_call_arguments.delta", **where, "delta": piece}
                    for piece in _pieces(item["arguments"])
                ),
                {
                    "type": "response.function_call_arguments.done",
                    **where,
                    "name": item["name"],
                    "arguments": item["arguments"],
                },
            ]
        else:
            events += [
                {
                    "type": "response.output_item.added",
                    "output_index": 0,
                    "item": item | {"status": "in_progress", "input": ""},
                },
                {"type": "response.custom_tool_call_input.delta", **where, "delta": item["input"]},
                {"type": "response.custom_tool_call_input.done", **where, "input": item["input"]},
            ]
        events += [
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            {"type": "response.completed", "response": response},
        ]
        return _sse([(e["type"], e | {"sequence_number": next(sequence)}) for e in events])


def _steps(value: Any, kind: str) -> list[dict[str, Any]]:
    """The steps of type ``kind`` anywhere in an Interactions ``input``."""
    if isinstance(value, dict):
        if value.get("type") == kind:
            return [value]
        return [step for child in value.values() for step in _steps(child, kind)]
    if isinstance(value, list):
        return [step for child in value for step in _steps(child, kind)]
    return []


def serve_model() -> Iterator[ScriptedInteractions]:
    """Run the model's server for the duration of a fixture (``yield from serve_model()``)."""
    yield from serve(respond=ToolModel())


def environment(server: ScriptedInteractions) -> dict[str, str]:
    """The environment variables that point each SDK at ``server``, with dummy keys."""
    return {
        "GEMINI_API_KEY": "test-key",
        "GOOGLE_GEMINI_BASE_URL": server.base_url,
        "GOOGLE_VERTEX_BASE_URL": server.base_url,  # a page on Vertex AI stays here too
        "OPENAI_API_KEY": "test-key",
        "OPENAI_BASE_URL": server.base_url + "/v1",
        "ANTHROPIC_API_KEY": "test-key",
        "ANTHROPIC_BASE_URL": server.base_url,
    }


# Variables that would send an SDK elsewhere (Vertex AI, an organisation, a proxy's token);
# GOOGLE_API_KEY too: google-genai warns when both it and GEMINI_API_KEY are set.
UNSET = [
    "GOOGLE_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_USE_ENTERPRISE",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_GENAI_API_VERSION",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "ANTHROPIC_AUTH_TOKEN",
]
