"""Each surface moved onto the engine boundary sees, case by case, what the one it replaced saw.

``same_path_cases.py`` holds the cases (every surface, with the same model responses of the
four providers, policies, approvers and stores, and resumes) and records what the model or
the user sees of each. ``data/same_path/recorded.json`` is its recording against the release
before the move; this test runs it against the code as it is and compares, case by case.

A difference is allowed only where the new behaviour differs on purpose: each is listed below
with the fix it comes from, the cases it touches, and exactly what it changes (the test checks
both that each such case does differ, and that it differs in nothing else). Anything else is a
regression.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dbos")
pytest.importorskip("mcp")
pytest.importorskip("google.genai")

HERE = Path(__file__).parent
SCRIPT = HERE / "same_path_cases.py"
RECORDED: dict[str, Any] = json.loads((HERE / "data" / "same_path" / "recorded.json").read_text())
ABSENT = "<absent>"

Path_ = tuple[Any, ...]
Change = tuple[Path_, Any, Any]
"""Where a case's record differs: the path in it, the value before, the value now."""


def changes(before: Any, now: Any, at: Path_ = ()) -> Iterator[Change]:
    """Every leaf where ``now`` differs from ``before`` (a key one side lacks is ``<absent>``;
    lists of other lengths differ at ``len``, then item by item)."""
    if isinstance(before, dict) and isinstance(now, dict):
        for key in sorted(set(before) | set(now)):
            yield from changes(before.get(key, ABSENT), now.get(key, ABSENT), (*at, key))
    elif isinstance(before, list) and isinstance(now, list):
        if len(before) != len(now):
            yield (*at, "len"), len(before), len(now)
        for index, (one, other) in enumerate(zip(before, now, strict=False)):
            yield from changes(one, other, (*at, index))
    elif before != now or type(before) is not type(now):
        yield at, before, now


# -- the differences made on purpose ---------------------------------------------------------------

HALTED = "Not run: an approver halted this turn."
DID = re.compile(r"(work|serial|pay) did \d+")


def _kept_through_a_halt(path: Path_, before: Any, now: Any) -> bool:
    """A call that ran before a halt was recorded keeps its answer: before, the resume
    answered it (and rewrote its record) as not run."""
    if path[-1] == "approve":  # a hosted request: its approval stands
        return (before, now) == (False, True)
    was_halted = before in (ABSENT, True, "approval_denied", "denied") or (
        isinstance(before, str) and before.endswith(HALTED)
    )
    is_kept = now in (ABSENT, None, False, "completed") or (
        isinstance(now, str) and DID.fullmatch(now) is not None
    )
    return was_halted and is_kept


OTHER_ARGUMENTS = (
    "Refused: approved with other arguments than the model's, and the provider runs the "
    "model's own, which nobody approved."
)


def _edit_refused(path: Path_, before: Any, now: Any) -> bool:
    """A hosted request approved with edited arguments is refused: the provider runs the
    model's own arguments, which nobody approved."""
    return (path[-1], before, now) in {
        ("approve", True, False),
        ("reason", ABSENT, OTHER_ARGUMENTS),
        ("state", "completed", "denied"),
        ("error_kind", None, "denied"),
    }


def _json_said_why(path: Path_, before: Any, now: Any) -> bool:
    """Hosted arguments are decoded by the hardened JSON reader, which says why a text is not
    JSON."""
    return (
        path[-1] == "reason"
        and before == "Refused: its arguments are not JSON."
        and isinstance(now, str)
        and now.startswith("Refused: its arguments are not JSON (")
    )


def _approved_through_the_ledger(path: Path_, before: Any, now: Any) -> bool:
    """A gateway's approvals are chosen by ``approve_by`` (``ledger`` or ``client``), and a
    call that waits says which, and that the same call again runs once allowed."""
    if not (isinstance(before, str) and "waits for approval" in before):
        return False
    said = before.replace(
        "(elicitation), so", "(elicitation): its calls are approved through the ledger, so"
    ).replace(
        "with the same arguments.",
        "with the same arguments to learn the decision: it runs once allowed.",
    )
    return bool(said == now)


def _said_stopped(path: Path_, before: Any, now: Any) -> bool:
    """A turn a ``DurableTools`` workflow runs says why the model stopped, as
    ``execute_tool_calls`` does (before, it re-implemented the answer step without it)."""
    return path[-1] == "stopped" and before is None and isinstance(now, list)


def _untouched(path: Path_, before: Any, now: Any) -> bool:
    """``DurableTools`` never changes the executor it was given (before, it gave it a deferred
    approver)."""
    return (before, now) == ("DeferredApproval", "NoneType")


def _task_answered(result: dict[str, Any]) -> Callable[[Path_, Any, Any], bool]:
    def check(path: Path_, before: Any, now: Any) -> bool:
        """A decided task is restarted through the engine boundary, bound to its own call
        (before, it restarted the call its own way: a redacted call failed its binding and an
        expired request was never answered, so the task stayed working)."""
        if path == ("steps", 3, "task"):
            return before == "still working after 5 seconds" and now == {
                "status": "completed",
                "result": result,
            }
        if path[:3] == ("steps", 4, "ran"):  # the allowed call ran, once
            return (before, now) == (ABSENT, 1) and not result["is_error"]
        if path[:3] == ("steps", 5, "records"):  # and its record says how it ended
            return (path[-1], now) in {
                ("state", "completed" if not result["is_error"] else "denied"),
                ("error_kind", None if not result["is_error"] else "approval_denied"),
                ("decided", "allow" if not result["is_error"] else None),
                ("edited", False if not result["is_error"] else None),
            }
        return False

    return check


def _expires_with_its_task(path: Path_, before: Any, now: Any) -> bool:
    """A task's request for approval expires with the task (before, the request of a task
    its client abandoned waited for a person forever)."""
    return path[-1] == "expires" and (before, now) == (False, True)


@dataclass(frozen=True)
class Intended:
    """A difference made on purpose: the fix (``why``), the cases it shows in, and what it
    changes in them."""

    why: str
    cases: re.Pattern[str]
    allows: Callable[[Path_, Any, Any], bool]


INTENDED = [
    Intended(
        "a halt keeps an answer already kept",
        re.compile(r"((facade|loop|genai|dbos)/.*gated(_two)?|hosted/mixed)/ask/halted/"),
        _kept_through_a_halt,
    ),
    Intended(
        "hosted allow with edited arguments is refused",
        re.compile(r"hosted/.*/ask/(edited|bad_edit)/"),
        _edit_refused,
    ),
    Intended(
        "hosted approvals decode JSON with the hardened reader",
        re.compile(r"hosted/mixed/"),
        _json_said_why,
    ),
    Intended(
        "gateway approvals chosen by approve_by",
        re.compile(
            r"gateway/pay/(ask/(allowed|denied|edited|halted|bad_edit|expired)|called_again)"
        ),
        _approved_through_the_ledger,
    ),
    Intended(
        "DurableTools answers through ParsedTurn.answer, stopped= included",
        re.compile(r"dbos/[^/]+/stopped$"),
        _said_stopped,
    ),
    Intended(
        "a wrapper never changes the object it was given",
        re.compile(r"dbos/executor_given$"),
        _untouched,
    ),
    Intended(
        "tasks restart a call through the engine boundary",
        re.compile(r"tasks/pay/ask/allowed/redacted/"),
        _task_answered({"is_error": False, "text": "pay did 1"}),
    ),
    Intended(
        "tasks restart a call through the engine boundary",
        re.compile(r"tasks/pay/ask/expired/"),
        _task_answered({"is_error": True, "text": "Denied: the approval request expired."}),
    ),
]

INTENDED.append(
    Intended(
        "a task's request for approval expires with the task",
        re.compile(r"tasks/pay/ask/(allowed|cancelled|denied|edited|halted)/"),
        _expires_with_its_task,
    )
)

REGRESSIONS: dict[str, str] = {}
"""Cases whose difference is not on purpose, by case: what differs (none found)."""


# -- running the cases -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def seen_now(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> dict[str, Any]:
    """Every case run against the code as it is, in a process of its own (DBOS launched once
    there), as the recording was made: once per test session, whichever worker gets there
    first (the others read what it wrote)."""
    base = tmp_path_factory.getbasetemp()
    shared = base if worker_id == "master" else base.parent  # (the session's, for every worker)
    out = shared / "same_path_seen.json"
    with (shared / "same_path.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not out.exists():
            workdir = tmp_path_factory.mktemp("same_path")
            done = subprocess.run(
                [sys.executable, str(SCRIPT), str(workdir / "seen.json")],
                env={**os.environ, "TMPDIR": str(workdir)},
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
            assert done.returncode == 0, done.stderr[-4000:]
            (workdir / "seen.json").replace(out)
    seen: dict[str, Any] = json.loads(out.read_text())
    return seen


def test_the_cases_are_the_recorded_ones(seen_now: dict[str, Any]) -> None:
    assert sorted(seen_now) == sorted(RECORDED)


def _marked(case: str) -> Any:
    if case in REGRESSIONS:
        return pytest.param(
            case, marks=pytest.mark.xfail(strict=True, reason=REGRESSIONS[case]), id=case
        )
    return pytest.param(case, id=case)


@pytest.mark.parametrize("case", [_marked(case) for case in sorted(RECORDED)])
def test_each_case_sees_what_it_saw_before(case: str, seen_now: dict[str, Any]) -> None:
    before, now = RECORDED[case]["steps"], seen_now[case]["steps"]
    intended = [i for i in INTENDED if i.cases.match(case)]
    found = list(changes({"steps": before}, {"steps": now}))
    unexplained = [change for change in found if not any(i.allows(*change) for i in intended)]
    assert not unexplained, "\n".join(
        f"{list(path)}:\n  before: {json.dumps(old)[:600]}\n  now:    {json.dumps(new)[:600]}"
        for path, old, new in unexplained
    )
    if intended:  # each difference made on purpose shows in the cases it names
        assert found, f"{case} was expected to differ: {[i.why for i in intended]}"
