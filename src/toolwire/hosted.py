"""Approvals a provider's hosted tool asks of the application, answered by toolwire's
governance.

OpenAI Responses' hosted ``mcp`` tool with ``require_approval`` stops at an
``mcp_approval_request`` output item (server label, tool name, arguments as JSON) and waits for
an ``mcp_approval_response`` in the next request's input. [`answer_hosted_approvals`][] runs
each request through the same pipeline as a local call (its arguments as a JSON object, the
policy matched as ``server/tool`` with the server label, the approvers, the run ledger) and
answers it: approved when the pipeline lets the call run, refused with the reason otherwise.
The provider then runs (or not) the call itself: nothing runs here.

A request the policy asks about and no approver decides waits in its run like any call
(``pending``): decide it from the console or with ``toolwire decide``, then answer the same
response again with the same ``run_id``; the requests answered before are answered from the
store, the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolwire._json import NotJson, load_json
from toolwire.approval import ApprovalPending, ApprovalRequest, Approver, DeferredApproval
from toolwire.calls import ToolCall, ToolResult, argument_problem
from toolwire.context import CallContext, Veto
from toolwire.errors import MalformedResponse
from toolwire.pipeline.executor import Executor
from toolwire.policy import Policy
from toolwire.providers import as_data, listed
from toolwire.runs import ledger
from toolwire.runs.store import RunStore, default_store
from toolwire.tool import Tool
from toolwire.toolset import ToolSet

__all__ = ["HostedApprovals", "answer_hosted_approvals"]

_APPROVED = "Approved: the provider runs the call on its hosted tool."
_ANY_OBJECT = {"type": "object"}
"""A hosted tool's arguments: its server declared their schema to the provider, not to us."""


@dataclass(frozen=True, slots=True)
class HostedApprovals:
    """The answers to a response's approval requests."""

    answers: list[dict[str, Any]]
    """``mcp_approval_response`` items, in the requests' order, for each request decided:
    append them to the next request's input."""
    pending: list[ApprovalRequest]
    """The requests waiting for a decision (nothing is answered for them yet)."""
    run_id: str | None
    """The run they are kept in: answer the same response again with it once decided."""


def _requests(response: Any) -> list[dict[str, Any]]:
    """The response's ``mcp_approval_request`` items.

    Raises:
        MalformedResponse: the response has no ``output`` list, or a request lacks its id,
            server label or tool name.
    """
    found = []
    for item in listed(as_data(response), "output", "a Responses response"):
        if not isinstance(item, dict) or item.get("type") != "mcp_approval_request":
            continue
        for key in ("id", "server_label", "name"):
            if not isinstance(item.get(key), str) or not item[key]:
                raise MalformedResponse(f"an mcp_approval_request has no string {key!r}")
        found.append(item)
    return found


def _arguments(item: dict[str, Any]) -> dict[str, Any] | str:
    """A request's arguments as a JSON object, or why they are not one. They come from the
    provider as a model's call's arguments do, and are read the same way: decoded by the
    hardened reader (no foreign exception on nesting, long integers or ``NaN``), then checked
    as arguments toolwire can carry, so one request's arguments never fail the others'
    answers."""
    raw = item.get("arguments")
    if raw is None or raw == "":
        return {}
    value = load_json(raw) if isinstance(raw, str) else raw
    if isinstance(value, NotJson):
        return f"its arguments are not JSON ({value.why})"
    if not isinstance(value, Mapping):
        return "its arguments are not a JSON object"
    problem = argument_problem(value)
    if problem is not None:
        return f"its arguments cannot be carried ({problem})"
    return dict(value)


def _approve(**_: Any) -> str:
    return _APPROVED


def _as_the_model_sent(context: CallContext) -> Veto | None:
    """The provider runs a hosted call with the arguments the model sent: an approval of
    other arguments (a person's edit) approves a call that will never run, so it approves
    nothing."""
    if dict(context.arguments) != dict(context.call.arguments):
        return Veto(
            "Refused: approved with other arguments than the model's, and the provider runs "
            "the model's own, which nobody approved."
        )
    return None


async def answer_hosted_approvals(
    response: Any,
    *,
    policy: Policy | None = None,
    approver: Approver | Callable[[ApprovalRequest], Any] | None = None,
    store: RunStore | None = None,
    run_id: str | None = None,
    principal: Any = None,
) -> HostedApprovals:
    """Answer the ``mcp_approval_request`` items of an OpenAI Responses response with
    toolwire's governance (see the module docstring).

    Args:
        response: the response (the SDK's object or its JSON form).
        policy: the policy; every request is approved when None (as a local call would run).
        approver: asked about a request the policy marks ``ask`` (None: it waits in its run).
        store: the run ledger a waiting request is kept in; by default the process-wide
            store, which ``toolwire.decide`` and ``toolwire.pending`` reach without one.
        run_id: the run to keep them in, or to answer them from again once decided.
        principal: who the requests are made for (policies and approvers see it).

    Raises:
        MalformedResponse: the response is not a Responses response, or a request is broken.
        StoreUnavailable: the run store failed.
    """
    items = _requests(response)
    refused: dict[str, str] = {}
    tools: dict[tuple[str, str], Tool] = {}
    calls = []
    for item in items:
        key = (item["server_label"], item["name"])
        tool = tools.get(key)
        if tool is None:
            tool = tools[key] = Tool(
                name=item["name"],
                description=f"A tool of the hosted MCP server {item['server_label']!r}.",
                input_schema=_ANY_OBJECT,
                server_id=item["server_label"],
                handler=_approve,
            )
        arguments = _arguments(item)
        if isinstance(arguments, str):
            refused[item["id"]] = f"Refused: {arguments}."
            continue
        exposed = f"{item['server_label']}__{item['name']}"
        calls.append((item["id"], exposed, tool, arguments))
    toolset = ToolSet(list(tools.values()))
    turn = [
        ToolCall(exposed_name=exposed, tool=tool, arguments=arguments, call_id=id, local_id=id)
        for id, exposed, tool, arguments in calls
    ]
    # Without an approver, a request the policy asks about waits in its run for a person.
    waits = approver if approver is not None else DeferredApproval()
    kept = store if store is not None else default_store()
    executor = Executor(
        toolset, policy=policy, approver=waits, store=kept, before_call=[_as_the_model_sent]
    )
    results: dict[str, ToolResult] = {}
    pending: list[ApprovalRequest] = []
    if turn:
        try:
            outcomes = await executor.run(turn, run_id=run_id, principal=principal)
            results = {str(o.item.local_id): o.result for o in outcomes}
        except ApprovalPending as waiting:
            pending, run_id = waiting.pending, waiting.run_id
            results = await _answered(executor.store, run_id, turn, pending)
    answers = [
        _answer(item["id"], results.get(item["id"]), refused.get(item["id"])) for item in items
    ]
    return HostedApprovals(
        answers=[a for a in answers if a is not None], pending=pending, run_id=run_id
    )


async def _answered(
    store: RunStore, run_id: str, turn: Sequence[ToolCall], pending: Sequence[ApprovalRequest]
) -> dict[str, ToolResult]:
    """The answers the run keeps for the turn's calls that do not wait."""
    waiting = {request.call_id for request in pending}
    found = {}
    for call in turn:
        call_id = str(call.local_id)
        if call_id in waiting:
            continue
        record = await ledger.record(store, run_id, call_id)
        if record is not None and record.result is not None:
            found[call_id] = record.result
    return found


def _answer(
    request_id: str, result: ToolResult | None, refused: str | None
) -> dict[str, Any] | None:
    """The ``mcp_approval_response`` to one request (None while it waits)."""
    if refused is not None:
        return {
            "type": "mcp_approval_response",
            "approval_request_id": request_id,
            "approve": False,
            "reason": refused,
        }
    if result is None:
        return None
    answer: dict[str, Any] = {
        "type": "mcp_approval_response",
        "approval_request_id": request_id,
        "approve": not result.is_error,
    }
    if result.is_error:
        answer["reason"] = result.text[:1000]
    return answer
