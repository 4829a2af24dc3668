"""`toolwire serve` driven by the official `mcp` client, over stdio and streamable HTTP: every
call answered through the governed executor."""

from __future__ import annotations

import re
from typing import Any

import anyio
import mcp_types as types
import pytest
from gateway_procs import Connect

import toolwire
from toolwire.mcp.server._gateway import MCP_CLIENT, run_base
from toolwire.store import SQLiteStore

pytestmark = pytest.mark.anyio

BOUND = 60  # seconds a whole test may take: a hang fails, never blocks the suite
BY_CLIENT = ("--approve-by", "client")
"""The client that makes a call may approve it in a form (the operator's choice; also what lets
a gateway serve without a store the tools its policy asks about)."""


def _text(result: types.CallToolResult) -> str:
    return "\n".join(part.text for part in result.content if isinstance(part, types.TextContent))


def _answering(action: str, approve: bool | None = None) -> tuple[Any, list[str]]:
    """An elicitation callback answering ``action`` (and ``approve``), and the messages it saw."""
    seen: list[str] = []

    async def callback(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        seen.append(params.message)
        content = {"approve": approve} if approve is not None else None
        return types.ElicitResult(action=action, content=content)  # type: ignore[arg-type]

    return callback, seen


async def test_listing_gives_exposed_names_original_schemas_and_annotations(
    connect: Connect,
) -> None:
    with anyio.fail_after(BOUND):
        async with connect(None, *BY_CLIENT) as client:
            listing = await client.list_tools()
    tools = {tool.name: tool for tool in listing.tools}
    # format_disk, which the policy denies outright, is not listed (as toolwire.tools leaves
    # it out); delete_file, which it asks about, is.
    assert list(tools) == ["add", "weather", "delete_file"]
    assert tools["add"].model_dump(by_alias=True, exclude_none=True) == {
        "name": "add",
        "description": "Add two integers.",
        "inputSchema": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "a": {"description": "the first.", "title": "A", "type": "integer"},
                "b": {"description": "the second.", "title": "B", "type": "integer"},
            },
            "required": ["a", "b"],
        },
        "annotations": {"readOnlyHint": True},
    }
    assert tools["delete_file"].annotations == types.ToolAnnotations(destructive_hint=True)
    assert tools["weather"].output_schema == {"additionalProperties": True, "type": "object"}


async def test_calls_are_answered_with_content_and_structured_content(connect: Connect) -> None:
    with anyio.fail_after(BOUND):
        async with connect(None, *BY_CLIENT) as client:
            added = await client.call_tool("add", {"a": 2, "b": 3})
            weather = await client.call_tool("weather", {"city": "Paris"})
    assert (added.is_error, _text(added), added.structured_content) == (False, "5", None)
    assert weather.is_error is False
    assert weather.structured_content == {"city": "Paris", "celsius": 21}


async def test_bad_arguments_are_answered_is_error_with_the_validation_message(
    connect: Connect,
) -> None:
    with anyio.fail_after(BOUND):
        async with connect(None, *BY_CLIENT) as client:
            result = await client.call_tool("add", {"a": "two"})
    assert result.is_error is True
    text = _text(result)
    assert "Invalid arguments for 'add'" in text
    assert "$.a" in text
    assert "$.b: Field required" in text


async def test_an_unknown_tool_is_answered_is_error(connect: Connect) -> None:
    with anyio.fail_after(BOUND):
        async with connect(None, *BY_CLIENT) as client:
            result = await client.call_tool("no_such_tool", {})
    assert result.is_error is True
    assert "Unknown tool 'no_such_tool'" in _text(result)


async def test_a_call_to_a_tool_the_policy_denies_outright_is_answered_as_an_unknown_tool(
    connect: Connect,
) -> None:
    with anyio.fail_after(BOUND):
        async with connect(None, *BY_CLIENT) as client:
            result = await client.call_tool("format_disk", {"device": "sda"})
    assert result.is_error is True
    assert _text(result) == "Unknown tool 'format_disk'."


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_client_approves_by_elicitation_and_the_call_runs(
    connect: Connect, sqlite_url: str, tmp_path: Any, mode: str
) -> None:
    """``auto`` negotiates 2026-07-28 (the form rides an InputRequiredResult); ``legacy`` gets
    a pushed ``elicitation/create``."""
    callback, seen = _answering("accept", approve=True)
    with anyio.fail_after(BOUND):
        async with connect(
            sqlite_url, *BY_CLIENT, mode=mode, elicitation_callback=callback
        ) as client:
            result = await client.call_tool("delete_file", {"path": "notes.txt"})
    assert (result.is_error, _text(result)) == (False, "deleted notes.txt")
    assert len(seen) == 1
    assert seen[0].startswith('Allow the call delete_file {"path": "notes.txt"}?')
    store = SQLiteStore(tmp_path / "runs.db")
    try:
        assert await toolwire.pending(store=store) == []  # nothing waits: the client decided
        run_id = run_base("delete_file", {"path": "notes.txt"})
        (trail,) = await toolwire.history(run_id, store=store)
    finally:
        store.close()
    decided = trail.to_dict()["decided"]
    assert (decided["by"], decided["kind"]) == (MCP_CLIENT, "allow")


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_by_default_a_person_approves_and_the_calling_client_is_never_asked(
    connect: Connect, sqlite_url: str, tmp_path: Any, mode: str
) -> None:
    """The client answers forms, and would approve anything: the policy put the call before a
    human, so the client is never shown a form. The call waits until a person decides it,
    and the client learns the decision by making the same call again."""
    callback, seen = _answering("accept", approve=True)
    with anyio.fail_after(BOUND):
        async with connect(sqlite_url, mode=mode, elicitation_callback=callback) as client:
            waiting = await client.call_tool("delete_file", {"path": "d.txt"})
            found = re.search(r"Run id: (\S+); call id: (\S+)\.", _text(waiting))
            assert found is not None, _text(waiting)
            store = SQLiteStore(tmp_path / "runs.db")
            try:
                (request,) = await toolwire.pending(store=store)
                assert (request.run_id, request.call_id) == found.groups()
                await toolwire.decide(*found.groups(), toolwire.allow(), store=store, by="ops")
                ran = await client.call_tool("delete_file", {"path": "d.txt"})
                (trail,) = await toolwire.history(found.group(1), store=store)
            finally:
                store.close()
    assert seen == []
    assert waiting.is_error is True
    assert "waits for approval" in _text(waiting)
    assert "make the same call again with the same arguments to learn the decision" in _text(
        waiting
    )
    assert (ran.is_error, _text(ran)) == (False, "deleted d.txt")
    decided = trail.to_dict()["decided"]
    assert (decided["by"], decided["kind"]) == ("ops", "allow")


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize(("action", "approve"), [("decline", None), ("accept", False)])
async def test_the_client_refusing_by_elicitation_denies_the_call(
    connect: Connect, mode: str, action: str, approve: bool | None
) -> None:
    callback, seen = _answering(action, approve)
    with anyio.fail_after(BOUND):
        async with connect(None, *BY_CLIENT, mode=mode, elicitation_callback=callback) as client:
            result = await client.call_tool("delete_file", {"path": "notes.txt"})
    assert result.is_error is True
    assert "MCP client" in _text(result)
    assert len(seen) == 1


async def test_a_deferred_approval_decided_through_decide_runs_on_the_next_call(
    connect: Connect, sqlite_url: str, tmp_path: Any
) -> None:
    with anyio.fail_after(BOUND):
        async with connect(sqlite_url) as client:  # no elicitation: the call waits
            waiting = await client.call_tool("delete_file", {"path": "a.txt"})
            assert waiting.is_error is True
            found = re.search(r"Run id: (\S+); call id: (\S+)\.", _text(waiting))
            assert found is not None, _text(waiting)
            run_id, call_id = found.groups()
            again = await client.call_tool("delete_file", {"path": "a.txt"})
            assert run_id in _text(again)  # the same call waits in the same run

            store = SQLiteStore(tmp_path / "runs.db")
            try:
                (request,) = await toolwire.pending(store=store)
                assert (request.run_id, request.call_id) == (run_id, call_id)
                assert request.arguments == {"path": "a.txt"}
                await toolwire.decide(run_id, call_id, toolwire.allow(), store=store, by="ops")
            finally:
                store.close()

            ran = await client.call_tool("delete_file", {"path": "a.txt"})
            assert (ran.is_error, _text(ran)) == (False, "deleted a.txt")
            # Answered once: the same call made again is a new call, asked about again.
            fresh = await client.call_tool("delete_file", {"path": "a.txt"})
    assert fresh.is_error is True
    assert f"Run id: {run_id}.2;" in _text(fresh)


async def test_a_deferred_call_denied_through_decide_is_answered_with_the_reason(
    connect: Connect, sqlite_url: str, tmp_path: Any
) -> None:
    with anyio.fail_after(BOUND):
        async with connect(sqlite_url, "--approve-by", "ledger") as client:
            waiting = await client.call_tool("delete_file", {"path": "b.txt"})
            found = re.search(r"Run id: (\S+); call id: (\S+)\.", _text(waiting))
            assert found is not None
            store = SQLiteStore(tmp_path / "runs.db")
            try:
                await toolwire.decide(*found.groups(), toolwire.deny("not today"), store=store)
            finally:
                store.close()
            refused = await client.call_tool("delete_file", {"path": "b.txt"})
    assert refused.is_error is True
    assert "not today" in _text(refused)
