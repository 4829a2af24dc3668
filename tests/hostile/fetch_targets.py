"""What the no-retrieval tests need: a loopback HTTP server that counts every connection, a
secret on disk, schemas that name them, and each provider's response holding calls."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

SECRET = "TOP-SECRET-7f3a9c"
"""In the secret file, and in every document the HTTP server serves: if it is ever in an
answer or an error, something was read."""


@dataclass
class Target:
    """The places a hostile schema points to."""

    port: int
    secret_file: Path
    connections: list[str] = field(default_factory=list)
    """One entry per connection the HTTP server accepted (a request or a TLS hello)."""

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"


class _Counting(ThreadingHTTPServer):
    daemon_threads = True
    target: Target

    def verify_request(self, request: Any, client_address: Any) -> bool:
        self.target.connections.append(str(client_address))
        return True


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = json.dumps({"enum": [SECRET], "description": SECRET}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/schema+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def serving(tmp_path: Path) -> Iterator[Target]:
    """A counting HTTP server on 127.0.0.1 and a secret file, for the block."""
    secret_file = tmp_path / "secret.json"
    secret_file.write_text(json.dumps({"enum": [SECRET], "description": SECRET}))
    server = _Counting(("127.0.0.1", 0), _Handler)
    target = Target(port=server.server_address[1], secret_file=secret_file)
    server.target = target
    # A short poll: shutdown() waits for the serving loop to look up.
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield target
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def hostile_schemas(target: Target) -> dict[str, dict[str, Any]]:
    """Input schemas whose property ``q`` (or the whole schema) names another document."""
    http, secret = target.http, target.secret_file.as_uri()

    def at_q(sub: dict[str, Any], **root: Any) -> dict[str, Any]:
        return {"type": "object", "properties": {"q": sub}, **root}

    return {
        "http ref": at_q({"$ref": f"{http}/schema.json"}),
        "http ref with a pointer": at_q({"$ref": f"{http}/schema.json#/definitions/x"}),
        "http ref to an anchor": at_q({"$ref": f"{http}/schema.json#thing"}),
        "https ref": at_q({"$ref": f"https://127.0.0.1:{target.port}/schema.json"}),
        "network-path ref": at_q({"$ref": f"//127.0.0.1:{target.port}/schema.json"}),
        "file ref to a secret": at_q({"$ref": secret}),
        "file ref to a pointer in a secret": at_q({"$ref": f"{secret}#/enum"}),
        "file ref to /dev/zero": at_q({"$ref": "file:///dev/zero"}),
        "relative ref (no $id)": at_q({"$ref": "secret.json"}),
        "urn ref": at_q({"$ref": "urn:example:secret"}),
        "ref with siblings": at_q({"$ref": f"{http}/schema.json", "type": "string"}),
        "relative ref under a remote $id": at_q(
            {"$ref": "other.json"}, **{"$id": f"{http}/r.json"}
        ),
        "relative ref under a file $id": at_q(
            {"$ref": "secret.json"}, **{"$id": target.secret_file.parent.as_uri() + "/root.json"}
        ),
        "nested $id": at_q({"$id": f"{http}/nested/", "$ref": "deeper.json"}),
        "remote $schema": at_q({"type": "string"}, **{"$schema": f"{http}/meta-schema"}),
        "remote $schema in a subschema": at_q({"$schema": f"{http}/meta", "type": "string"}),
        "dynamic ref": at_q({"$dynamicRef": f"{http}/schema.json#meta"}),
        "ref inside $defs": at_q(
            {"$ref": "#/$defs/remote"}, **{"$defs": {"remote": {"$ref": f"{http}/d.json"}}}
        ),
        "ref in items": at_q({"type": "array", "items": {"$ref": f"{http}/item.json"}}),
        "ref in patternProperties": at_q(
            {"type": "object", "patternProperties": {"^x": {"$ref": secret}}}
        ),
        "ref in an unknown keyword, pointed to": at_q(
            {"$ref": "#/x-parts/0"}, **{"x-parts": [{"$ref": f"{http}/part.json"}]}
        ),
        "root ref": {"type": "object", "$ref": f"{http}/root.json"},
        "root allOf ref": {"type": "object", "allOf": [{"$ref": f"{http}/base.json"}]},
    }


def references(value: Any) -> list[str]:
    """Every ``$ref``/``$dynamicRef``/``ref`` string anywhere in ``value``."""
    found: list[str] = []
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, item in node.items():
                if key in ("$ref", "$dynamicRef", "ref") and isinstance(item, str):
                    found.append(item)
                stack.append(item)
        elif isinstance(node, list):
            stack.extend(node)
    return found
