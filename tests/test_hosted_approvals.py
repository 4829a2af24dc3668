"""OpenAI's hosted MCP tool asks the application to approve its calls
(``mcp_approval_request``); ``toolwire.hosted.answer_hosted_approvals`` answers each with the
policy (matched as ``server/tool``), the approvers and the run ledger, in the SDK's own types.
Nothing runs here: the provider runs what is approved."""

from __future__ import annotations

import json
from typing import Any

import pytest

import toolwire
from toolwire import MalformedResponse, Policy, Rule
from toolwire.hosted import answer_hosted_approvals

pydantic = pytest.importorskip("pydantic")
responses = pytest.importorskip("openai.types.responses")
input_items = pytest.importorskip("openai.types.responses.response_input_item_param")
ANSWER = pydantic.TypeAdapter(input_items.McpApprovalResponse)

pytestmark = pytest.mark.anyio


def request(request_id: str, server: str, tool: str, arguments: Any) -> dict[str, Any]:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {
        "type": "mcp_approval_request",
        "id": request_id,
        "server_label": server,
        "name": tool,
        "arguments": raw,
    }


def response(*items: dict[str, Any]) -> Any:
    """A Responses response holding ``items``, as the SDK's own object."""
    return responses.Response.model_validate(
        {
            "id": "resp_1",
            "object": "response",
            "created_at": 1_767_225_600,
            "model": "gpt-5",
            "output": list(items),
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
        }
    )


POLICY = Policy(
    Rule("deny", "github/delete_*", reason="deleting is not done from a chat"),
    Rule("ask", "github/merge_*", reason="merges need a person"),
    default="allow",
)


async def test_each_request_is_answered_by_the_policy_as_server_slash_tool() -> None:
    answered = await answer_hosted_approvals(
        response(
            {
                "type": "message",
                "id": "m1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "On it.", "annotations": []}],
            },
            request("mcpr_1", "github", "list_issues", {"repo": "a/b"}),
            request("mcpr_2", "github", "delete_repo", {"repo": "a/b"}),
        ),
        policy=POLICY,
    )
    for answer in answered.answers:
        ANSWER.validate_python(answer)  # the SDK's own input item
    first, second = answered.answers
    assert (first["approval_request_id"], first["approve"]) == ("mcpr_1", True)
    assert (second["approval_request_id"], second["approve"]) == ("mcpr_2", False)
    assert "deleting is not done from a chat" in second["reason"]
    assert answered.pending == []


async def test_a_request_the_policy_asks_about_waits_in_its_run_until_decided() -> None:
    store = toolwire.MemoryStore()
    model = response(
        request("mcpr_1", "github", "list_issues", {}),
        request("mcpr_2", "github", "merge_pr", {"number": 7}),
    )
    first = await answer_hosted_approvals(model, policy=POLICY, store=store, run_id="r1")
    assert [a["approval_request_id"] for a in first.answers] == ["mcpr_1"]
    (waiting,) = first.pending
    assert (waiting.call_id, waiting.exposed_name, waiting.reason) == (
        "mcpr_2",
        "github__merge_pr",
        "merges need a person",
    )
    (listed,) = await toolwire.pending(store=store)  # the console and `toolwire pending` see it
    assert listed.arguments == {"number": 7}
    await toolwire.decide("r1", "mcpr_2", toolwire.allow(), store=store, by="ops")
    again = await answer_hosted_approvals(model, policy=POLICY, store=store, run_id="r1")
    assert [(a["approval_request_id"], a["approve"]) for a in again.answers] == [
        ("mcpr_1", True),
        ("mcpr_2", True),
    ]
    assert again.pending == []


async def test_without_a_store_a_waiting_request_is_decided_in_the_process_wide_one() -> None:
    model = response(request("mcpr_9", "github", "merge_pr", {"number": 9}))
    first = await answer_hosted_approvals(model, policy=POLICY, run_id="hosted-default")
    assert first.answers == []
    await toolwire.decide("hosted-default", "mcpr_9", toolwire.deny("not this one"))
    again = await answer_hosted_approvals(model, policy=POLICY, run_id="hosted-default")
    (answer,) = again.answers
    assert answer["approve"] is False
    assert "not this one" in answer["reason"]


async def test_an_approver_decides_what_the_policy_asks_about() -> None:
    seen = []

    def approver(asked: toolwire.ApprovalRequest) -> toolwire.Decision:
        seen.append(asked.arguments)
        return toolwire.deny("not on a Friday")

    answered = await answer_hosted_approvals(
        response(request("mcpr_1", "github", "merge_pr", {"number": 7})),
        policy=POLICY,
        approver=approver,
    )
    (answer,) = answered.answers
    assert answer["approve"] is False
    assert "not on a Friday" in answer["reason"]
    assert seen == [{"number": 7}]


async def test_what_cannot_be_read_is_refused_and_a_broken_request_is_malformed() -> None:
    answered = await answer_hosted_approvals(
        response(
            request("mcpr_1", "github", "list_issues", "{not json"),
            request("mcpr_2", "github", "list_issues", "[1, 2]"),
            request("mcpr_3", "unknown_server", "anything", {}),
        ),
        policy=Policy(Rule("allow", "github/*"), default="deny"),
    )
    reasons = {
        a["approval_request_id"]: (a["approve"], a.get("reason", "")) for a in answered.answers
    }
    assert reasons["mcpr_1"] == (
        False,
        "Refused: its arguments are not JSON (malformed JSON (Expecting property name "
        "enclosed in double quotes at character 1)).",
    )
    assert reasons["mcpr_2"] == (False, "Refused: its arguments are not a JSON object.")
    assert reasons["mcpr_3"][0] is False  # a server the policy does not know: the default
    broken = {"output": [{"type": "mcp_approval_request", "id": "x", "name": "t"}]}
    with pytest.raises(MalformedResponse, match="server_label"):
        await answer_hosted_approvals(broken)


async def test_a_response_without_requests_has_nothing_to_answer() -> None:
    answered = await answer_hosted_approvals({"output": []})
    assert (answered.answers, answered.pending) == ([], [])


async def test_arguments_nested_past_the_stack_are_refused_and_the_others_answered() -> None:
    deep = '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"
    answered = await answer_hosted_approvals(
        response(
            request("mcpr_1", "github", "list_issues", deep),
            request("mcpr_2", "github", "list_issues", {"repo": "a/b"}),
        ),
        policy=Policy(Rule("allow", "github/*"), default="deny"),
    )
    reasons = {
        a["approval_request_id"]: (a["approve"], a.get("reason", "")) for a in answered.answers
    }
    assert reasons["mcpr_1"] == (False, "Refused: its arguments are not JSON (nested too deeply).")
    assert reasons["mcpr_2"] == (True, "")
