"""Approval over MCP itself: a gateway given its approval console's URL (``console=``,
``toolwire serve --console``) sends a client whose call waits for a person the console's page
of that exact call: by URL-mode elicitation to a client that declared it (an
``InputRequiredResult`` on a 2026-07-28 session, the ``URL_ELICITATION_REQUIRED`` error on an
older one), else in the text of its answer, and in a waiting task's status. Following the URL
approves nothing: only a decision made in the console (the ledger) lets the call run."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

pytest.importorskip("mcp")

import mcp_types as types
from auth_support import BOUND, served
from mcp import Client, InputRequiredRoundsExceededError
from mcp.shared.exceptions import MCPError
from task_client import Client as TaskClient

import toolwire
from toolwire import Policy, Rule, SQLiteStore
from toolwire.errors import ConfigurationError
from toolwire.mcp import Gateway, TaskSettings

pytestmark = pytest.mark.anyio

CONSOLE = "https://approvals.example.com/inbox"
paid: list[int] = []


@toolwire.tool(annotations={"destructiveHint": True})
def pay(amount: int) -> str:
    """Pay an amount."""
    paid.append(amount)
    return f"paid {amount}"


POLICY = Policy(Rule("ask", "pay"))


@asynccontextmanager
async def gateway(tmp_path: Path) -> AsyncIterator[tuple[Gateway, SQLiteStore]]:
    store = SQLiteStore(tmp_path / "runs.db")
    try:
        yield Gateway(toolwire.ToolSet([pay]), policy=POLICY, store=store, console=CONSOLE), store
    finally:
        store.close()


def page(request: toolwire.ApprovalRequest) -> str:
    return f"{CONSOLE}/runs/{request.run_id}/calls/{request.call_id}"


async def test_a_client_without_url_elicitation_reads_the_consoles_page_in_its_answer(
    tmp_path: Path,
) -> None:
    with anyio.fail_after(BOUND):
        async with (
            gateway(tmp_path) as (served_gateway, store),
            Client(served_gateway.server(), mode="legacy") as client,
        ):
            waiting = await client.call_tool("pay", {"amount": 5})
            (request,) = await toolwire.pending(store=store)
    text = waiting.content[0].text  # type: ignore[union-attr]
    assert waiting.is_error
    assert f"Approve or deny it in the console: {page(request)} (it asks who decides)." in text


async def test_a_handshake_client_taking_urls_is_sent_the_page_and_runs_once_decided(
    tmp_path: Path,
) -> None:
    async def never_asked(*_: Any) -> Any:
        raise AssertionError("the gateway answers with the URL; it asks nothing")

    with anyio.fail_after(BOUND):
        async with gateway(tmp_path) as (served_gateway, store):
            server = served_gateway.server()
            async with Client(server, mode="legacy", elicitation_callback=never_asked) as client:
                with pytest.raises(MCPError) as sent:
                    await client.call_tool("pay", {"amount": 5})
                (request,) = await toolwire.pending(store=store)
                with pytest.raises(MCPError) as again:  # following the URL decided nothing
                    await client.call_tool("pay", {"amount": 5})
                await toolwire.decide(
                    request.run_id, request.call_id, toolwire.allow(), store=store
                )
                ran = await client.call_tool("pay", {"amount": 5})
    assert sent.value.code == again.value.code == types.URL_ELICITATION_REQUIRED
    (elicitation,) = sent.value.data["elicitations"]
    assert elicitation["mode"] == "url"
    assert elicitation["url"] == page(request)
    assert ran.content[0].text == "paid 5"  # type: ignore[union-attr]


async def test_a_2026_client_taking_urls_is_handed_the_page_and_its_retry_runs_once_decided(
    tmp_path: Path,
) -> None:
    followed: list[str] = []

    with anyio.fail_after(BOUND):
        async with gateway(tmp_path) as (served_gateway, store):

            async def follow(context: Any, params: Any) -> types.ElicitResult:
                # The user follows the URL; the console asks who they are, and they allow it.
                assert isinstance(params, types.ElicitRequestURLParams)
                followed.append(params.url)
                (request,) = await toolwire.pending(store=store)
                await toolwire.decide(
                    request.run_id, request.call_id, toolwire.allow(), store=store
                )
                return types.ElicitResult(action="accept")

            async with Client(served_gateway.server(), elicitation_callback=follow) as client:
                ran = await client.call_tool("pay", {"amount": 7})
    assert ran.content[0].text == "paid 7"  # type: ignore[union-attr]
    assert len(followed) == 1
    assert followed[0].startswith(f"{CONSOLE}/runs/mcp-")


async def test_following_the_url_without_a_decision_runs_nothing(tmp_path: Path) -> None:
    paid.clear()

    async def follow_only(context: Any, params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept")  # opened the page, decided nothing

    with anyio.fail_after(BOUND):
        async with gateway(tmp_path) as (served_gateway, store):
            async with Client(
                served_gateway.server(),
                elicitation_callback=follow_only,
                input_required_max_rounds=3,
            ) as client:
                with pytest.raises(InputRequiredRoundsExceededError):
                    await client.call_tool("pay", {"amount": 9})
            still = await toolwire.pending(store=store)
    assert paid == []
    assert len(still) == 1


async def test_a_waiting_task_names_the_consoles_page_in_its_status(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "runs.db")
    quick = TaskSettings(after=0.2, poll=0.05)
    with anyio.fail_after(BOUND):
        async with (
            served([pay], policy=POLICY, store=store, tasks=quick, console=CONSOLE) as url,
            httpx2.AsyncClient(timeout=BOUND) as http,
        ):
            client = TaskClient(http, url)
            task_id = (await client.call("pay", amount=3))["taskId"]
            status = await client.get(task_id)
            (request,) = await toolwire.pending(store=store)
    store.close()
    assert status["status"] == "working"
    assert f"approve or deny it in the console: {page(request)}" in status["statusMessage"]


@pytest.mark.parametrize("url", ["approvals.example.com", "ftp://x/y", "javascript:alert(1)", ""])
def test_a_console_that_is_no_http_url_is_refused(url: str) -> None:
    with pytest.raises(ConfigurationError, match="http"):
        Gateway(toolwire.ToolSet([pay]), console=url)


@pytest.mark.parametrize("url", ["https://x/inbox?tenant=a", "https://x/inbox#top"])
def test_a_console_url_with_a_query_or_fragment_is_refused(url: str) -> None:
    """Its pages go after its path: a query or fragment would swallow them."""
    with pytest.raises(ConfigurationError, match="no query or fragment"):
        Gateway(toolwire.ToolSet([pay]), console=url)
