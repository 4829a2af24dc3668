"""A gateway without a shared store: a call it asks about waits in the process's memory, out
of reach of `toolwire decide` and the inbox. Its answer names only what can decide it, and
serving tools the policy may ask about that way is refused at start (nothing could approve
them), or warns when the operator lets the client that makes a call approve it in a form
(``approve_by="client"``)."""

from __future__ import annotations

import subprocess
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import gateway_tools
import mcp
import mcp_types as types
import pytest
from gateway_procs import POLICY, TOOLS, Connect, serve_argv

import toolwire
import toolwire.mcp
from toolwire import ConfigurationError, Policy, ToolwireWarning
from toolwire.mcp import Gateway
from toolwire.policy_file import load_policy

pytestmark = pytest.mark.anyio

BOUND = 60


def _text(result: types.CallToolResult) -> str:
    return "\n".join(part.text for part in result.content if isinstance(part, types.TextContent))


def _never_named(text: str) -> None:
    """Nothing that could not reach a memory store is offered as a way to decide."""
    assert "which `toolwire decide` and the inbox cannot reach" in text
    assert "toolwire decide" not in text.replace("`toolwire decide` and the inbox cannot", "")
    assert "toolwire.decide(" not in text
    assert "--store URL" not in text


async def test_without_a_store_a_waiting_call_never_points_at_toolwire_decide(
    connect: Connect,
) -> None:
    # `toolwire serve ... --policy --approve-by client` with no --store, and a client that
    # answers no forms.
    with anyio.fail_after(BOUND):
        async with connect(None, "--approve-by", "client") as client:
            waiting = await client.call_tool("delete_file", {"path": "a.txt"})
    assert waiting.is_error is True
    text = _text(waiting)
    assert text.startswith("The call delete_file waits for approval")
    _never_named(text)
    assert "this client does not answer approval forms" in text
    assert "cannot be approved from outside the gateway's process" in text
    assert "--store sqlite:///runs.db" in text


async def test_approved_by_the_ledger_with_a_memory_store_the_answer_says_nothing_can_approve() -> (
    None
):
    gateway = Gateway(
        toolwire.ToolSet(gateway_tools.tools), policy=load_policy(POLICY), approve_by="ledger"
    )

    async def never(context: Any, params: Any) -> types.ElicitResult:
        raise AssertionError("approve_by='ledger' asks no client")

    with anyio.fail_after(BOUND):
        async with mcp.Client(gateway.server(), elicitation_callback=never) as client:
            waiting = await client.call_tool("delete_file", {"path": "a.txt"})
    text = _text(waiting)
    _never_named(text)
    assert "the gateway asks no client approval forms" in text


def _answers(*actions: str) -> tuple[Callable[..., Any], list[str]]:
    """An elicitation callback answering ``actions`` in turn (accept approves)."""
    seen: list[str] = []

    async def callback(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        action = actions[len(seen)]
        seen.append(params.message)
        content = {"approve": True} if action == "accept" else None
        return types.ElicitResult(action=action, content=content)  # type: ignore[arg-type]

    return callback, seen


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_without_a_store_a_client_that_answers_forms_is_told_to_and_then_can(
    mode: str,
) -> None:
    gateway = Gateway(
        toolwire.ToolSet(gateway_tools.tools), policy=load_policy(POLICY), approve_by="client"
    )
    callback, seen = _answers("cancel", "accept")
    with anyio.fail_after(BOUND):
        async with mcp.Client(gateway.server(), mode=mode, elicitation_callback=callback) as client:
            dismissed = await client.call_tool("delete_file", {"path": "b.txt"})
            approved = await client.call_tool("delete_file", {"path": "b.txt"})
    text = _text(dismissed)
    assert dismissed.is_error is True
    _never_named(text)
    assert "make the same call again with the same arguments and approve it in the form" in text
    # What the answer said works: the same call, approved in the form, runs.
    assert (approved.is_error, _text(approved)) == (False, "deleted b.txt")
    assert len(seen) == 2


async def test_with_a_shared_store_the_waiting_answer_names_toolwire_decide(
    tmp_path: Path,
) -> None:
    store = toolwire.SQLiteStore(tmp_path / "runs.db")
    gateway = Gateway(
        toolwire.ToolSet(gateway_tools.tools), policy=load_policy(POLICY), store=store
    )
    try:
        with anyio.fail_after(BOUND):
            async with mcp.Client(gateway.server()) as client:
                waiting = await client.call_tool("delete_file", {"path": "c.txt"})
    finally:
        store.close()
    text = _text(waiting)
    assert "`toolwire decide mcp-" in text
    assert "allow --store URL`" in text
    assert "toolwire.decide(" in text


# -- at start: refused when nothing could approve, or warned when only the client can -----------


async def _start(**options: Any) -> None:
    """Serve the test tools over HTTP until listening, then stop."""
    with anyio.fail_after(BOUND), anyio.CancelScope() as serving:
        await toolwire.mcp.serve(
            TOOLS,
            transport="http",
            port=0,
            on_listening=lambda url: serving.cancel(),
            **options,
        )


def _gateway_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, ToolwireWarning)]


async def test_serving_tools_that_may_ask_without_a_store_warns_once_at_start() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        await _start(policy=POLICY, approve_by="client")
    (warning,) = _gateway_warnings(caught)
    assert warning.startswith("calls of delete_file may need approval")
    assert "only a client that answers approval forms (elicitation) can approve them" in warning


@pytest.mark.parametrize(
    "options",
    [
        pytest.param({"policy": POLICY, "store": "sqlite:///{tmp}/runs.db"}, id="a shared store"),
        pytest.param({"policy": POLICY, "store": toolwire.MemoryStore()}, id="the caller's store"),
        pytest.param({"policy": POLICY, "approver": lambda request: None}, id="an approver"),
        pytest.param({"policy": Policy(default="allow")}, id="a policy that never asks"),
    ],
)
async def test_no_warning_when_something_can_decide_or_nothing_asks(
    options: dict[str, Any], tmp_path: Path
) -> None:
    if isinstance(options.get("store"), str):
        options = {**options, "store": options["store"].format(tmp=tmp_path)}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        await _start(**options)
    assert _gateway_warnings(caught) == []


async def test_with_no_policy_nothing_asks_and_only_destructive_names_are_warned_of() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        await _start()
    (warning,) = _gateway_warnings(caught)
    assert warning.startswith("no policy: every call of delete_file runs as the client makes it")


async def test_a_memory_store_url_is_no_shared_store() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        await _start(policy=POLICY, store="memory://", approve_by="client")
    assert len(_gateway_warnings(caught)) == 1


@pytest.mark.parametrize("store", [None, "memory://", "sqlite:///:memory:"])
async def test_serving_approved_by_the_ledger_without_a_store_is_refused_when_a_call_may_ask(
    store: str | None,
) -> None:
    asks = "calls of delete_file may need approval"
    with pytest.raises(ConfigurationError, match=asks) as raised:
        await _start(policy=POLICY, store=store)  # approve_by="ledger", the default
    assert "--approve-by client" in str(raised.value)
    with pytest.raises(ConfigurationError, match=asks):
        await _start(policy=POLICY, store=store, approve_by="ledger")


@pytest.mark.parametrize("flags", [(), ("--approve-by", "ledger")])
def test_toolwire_serve_approved_by_the_ledger_without_a_store_is_refused_in_one_line(
    flags: tuple[str, ...],
) -> None:
    done = subprocess.run(
        [*serve_argv(), *flags],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=BOUND,
    )
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith("toolwire: error: calls of delete_file may need approval")
    assert "nothing could approve them" in line
