"""An outsider's attacks on who approves a call the gateway's policy asks about: by default a
person, through the ledger, never the client that made the call. A client that answers forms
tries to approve its own call anyway (a form answer with a state another gateway sealed, one
it made up), and an operator's options are misspelled or left over from before."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")
pytest.importorskip("uvicorn")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp_gateway"))

import mcp
import mcp_types as types
from gateway_procs import serve_argv

import toolwire
import toolwire.mcp
from toolwire import ConfigurationError, Policy, Rule, ToolSet
from toolwire.mcp import Gateway

pytestmark = pytest.mark.anyio

BOUND = 60
KEYS = ["a secret the deployment's gateways share"]
RAN: list[int] = []


def pay(amount: int) -> str:
    """Pay an amount."""
    RAN.append(amount)
    return f"paid {amount}"


def gateway(store: toolwire.RunStore, approve_by: Any) -> Gateway:
    return Gateway(
        ToolSet([pay]),
        policy=Policy(Rule("ask", "pay")),
        store=store,
        state_keys=KEYS,
        approve_by=approve_by,
    )


APPROVE = types.ElicitResult(action="accept", content={"approve": True})


async def _never(context: Any, params: Any) -> types.ElicitResult:
    raise AssertionError("a 2026-07-28 client is asked in the result, not by a request")


async def _approving(served: Gateway, request_state: str | None) -> Any:
    async with mcp.Client(served.server(), elicitation_callback=_never) as client:
        return await client.session.call_tool(
            "pay",
            {"amount": 7},
            allow_input_required=True,
            input_responses={"toolwire_approval": APPROVE},
            request_state=request_state,
        )


async def test_a_form_another_gateway_sealed_does_not_approve_where_a_person_decides() -> None:
    """Two gateways of one deployment share the state keys and the store: one lets clients
    approve, the other leaves it to a person. The form the first gave, answered to the
    second, approves nothing: the call still waits, and has not run."""
    store = toolwire.MemoryStore()
    RAN.clear()
    with anyio.fail_after(BOUND):
        async with mcp.Client(
            gateway(store, "client").server(), elicitation_callback=_never
        ) as client:
            asked = await client.session.call_tool("pay", {"amount": 7}, allow_input_required=True)
        assert isinstance(asked, types.InputRequiredResult)
        answered = await _approving(gateway(store, "ledger"), asked.request_state)
    assert isinstance(answered, types.CallToolResult)
    assert answered.is_error is True
    assert "waits for approval" in answered.content[0].text  # type: ignore[union-attr]
    assert [request.exposed_name for request in await toolwire.pending(store=store)] == ["pay"]
    assert RAN == []


async def test_a_made_up_form_answer_approves_nothing() -> None:
    """A client sends an approval with a state the gateway never sealed: refused before the
    call is looked at."""
    store = toolwire.MemoryStore()
    RAN.clear()
    made_up = '{"call":"call","run":"mcp-0"}'
    with anyio.fail_after(BOUND), pytest.raises(Exception) as refused:  # noqa: PT011  in a group
        await _approving(gateway(store, "ledger"), made_up)
    assert "requestState" in _messages(refused.value)
    assert await toolwire.pending(store=store) == []
    assert RAN == []


def _messages(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return " ".join(_messages(inner) for inner in exc.exceptions)
    return str(exc)


@pytest.mark.parametrize("approve_by", ["model", "Client", "", None, True])
def test_an_unknown_approver_is_refused(approve_by: Any) -> None:
    with pytest.raises(ConfigurationError, match="approve_by is 'ledger' or 'client'"):
        gateway(toolwire.MemoryStore(), approve_by)


@pytest.mark.parametrize("elicit", [True, False])
async def test_the_option_approve_by_replaced_is_refused_naming_its_replacement(
    elicit: bool,
) -> None:
    with pytest.raises(ConfigurationError, match="elicit is replaced by approve_by"):
        Gateway(ToolSet([pay]), elicit=elicit)
    with anyio.fail_after(BOUND), pytest.raises(ConfigurationError, match="approve_by"):
        await toolwire.mcp.serve([pay], store=toolwire.MemoryStore(), elicit=elicit)


@pytest.mark.parametrize("flags", [["--no-elicit"], ["--approve-by", "model"]])
def test_toolwire_serve_refuses_an_unknown_approver_in_one_line(flags: list[str]) -> None:
    done = subprocess.run(
        [*serve_argv(), *flags],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=BOUND,
    )
    assert done.returncode == 2
    assert done.stderr.count("error:") == 1
    assert "Traceback" not in done.stderr
