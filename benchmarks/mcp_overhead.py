"""MCP hub overhead: the same calls on a bare ``mcp.Client``, through the hub's own tool (its
handler: per-server limit, error and result mapping), and through the whole governed pipeline
(``toolwire.execute_tool_calls`` on the hub: parsing a Gemini response, validation, policy, the
executor with the per-server timeout, building the answer), in process and over stdio.

- latency: one call at a time;
- client CPU: this process's CPU time per call (over stdio the server's own work is not in
  it, so this is what the hub costs on the client's side);
- throughput: 50 calls at once (one response with 50 calls for the hub; a task group of 50
  ``call_tool`` for the bare client).

Then the gateway (``toolwire.mcp.serve``): the same server's ``add`` called by a bare
``mcp.Client`` directly, and through a toolwire gateway in front of it (hub + governed
executor + MCP server), in process and over stdio (``toolwire serve stdio:...``): latency
one call at a time, throughput 50 calls at once.

Last, what authentication adds: the gateway serving a Python ``add`` over streamable HTTP on
loopback, without authentication and with JWT access tokens (RS256, checked against a JWKS
served on loopback, fetched once): as configured by default (an accepted token is remembered
for a minute) and with every request's token verified (``remember_seconds=0``), each called
by a bare ``mcp.Client``.

Then resource reads and prompt gets: the same server's resource read and prompt got by a bare
``mcp.Client`` directly and through the gateway in front of it (each read and get governed as
a call), in process and over stdio.

    python benchmarks/mcp_overhead.py [--calls 1000]
        [--gateway-only | --auth-only | --tasks-only | --offers-only] [--json FILE]

With ``--json FILE`` the figures are also written to FILE as JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import http.server
import json
import shlex
import statistics
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp

import toolwire
from toolwire.mcp import Hub, InProcessServer, StdioServer

sys.path.insert(0, str(Path(__file__).parent.parent / "tests" / "mcp_hub"))
from mcp_servers import catalogue

SERVERS = Path(__file__).parent.parent / "tests" / "mcp_hub" / "mcp_servers.py"
BATCH = 50
BLOCK = 20
# Figures by comparison name, for --json: {kind: {"us_per_call", "calls_per_s", ...}}.
FIGURES: dict[str, dict[str, dict[str, float]]] = {}


def response(n: int, first: int = 0) -> dict[str, Any]:
    parts = [
        {"functionCall": {"name": "s__add", "args": {"a": first + i, "b": 1}}} for i in range(n)
    ]
    return {"candidates": [{"content": {"parts": parts}}]}


async def bare_call(client: Any, i: int) -> None:
    await client.call_tool("add", {"a": i, "b": 1})


async def bare_batch(client: Any) -> None:
    async with anyio.create_task_group() as tasks:
        for i in range(BATCH):
            tasks.start_soon(client.call_tool, "add", {"a": i, "b": 1})


async def hub_tool_call(tool: toolwire.Tool, i: int) -> None:
    assert tool.handler is not None
    await tool.handler(a=i, b=1)


async def hub_tool_batch(tool: toolwire.Tool) -> None:
    async with anyio.create_task_group() as tasks:
        for i in range(BATCH):
            tasks.start_soon(hub_tool_call, tool, i)


async def hub_call(h: Hub, executor: toolwire.Executor, i: int) -> None:
    await toolwire.execute_tool_calls(h, "gemini", response(1, i), executor=executor)


async def hub_batch(h: Hub, executor: toolwire.Executor) -> None:
    outcome = await toolwire.execute_tool_calls(h, "gemini", response(BATCH), executor=executor)
    assert not any(call.result.is_error for call in outcome.calls)


async def timed(run: Any) -> tuple[float, float]:
    """Wall-clock seconds, and CPU seconds of this process (the client's side alone)."""
    start, cpu = time.perf_counter(), time.process_time()
    await run
    return time.perf_counter() - start, time.process_time() - cpu


async def compare(name: str, target: Any, spec: Any, calls: int) -> None:
    """Both connections stay open and the measurements alternate in short blocks, so the
    machine's drift hits both alike; medians over the blocks. (Blocks, not single calls: an
    in-process server finishes some work after its answer, which lands in the next call.)"""
    latency: dict[str, list[float]] = {"bare": [], "tool": [], "hub": []}
    cpu: dict[str, list[float]] = {"bare": [], "tool": [], "hub": []}
    batch: dict[str, list[float]] = {"bare": [], "tool": [], "hub": []}
    async with mcp.Client(target, mode="legacy", cache=None) as client, Hub({"s": spec}) as h:
        executor = toolwire.Executor(h.as_toolset(), max_concurrency=BATCH)
        tool = h.as_toolset()["s__add"]

        async def bare_block() -> None:
            for i in range(BLOCK):
                await bare_call(client, i)

        async def tool_block() -> None:
            for i in range(BLOCK):
                await hub_tool_call(tool, i)

        async def hub_block() -> None:
            for i in range(BLOCK):
                await hub_call(h, executor, i)

        for _ in range(max(1, calls // BLOCK)):
            for kind, block in (("bare", bare_block), ("tool", tool_block), ("hub", hub_block)):
                wall, busy = await timed(block())
                latency[kind].append(wall / BLOCK)
                cpu[kind].append(busy / BLOCK)
        for _ in range(max(5, calls // 100)):
            batch["bare"].append((await timed(bare_batch(client)))[0])
            batch["tool"].append((await timed(hub_tool_batch(tool)))[0])
            batch["hub"].append((await timed(hub_batch(h, executor)))[0])
    bare_latency, tool_latency, hub_latency = (
        statistics.median(latency[k]) for k in ("bare", "tool", "hub")
    )
    bare_cpu, tool_cpu, hub_cpu = (statistics.median(cpu[k]) for k in ("bare", "tool", "hub"))
    bare_rate, tool_rate, hub_rate = (
        BATCH / statistics.median(batch[k]) for k in ("bare", "tool", "hub")
    )
    print(f"{name}:")
    print(
        f"  bare mcp.Client   {bare_latency * 1e6:9.1f} us/call   {bare_rate:8.0f} calls/s   "
        f"client CPU {bare_cpu * 1e6:7.1f} us/call"
    )
    print(
        f"  hub tool          {tool_latency * 1e6:9.1f} us/call   {tool_rate:8.0f} calls/s   "
        f"client CPU {tool_cpu * 1e6:7.1f} us/call"
    )
    print(
        f"  hub + pipeline    {hub_latency * 1e6:9.1f} us/call   {hub_rate:8.0f} calls/s   "
        f"client CPU {hub_cpu * 1e6:7.1f} us/call"
    )
    print(
        f"  added by the hub: latency {tool_latency / bare_latency - 1:+.1%} "
        f"({(tool_latency - bare_latency) * 1e6:+.1f} us/call), throughput "
        f"{tool_rate / bare_rate - 1:+.1%}\n"
        f"  added by the hub and the governed pipeline: latency "
        f"{hub_latency / bare_latency - 1:+.1%} ({(hub_latency - bare_latency) * 1e6:+.1f} "
        f"us/call), throughput {hub_rate / bare_rate - 1:+.1%}"
    )
    FIGURES[name] = {
        "bare mcp.Client": {
            "us_per_call": bare_latency * 1e6,
            "calls_per_s": bare_rate,
            "client_cpu_us_per_call": bare_cpu * 1e6,
        },
        "hub tool": {
            "us_per_call": tool_latency * 1e6,
            "calls_per_s": tool_rate,
            "client_cpu_us_per_call": tool_cpu * 1e6,
        },
        "hub + pipeline": {
            "us_per_call": hub_latency * 1e6,
            "calls_per_s": hub_rate,
            "client_cpu_us_per_call": hub_cpu * 1e6,
        },
    }


async def _name_for(client: Any, operation: Any) -> str:
    """The name ``operation`` asks for (the ``add`` tool, or the ``summarize`` prompt), as
    ``client`` is listed it."""
    if operation is get_summarize:
        listing = await client.list_prompts()
        return next(p.name for p in listing.prompts if p.name.endswith("summarize"))
    if operation is read_today:
        return ""
    listing = await client.list_tools()
    return next(t.name for t in listing.tools if t.name.endswith("add"))


async def compare_gateway(name: str, direct: Any, gateway: Any, calls: int) -> None:
    """A bare client of the server against a bare client of a gateway in front of it; both
    open at once, alternating blocks, medians (as [`compare`][])."""
    await compare_clients(
        f"gateway, {name}", {"direct mcp.Client": direct, "through gateway": gateway}, calls
    )


async def call_add(client: Any, tool: str, i: int) -> None:
    result = await client.call_tool(tool, {"a": i, "b": 1})
    assert not result.is_error, result


async def read_today(client: Any, tool: str, i: int) -> None:
    assert (await client.read_resource("file:///notes/today.txt")).contents


async def get_summarize(client: Any, prompt: str, i: int) -> None:
    assert (await client.get_prompt(prompt, {"text": f"day {i}"})).messages


async def compare_clients(
    name: str,
    targets: dict[str, Any],
    calls: int,
    *,
    options: dict[str, dict[str, Any]] | None = None,
    operation: Any = call_add,
) -> None:
    """Bare clients of each of ``targets`` (label: what ``mcp.Client`` connects to, with
    ``options[label]``, a handshake-era client by default), all open at once, alternating
    blocks, medians (as [`compare`][]); each compared with the first. Each request is
    ``operation(client, name, i)`` (by default a call of the ``add`` tool; the name is the
    one it is listed under). The CPU time is this process's: the client's, and an in-process
    server's too."""
    latency: dict[str, list[float]] = {label: [] for label in targets}
    cpu: dict[str, list[float]] = {label: [] for label in targets}
    batch: dict[str, list[float]] = {label: [] for label in targets}
    async with contextlib.AsyncExitStack() as stack:
        clients = {}
        for label, target in targets.items():
            given = {"mode": "legacy", **(options or {}).get(label, {})}
            client = await stack.enter_async_context(mcp.Client(target, cache=None, **given))
            clients[label] = (client, await _name_for(client, operation))

        async def block(kind: str) -> None:
            client, tool = clients[kind]
            for i in range(BLOCK):
                await operation(client, tool, i)

        async def burst(kind: str) -> None:
            client, tool = clients[kind]
            async with anyio.create_task_group() as tasks:
                for i in range(BATCH):
                    tasks.start_soon(operation, client, tool, i)

        for _ in range(max(1, calls // BLOCK)):
            for kind in latency:
                wall, busy = await timed(block(kind))
                latency[kind].append(wall / BLOCK)
                cpu[kind].append(busy / BLOCK)
        for _ in range(max(5, calls // 100)):
            for kind in batch:
                batch[kind].append((await timed(burst(kind)))[0])
    took = {label: statistics.median(latency[label]) for label in targets}
    busy = {label: statistics.median(cpu[label]) for label in targets}
    rate = {label: BATCH / statistics.median(batch[label]) for label in targets}
    width = max(len(label) for label in targets)
    print(f"{name}:")
    for label in targets:
        print(
            f"  {label:<{width}} {took[label] * 1e6:9.1f} us/call   {rate[label]:8.0f} calls/s   "
            f"CPU {busy[label] * 1e6:7.1f} us/call"
        )
    base, *others = targets
    for label in others:
        print(
            f"  added by {label!r} over {base!r}: latency {took[label] / took[base] - 1:+.1%} "
            f"({(took[label] - took[base]) * 1e6:+.1f} us/call), throughput "
            f"{rate[label] / rate[base] - 1:+.1%}, CPU {busy[label] / busy[base] - 1:+.1%} "
            f"({(busy[label] - busy[base]) * 1e6:+.1f} us/call)"
        )
    print()
    FIGURES[name] = {
        label: {
            "us_per_call": took[label] * 1e6,
            "calls_per_s": rate[label],
            "client_cpu_us_per_call": busy[label] * 1e6,
        }
        for label in targets
    }


async def gateway_async(calls: int) -> None:
    from toolwire.mcp import Gateway

    @toolwire.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    # One MCP hop each: the SDK's own server against the gateway serving the same function.
    python_tools = Gateway(toolwire.ToolSet([add]), max_concurrency=BATCH).server()
    await compare_gateway("in process, a Python tool", catalogue(), python_tools, calls)
    # Two hops through the gateway: its server, then its hub's client of the server.
    async with Hub({"s": InProcessServer(server=catalogue(), max_concurrency=BATCH)}) as h:
        gateway = Gateway(h.as_toolset(), max_concurrency=BATCH)
        in_front = gateway.server()
        await compare_gateway("in process, in front of the server", catalogue(), in_front, calls)
    stdio = [sys.executable, str(SERVERS), "catalogue"]
    served = [sys.executable, "-m", "toolwire.cli", "serve", "stdio:" + shlex.join(stdio)]
    await compare_gateway(
        "stdio, in front of the server (toolwire serve stdio:...)",
        mcp.StdioServerParameters(command=stdio[0], args=stdio[1:]),
        mcp.StdioServerParameters(command=served[0], args=served[1:]),
        calls,
    )


async def offers_async(calls: int) -> None:
    """A resource read and a prompt get, directly and through the gateway in front of the
    server (every read and get governed as a call), in process and over stdio."""
    from toolwire.mcp import Gateway

    stdio = [sys.executable, str(SERVERS), "catalogue"]
    served = [sys.executable, "-m", "toolwire.cli", "serve", "stdio:" + shlex.join(stdio)]
    async with Hub({"s": InProcessServer(server=catalogue(), max_concurrency=BATCH)}) as h:
        in_front = Gateway(h.as_toolset(), hub=h, max_concurrency=BATCH).server()
        for what, operation in (("resources/read", read_today), ("prompts/get", get_summarize)):
            targets = {"direct mcp.Client": catalogue(), "through gateway": in_front}
            await compare_clients(
                f"gateway, in process, {what}", targets, calls, operation=operation
            )
            stdio_targets = {
                "direct mcp.Client": mcp.StdioServerParameters(command=stdio[0], args=stdio[1:]),
                "through gateway": mcp.StdioServerParameters(command=served[0], args=served[1:]),
            }
            await compare_clients(
                f"gateway, stdio, {what}", stdio_targets, calls, operation=operation
            )


@contextlib.contextmanager
def _jwks_served(jwks: dict[str, Any]) -> Iterator[str]:
    """``jwks`` served over HTTP on 127.0.0.1 by a thread; yields its URL."""
    body = json.dumps(jwks).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/jwks.json"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.asynccontextmanager
async def _http_gateway(tasks: Any, source: Any, **options: Any) -> AsyncIterator[str]:
    """``source`` served by ``toolwire.mcp.serve`` over HTTP on loopback; yields its URL."""
    from toolwire.mcp import serve

    urls: list[str] = []
    listening = anyio.Event()

    def on_listening(url: str) -> None:
        urls.append(url)
        listening.set()

    async def serving() -> None:
        await serve(source, transport="http", port=0, on_listening=on_listening, **options)

    tasks.start_soon(serving)
    await listening.wait()
    yield urls[0]


async def gateway_auth_async(calls: int) -> None:
    """The gateway over HTTP without and with authentication (JWT, RS256)."""
    import httpx2
    import jwt
    from cryptography.hazmat.primitives.asymmetric import rsa
    from jwt.algorithms import RSAAlgorithm
    from mcp.client.streamable_http import streamable_http_client

    from toolwire.mcp import Authentication, JwtVerifier

    @toolwire.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = {**RSAAlgorithm.to_jwk(key.public_key(), as_dict=True), "kid": "k1", "use": "sig"}
    audience = "https://tools.example.com/mcp"
    with _jwks_served({"keys": [jwk]}) as jwks_url:
        issuer = jwks_url.removesuffix("/jwks.json")
        now = int(time.time())
        claims = {"iss": issuer, "aud": audience, "sub": "bench", "iat": now, "exp": now + 7200}
        token = jwt.encode(claims, key, algorithm="RS256", headers={"kid": "k1"})
        verifier = JwtVerifier(jwks_url, issuer=issuer, audience=audience)
        auth = Authentication(verifier)  # a token accepted is remembered for a minute
        every = Authentication(verifier, remember_seconds=0)  # its signature checked each time
        bearer = {"authorization": f"Bearer {token}"}
        async with anyio.create_task_group() as tasks:
            async with (
                _http_gateway(tasks, [add], max_concurrency=BATCH) as open_url,
                _http_gateway(tasks, [add], max_concurrency=BATCH, auth=auth) as auth_url,
                _http_gateway(tasks, [add], max_concurrency=BATCH, auth=every) as every_url,
                httpx2.AsyncClient() as plain,
                httpx2.AsyncClient(headers=bearer) as authenticated,
                httpx2.AsyncClient(headers=bearer) as checked,
            ):
                targets = {
                    "through gateway": streamable_http_client(open_url, http_client=plain),
                    "through gateway, authenticated (JWT)": streamable_http_client(
                        auth_url, http_client=authenticated
                    ),
                    "through gateway, authenticated (JWT), each request verified": (
                        streamable_http_client(every_url, http_client=checked)
                    ),
                }
                await compare_clients(
                    "gateway, HTTP on loopback, a Python tool: without and with authentication",
                    targets,
                    calls,
                )
            tasks.cancel_scope.cancel()


async def gateway_tasks_async(calls: int) -> None:
    """What serving tasks adds to a call answered at once: a 2026-07-28 client that declares
    the tasks extension (each of its calls kept in a run of the store, any of them may become
    a task) against one that does not, on one gateway over HTTP, with a memory and a SQLite
    store."""
    import tempfile

    import httpx2
    from mcp.client.extension import advertise
    from mcp.client.streamable_http import streamable_http_client

    @toolwire.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    tasks_declared = {
        "mode": "auto",
        "extensions": [advertise("io.modelcontextprotocol/tasks", {})],
    }
    with tempfile.TemporaryDirectory() as work:
        sqlite = toolwire.SQLiteStore(f"{work}/runs.db")
        async with anyio.create_task_group() as tasks:
            async with (
                _http_gateway(tasks, [add], max_concurrency=BATCH) as memory_url,
                _http_gateway(tasks, [add], max_concurrency=BATCH, store=sqlite) as sqlite_url,
                httpx2.AsyncClient() as h1,
                httpx2.AsyncClient() as h2,
                httpx2.AsyncClient() as h3,
                httpx2.AsyncClient() as h4,
            ):
                for store, url, plain, declaring in (
                    ("memory store", memory_url, h1, h2),
                    ("SQLite store", sqlite_url, h3, h4),
                ):
                    await compare_clients(
                        f"gateway, HTTP on loopback, a Python tool, {store}: tasks declared or not",
                        {
                            "2026-07-28 client": streamable_http_client(url, http_client=plain),
                            "2026-07-28 client declaring tasks": streamable_http_client(
                                url, http_client=declaring
                            ),
                        },
                        calls,
                        options={
                            "2026-07-28 client": {"mode": "auto"},
                            "2026-07-28 client declaring tasks": tasks_declared,
                        },
                    )
            tasks.cancel_scope.cancel()
        sqlite.close()


async def main_async(
    calls: int,
    gateway_only: bool = False,
    auth_only: bool = False,
    tasks_only: bool = False,
    offers_only: bool = False,
) -> None:
    stdio = [sys.executable, str(SERVERS), "catalogue"]
    print(f"{calls} calls one at a time (blocks of {BLOCK}), then batches of {BATCH}; medians\n")
    if auth_only:
        await gateway_auth_async(calls)
        return
    if tasks_only:
        await gateway_tasks_async(calls)
        return
    if offers_only:
        await offers_async(calls)
        return
    if gateway_only:
        await gateway_async(calls)
        await gateway_auth_async(calls)
        await gateway_tasks_async(calls)
        await offers_async(calls)
        return
    await compare(
        "in process",
        catalogue(),
        InProcessServer(server=catalogue(), max_concurrency=BATCH),
        calls,
    )
    await compare(
        "stdio",
        mcp.StdioServerParameters(command=stdio[0], args=stdio[1:]),
        StdioServer(command=stdio[0], args=stdio[1:], max_concurrency=BATCH),
        calls,
    )
    await gateway_async(calls)
    await gateway_auth_async(calls)
    await gateway_tasks_async(calls)
    await offers_async(calls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--gateway-only", action="store_true", help="only the gateway figures")
    parser.add_argument(
        "--auth-only", action="store_true", help="only what the gateway's authentication adds"
    )
    parser.add_argument(
        "--tasks-only", action="store_true", help="only what serving tasks adds to a call"
    )
    parser.add_argument(
        "--offers-only",
        action="store_true",
        help="only resource reads and prompt gets, directly and through the gateway",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE as JSON")
    args = parser.parse_args()
    anyio.run(
        main_async,
        args.calls,
        args.gateway_only,
        args.auth_only,
        args.tasks_only,
        args.offers_only,
    )
    if args.json is not None:
        figures = {"calls": args.calls, "block": BLOCK, "batch": BATCH, "comparisons": FIGURES}
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(figures, f, indent=2)


if __name__ == "__main__":
    main()
