"""Results and outcomes as a newcomer reads them: a dict result has text, Gemini keeps JSON
values as values, a paused turn says what already ran, a run's history reads in call order
with readable times, and a blocked or refused response says so instead of looking done."""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest

import toolwire
from toolwire import ApprovalPending, DeferredApproval, Policy, Rule, ToolResult
from toolwire.store import MemoryStore

pytestmark = pytest.mark.anyio

anthropic_types = pytest.importorskip("anthropic.types")
chat_types = pytest.importorskip("openai.types.chat")
responses_types = pytest.importorskip("openai.types.responses")
genai_types = pytest.importorskip("google.genai.types")


@toolwire.tool
def lookup(key: str) -> dict[str, Any]:
    """Look ``key`` up."""
    return {"key": key, "found": True}


@toolwire.tool
def listing(n: int) -> list[Any]:
    """The first ``n`` items."""
    return [{"i": i} for i in range(n)]


@toolwire.tool
def count(n: int) -> int:
    """``n`` itself."""
    return n


@toolwire.tool
def transfer(to: str) -> str:
    """Move money to ``to``."""
    return f"sent to {to}"


def _gemini(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    parts = [{"functionCall": {"name": name, "args": args}} for name, args in calls]
    return {"candidates": [{"content": {"role": "model", "parts": parts}}]}


async def test_a_dict_or_list_result_has_its_json_text() -> None:
    assert json.loads(ToolResult.from_value({"a": 1, "b": [2]}).text) == {"a": 1, "b": [2]}
    assert json.loads(ToolResult.from_value([1, {"c": None}]).text) == [1, {"c": None}]
    assert ToolResult.from_value(None).text == ""  # nothing, and only then
    outcome = await toolwire.execute_tool_calls([lookup], "anthropic", _anthropic_call())
    assert json.loads(outcome.calls[0].result.text) == {"key": "k", "found": True}


def _anthropic_call() -> dict[str, Any]:
    return {
        "role": "assistant",
        "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": "t1", "name": "lookup", "input": {"key": "k"}}],
    }


async def test_gemini_answers_lists_and_numbers_as_json_values() -> None:
    response = _gemini(("listing", {"n": 2}), ("count", {"n": 7}), ("lookup", {"key": "x"}))
    outcome = await toolwire.execute_tool_calls([listing, count, lookup], "gemini", response)
    outputs = [part["functionResponse"]["response"]["output"] for part in outcome.results]
    assert outputs == [[{"i": 0}, {"i": 1}], 7, {"key": "x", "found": True}]
    for part in outcome.results:  # the SDK's own type takes each, values as they are
        sent = genai_types.Part.model_validate(part)
        assert sent.function_response is not None
    [_, answers] = outcome.followup(response)
    content = genai_types.Content.model_validate(answers)
    assert content.parts is not None
    assert content.parts[0].function_response.response == {"output": [{"i": 0}, {"i": 1}]}  # type: ignore[union-attr]
    # A resumed run answers from its store with the same values.
    store = MemoryStore()
    first = await toolwire.execute_tool_calls(
        [listing], "gemini", _gemini(("listing", {"n": 1})), store=store, run_id="r"
    )
    again = await toolwire.execute_tool_calls(
        [listing], "gemini", _gemini(("listing", {"n": 1})), store=store, run_id="r"
    )
    assert again.calls[0].from_store
    assert again.results == first.results


async def test_a_paused_turn_carries_the_answers_of_the_calls_that_ran() -> None:
    policy = Policy(Rule("ask", "transfer"))
    response = _gemini(("count", {"n": 3}), ("transfer", {"to": "acme"}), ("nope", {}))
    with pytest.raises(ApprovalPending) as paused:
        await toolwire.execute_tool_calls(
            [count, transfer],
            "gemini",
            response,
            policy=policy,
            approver=DeferredApproval(),
            run_id="paused",
        )
    done = paused.value.completed
    assert [outcome.item.name for outcome in done] == ["count", "nope"]
    assert done[0].result.text == "3"
    assert done[0].ran
    assert done[1].result.error_kind == "not_found"
    assert [request.exposed_name for request in paused.value.pending] == ["transfer"]


async def test_history_reads_in_call_order_with_times_in_utc() -> None:
    store = MemoryStore()
    policy = Policy(Rule("ask", "transfer"))
    # the model's order: the call put up for approval first, then one that runs at once
    response = _gemini(("transfer", {"to": "acme"}), ("count", {"n": 1}), ("lookup", {"key": "z"}))
    with pytest.raises(ApprovalPending):
        await toolwire.execute_tool_calls(
            [count, transfer, lookup],
            "gemini",
            response,
            policy=policy,
            approver=DeferredApproval(),
            run_id="ordered",
            store=store,
        )
    [request] = await toolwire.pending(store=store)
    await toolwire.decide("ordered", request.call_id, toolwire.allow(), store=store, by="ops")
    await toolwire.execute_tool_calls(
        [count, transfer, lookup],
        "gemini",
        response,
        policy=policy,
        approver=DeferredApproval(),
        run_id="ordered",
        store=store,
    )
    trails = await toolwire.history("ordered", store=store)
    assert [trail.exposed_name for trail in trails] == ["transfer", "count", "lookup"]
    assert [trail.position for trail in trails] == [0, 1, 2]
    finished = trails[0].finished
    assert finished is not None
    at = datetime.datetime.fromisoformat(finished["at_utc"].replace("Z", "+00:00"))
    assert at.tzinfo == datetime.UTC
    assert abs(at.timestamp() - finished["at"]) < 0.001
    assert trails[0].decided is not None
    assert trails[0].decided["at_utc"].endswith("Z")
    assert trails[0].to_dict()["position"] == 0


@pytest.mark.parametrize(
    ("provider", "response", "kind", "reason", "message"),
    [
        pytest.param(
            "gemini",
            genai_types.GenerateContentResponse.model_validate(
                {"candidates": [{"finishReason": "SAFETY", "index": 0}]}
            ),
            "blocked",
            "SAFETY",
            None,
            id="gemini-safety",
        ),
        pytest.param(
            "gemini",
            {"candidates": [{"finishReason": "RECITATION", "content": {"role": "model"}}]},
            "blocked",
            "RECITATION",
            None,
            id="gemini-recitation",
        ),
        pytest.param(
            "gemini",
            {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}},
            "blocked",
            "PROHIBITED_CONTENT",
            None,
            id="gemini-prompt-blocked",
        ),
        pytest.param(
            "anthropic",
            anthropic_types.Message.model_validate(
                {
                    "id": "m",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-test",
                    "stop_reason": "refusal",
                    "stop_sequence": None,
                    "content": [{"type": "text", "text": "I can't help with that."}],
                    "usage": {"input_tokens": 1, "output_tokens": 1},
                }
            ),
            "refused",
            "refusal",
            "I can't help with that.",
            id="anthropic-refusal",
        ),
        pytest.param(
            "openai-chat",
            chat_types.ChatCompletion.model_validate(
                {
                    "id": "c",
                    "object": "chat.completion",
                    "created": 0,
                    "model": "gpt-test",
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": None, "refusal": "No."},
                        }
                    ],
                }
            ),
            "refused",
            "refusal",
            "No.",
            id="openai-chat-refusal",
        ),
        pytest.param(
            "openai-chat",
            {"choices": [{"message": {"role": "assistant"}, "finish_reason": "content_filter"}]},
            "blocked",
            "content_filter",
            None,
            id="openai-chat-filtered",
        ),
        pytest.param(
            "openai-responses",
            responses_types.Response.model_validate(
                {
                    "id": "r",
                    "created_at": 0,
                    "model": "gpt-test",
                    "object": "response",
                    "parallel_tool_calls": True,
                    "tool_choice": "auto",
                    "tools": [],
                    "output": [
                        {
                            "type": "message",
                            "id": "m",
                            "role": "assistant",
                            "status": "completed",
                            "content": [{"type": "refusal", "refusal": "Not that."}],
                        }
                    ],
                }
            ),
            "refused",
            "refusal",
            "Not that.",
            id="openai-responses-refusal",
        ),
    ],
)
async def test_a_blocked_or_refused_response_says_so(
    provider: str, response: Any, kind: str, reason: str, message: str | None
) -> None:
    outcome = await toolwire.execute_tool_calls([lookup], provider, response)
    assert outcome.calls == []
    assert outcome.stopped == toolwire.providers.Stopped(kind, reason, message)  # type: ignore[arg-type]


async def test_an_ordinary_final_answer_is_not_stopped() -> None:
    text = {"candidates": [{"content": {"role": "model", "parts": [{"text": "Done."}]}}]}
    assert (await toolwire.execute_tool_calls([lookup], "gemini", text)).stopped is None
    calls = await toolwire.execute_tool_calls([lookup], "anthropic", _anthropic_call())
    assert calls.stopped is None
