"""A hand-written stdio MCP server of the 2025-06-18 revision (the ``initialize`` handshake
only) that asks by ``elicitation/create`` during a call, for ``test_input_outsider.py``.

``python input_outsider_legacy.py pair``: its tool ``ask`` holds the calls it is sent until two
are in flight, then asks one question (it belongs to the first call), and answers the first
call with what the user said and the second with ``second: nothing asked``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}
QUESTION = {
    "message": "May the first call delete its path?",
    "requestedSchema": {
        "type": "object",
        "properties": {"confirm": {"type": "boolean"}},
        "required": ["confirm"],
    },
}


def send(message: dict[str, Any]) -> None:
    print(json.dumps({"jsonrpc": "2.0", **message}), flush=True)


def text(value: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": value}]}


def pair() -> None:
    held: list[dict[str, Any]] = []
    for line in sys.stdin:
        message = json.loads(line)
        method = message.get("method")
        if "id" in message and method is None:  # the answer to our question
            first, second = held
            answer = message.get("result") or {}
            said = f"{answer.get('action')} {answer.get('content')}"
            path = (first["params"].get("arguments") or {}).get("path")
            send({"id": first["id"], "result": text(f"first ({path}): the user said {said}")})
            send({"id": second["id"], "result": text("second: nothing asked")})
            held.clear()
            continue
        if "id" not in message:
            continue  # a notification
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "legacy-pair", "version": "0"},
            }
        elif method == "tools/list":
            tool = {"name": "ask", "description": "Asks once two calls run.", "inputSchema": SCHEMA}
            result = {"tools": [tool]}
        elif method == "tools/call":
            held.append(message)
            if len(held) == 2:
                send({"id": "question-1", "method": "elicitation/create", "params": QUESTION})
            continue
        else:
            error = {"code": -32601, "message": f"Method not found: {method}"}
            send({"id": message["id"], "error": error})
            continue
        send({"id": message["id"], "result": result})


def single() -> None:
    """Lists ``a`` as ``input_outsider_servers.Scripted`` does by default, and answers each call
    of it at once (it asks nothing), saying what it was sent."""
    for line in sys.stdin:
        message = json.loads(line)
        method, params = message.get("method"), message.get("params") or {}
        if "id" not in message:
            continue
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "legacy-single", "version": "0"},
            }
        elif method == "tools/list":
            result = {"tools": [{"name": "a", "description": "The a tool.", "inputSchema": SCHEMA}]}
        elif method == "tools/call":
            sent = sorted(key for key in params if key not in ("name", "arguments", "_meta"))
            result = text(f"legacy ran a from scratch; also sent {sent}")
        else:
            error = {"code": -32601, "message": f"Method not found: {method}"}
            send({"id": message["id"], "error": error})
            continue
        send({"id": message["id"], "result": result})


def flood(times: int) -> None:
    """Lists ``ask``; a call of it asks ``times`` questions, one after another (each once the
    last is answered), then answers the call with how many it asked."""
    call: dict[str, Any] | None = None
    asked = 0
    for line in sys.stdin:
        message = json.loads(line)
        method = message.get("method")
        if "id" in message and method is None and call is not None:  # an answer
            asked += 1
            if asked < times:
                send({"id": f"q{asked}", "method": "elicitation/create", "params": QUESTION})
            else:
                send({"id": call["id"], "result": text(f"asked {asked} times")})
            continue
        if "id" not in message:
            continue
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "legacy-flood", "version": "0"},
            }
        elif method == "tools/list":
            tool = {"name": "ask", "description": "Asks and asks.", "inputSchema": SCHEMA}
            result = {"tools": [tool]}
        elif method == "tools/call":
            call, asked = message, 0
            send({"id": "q0", "method": "elicitation/create", "params": QUESTION})
            continue
        else:
            error = {"code": -32601, "message": f"Method not found: {method}"}
            send({"id": message["id"], "error": error})
            continue
        send({"id": message["id"], "result": result})


if __name__ == "__main__":
    if sys.argv[1] == "pair":
        pair()
    elif sys.argv[1] == "single":
        single()
    elif sys.argv[1] == "flood":
        flood(int(sys.argv[2]))
