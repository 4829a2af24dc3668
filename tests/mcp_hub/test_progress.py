"""Long-running MCP calls: progress restarts a call's timeout up to its cap, reaches the
application's hook in order and the current span as events; structured content stays on an
error. Against servers of our own (tests/mcp_hub/mcp_servers.py), over stdio and streamable
HTTP."""

from __future__ import annotations

import json
import logging
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

import toolwire

pytest.importorskip("mcp")
from mcp_servers import progress
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from toolwire.mcp import HttpServer, Hub, InProcessServer, ProgressContext, StdioServer
from toolwire.providers import get_provider, provider_names

pytestmark = pytest.mark.anyio
SERVERS = Path(__file__).parent / "mcp_servers.py"
Spec = Callable[..., Any]
Report = tuple[str, float, float | None, str | None]


def gemini_calls(*calls: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"functionCall": {"name": n, "args": a, "id": f"c{i}"}} for i, (n, a) in enumerate(calls)
    ]


@pytest.fixture(scope="module")
def progress_url() -> Iterator[str]:
    """The progress server over streamable HTTP on 127.0.0.1, one process for the module."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, str(SERVERS), "progress", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("the progress server did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(params=["stdio", "http"])
def spec(request: pytest.FixtureRequest) -> Spec:
    """Makes a spec of the progress server over one transport, with the given options."""
    if request.param == "stdio":
        return lambda **options: StdioServer(
            command=sys.executable, args=[str(SERVERS), "progress"], **options
        )
    url = request.getfixturevalue("progress_url")
    return lambda **options: HttpServer(url=url, **options)


async def test_progress_keeps_a_call_alive_past_its_timeout(spec: Spec) -> None:
    reports: list[Report] = []
    contexts: list[ProgressContext] = []

    async def on_progress(
        context: ProgressContext, done: float, total: float | None, message: str | None
    ) -> None:
        contexts.append(context)
        reports.append((context.exposed_name, done, total, message))

    # Ten steps of 0.2 s: twice the timeout in all, never a second without progress.
    server = spec(timeout=1.0, max_total_timeout=30.0)
    with anyio.fail_after(60):
        async with Hub({"p": server}, on_progress=on_progress) as hub:
            outcome = await toolwire.execute_tool_calls(
                hub, "gemini", gemini_calls(("p__steady", {"steps": 10}))
            )
    result = outcome.calls[0].result
    assert (result.is_error, result.text) == (False, "done after 10 steps")
    assert reports == [("p__steady", float(i), 10.0, f"step {i}") for i in range(1, 11)]
    assert contexts[0] == ProgressContext(
        server="p", tool="steady", exposed_name="p__steady", arguments={"steps": 10}, call_number=1
    )
    assert all(context is contexts[0] for context in contexts)


async def test_silence_times_out_at_timeout_and_endless_progress_at_the_cap(spec: Spec) -> None:
    reports: list[Report] = []

    def on_progress(
        context: ProgressContext, done: float, total: float | None, message: str | None
    ) -> None:
        reports.append((context.exposed_name, done, total, message))

    # A report every 0.2 s against a silence of 2 s: a loaded machine may stall the server a
    # second and more without the endless call looking silent.
    server = spec(timeout=2.0, max_total_timeout=3.0)
    with anyio.fail_after(60):
        async with Hub({"p": server}, on_progress=on_progress) as hub:
            outcome = await toolwire.execute_tool_calls(
                hub, "gemini", gemini_calls(("p__silent", {}), ("p__endless", {}))
            )
            silent, endless = (call.result for call in outcome.calls)
            # Each abandoned call was cancelled; the server is slow, not hung: it stays up.
            assert await hub.check("p")
            assert hub.status == {"p": None}
    assert (silent.error_kind, silent.text) == (
        "timeout",
        "Tool 'p__silent' timed out after 2 seconds.",
    )
    assert (endless.error_kind, endless.text) == (
        "timeout",
        "Tool 'p__endless' timed out after 3 seconds.",
    )
    endless_reports = [r for r in reports if r[0] == "p__endless"]
    assert endless_reports  # it did report, and was still cut at the cap
    assert [r[1] for r in endless_reports] == [float(i) for i in range(1, len(endless_reports) + 1)]
    assert all(r[2:] == (None, "still working") for r in endless_reports)
    assert not [r for r in reports if r[0] == "p__silent"]


async def test_a_timed_out_call_that_had_reported_progress_says_so() -> None:
    with anyio.fail_after(30):
        async with Hub({"p": InProcessServer(server=progress(), timeout=0.5)}) as hub:
            outcome = await toolwire.execute_tool_calls(
                hub, "gemini", gemini_calls(("p__stall", {}))
            )
    result = outcome.calls[0].result
    assert result.error_kind == "timeout"
    assert result.text == (
        "Tool 'p__stall' timed out: no progress for 0.5 seconds after its last progress "
        "report (2 reports)."
    )


async def test_progress_is_recorded_as_events_on_the_tool_span() -> None:
    exporter = InMemorySpanExporter()
    traces = TracerProvider()
    traces.add_span_processor(SimpleSpanProcessor(exporter))
    with anyio.fail_after(30):
        async with Hub({"p": InProcessServer(server=progress(), timeout=5.0)}) as hub:
            toolset = hub.as_toolset()
            executor = toolwire.Executor(toolset, tracer_provider=traces)
            [outcome] = await executor.run(
                [toolwire.make_call(toolset, "p__steady", {"steps": 3, "every": 0.01})]
            )
    assert outcome.result.text == "done after 3 steps"
    [span] = exporter.get_finished_spans()
    assert span.name == "execute_tool p__steady"
    assert [(event.name, dict(event.attributes or {})) for event in span.events] == [
        ("mcp.progress", {"progress": float(i), "total": 3.0, "message": f"step {i}"})
        for i in range(1, 4)
    ]


async def test_a_progress_hook_that_raises_never_breaks_the_call(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def on_progress(*args: Any) -> None:
        raise RuntimeError("the hook broke")

    with anyio.fail_after(30), caplog.at_level(logging.ERROR, logger="toolwire"):
        async with Hub({"p": InProcessServer(server=progress())}, on_progress=on_progress) as hub:
            outcome = await toolwire.execute_tool_calls(
                hub, "gemini", gemini_calls(("p__steady", {"steps": 2, "every": 0.01}))
            )
    assert outcome.calls[0].result.text == "done after 2 steps"
    failures = [r for r in caplog.records if r.getMessage().startswith("the on_progress hook")]
    assert [r.getMessage() for r in failures] == ["the on_progress hook failed on p__steady"] * 2
    assert all(r.exc_info is not None and r.exc_info[0] is RuntimeError for r in failures)


async def test_an_error_keeps_its_structured_content_and_every_provider_answers_it() -> None:
    server = StdioServer(command=sys.executable, args=[str(SERVERS), "progress"])
    with anyio.fail_after(30):
        async with Hub({"p": server}) as hub:
            outcome = await toolwire.execute_tool_calls(
                hub, "gemini", gemini_calls(("p__reject", {"order": "7"}))
            )
    [call] = outcome.calls
    assert call.result == toolwire.ToolResult(
        content=(toolwire.TextContent("order 7 rejected: out of stock"),),
        structured_content={"code": "out_of_stock", "order": "7", "retry_after": 30},
        is_error=True,
        error_kind="failed",
    )
    assert outcome.results[0]["functionResponse"]["response"] == {
        "error": "order 7 rejected: out of stock"
    }
    assert isinstance(call.item, toolwire.ToolCall)
    for name in provider_names():  # each answers the error with its text
        answer = get_provider(name).answer(call.item, call.result)
        assert "order 7 rejected: out of stock" in json.dumps(answer), name


def test_the_timeouts_are_checked_and_the_executor_applies_the_cap() -> None:
    for limits in (
        {"max_total_timeout": 0},
        {"max_total_timeout": -1.0},
        {"timeout": 90.0, "max_total_timeout": 60.0},
    ):
        with pytest.raises(toolwire.ConfigurationError, match="max_total_timeout"):
            Hub({"p": InProcessServer(server=progress(), **limits)})
    with pytest.raises(toolwire.ConfigurationError, match="on_progress"):
        Hub({"p": InProcessServer(server=progress())}, on_progress="print")  # type: ignore[arg-type]
    Hub({"p": InProcessServer(server=progress(), timeout=None, max_total_timeout=None)})


async def test_the_tools_timeout_is_the_servers_cap() -> None:
    spec = InProcessServer(server=progress(), timeout=2.0, max_total_timeout=90.0)
    async with Hub({"p": spec}) as hub:
        assert {tool.timeout for tool in hub.as_toolset()} == {90.0}
