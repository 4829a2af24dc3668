"""The executor's side of "one answer per call, its own": a stored record answers a call only
when it is that call's (same fingerprint), and a turn never runs two calls under one id."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from toolwire import Executor, MemoryStore, ToolResult, ToolSet, make_call, tool
from toolwire.store import CallRecord

pytestmark = pytest.mark.anyio

PAID: list[int] = []


@tool
def pay(amount: int) -> str:
    """Pay an amount."""
    PAID.append(amount)
    return f"paid {amount}"


TOOLS = ToolSet([pay])


@pytest.fixture(autouse=True)
def _no_payments() -> None:
    PAID.clear()


class RecordArrivesAfterPlanning(MemoryStore):
    """A store where another worker writes a call's record between this worker's planning read
    and its claim (the planning read sees nothing)."""

    async def get_many(self, run_id: str, call_ids: Sequence[str]) -> list[CallRecord | None]:
        return [None for _ in call_ids]


async def test_a_claim_lost_to_another_calls_record_is_not_answered_from_it() -> None:
    store = RecordArrivesAfterPlanning()
    other = CallRecord(
        call_id="c1",
        tool="pay",
        fingerprint="the fingerprint of pay(3)",
        state="completed",
        result=ToolResult.from_value("paid 3"),
    )
    assert await store.swap("r", None, other) is not None
    executor = Executor(TOOLS, store=store)
    (outcome,) = await executor.run(
        [make_call(TOOLS, "pay", {"amount": 4}, call_id="c1")], run_id="r"
    )
    assert "paid 3" not in outcome.result.text
    assert outcome.result.error_kind == "failed"
    assert "another call" in outcome.result.text
    assert PAID == []  # and it did not run either: the id is taken


async def test_a_record_with_the_same_fingerprint_does_answer() -> None:
    store = MemoryStore()
    executor = Executor(TOOLS, store=store)
    call = make_call(TOOLS, "pay", {"amount": 3}, call_id="c1")
    (first,) = await executor.run([call], run_id="r")
    (again,) = await executor.run([call], run_id="r")
    assert again.from_store
    assert again.result == first.result
    assert PAID == [3]


@pytest.mark.parametrize("run_id", [None, "r"])
async def test_two_calls_with_one_id_in_a_turn_run_once(run_id: str | None) -> None:
    executor = Executor(TOOLS, store=MemoryStore())
    first = make_call(TOOLS, "pay", {"amount": 3}, call_id="c1")
    second = make_call(TOOLS, "pay", {"amount": 4}, call_id="c1")
    outcomes = await executor.run([first, second], run_id=run_id)
    assert outcomes[0].result.text == "paid 3"
    assert outcomes[1].result.error_kind == "invalid_arguments"
    assert "paid" not in outcomes[1].result.text
    assert PAID == [3]
