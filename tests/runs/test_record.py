"""``toolwire.runs._record``: a call's record and its pure readings. A call's fingerprint is its
tool and arguments; a run's binding says whom, which calls and which place it is for, and a
resume for another is refused saying which; leases and deadlines are judged by the time given."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolwire import RunBindingConflict, ToolResult, ToolSet, make_call, tool
from toolwire.runs._record import (
    CallRecord,
    answered_state,
    binding_for,
    check_binding,
    expired,
    fingerprint,
    held,
    pending_since,
    valid_id,
)


@tool
def add(a: int, b: int) -> int:
    """Adds."""
    return a + b


TOOLS = ToolSet([add])


@given(st.integers(), st.integers(), st.integers(), st.integers())
def test_a_fingerprint_is_the_tool_and_its_arguments(a: int, b: int, c: int, d: int) -> None:
    first = make_call(TOOLS, "add", {"a": a, "b": b}, call_id="x")
    second = make_call(TOOLS, "add", {"b": d, "a": c}, call_id="y")  # ids and order don't count
    assert (fingerprint(first) == fingerprint(second)) == ((a, b) == (c, d))


def test_a_resume_for_another_principal_place_or_calls_is_refused_saying_which() -> None:
    calls = [("c1", "f1"), ("c2", "f2")]
    bound = binding_for({"user": "alice"}, calls, "turn-3")
    check_binding("r", bound, binding_for({"user": "alice"}, list(reversed(calls)), "turn-3"))
    check_binding("r", None, bound)  # a run not bound yet takes any
    with pytest.raises(RunBindingConflict, match="another principal"):
        check_binding("r", bound, binding_for({"user": "bob"}, calls, "turn-3"))
    with pytest.raises(RunBindingConflict, match="another turn of its conversation"):
        check_binding("r", bound, binding_for({"user": "alice"}, calls, "turn-4"))
    with pytest.raises(RunBindingConflict, match="another model response"):
        check_binding("r", bound, binding_for({"user": "alice"}, calls[:1], "turn-3"))


@pytest.mark.parametrize(
    ("value", "valid"),
    [("run-1", True), ("ünï", True), ("", True), ("a\x00b", False), ("\ud800", False), (7, False)],
)
def test_an_id_a_store_can_hold_is_valid_unicode_text_without_nul(
    value: object, valid: bool
) -> None:
    assert valid_id(value) is valid


def test_a_lease_is_held_until_it_runs_out_and_a_request_expires_at_its_deadline() -> None:
    running = CallRecord(call_id="c1", tool="add", fingerprint="f", state="running")
    assert not held(running, 100.0)  # no lease: not held
    leased = running.with_(owner="elsewhere:1:abc", lease_until=150.0)
    assert held(leased, 149.9)
    assert not held(leased, 150.0)
    waiting = running.with_(state="pending", request={"expires_at": 200, "requested_at": 90})
    assert not expired(waiting, 199.0)
    assert expired(waiting, 200.0)
    assert not expired(waiting.with_(request={"expires_at": "soon"}), 10**12)
    assert not expired(running, 10**12)
    assert pending_since(waiting) == (90.0, "")
    assert pending_since(running) is None


def test_an_answer_says_the_state_it_leaves_its_call_in() -> None:
    assert answered_state(ToolResult()) == "completed"
    assert answered_state(ToolResult.error("failed", "x")) == "failed"
    assert answered_state(ToolResult.error("timeout", "x")) == "failed"
    assert answered_state(ToolResult.error("denied", "x")) == "denied"
    assert answered_state(ToolResult.error("approval_denied", "x")) == "denied"
