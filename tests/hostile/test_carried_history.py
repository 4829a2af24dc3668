"""A history the client carries itself (Interactions steps, Responses input items) is parsed
again turn after turn: a call it already answered never runs again, whether the model sent it
an id or toolwire answered it under a generated one."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolwire
from toolwire.providers import gemini_interactions

RAN: list[int] = []


@toolwire.tool
def pay(amount: int) -> str:
    """Pay an amount."""
    RAN.append(amount)
    return f"paid {amount}"


@pytest.fixture(autouse=True)
def _nothing_ran() -> None:
    RAN.clear()


def _step(amount: int, call_id: str | None) -> dict[str, Any]:
    step: dict[str, Any] = {"type": "function_call", "name": "pay", "arguments": {"amount": amount}}
    if call_id is not None:
        step["id"] = call_id
    return step


def _item(amount: int, call_id: str | None) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "function_call", "name": "pay"}
    item["arguments"] = f'{{"amount": {amount}}}'
    if call_id is not None:
        item["call_id"] = call_id
    return item


def _interaction(calls: list[tuple[int, str | None]]) -> dict[str, Any]:
    steps = [{"type": "thought", "signature": "c2ln"}]
    steps += [_step(amount, call_id) for amount, call_id in calls]
    return {"id": "int_1", "status": "requires_action", "steps": steps}


def _response(calls: list[tuple[int, str | None]]) -> dict[str, Any]:
    output: list[dict[str, Any]] = [{"type": "reasoning", "id": "rs_1", "summary": []}]
    output += [_item(amount, call_id) for amount, call_id in calls]
    return {"id": "resp_1", "object": "response", "output": output}


def _history_of(provider: str, response: dict[str, Any], answers: list[Any]) -> list[Any]:
    """What a client keeping the conversation itself appends after a turn."""
    if provider == "gemini-interactions":
        return gemini_interactions.model_steps(response) + answers
    return list(response["output"]) + answers


PROVIDERS = {"gemini-interactions": _interaction, "openai-responses": _response}


@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_an_answered_call_without_an_id_is_not_run_again(provider: str) -> None:
    listing = toolwire.tools([pay], provider)
    response = PROVIDERS[provider]([(5, None)])
    first = toolwire.execute_tool_calls_sync(listing, response)
    assert RAN == [5]
    history = _history_of(provider, response, first.results)

    again = toolwire.execute_tool_calls_sync(listing, history)

    assert RAN == [5]
    assert again.results == []


@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_identical_id_less_calls_answered_in_one_turn_are_both_settled(provider: str) -> None:
    listing = toolwire.tools([pay], provider)
    response = PROVIDERS[provider]([(5, None), (5, None)])
    first = toolwire.execute_tool_calls_sync(listing, response)
    assert RAN == [5, 5]
    history = _history_of(provider, response, first.results)
    follow = PROVIDERS[provider]([(5, None)])  # the model asks for the same payment again
    steps = history + (
        gemini_interactions.model_steps(follow)
        if provider == "gemini-interactions"
        else follow["output"]
    )

    again = toolwire.execute_tool_calls_sync(listing, steps)

    assert RAN == [5, 5, 5]  # only the new turn's call ran
    assert len(again.results) == 1


# A conversation: each turn, some calls (amount, whether the model sends an id).
TURNS = st.lists(
    st.lists(st.tuples(st.integers(1, 3), st.booleans()), min_size=1, max_size=4),
    min_size=1,
    max_size=4,
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(turns=TURNS, provider=st.sampled_from(list(PROVIDERS)))
def test_a_carried_history_runs_each_call_once(
    turns: list[list[tuple[int, bool]]], provider: str
) -> None:
    RAN.clear()
    listing = toolwire.tools([pay], provider)
    history: list[Any] = []
    made = 0
    for number, turn in enumerate(turns):
        calls = [
            (amount, f"c{number}_{position}" if with_id else None)
            for position, (amount, with_id) in enumerate(turn)
        ]
        response = PROVIDERS[provider](calls)
        new = _history_of(provider, response, [])
        # Parsing the whole history (earlier turns and their answers, then this turn) runs
        # this turn's calls only, and answers each of them once.
        outcome = toolwire.execute_tool_calls_sync(listing, history + new)
        made += len(calls)
        assert sorted(RAN) == sorted(
            amount for earlier in turns[: number + 1] for amount, _ in earlier
        )
        assert len(outcome.results) == len(calls)
        history += new + outcome.results
    assert len(RAN) == made
    # Everything answered: nothing runs again.
    assert toolwire.execute_tool_calls_sync(listing, history).results == []
    assert len(RAN) == made
