"""A scripted Gemini Interactions API on 127.0.0.1, speaking the wire format google-genai's
``client.interactions.create`` reads (its ``_gaos`` resource and ``utils/eventstreaming.py``):

- ``POST /{api_version}/interactions``, a JSON body (snake_case keys, as the SDK sends them);
- without ``stream``: ``200 application/json``, the ``Interaction`` object;
- with ``"stream": true``: ``200 text/event-stream``, one Server-Sent Event per stream event,
  each an ``event: <event_type>`` line and a ``data: <json>`` line whose JSON carries the
  same ``event_type`` (the SDK picks the event's class by it), events separated by a blank
  line, and a last ``data: [DONE]`` event (the SDK's sentinel; it stops reading there).

Every request is recorded (path, Accept header, JSON body) before it is answered; a request
past the end of the script is answered ``400`` (a status the SDK does not retry), so a test
that sends one request too many fails fast instead of hanging.

Past the end of the script, a server given ``respond`` asks it for the reply instead: a
function of the request, so one server can play a model on any path (``RawReply`` then
carries bytes already in the wire format of whichever API the path is).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "JsonReply",
    "RawReply",
    "Reply",
    "Request",
    "ScriptedInteractions",
    "SseReply",
    "serve",
    "sse_block",
]


@dataclass(frozen=True, slots=True)
class Request:
    """One request the server received."""

    path: str
    accept: str | None
    body: dict[str, Any]


@dataclass(frozen=True, slots=True)
class JsonReply:
    """Answer with this interaction as JSON."""

    interaction: dict[str, Any]


@dataclass(frozen=True, slots=True)
class SseReply:
    """Answer with these events as a Server-Sent Events stream, each event written (and
    flushed) in ``pieces`` separate writes, so the SDK reads events cut at arbitrary bytes."""

    events: Sequence[dict[str, Any]]
    pieces: int = 2


@dataclass(frozen=True, slots=True)
class RawReply:
    """Answer with these bytes, in this order, each written and flushed on its own: a JSON
    body, or a stream's events already encoded (without a length, when ``stream``: it ends
    when the connection closes)."""

    chunks: Sequence[bytes]
    content_type: str = "application/json"
    status: int = 200
    stream: bool = False


Reply = JsonReply | SseReply | RawReply
DONE = b"data: [DONE]\n\n"


def sse_block(event: dict[str, Any]) -> bytes:
    """One event on the wire: its ``event:`` and ``data:`` lines and the blank line."""
    return f"event: {event['event_type']}\ndata: {json.dumps(event)}\n\n".encode()


def _cut(data: bytes, pieces: int) -> Iterator[bytes]:
    size = max(1, -(-len(data) // max(1, pieces)))
    for start in range(0, len(data), size):
        yield data[start : start + size]


@dataclass
class ScriptedInteractions:
    """The server: answers each request with the next reply of ``script``."""

    script: list[Reply] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    respond: Callable[[Request], Reply | None] | None = None

    def __post_init__(self) -> None:
        scripted = self
        lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"null")
                request = Request(self.path, self.headers.get("Accept"), body)
                with lock:
                    scripted.requests.append(request)
                    reply = scripted.script.pop(0) if scripted.script else None
                if reply is None and scripted.respond is not None:
                    try:
                        reply = scripted.respond(request)
                    except Exception as exc:  # a 400 names it: the SDKs do not retry that
                        self._send(400, "application/json", _error(f"respond failed: {exc!r}"))
                        return
                if reply is None:
                    self._send(400, "application/json", _error("the script has no more replies"))
                elif isinstance(reply, JsonReply):
                    self._send(200, "application/json", json.dumps(reply.interaction).encode())
                elif isinstance(reply, RawReply):
                    self.send_response(reply.status)
                    self.send_header("Content-Type", reply.content_type)
                    if not reply.stream:
                        length = sum(map(len, reply.chunks))
                        self.send_header("Content-Length", str(length))
                    self.end_headers()
                    for chunk in reply.chunks:
                        self.wfile.write(chunk)
                        self.wfile.flush()
                else:
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Cache-Control", "no-cache")
                    self.end_headers()  # no length: the stream ends when the connection closes
                    for block in [*map(sse_block, reply.events), DONE]:
                        for piece in _cut(block, reply.pieces):
                            self.wfile.write(piece)
                            self.wfile.flush()

            def _send(self, status: int, content_type: str, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @property
    def bodies(self) -> list[dict[str, Any]]:
        """The JSON bodies received, in order."""
        return [request.body for request in self.requests]


def _error(message: str) -> bytes:
    return json.dumps(
        {"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}
    ).encode()


def serve(
    respond: Callable[[Request], Reply | None] | None = None,
) -> Iterator[ScriptedInteractions]:
    """Run a server for the duration of a fixture (``yield from serve()``)."""
    scripted = ScriptedInteractions(respond=respond)
    scripted.thread.start()
    try:
        yield scripted
    finally:
        scripted.server.shutdown()
        scripted.server.server_close()
