"""Gateways sharing ``state_keys`` take each other's approval forms' answers (2026-07-28: the
form's ``requestState`` is sealed by one and unsealed by the other); without shared keys, an
answer brought to another gateway is refused."""

from __future__ import annotations

from typing import Any

import anyio
import gateway_tools
import mcp
import mcp_types as types
import pytest
from gateway_procs import POLICY

import toolwire
from toolwire.mcp import Gateway
from toolwire.policy_file import load_policy

pytestmark = pytest.mark.anyio
BOUND = 60


def gateway(store: toolwire.RunStore, keys: list[str] | None) -> Gateway:
    return Gateway(
        toolwire.ToolSet(gateway_tools.tools),
        policy=load_policy(POLICY),
        store=store,
        state_keys=keys,
        approve_by="client",
    )


async def _form_from(first: Gateway) -> types.InputRequiredResult:
    async def approve(context: Any, params: Any) -> types.ElicitResult:
        raise AssertionError("a 2026-07-28 client is asked in the result, not by a request")

    async with mcp.Client(first.server(), elicitation_callback=approve) as client:
        asked = await client.session.call_tool(
            "delete_file", {"path": "t.txt"}, allow_input_required=True
        )
    assert isinstance(asked, types.InputRequiredResult)
    return asked


async def _answer_to(second: Gateway, asked: types.InputRequiredResult) -> types.CallToolResult:
    (key,) = asked.input_requests or {}
    answer = types.ElicitResult(action="accept", content={"approve": True})
    async with mcp.Client(second.server(), elicitation_callback=lambda c, p: None) as client:
        result = await client.session.call_tool(
            "delete_file",
            {"path": "t.txt"},
            allow_input_required=True,
            input_responses={key: answer},
            request_state=asked.request_state,
        )
    assert isinstance(result, types.CallToolResult)
    return result


def _messages(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return " ".join(_messages(inner) for inner in exc.exceptions)
    return str(exc)


def _text(result: types.CallToolResult) -> str:
    return "\n".join(part.text for part in result.content if isinstance(part, types.TextContent))


async def test_gateways_sharing_state_keys_take_each_others_answers() -> None:
    store = toolwire.MemoryStore()
    keys = ["a shared secret of the deployment"]
    with anyio.fail_after(BOUND):
        asked = await _form_from(gateway(store, keys))
        result = await _answer_to(gateway(store, keys), asked)
    assert (result.is_error, _text(result)) == (False, "deleted t.txt")


async def test_without_shared_keys_another_gateway_refuses_the_answer() -> None:
    store = toolwire.MemoryStore()
    with anyio.fail_after(BOUND):
        asked = await _form_from(gateway(store, None))
        with pytest.raises(Exception) as refused:  # noqa: PT011  (in process: in a group)
            await _answer_to(gateway(store, None), asked)
    assert "Invalid or expired requestState" in _messages(refused.value)
    assert len(await toolwire.pending(store=store)) == 1  # still waiting, nothing decided


@pytest.mark.parametrize("keys", ["one string", [], [""], [42]])
def test_state_keys_are_a_list_of_secrets(keys: Any) -> None:
    with pytest.raises(toolwire.ConfigurationError, match="state_keys"):
        gateway(toolwire.MemoryStore(), keys)
