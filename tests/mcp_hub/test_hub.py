"""The hub against real MCP servers (the SDK's MCPServer), in process and over stdio."""

from __future__ import annotations

import base64
import logging
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

import toolwire
from toolwire import ImageContent

pytest.importorskip("mcp")
from mcp_servers import PNG, catalogue

from toolwire.mcp import HttpServer, Hub, InProcessServer, StdioServer

pytestmark = pytest.mark.anyio
SERVERS = Path(__file__).parent / "mcp_servers.py"


def stdio(name: str, **options: Any) -> StdioServer:
    return StdioServer(command=sys.executable, args=[str(SERVERS), name], **options)


def gemini_calls(*calls: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"functionCall": {"name": n, "args": a, "id": f"c{i}"}} for i, (n, a) in enumerate(calls)
    ]


async def test_tools_are_namespaced_per_server() -> None:
    async with Hub(
        {
            "shop": InProcessServer(server=catalogue()),
            "other": InProcessServer(server=catalogue(), include=["add"]),
        }
    ) as hub:
        names = toolwire.tools(hub, "gemini").toolset.exposed_names
    assert "shop__add" in names
    assert "shop__picture" in names
    assert [n for n in names if n.startswith("other__")] == ["other__add"]


async def test_every_content_type_and_error_is_mapped() -> None:
    async with Hub({"shop": InProcessServer(server=catalogue(), timeout=0.5)}) as hub:
        outcome = await toolwire.execute_tool_calls(
            hub,
            "gemini",
            gemini_calls(
                ("shop__add", {"a": 2, "b": 3}),
                ("shop__picture", {}),
                ("shop__sound", {}),
                ("shop__documents", {}),
                ("shop__refuse", {"reason": "no"}),
                ("shop__nap", {"seconds": 30}),
            ),
        )
    results = [c.result for c in outcome.calls]
    assert results[0].structured_content == {"result": 5}
    assert outcome.results[0]["functionResponse"]["response"] == {"output": {"result": 5}}
    assert results[1].content == (ImageContent(PNG, "image/png"),)
    assert results[2].content[0].mime_type == "audio/wav"  # type: ignore[union-attr]
    assert (
        results[3].text == "two documents\n[resource link: file:///a.txt (a.txt, text/plain)]"
        "\n[resource: file:///b.txt]\nhello b"
    )
    assert results[4].error_kind == "failed"
    assert results[4].text == "Error executing tool refuse: refused: no"
    assert results[5].error_kind == "timeout"


async def test_a_timed_out_call_is_cancelled_on_the_server_too() -> None:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("slow")
    started, stopped = anyio.Event(), anyio.Event()

    @server.tool(description="Waits until cancelled.")
    async def hang() -> str:
        started.set()
        try:
            await anyio.sleep(60)
        finally:
            stopped.set()  # the server's handler was cancelled: the work stops
        return "never"

    async with Hub({"slow": InProcessServer(server=server, timeout=0.3)}) as hub:
        # The hub times out a call that goes quiet; the executor applies only the cap.
        assert hub.as_toolset()["slow__hang"].timeout == 600
        with anyio.fail_after(10):
            outcome = await toolwire.execute_tool_calls(
                hub, "gemini", gemini_calls(("slow__hang", {}))
            )
            await stopped.wait()
        assert started.is_set()
        assert outcome.calls[0].result.error_kind == "timeout"
        # A slow tool is not a hung server: it answers a probe, and stays up.
        assert await hub.check("slow")
        assert hub.status == {"slow": None}
        with pytest.raises(toolwire.ConfigurationError, match="no server 'nope'"):
            await hub.check("nope")


async def test_list_changed_refreshes_the_tools() -> None:
    async with Hub({"shop": InProcessServer(server=catalogue())}) as hub:
        assert "shop__fresh" not in hub.as_toolset()
        await toolwire.execute_tool_calls(hub, "gemini", gemini_calls(("shop__grow", {})))
        with anyio.fail_after(5):
            while "shop__fresh" not in hub.as_toolset():
                await anyio.sleep(0.01)
        # A tool that appears after the first listing is new: not trusted until approved.
        assert hub.as_toolset()["shop__fresh"].needs_approval
        hub.approve_definition("shop__fresh")
        outcome = await toolwire.execute_tool_calls(
            hub, "gemini", gemini_calls(("shop__fresh", {}))
        )
    assert outcome.results[0]["functionResponse"]["response"] == {"output": {"result": "fresh"}}


async def test_a_server_that_fails_to_start_is_down_and_the_others_work() -> None:
    broken = StdioServer(command=sys.executable, args=["-c", "raise SystemExit(1)"])
    async with Hub({"broken": broken, "shop": InProcessServer(server=catalogue())}) as hub:
        assert hub.status["broken"] is not None
        assert hub.status["shop"] is None
        names = hub.as_toolset().exposed_names
        assert not any(n.startswith("broken__") for n in names)
        outcome = await toolwire.execute_tool_calls(
            hub, "gemini", gemini_calls(("shop__add", {"a": 1, "b": 1}), ("broken__anything", {}))
        )
    assert outcome.calls[0].result.text == "2"
    assert outcome.calls[1].result.error_kind == "not_found"


async def test_over_stdio_a_server_killed_mid_call_is_answered_and_reconnected() -> None:
    async with Hub({"crash": stdio("crasher"), "shop": stdio("catalogue")}) as hub:
        assert hub.status == {"crash": None, "shop": None}
        with anyio.fail_after(30):
            outcome = await toolwire.execute_tool_calls(
                hub,
                "anthropic",
                {
                    "content": [
                        {"type": "tool_use", "id": "t1", "name": "crash__die", "input": {}},
                        {
                            "type": "tool_use",
                            "id": "t2",
                            "name": "shop__add",
                            "input": {"a": 4, "b": 5},
                        },
                    ]
                },
            )
        assert outcome.results[0]["is_error"] is True
        assert outcome.calls[0].result.error_kind == "unavailable"
        assert outcome.results[1] == {"type": "tool_result", "tool_use_id": "t2", "content": "9"}
        with anyio.fail_after(30):  # the hub reconnects the crashed server by itself
            while hub.status["crash"] is not None or "crash__echo" not in hub.as_toolset():
                await anyio.sleep(0.05)
            again = await toolwire.execute_tool_calls(
                hub, "gemini", gemini_calls(("crash__echo", {"text": "back"}))
            )
    assert again.results[0]["functionResponse"]["response"] == {"output": {"result": "back"}}


async def test_over_stdio_a_hung_server_is_marked_down_and_reconnected() -> None:
    hung = stdio("crasher", timeout=0.5, probe_timeout=0.5)
    async with Hub({"crash": hung, "shop": stdio("catalogue")}) as hub:
        with anyio.fail_after(30):
            outcome = await toolwire.execute_tool_calls(
                hub,
                "gemini",
                gemini_calls(("crash__freeze", {}), ("shop__add", {"a": 1, "b": 2})),
            )
            assert [c.result.error_kind for c in outcome.calls] == ["timeout", None]
            # The abandoned call made the hub probe the server: no answer, so it is down...
            while hub.status["crash"] is None:
                await anyio.sleep(0.02)
            assert "did not answer a probe within 0.5 s" in (hub.status["crash"] or "")
            assert hub.status["shop"] is None
            # ...and reconnected (a new process; the hung one is stopped).
            while hub.status["crash"] is not None or "crash__echo" not in hub.as_toolset():
                await anyio.sleep(0.05)
            again = await toolwire.execute_tool_calls(
                hub, "gemini", gemini_calls(("crash__echo", {"text": "back"}))
            )
            assert await hub.check("crash")
    assert again.results[0]["functionResponse"]["response"] == {"output": {"result": "back"}}


async def test_over_stdio_a_server_answering_garbage_is_answered_and_stays_up() -> None:
    async with Hub({"bad": stdio("garbled"), "shop": stdio("catalogue")}) as hub:
        assert "bad__echo" in hub.as_toolset()
        with anyio.fail_after(30):
            outcome = await toolwire.execute_tool_calls(
                hub,
                "gemini",
                gemini_calls(("bad__echo", {"text": "hi"}), ("shop__add", {"a": 1, "b": 2})),
            )
        bad, good = (c.result for c in outcome.calls)
        # A malformed answer over a sound connection is that call's failure, not an outage.
        assert bad.error_kind == "failed"
        assert bad.text.startswith("Tool 'bad__echo' answered with a malformed result: content")
        assert "Traceback" not in bad.text
        assert good.text == "3"
        assert hub.status == {"bad": None, "shop": None}


async def test_gemini_and_anthropic_answers_from_two_servers() -> None:
    async with Hub(
        {"a": InProcessServer(server=catalogue()), "b": InProcessServer(server=catalogue())}
    ) as hub:
        gemini = await toolwire.execute_tool_calls(
            hub,
            "gemini",
            gemini_calls(("a__add", {"a": 1, "b": 2}), ("b__picture", {})),
            media="parts",
        )
        anthropic = await toolwire.execute_tool_calls(
            hub,
            "anthropic",
            {"content": [{"type": "tool_use", "id": "x", "name": "b__picture", "input": {}}]},
        )
    assert gemini.results[0]["functionResponse"]["response"] == {"output": {"result": 3}}
    assert gemini.results[1]["functionResponse"]["parts"][0]["inlineData"]["data"] == (
        base64.b64encode(PNG).decode()
    )
    assert anthropic.results[0]["content"][0]["type"] == "image"


def test_config_loader() -> None:
    hub = Hub.from_config(
        {
            "mcpServers": {
                "files": {"command": "mcp-files", "args": ["--root", "/tmp"], "env": {"A": "1"}},
                "web": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer x"}},
            }
        }
    )
    assert set(hub.status) == {"files", "web"}
    with pytest.raises(toolwire.ConfigurationError):
        Hub.from_config({"mcpServers": {"bad": {"nothing": True}}})
    with pytest.raises(toolwire.ConfigurationError):
        Hub.from_config({"servers": {}})
    for limits in ({"max_concurrency": 0}, {"timeout": 0}, {"timeout": -1.0}):
        with pytest.raises(toolwire.ConfigurationError):
            Hub({"s": InProcessServer(server=catalogue(), **limits)})


@pytest.fixture
def http_server() -> Any:
    import socket
    import subprocess

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, str(SERVERS), "catalogue", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        with anyio.from_thread.start_blocking_portal() as portal:
            portal.call(_wait_for_port, port)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


async def _wait_for_port(port: int) -> None:
    with anyio.fail_after(20):
        while True:
            try:
                stream = await anyio.connect_tcp("127.0.0.1", port)
            except OSError:
                await anyio.sleep(0.05)
                continue
            await stream.aclose()
            return


async def test_over_streamable_http_on_loopback(http_server: str) -> None:
    spec = HttpServer(url=http_server, headers={"X-Toolwire-Test": "1"})
    async with Hub({"web": spec}) as hub:
        assert hub.status == {"web": None}
        outcome = await toolwire.execute_tool_calls(
            hub,
            "openai-chat",
            {
                "choices": [
                    {
                        "message": {
                            "role": "assistant",
                            "tool_calls": [
                                {
                                    "id": "c1",
                                    "type": "function",
                                    "function": {
                                        "name": "web__add",
                                        "arguments": '{"a": 20, "b": 22}',
                                    },
                                }
                            ],
                        }
                    }
                ]
            },
        )
    assert outcome.results == [{"role": "tool", "tool_call_id": "c1", "content": "42"}]


async def test_a_key_in_a_servers_url_is_in_no_log_record_of_a_hub_without_oauth(
    http_server: str, caplog: pytest.LogCaptureFixture
) -> None:
    # The HTTP client logs each request's URL at INFO; a hub with no OAuth server logged the
    # key in the query in clear (the filter came only with the OAuth code).
    caplog.set_level(logging.INFO)
    secret = "url-key-0123456789"
    async with Hub({"web": HttpServer(url=f"{http_server}?api_key={secret}")}) as hub:
        assert hub.status == {"web": None}
        outcome = await toolwire.execute_tool_calls(
            hub, "gemini", gemini_calls(("web__add", {"a": 1, "b": 2}))
        )
    assert outcome.calls[0].result.text == "3"
    assert any(record.name == "httpx2" for record in caplog.records)  # the requests were logged
    shown = caplog.text + "".join(record.getMessage() for record in caplog.records)
    assert secret not in shown
    assert "/mcp?***" in shown


async def test_a_server_that_never_starts_does_not_hold_the_hub_up() -> None:
    silent = StdioServer(  # prints garbage, then never answers the handshake
        command=sys.executable,
        args=["-c", "import time; print('garbage', flush=True); time.sleep(60)"],
        connect_timeout=1.0,
    )
    with anyio.fail_after(20):
        async with Hub({"silent": silent, "shop": InProcessServer(server=catalogue())}) as hub:
            assert hub.status["shop"] is None
            assert hub.status["silent"] is not None
            outcome = await toolwire.execute_tool_calls(
                hub, "gemini", gemini_calls(("shop__add", {"a": 1, "b": 2}))
            )
    assert outcome.calls[0].result.text == "3"


async def test_a_tool_whose_definition_changed_must_be_approved_again() -> None:
    asked: list[str] = []

    def approve(request: toolwire.ApprovalRequest) -> toolwire.Decision:
        asked.append(request.exposed_name)
        return toolwire.allow()

    async with Hub({"shop": InProcessServer(server=catalogue())}) as hub:
        executor_options = {"approver": toolwire.CallbackApproval(approve)}
        call = gemini_calls(("shop__victim", {"city": "Oslo"}))
        await toolwire.execute_tool_calls(hub, "gemini", call, **executor_options)
        assert asked == []  # trusted as first seen
        await toolwire.execute_tool_calls(hub, "gemini", gemini_calls(("shop__rugpull", {})))
        with anyio.fail_after(5):
            while not hub.as_toolset()["shop__victim"].needs_approval:
                await anyio.sleep(0.01)
        assert "ssh" in (hub.as_toolset()["shop__victim"].description or "")
        outcome = await toolwire.execute_tool_calls(hub, "gemini", call, **executor_options)
        assert asked == ["shop__victim"]
        assert outcome.calls[0].result.text == "sunny in Oslo"
        hub.approve_definition("shop__victim")
        await toolwire.execute_tool_calls(hub, "gemini", call, **executor_options)
    assert asked == ["shop__victim"]  # approved definition: no more asking


async def test_listing_follows_pages_and_survives_a_repeated_cursor() -> None:
    from mcp_servers import paginated

    async with Hub(
        {
            "big": InProcessServer(server=paginated(25, 10)),
            "loop": InProcessServer(server=paginated(25, 10, repeat_cursor=True)),
        }
    ) as hub:
        names = hub.as_toolset().exposed_names
        outcome = await toolwire.execute_tool_calls(hub, "gemini", gemini_calls(("big__t24", {})))
    assert [n for n in names if n.startswith("big__")] == [f"big__t{i}" for i in range(25)]
    # The looping server's first page twice, then the guard stops: no hang, no duplicates.
    assert [n for n in names if n.startswith("loop__")] == [f"loop__t{i}" for i in range(10)]
    assert outcome.results[0]["functionResponse"]["response"] == {"output": "t24"}


async def test_arguments_named_like_the_hubs_own_parameters_reach_the_server() -> None:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("odd")

    @server.tool(description="Echo.")
    def echo(server: str, name: str, self: str) -> str:
        return f"{server}/{name}/{self}"

    async with Hub({"odd": InProcessServer(server=server)}) as hub:
        outcome = await toolwire.execute_tool_calls(
            hub,
            "gemini",
            gemini_calls(("odd__echo", {"server": "a", "name": "b", "self": "c"})),
        )
    assert outcome.calls[0].result.content[0].text == "a/b/c"


async def test_an_error_inside_the_hub_block_propagates_unwrapped() -> None:
    with pytest.raises(toolwire.ToolNotFound):
        async with Hub({"shop": InProcessServer(server=catalogue())}) as hub:
            hub.as_toolset()["shop__missing"]


async def test_a_server_declared_trusted_gives_trusted_output_and_others_do_not() -> None:
    servers = {
        "mine": InProcessServer(server=catalogue(), trusted=True),
        "theirs": InProcessServer(server=catalogue()),
    }
    async with Hub(servers) as hub:
        listing = toolwire.tools(hub, "gemini")
        tools = {tool.server_id: tool for tool in listing.toolset.tools if tool.name == "add"}
        assert tools["mine"].trusted
        assert not tools["theirs"].trusted
        outcome = await toolwire.execute_tool_calls(
            listing,
            {"candidates": [{"content": {"role": "model", "parts": [
                {"functionCall": {"name": "mine__add", "args": {"a": 40000, "b": 2}, "id": "m"}},
                {"functionCall": {"name": "theirs__add", "args": {"a": 50000, "b": 1}, "id": "t"}},
            ]}}]},
            trusted=[],
        )  # fmt: skip
    assert outcome.provenance is not None
    origins = outcome.provenance.origins({"x": "40002", "y": "50001"})
    assert origins.arguments == {"y": ("theirs__add",)}
    with pytest.raises(toolwire.ConfigurationError, match="trusted"):
        Hub({"bad": InProcessServer(server=catalogue(), trusted="yes")})  # type: ignore[arg-type]
