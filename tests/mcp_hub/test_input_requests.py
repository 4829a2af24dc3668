"""Servers that ask for input during a call (MCP elicitation), through the hub's elicitor and
the run ledger: answered at once, declined without an elicitor, deferred (the call pauses like
an approval, is answered with ``toolwire.respond`` and continues the server's call), in one
process and across three, against servers of our own written with the ``mcp`` SDK (2026-07-28:
``InputRequiredResult`` and ``request_state``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

import toolwire
from toolwire.inputs import InputAnswer, InputRequest, accept, cancel, decline

pytest.importorskip("mcp")

import input_servers

from toolwire.mcp import Hub, InProcessServer, StdioServer

pytestmark = pytest.mark.anyio
HERE = Path(__file__).parent


def hub(elicitor: Any = None, **options: Any) -> Hub:
    server = InProcessServer(server=input_servers.asking(), **options)
    return Hub({"asking": server}, elicitor=elicitor)


def call(toolset: toolwire.ToolSet, name: str, call_id: str = "c1", **arguments: Any) -> Any:
    return toolwire.make_call(toolset, f"asking__{name}", arguments, call_id=call_id)


async def run(executor: toolwire.Executor, calls: list[Any], **options: Any) -> list[Any]:
    return [outcome.result for outcome in await executor.run(calls, **options)]


# -- answered at once -----------------------------------------------------------------------------


async def test_an_elicitor_answering_at_once_continues_the_call_and_sees_the_question() -> None:
    asked: list[InputRequest] = []

    def elicitor(request: InputRequest) -> InputAnswer:
        asked.append(request)
        return accept({"confirm": True})

    async with hub(elicitor) as connected:
        assert connected.protocol_version("asking") == "2026-07-28"
        toolset = connected.as_toolset()
        (result,) = await run(
            toolwire.Executor(toolset),
            [call(toolset, "delete", path="/srv/a")],
            run_id="r1",
            principal={"user": "ada"},
        )
    assert result.text == "deleted /srv/a"
    (question,) = asked
    assert question.message == "Delete /srv/a?"
    assert question.mode == "form"
    assert question.requested_schema is not None
    assert question.requested_schema["required"] == ["confirm"]
    assert (question.server, question.tool_name, question.exposed_name) == (
        "asking",
        "delete",
        "asking__delete",
    )
    assert dict(question.arguments) == {"path": "/srv/a"}
    assert (question.run_id, question.call_id, question.principal) == ("r1", "c1", {"user": "ada"})
    assert question.deferrable


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        ({"confirm": False, "note": "still needed"}, "kept /srv/a: still needed"),
        (decline(), "kept /srv/a: the user answered decline"),
        (cancel(), "kept /srv/a: the user answered cancel"),
    ],
)
async def test_a_mapping_is_accepted_content_and_a_decline_or_cancel_reaches_the_server(
    answer: Any, said: str
) -> None:
    async with hub(lambda request: answer) as connected:
        toolset = connected.as_toolset()
        (result,) = await run(toolwire.Executor(toolset), [call(toolset, "delete", path="/srv/a")])
    assert result.text == said


async def test_an_async_elicitor_is_awaited() -> None:
    async def elicitor(request: InputRequest) -> dict[str, Any]:
        await anyio.sleep(0)
        return {"confirm": True}

    async with hub(elicitor) as connected:
        toolset = connected.as_toolset()
        (result,) = await run(toolwire.Executor(toolset), [call(toolset, "delete", path="/x")])
    assert result.text == "deleted /x"


async def test_without_an_elicitor_every_question_is_declined() -> None:
    async with hub() as connected:
        toolset = connected.as_toolset()
        (result,) = await run(toolwire.Executor(toolset), [call(toolset, "delete", path="/x")])
    assert result.text == "kept /x: the user answered decline"


async def test_the_idle_clock_stands_still_while_the_elicitor_decides() -> None:
    async def slow(request: InputRequest) -> dict[str, Any]:
        await anyio.sleep(0.6)  # three times the server's timeout without progress
        return {"confirm": True}

    async with hub(slow, timeout=0.2) as connected:
        toolset = connected.as_toolset()
        (result,) = await run(toolwire.Executor(toolset), [call(toolset, "delete", path="/x")])
    assert result.text == "deleted /x"


# -- answers that are not sent --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        ({"confirm": "yes"}, "$.confirm"),
        ({"note": "no confirm"}, "confirm"),
        ({"confirm": True, "nested": {"a": 1}}, "$.nested"),
        ({"confirm": float("nan")}, "not a finite number"),
        (InputAnswer("decline", {"confirm": True}), "carries no content"),
        (42, "an elicitor returns an InputAnswer, a mapping or None"),
    ],
)
async def test_an_answer_that_does_not_fit_is_not_sent_and_the_call_says_why(
    answer: Any, said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "ran.log"
    monkeypatch.setenv("INPUT_LOG", str(log))
    async with hub(lambda request: answer) as connected:
        toolset = connected.as_toolset()
        (result,) = await run(toolwire.Executor(toolset), [call(toolset, "delete", path="/x")])
    assert result.error_kind == "failed"
    assert result.text.startswith("Tool 'asking__delete' stopped: its server asked for input")
    assert said in result.text
    assert not log.exists()  # the tool's body never ran


async def test_an_elicitor_that_raises_fails_the_call_closed() -> None:
    def broken(request: InputRequest) -> None:
        raise RuntimeError("the screen is gone")

    async with hub(broken) as connected:
        toolset = connected.as_toolset()
        (result,) = await run(toolwire.Executor(toolset), [call(toolset, "delete", path="/x")])
    assert result.error_kind == "failed"
    assert "the elicitor failed: RuntimeError: the screen is gone" in result.text


# -- deferred: the call waits in the run ----------------------------------------------------------


async def test_a_deferred_question_pauses_the_call_and_respond_resumes_it_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "ran.log"
    monkeypatch.setenv("INPUT_LOG", str(log))
    store = toolwire.MemoryStore()
    async with hub(lambda request: None) as connected:
        toolset = connected.as_toolset()
        executor = toolwire.Executor(toolset, store=store)
        calls = [call(toolset, "delete", path="/srv/a"), call(toolset, "add", "c2", a=1, b=2)]
        with pytest.raises(toolwire.ApprovalPending) as caught:
            await executor.run(calls, run_id="r1")
        assert str(caught.value) == "run 'r1': input needed for asking__delete (c1)"
        (waiting,) = caught.value.pending
        (question,) = waiting.input
        assert question.message == "Delete /srv/a?"
        assert (question.run_id, question.call_id, question.deferrable) == ("r1", "c1", True)

        # Listed like an approval, with its question, from the store alone.
        (listed,) = await toolwire.pending(store=store)
        assert listed.call_id == "c1"
        assert listed.reason == "the tool's server asks for input"
        assert [q.to_dict() for q in listed.input] == [question.to_dict()]
        assert listed.to_dict()["input"] == [question.to_dict()]

        await toolwire.respond("r1", "c1", {"confirm": True}, store=store, by="ops")
        assert await toolwire.pending(store=store) == []
        delete, add = await run(executor, calls, run_id="r1")
        assert delete.text == "deleted /srv/a"
        assert add.text == "3"
        outcomes = await executor.run(calls, run_id="r1")  # answered from the run now
    assert [o.from_store for o in outcomes] == [True, True]
    assert log.read_text().splitlines() == ["delete /srv/a accept"]  # ran once
    trails = {trail.call_id: trail for trail in await toolwire.history("r1", store=store)}
    trail = trails["c1"]
    assert trail.state == "completed"
    assert trail.requested is not None
    assert trail.requested["reason"] == "the tool's server asks for input"


async def test_a_call_without_a_run_id_gets_one_when_it_waits() -> None:
    store = toolwire.MemoryStore()
    async with hub(lambda request: None) as connected:
        toolset = connected.as_toolset()
        executor = toolwire.Executor(toolset, store=store)
        calls = [call(toolset, "add", "c0", a=2, b=2), call(toolset, "delete", path="/x")]
        with pytest.raises(toolwire.ApprovalPending) as caught:
            await executor.run(calls)
        run_id = caught.value.run_id
        assert run_id.startswith("run_")
        await toolwire.respond(run_id, "c1", {"confirm": True}, store=store)
        outcomes = await executor.run(calls, run_id=run_id)
    assert [o.result.text for o in outcomes] == ["4", "deleted /x"]
    assert outcomes[0].from_store  # the call that ran before the pause is not run again


async def test_questions_answered_at_once_are_kept_and_the_rest_answered_by_key() -> None:
    store = toolwire.MemoryStore()

    def seat_only(request: InputRequest) -> dict[str, Any] | None:
        return {"seat": "12A"} if "seat" in request.message else None

    async with hub(seat_only) as connected:
        toolset = connected.as_toolset()
        executor = toolwire.Executor(toolset, store=store)
        calls = [call(toolset, "book", flight="LH 2")]
        with pytest.raises(toolwire.ApprovalPending) as caught:
            await executor.run(calls, run_id="r1")
        (question,) = caught.value.pending[0].input
        assert question.message == "Which meal on LH 2?"
        await toolwire.respond("r1", "c1", {"meal": "fish"}, key=question.key, store=store)
        (result,) = await run(executor, calls, run_id="r1")
    assert result.text == "booked LH 2, seat 12A, fish meal"


async def test_several_open_questions_need_a_key_each() -> None:
    store = toolwire.MemoryStore()
    async with hub(lambda request: None) as connected:
        toolset = connected.as_toolset()
        executor = toolwire.Executor(toolset, store=store)
        calls = [call(toolset, "book", flight="LH 2")]
        with pytest.raises(toolwire.ApprovalPending) as caught:
            await executor.run(calls, run_id="r1")
        questions = {q.message: q.key for q in caught.value.pending[0].input}
        assert set(questions) == {"Which seat on LH 2?", "Which meal on LH 2?"}
        with pytest.raises(toolwire.ConfigurationError, match="waits for 2 answers"):
            await toolwire.respond("r1", "c1", {"seat": "1C"}, store=store)
        with pytest.raises(toolwire.ConfigurationError, match="has no question 'nope'"):
            await toolwire.respond("r1", "c1", {"seat": "1C"}, key="nope", store=store)
        seat = questions["Which seat on LH 2?"]
        await toolwire.respond("r1", "c1", {"seat": "1C"}, key=seat, store=store)
        # One answered, one open: the call still waits, for the open one only.
        with pytest.raises(toolwire.ApprovalPending) as again:
            await executor.run(calls, run_id="r1")
        assert [q.message for q in again.value.pending[0].input] == ["Which meal on LH 2?"]
        await toolwire.respond("r1", "c1", {"meal": "veg"}, store=store)  # the only one left
        (result,) = await run(executor, calls, run_id="r1")
    assert result.text == "booked LH 2, seat 1C, veg meal"


async def test_respond_checks_the_answer_and_records_nothing_that_does_not_fit() -> None:
    store = toolwire.MemoryStore()
    async with hub(lambda request: None) as connected:
        toolset = connected.as_toolset()
        executor = toolwire.Executor(toolset, store=store)
        calls = [call(toolset, "delete", path="/x")]
        with pytest.raises(toolwire.ApprovalPending):
            await executor.run(calls, run_id="r1")
        with pytest.raises(toolwire.InvalidArguments, match=r"\$\.confirm"):
            await toolwire.respond("r1", "c1", {"confirm": "yes"}, store=store)
        with pytest.raises(toolwire.InvalidArguments, match="carries no content"):
            await toolwire.respond("r1", "c1", {"confirm": True}, action="decline", store=store)
        with pytest.raises(toolwire.ToolwireError, match="no call 'c9' waiting for input"):
            await toolwire.respond("r1", "c9", {"confirm": True}, store=store)
        with pytest.raises(toolwire.ToolwireError, match="waits for input, not for approval"):
            await toolwire.decide("r1", "c1", toolwire.allow(), store=store)
        assert len(await toolwire.pending(store=store)) == 1  # still waiting, nothing recorded
        await toolwire.respond("r1", "c1", action="decline", store=store)
        await toolwire.respond("r1", "c1", action="decline", store=store)  # said again: no change
        with pytest.raises(toolwire.ToolwireError, match="already answered; an answer is final"):
            await toolwire.respond("r1", "c1", {"confirm": True}, store=store)
        (result,) = await run(executor, calls, run_id="r1")
    assert result.text == "kept /x: the user answered decline"


async def test_a_deny_stops_a_call_that_waits_for_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "ran.log"
    monkeypatch.setenv("INPUT_LOG", str(log))
    store = toolwire.MemoryStore()
    async with hub(lambda request: None) as connected:
        toolset = connected.as_toolset()
        executor = toolwire.Executor(toolset, store=store)
        calls = [call(toolset, "delete", path="/x")]
        with pytest.raises(toolwire.ApprovalPending):
            await executor.run(calls, run_id="r1")
        await toolwire.decide("r1", "c1", toolwire.deny("not today"), store=store)
        (result,) = await run(executor, calls, run_id="r1")
        with pytest.raises(toolwire.ToolwireError):
            await toolwire.respond("r1", "c1", {"confirm": True}, store=store)
    assert result.error_kind == "approval_denied"
    assert result.text == "Denied: not today."
    assert not log.exists()


async def test_a_question_past_the_approval_ttl_is_answered_expired() -> None:
    store = toolwire.MemoryStore()
    async with hub(lambda request: None) as connected:
        toolset = connected.as_toolset()
        executor = toolwire.Executor(toolset, store=store, approval_ttl=0.05)
        calls = [call(toolset, "delete", path="/x")]
        with pytest.raises(toolwire.ApprovalPending):
            await executor.run(calls, run_id="r1")
        await anyio.sleep(0.1)
        with pytest.raises(toolwire.ToolwireError, match="expired"):
            await toolwire.respond("r1", "c1", {"confirm": True}, store=store)
        (result,) = await run(executor, calls, run_id="r1")
    assert result.error_kind == "failed"
    assert "expired unanswered" in result.text


async def test_an_approved_call_that_waits_keeps_its_decision_and_is_not_asked_again() -> None:
    store = toolwire.MemoryStore()
    policy = toolwire.Policy(toolwire.Rule("ask", "asking/delete"))
    async with hub(lambda request: None) as connected:
        toolset = connected.as_toolset()
        executor = toolwire.Executor(
            toolset, store=store, policy=policy, approver=toolwire.DeferredApproval()
        )
        calls = [call(toolset, "delete", path="/x")]
        with pytest.raises(toolwire.ApprovalPending) as first:
            await executor.run(calls, run_id="r1")
        assert first.value.pending[0].input == ()  # an approval first
        await toolwire.decide("r1", "c1", toolwire.allow(), store=store, by="lead")
        with pytest.raises(toolwire.ApprovalPending) as second:
            await executor.run(calls, run_id="r1")
        assert len(second.value.pending[0].input) == 1  # then the server's question
        await toolwire.respond("r1", "c1", {"confirm": True}, store=store)
        (result,) = await run(executor, calls, run_id="r1")
        (trail,) = await toolwire.history("r1", store=store)
    assert result.text == "deleted /x"
    assert trail.decided is not None
    assert trail.decided["by"] == "lead"


# -- across processes -----------------------------------------------------------------------------


def _program(*args: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, str(HERE / "input_procs.py"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **env},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


async def test_request_state_is_resumed_in_another_process_from_a_sqlite_ledger(
    tmp_path: Path,
) -> None:
    store_path = str(tmp_path / "runs.sqlite")
    log = tmp_path / "ran.log"
    env = {"INPUT_STATE_KEY": "k" * 32, "INPUT_LOG": str(log)}
    # 1. One process (a hub and its own server process) pauses the call.
    kept = json.loads(_program("pause", store_path, "r1", env=env))
    (question,) = kept["input"]
    assert question["message"] == "Delete /srv/a?"
    # 2. Another answers it, with nothing but the store.
    _program("respond", store_path, "r1", "c1", json.dumps({"confirm": True}), env=env)
    # 3. A third (this one, with a new server process) resumes the run.
    server = StdioServer(command=sys.executable, args=[str(HERE / "input_servers.py")], env=env)
    store = toolwire.SQLiteStore(store_path)
    async with Hub({"asking": server}) as connected:  # no elicitor needed to resume
        toolset = connected.as_toolset()
        executor = toolwire.Executor(toolset, store=store)
        (result,) = await run(executor, [call(toolset, "delete", path="/srv/a")], run_id="r1")
    assert result.text == "deleted /srv/a"
    assert log.read_text().splitlines() == ["delete /srv/a accept"]
    (trail,) = await toolwire.history("r1", store=store)
    assert trail.state == "completed"


async def test_a_server_that_cannot_read_the_kept_state_fails_the_call_without_running_it(
    tmp_path: Path,
) -> None:
    store_path = str(tmp_path / "runs.sqlite")
    log = tmp_path / "ran.log"
    env = {"INPUT_STATE_KEY": "k" * 32, "INPUT_LOG": str(log)}
    _program("pause", store_path, "r1", env=env)
    _program("respond", store_path, "r1", "c1", json.dumps({"confirm": True}), env=env)
    # The server restarted with another key: the state it sealed is not its own any more.
    other = {**env, "INPUT_STATE_KEY": "o" * 32}
    server = StdioServer(command=sys.executable, args=[str(HERE / "input_servers.py")], env=other)
    store = toolwire.SQLiteStore(store_path)
    async with Hub({"asking": server}) as connected:
        toolset = connected.as_toolset()
        executor = toolwire.Executor(toolset, store=store)
        (result,) = await run(executor, [call(toolset, "delete", path="/srv/a")], run_id="r1")
        assert connected.status["asking"] is None  # the server is fine: only the call failed
    assert result.error_kind == "failed"
    assert result.text.startswith("Tool 'asking__delete' failed:")
    assert not log.exists()


# -- the command line and the console --------------------------------------------------------------


async def test_the_command_line_lists_the_question_and_answers_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from toolwire.cli import main

    path = tmp_path / "runs.sqlite"
    url = f"sqlite:///{path}"
    store = toolwire.SQLiteStore(path)
    async with hub(lambda request: None) as connected:
        toolset = connected.as_toolset()
        executor = toolwire.Executor(toolset, store=store)
        calls = [call(toolset, "delete", path="/x")]
        with pytest.raises(toolwire.ApprovalPending) as caught:
            await executor.run(calls, run_id="r1")
        (question,) = caught.value.pending[0].input
        assert question.round is not None
        assert await anyio.to_thread.run_sync(main, ["pending", "--store", url]) == 0
        listed = capsys.readouterr().out
        assert f"    asks ({question.key}, round {question.round}): Delete /x?" in listed
        answer = ["respond", "r1", "c1", '{"confirm": "maybe"}', "--store", url]
        assert await anyio.to_thread.run_sync(main, answer) == 2
        assert "$.confirm" in capsys.readouterr().err
        answer[3] = '{"confirm": true}'
        assert await anyio.to_thread.run_sync(main, [*answer, "--by", "ops"]) == 0
        (result,) = await run(executor, calls, run_id="r1")
    assert result.text == "deleted /x"


async def test_the_console_refuses_to_allow_a_call_that_waits_for_input() -> None:
    pytest.importorskip("starlette")
    import httpx

    from toolwire.inbox import app

    store = toolwire.MemoryStore()
    async with hub(lambda request: None) as connected:
        toolset = connected.as_toolset()
        executor = toolwire.Executor(toolset, store=store)
        calls = [call(toolset, "delete", path="/x")]
        with pytest.raises(toolwire.ApprovalPending):
            await executor.run(calls, run_id="r1")
        console = app(store, authorize=lambda request: "bob")
        transport = httpx.ASGITransport(app=console)
        async with httpx.AsyncClient(transport=transport, base_url="http://inbox.test") as http:
            listed = (await http.get("/api/pending", headers={"X-Toolwire-Inbox": "1"})).json()
            url = "/api/runs/r1/calls/c1/decision"
            refused = await http.post(
                url, json={"decision": "allow"}, headers={"X-Toolwire-Inbox": "1"}
            )
        assert refused.status_code == 409
        assert refused.json()["error"]["code"] == "waits_for_input"
        assert len(await toolwire.pending(store=store)) == 1  # still listed, still waiting
    (shown,) = listed["items"]
    assert shown["input"][0]["message"] == "Delete /x?"


async def test_the_console_answers_a_question_and_the_call_goes_on_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What ``toolwire respond`` does, from the console's API: the answer is checked, kept
    with who gave it, and the call resumes; a second answer, or a bad one, records nothing."""
    pytest.importorskip("starlette")
    import httpx

    from toolwire.inbox import app

    log = tmp_path / "ran.log"
    monkeypatch.setenv("INPUT_LOG", str(log))
    store = toolwire.MemoryStore()
    headers = {"X-Toolwire-Inbox": "1"}
    async with hub(lambda request: None) as connected:
        toolset = connected.as_toolset()
        executor = toolwire.Executor(toolset, store=store)
        calls = [call(toolset, "delete", path="/srv/a")]
        with pytest.raises(toolwire.ApprovalPending):
            await executor.run(calls, run_id="r1")
        console = app(store, authorize=lambda request: "bob")
        transport = httpx.ASGITransport(app=console)
        url = "/api/runs/r1/calls/c1/answer"
        async with httpx.AsyncClient(transport=transport, base_url="http://inbox.test") as http:
            (shown,) = (await http.get("/api/pending", headers=headers)).json()["items"]
            key = shown["input"][0]["key"]
            forged = await http.post(url, json={"key": key, "action": "accept", "content": {}})
            misfit = await http.post(
                url,
                json={"key": key, "action": "accept", "content": {"confirm": "yes"}},
                headers=headers,
            )
            unknown = await http.post(url, json={"key": key, "action": "maybe"}, headers=headers)
            answered = await http.post(
                url,
                json={"key": key, "action": "accept", "content": {"confirm": True}},
                headers=headers,
            )
            again = await http.post(url, json={"key": key, "action": "decline"}, headers=headers)
        assert forged.status_code == 403  # the API header keeps a cross-site form out
        assert misfit.status_code == 400
        assert unknown.status_code == 400
        assert answered.status_code == 200, answered.text
        assert answered.json()["answered"] == key
        assert again.status_code == 409  # an answer is final
        assert await toolwire.pending(store=store) == []
        (delete,) = await run(executor, calls, run_id="r1")
        assert delete.text == "deleted /srv/a"
        await run(executor, calls, run_id="r1")  # answered from the run now
    assert log.read_text().splitlines() == ["delete /srv/a accept"]  # ran once
    (trail,) = await toolwire.history("r1", store=store)
    assert trail.state == "completed"
