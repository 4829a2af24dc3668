"""A 2026-07-28 client of a gateway's tasks (``io.modelcontextprotocol/tasks``), spoken as raw
JSON-RPC over streamable HTTP: what the task tests (and the attacks on tasks) drive gateways
with."""

from __future__ import annotations

import itertools
import json
from typing import Any

import anyio
import httpx2
import mcp_types as types

__all__ = ["EXTENSION", "MODERN", "Client", "_result", "_text"]

MODERN = "2026-07-28"
EXTENSION = "io.modelcontextprotocol/tasks"


class Client:
    """A 2026-07-28 client of one gateway: each request carries its version, capabilities and
    info in its ``_meta`` and the routing headers (as the ``mcp`` SDK's client sends them)."""

    _ids = itertools.count(1)

    def __init__(
        self, http: httpx2.AsyncClient, url: str, *, tasks: bool = True, elicit: bool = False
    ) -> None:
        self.http, self.url = http, url
        capabilities: dict[str, Any] = {}
        if tasks:
            capabilities["extensions"] = {EXTENSION: {}}
        if elicit:
            capabilities["elicitation"] = {}
        self.capabilities = capabilities

    async def request(self, method: str, params: dict[str, Any], name: str) -> dict[str, Any]:
        """The JSON-RPC answer (``result`` or ``error``) to one request."""
        number = next(self._ids)
        meta = {
            types.PROTOCOL_VERSION_META_KEY: MODERN,
            types.CLIENT_CAPABILITIES_META_KEY: self.capabilities,
            types.CLIENT_INFO_META_KEY: {"name": "tasks-test", "version": "1"},
        }
        body = {
            "jsonrpc": "2.0",
            "id": number,
            "method": method,
            "params": {**params, "_meta": meta},
        }
        headers = {
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
            "mcp-protocol-version": MODERN,
            "mcp-method": method,
            "mcp-name": name,
        }
        answer = await self.http.post(self.url, json=body, headers=headers)
        for message in _messages(answer):
            if message.get("id") == number and ("result" in message or "error" in message):
                return message
        raise AssertionError(f"no answer to {method}: {answer.status_code} {answer.text!r}")

    async def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        return _result(
            await self.request("tools/call", {"name": tool, "arguments": arguments}, tool)
        )

    async def task(self, method: str, task_id: str, **params: Any) -> dict[str, Any]:
        """The JSON-RPC answer to ``tasks/<method>`` of ``task_id``."""
        return await self.request(f"tasks/{method}", {"taskId": task_id, **params}, task_id)

    async def get(self, task_id: str) -> dict[str, Any]:
        return _result(await self.task("get", task_id))

    async def until(self, task_id: str, *statuses: str) -> dict[str, Any]:
        """``tasks/get`` polled until the task's status is one of ``statuses``."""
        while True:
            task = await self.get(task_id)
            if task["status"] in statuses:
                return task
            assert task["status"] in ("working", "input_required"), task
            await anyio.sleep(0.05)


def _messages(answer: Any) -> list[dict[str, Any]]:
    """The JSON-RPC messages of an answer: a JSON body, or a server-sent-events stream."""
    if answer.headers.get("content-type", "").startswith("text/event-stream"):
        lines = answer.text.splitlines()
        return [json.loads(line[5:]) for line in lines if line.startswith("data:")]
    if not answer.content:
        return []
    found = answer.json()
    return found if isinstance(found, list) else [found]


def _result(message: dict[str, Any]) -> dict[str, Any]:
    assert "result" in message, message
    result = message["result"]
    assert isinstance(result, dict)
    return result


def _text(result: dict[str, Any]) -> str:
    return "".join(part.get("text", "") for part in result["content"])
