"""What a task's record says of the task (``toolwire.mcp.server._tasks.task_view``, a pure reading),
and what a task id says of its principal and age."""

from __future__ import annotations

import time
from typing import Any

import pytest

pytest.importorskip("mcp")

from toolwire.approval import ApprovalRequest
from toolwire.calls import ToolResult
from toolwire.mcp._relay import PROTOCOL_ERROR
from toolwire.mcp.server._tasks import created_at, new_task_id, task_view
from toolwire.store import CallRecord

CREATED = 1_790_000_000.0


def record(state: Any = "running", **fields: Any) -> CallRecord:
    return CallRecord(call_id="call", tool="pay", fingerprint="f", state=state, **fields)


def test_an_answer_is_completed_and_a_tools_failure_too() -> None:
    view = task_view(record("completed", result=ToolResult.from_value("paid")), CREATED)
    assert (view.status, view.answer and view.answer.text) == ("completed", "paid")
    failed = ToolResult.error("failed", "the tool broke")
    assert task_view(record("failed", result=failed), CREATED).status == "completed"


def test_a_cancel_a_kept_protocol_error_and_a_lapsed_worker_are_their_own_statuses() -> None:
    cancelled = task_view(
        record("failed", result=ToolResult.error("cancelled", "by its client")), CREATED
    )
    assert cancelled.status == "cancelled"
    error = {"code": -32603, "message": "the job broke"}
    broke = ToolResult(
        content=(), structured_content={PROTOCOL_ERROR: error}, is_error=True, error_kind="failed"
    )
    failed = task_view(record("failed", result=broke), CREATED)
    assert (failed.status, failed.error, failed.answer) == ("failed", error, None)
    lapsed = ToolResult.error("interrupted", "its worker stopped")
    stopped = task_view(record("failed", result=lapsed), CREATED)
    assert stopped.status == "failed"
    assert stopped.error is not None
    assert stopped.error["code"] == -32603


def test_a_call_waiting_for_a_decision_is_working_with_its_request() -> None:
    request = ApprovalRequest(
        run_id="task-x",
        call_id="call",
        tool=None,
        exposed_name="pay",
        arguments={"amount": 5},
        principal="alice",
        reason="moves money",
    )
    view = task_view(record("pending", request=request.to_dict()), CREATED)
    assert view.status == "working"
    assert view.approval is not None
    assert view.approval.arguments == {"amount": 5}
    assert view.message is not None
    assert "moves money" in view.message


def test_a_running_call_is_working_and_last_updated_when_it_started() -> None:
    view = task_view(record("running", started_at=CREATED + 2), CREATED)
    assert (view.status, view.updated) == ("working", CREATED + 2)


def test_a_task_id_names_its_principal_and_when_it_was_made() -> None:
    now = time.time()
    task_id = new_task_id("alice", now)
    made = created_at(task_id, "alice")
    assert made is not None
    assert abs(made - now) < 0.01
    assert created_at(task_id, "bob") is None
    assert created_at(task_id, {"sub": "alice"}) is None
    owner = task_id.rsplit("-", 1)[1]
    assert created_at(f"task-ffffffffffff-{'A' * 22}-{owner}", "alice") is None  # not yet
    for malformed in ("", "task", task_id + "x", task_id.replace("task-", "run-"), 7, None):
        assert created_at(malformed, "alice") is None


def test_a_request_past_its_deadline_offers_no_form_nor_question() -> None:
    request = ApprovalRequest(
        run_id="task-x",
        call_id="call",
        tool=None,
        exposed_name="pay",
        arguments={"amount": 5},
        principal="alice",
        reason="moves money",
        requested_at=CREATED,
        expires_at=CREATED + 60,
    )
    waiting = record("pending", request=request.to_dict())
    before = task_view(waiting, CREATED, now=CREATED + 59)
    assert before.approval is not None
    after = task_view(waiting, CREATED, now=CREATED + 60)
    assert (after.status, after.approval, after.questions) == ("working", None, ())
    assert after.message is not None
    assert "expired" in after.message
