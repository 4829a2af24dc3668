"""The hub against the official TypeScript "everything" server (npm
``@modelcontextprotocol/server-everything``, pinned), over stdio: its long-running operation
reports progress through the hub, and its structured content reaches the result. (It has no
tool that fails with structured content: test_progress.py covers that with a server of ours.)

The server is installed with npm once, into the cache the suite keeps between runs
(``TOOLWIRE_SUITES_CACHE``; see ``shared_files.npm_package``).
"""

from __future__ import annotations

import shutil
from typing import Any

import anyio
import pytest

import toolwire

pytest.importorskip("mcp")

from shared_files import npm_package, unavailable
from toolwire.mcp import Hub, ProgressContext, StdioServer

pytestmark = pytest.mark.anyio
EVERYTHING = "@modelcontextprotocol/server-everything@2026.8.31"
"""Pinned: its tools' names have changed between releases."""


@pytest.fixture(scope="session")
def everything() -> list[str]:
    """The command that serves the everything server over stdio, once npm installed it."""
    script = npm_package(EVERYTHING) / "dist" / "index.js"
    if not script.is_file():
        unavailable(f"npm installed {EVERYTHING}, but without dist/index.js")
    return [str(shutil.which("node")), str(script), "stdio"]


def server(command: list[str], **options: Any) -> StdioServer:
    return StdioServer(command=command[0], args=command[1:], **options)


def call(name: str, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"functionCall": {"name": name, "args": arguments, "id": "c1"}}]


async def test_its_long_running_operation_reports_progress_through_the_hub(
    everything: list[str],
) -> None:
    reports: list[tuple[str, float, float | None, str | None]] = []

    async def on_progress(
        context: ProgressContext, done: float, total: float | None, message: str | None
    ) -> None:
        reports.append((context.tool, done, total, message))

    # Six steps of 0.5 s: longer in all than the timeout, which each report restarts.
    spec = server(everything, timeout=2.0, max_total_timeout=60.0)
    with anyio.fail_after(60):
        async with Hub({"everything": spec}, on_progress=on_progress) as hub:
            name = "everything__trigger-long-running-operation"
            assert name in hub.as_toolset()
            outcome = await toolwire.execute_tool_calls(
                hub, "gemini", call(name, {"duration": 3, "steps": 6})
            )
    result = outcome.calls[0].result
    assert (result.is_error, result.text) == (
        False,
        "Long running operation completed. Duration: 3 seconds, Steps: 6.",
    )
    operation = "trigger-long-running-operation"
    assert reports == [(operation, float(i), 6.0, None) for i in range(1, 7)]


async def test_its_structured_content_reaches_the_result(everything: list[str]) -> None:
    weather = {"temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82}
    with anyio.fail_after(60):
        async with Hub({"everything": server(everything)}) as hub:
            tool = hub.as_toolset()["everything__get-structured-content"]
            assert tool.output_schema is not None
            outcome = await toolwire.execute_tool_calls(
                hub,
                "gemini",
                call("everything__get-structured-content", {"location": "Chicago"}),
            )
    result = outcome.calls[0].result
    assert (result.is_error, result.structured_content) == (False, weather)
    assert outcome.results[0]["functionResponse"]["response"] == {"output": weather}


# -- input requests: a handshake-era server asks within the call (elicitation/create) -------------

ELICITING = "everything__trigger-elicitation-request"


async def _elicited(everything: list[str], elicitor: Any) -> toolwire.ToolResult:
    with anyio.fail_after(60):
        async with Hub({"everything": server(everything)}, elicitor=elicitor) as hub:
            assert hub.protocol_version("everything") != "2026-07-28"  # the handshake era
            outcome = await toolwire.execute_tool_calls(hub, "gemini", call(ELICITING, {}))
    return outcome.calls[0].result


async def test_its_elicitation_is_answered_by_the_elicitor_at_once(everything: list[str]) -> None:
    asked: list[toolwire.InputRequest] = []

    def elicitor(request: toolwire.InputRequest) -> dict[str, Any]:
        asked.append(request)
        return {"name": "Ada Lovelace", "check": True, "integer": 7, "email": "ada@example.com"}

    result = await _elicited(everything, elicitor)
    assert not result.is_error
    assert "- Name: Ada Lovelace" in result.text
    assert "- Favorite Integer: 7" in result.text
    (question,) = asked
    assert question.message == "Please provide inputs for the following fields:"
    assert question.requested_schema is not None
    assert question.requested_schema["required"] == ["name"]
    assert (question.tool_name, question.deferrable) == ("trigger-elicitation-request", False)


async def test_its_elicitation_is_declined_without_an_elicitor(everything: list[str]) -> None:
    result = await _elicited(everything, None)
    assert not result.is_error
    assert "User declined to provide the requested information." in result.text


async def test_an_answer_outside_its_schema_is_never_sent(everything: list[str]) -> None:
    # Its schema bounds the integer to 1..100 and asks for an email address.
    for answer, said in (
        ({"name": "Ada", "integer": 500}, "500 is greater than the maximum of 100"),
        ({"name": "Ada", "email": "not an address"}, "$.email"),
    ):
        result = await _elicited(everything, lambda request, answer=answer: answer)
        assert result.error_kind == "failed"
        assert said in result.text
        assert "User cancelled the elicitation dialog." in result.text  # what the server got


async def test_a_deferred_elicitation_is_cancelled_with_a_clear_error(
    everything: list[str],
) -> None:
    result = await _elicited(everything, lambda request: None)
    assert result.error_kind == "failed"
    assert "the answer must be given within the call, and the elicitor deferred it" in result.text
    assert "User cancelled the elicitation dialog." in result.text
