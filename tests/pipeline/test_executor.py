from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolwire import (
    ApprovalPending,
    ApprovalRequest,
    AutoApprove,
    CallbackApproval,
    ConfigurationError,
    DeferredApproval,
    Executor,
    MemoryStore,
    Policy,
    Rule,
    TextContent,
    ToolNotFound,
    ToolResult,
    ToolSet,
    Veto,
    allow,
    deny,
    execute_tool_calls,
    halt,
    tool,
)
from toolwire.providers import parse_calls

pytestmark = pytest.mark.anyio

RUNS: Counter[str] = Counter()


@pytest.fixture(autouse=True)
def _reset_counter() -> None:
    RUNS.clear()


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    RUNS["add"] += 1
    return a + b


@tool
async def send_email(to: str, body: str = "") -> str:
    """Send an email."""
    RUNS["send_email"] += 1
    return f"sent to {to}"


@tool
def explode(reason: str) -> str:
    """Always fails."""
    RUNS["explode"] += 1
    raise ValueError(f"cannot: {reason}")


@tool(timeout=0.2)
async def sleepy(seconds: float) -> str:
    """Sleeps."""
    await anyio.sleep(seconds)
    return "woke"


TOOLSET = ToolSet([add, send_email, explode, sleepy])


def calls(*specs: tuple[str, dict[str, Any]] | tuple[str, dict[str, Any], str]) -> list[Any]:
    parts = []
    for spec in specs:
        body: dict[str, Any] = {"name": spec[0], "args": spec[1]}
        if len(spec) == 3:
            body["id"] = spec[2]
        parts.append({"functionCall": body})
    return parse_calls("gemini", parts, TOOLSET)


def kinds(outcomes: list[Any]) -> list[str | None]:
    return [o.result.error_kind for o in outcomes]


# -- error kinds ---------------------------------------------------------------------------------


async def test_every_call_is_answered_in_order_with_its_error_kind() -> None:
    executor = Executor(TOOLSET, policy=Policy(Rule("deny", "send_email")))
    outcomes = await executor.run(
        calls(
            ("add", {"a": 1, "b": 2}),
            ("nope", {}),
            ("add", {"a": "x"}),
            ("send_email", {"to": "a@b.c"}),
            ("explode", {"reason": "boom"}),
        )
    )
    assert kinds(outcomes) == [None, "not_found", "invalid_arguments", "denied", "failed"]
    assert outcomes[0].result.text == "3"
    assert "$.a" in outcomes[2].result.text
    assert "$.b" in outcomes[2].result.text
    assert outcomes[3].result.text == "Denied: denied by policy rule 'send_email'."
    assert outcomes[4].result.text == "Tool 'explode' failed: ValueError: cannot: boom"
    assert "Traceback" not in outcomes[4].result.text
    assert RUNS == {"add": 1, "explode": 1}


async def test_a_tool_past_its_timeout_is_answered_promptly() -> None:
    with anyio.fail_after(5):  # the tool would sleep 60 s
        [outcome] = await Executor(TOOLSET).run(calls(("sleepy", {"seconds": 60})))
    assert outcome.result.error_kind == "timeout"
    assert outcome.result.text == "Tool 'sleepy' timed out after 0.2 seconds."


async def test_a_tool_raising_timeout_error_itself_is_a_failure_not_a_timeout() -> None:
    @tool
    async def upstream() -> str:
        """Call a service that times out."""
        raise TimeoutError("the upstream service timed out")

    for executor in (Executor([upstream]), Executor([upstream], timeout=30)):
        [outcome] = await executor.run(
            parse_calls("gemini", [{"functionCall": {"name": "upstream"}}], ToolSet([upstream]))
        )
        assert outcome.result.error_kind == "failed"
        assert outcome.result.text == (
            "Tool 'upstream' failed: TimeoutError: the upstream service timed out"
        )


async def test_a_blocking_sync_tool_past_the_timeout_is_answered_and_abandoned() -> None:
    release = threading.Event()

    @tool
    def blocking() -> str:
        """Block until released."""
        release.wait(30)
        return "done"

    try:
        with anyio.fail_after(5):
            [outcome] = await Executor([blocking], timeout=0.1).run(
                parse_calls("gemini", [{"functionCall": {"name": "blocking"}}], ToolSet([blocking]))
            )
        assert outcome.result.error_kind == "timeout"
    finally:
        release.set()


async def test_a_tool_without_a_handler_fails_cleanly() -> None:
    from toolwire import Tool

    declared_only = ToolSet([Tool(name="remote")])
    [outcome] = await Executor(declared_only).run(
        parse_calls("gemini", [{"functionCall": {"name": "remote"}}], declared_only)
    )
    assert outcome.result.error_kind == "failed"
    assert "no handler" in outcome.result.text


async def test_on_unknown_raise_raises_before_anything_runs() -> None:
    executor = Executor(TOOLSET, on_unknown="raise")
    with pytest.raises(ToolNotFound):
        await executor.run(calls(("add", {"a": 1, "b": 1}), ("ghost", {})))
    assert RUNS["add"] == 0


async def test_long_output_is_truncated_with_a_notice() -> None:
    @tool
    def verbose() -> str:
        """Answer at length."""
        return "x" * 500

    toolset = ToolSet([verbose])
    [outcome] = await Executor(toolset, max_output_chars=100).run(
        parse_calls("gemini", [{"functionCall": {"name": "verbose"}}], toolset)
    )
    parts = outcome.result.content
    assert parts == (
        TextContent("x" * 100),
        TextContent("[truncated: 100 of 500 characters shown]"),
    )


# -- approval --------------------------------------------------------------------------------


ASK_EMAIL = Policy(Rule("ask", "send_email"))


async def test_ask_without_an_approver_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="no approver"):
        await Executor(TOOLSET, policy=ASK_EMAIL).run(calls(("send_email", {"to": "x"})))


async def test_immediate_approvers() -> None:
    seen: list[ApprovalRequest] = []

    def decide(request: ApprovalRequest) -> Any:
        seen.append(request)
        return request.arguments["to"].endswith("@ok.test")

    executor = Executor(TOOLSET, policy=ASK_EMAIL, approver=CallbackApproval(decide))
    outcomes = await executor.run(
        calls(("send_email", {"to": "a@ok.test"}), ("send_email", {"to": "a@evil.test"})),
        principal="alice",
    )
    assert kinds(outcomes) == [None, "approval_denied"]
    assert outcomes[1].result.text == "Denied: the call was not approved."
    assert [r.principal for r in seen] == ["alice", "alice"]
    assert RUNS["send_email"] == 1

    auto = await Executor(TOOLSET, policy=ASK_EMAIL, approver=AutoApprove()).run(
        calls(("send_email", {"to": "x"}))
    )
    assert kinds(auto) == [None]


async def test_async_callback_with_reasons() -> None:
    async def decide(request: ApprovalRequest) -> Any:
        await anyio.sleep(0)
        return deny("not on weekends")

    [outcome] = await Executor(TOOLSET, policy=ASK_EMAIL, approver=CallbackApproval(decide)).run(
        calls(("send_email", {"to": "x"}))
    )
    assert outcome.result.text == "Denied: not on weekends."


async def test_halt_denies_and_stops_the_rest_of_the_turn() -> None:
    asked: list[str] = []

    def decide(request: ApprovalRequest) -> Any:
        asked.append(request.arguments["to"])
        return halt("user stopped the agent")

    executor = Executor(TOOLSET, policy=ASK_EMAIL, approver=CallbackApproval(decide))
    outcomes = await executor.run(
        calls(("add", {"a": 1, "b": 1}), ("send_email", {"to": "x"}), ("send_email", {"to": "y"}))
    )
    assert kinds(outcomes) == ["approval_denied"] * 3
    assert asked == ["x"]  # nobody is asked again after a halt
    assert outcomes[1].halted
    assert not outcomes[0].halted
    assert RUNS == {}


async def test_deferred_approval_resumes_without_running_anything_twice() -> None:
    store = MemoryStore()
    executor = Executor(TOOLSET, policy=ASK_EMAIL, approver=DeferredApproval(), store=store)
    turn = calls(
        ("add", {"a": 2, "b": 3}), ("send_email", {"to": "bob"}), ("send_email", {"to": "eve"})
    )

    with pytest.raises(ApprovalPending) as info:
        await executor.run(turn, run_id="r1")
    pending = info.value.pending
    assert info.value.run_id == "r1"
    assert [p.arguments["to"] for p in pending] == ["bob", "eve"]
    assert RUNS == {"add": 1}  # what needed no approval ran

    await executor.decide("r1", pending[0].call_id, allow())
    with pytest.raises(ApprovalPending) as again:  # eve still undecided
        await executor.run(turn, run_id="r1")
    assert [p.arguments["to"] for p in again.value.pending] == ["eve"]
    assert RUNS == {"add": 1, "send_email": 1}

    await executor.decide("r1", pending[1].call_id, deny("eve is not a customer"))
    outcomes = await executor.run(turn, run_id="r1")
    assert kinds(outcomes) == [None, None, "approval_denied"]
    assert [o.from_store for o in outcomes] == [True, True, False]
    assert outcomes[0].result.text == "5"

    for _ in range(3):  # replays are answered from the store
        replay = await executor.run(list(reversed(turn)), run_id="r1")
        assert all(o.from_store for o in replay)
    assert RUNS == {"add": 1, "send_email": 1}


async def test_a_generated_run_id_is_given_back_when_approval_is_pending() -> None:
    executor = Executor(TOOLSET, policy=ASK_EMAIL, approver=DeferredApproval())
    with pytest.raises(ApprovalPending) as info:
        await executor.run(calls(("send_email", {"to": "bob"})))
    run_id = info.value.run_id
    await executor.decide(run_id, info.value.pending[0].call_id, allow())
    [outcome] = await executor.run(calls(("send_email", {"to": "bob"})), run_id=run_id)
    assert outcome.result.text == "sent to bob"


async def test_deciding_an_unknown_call_is_an_error() -> None:
    from toolwire import ToolwireError

    with pytest.raises(ToolwireError, match="no call"):
        await Executor(TOOLSET).decide("nope", "c1", allow())


async def test_a_reused_call_id_with_other_arguments_is_refused() -> None:
    executor = Executor(TOOLSET)
    await executor.run(calls(("add", {"a": 1, "b": 1}, "c1")), run_id="r")
    with pytest.raises(ConfigurationError, match="another model response"):
        await executor.run(calls(("add", {"a": 9, "b": 9}, "c1")), run_id="r")


async def test_stable_ids_match_a_reordered_retry() -> None:
    executor = Executor(TOOLSET)
    turn = calls(("add", {"a": 1, "b": 1}), ("add", {"a": 1, "b": 1}), ("add", {"a": 2, "b": 2}))
    await executor.run(turn, run_id="r")
    reordered = calls(
        ("add", {"a": 2, "b": 2}), ("add", {"a": 1, "b": 1}), ("add", {"a": 1, "b": 1})
    )
    outcomes = await executor.run(reordered, run_id="r")
    assert all(o.from_store for o in outcomes)
    assert [o.result.text for o in outcomes] == ["4", "2", "2"]
    assert RUNS["add"] == 3


# -- hooks -------------------------------------------------------------------------------------


async def test_hooks_rewrite_veto_and_redact() -> None:
    def before(context: Any) -> Any:
        if context.call.exposed_name == "explode":
            return Veto("explosions are disabled")
        if context.call.exposed_name == "add":
            return {"a": context.arguments["a"] * 10, "b": context.arguments["b"]}
        return None

    async def after(context: Any, result: ToolResult) -> Any:
        if context.call.exposed_name == "send_email":
            return ToolResult(content=(TextContent("sent to [redacted]"),))
        return None

    executor = Executor(TOOLSET, before_call=[before], after_call=[after])
    outcomes = await executor.run(
        calls(
            ("add", {"a": 1, "b": 2}), ("explode", {"reason": "x"}), ("send_email", {"to": "bob"})
        )
    )
    assert [o.result.text for o in outcomes] == [
        "12",
        "explosions are disabled",
        "sent to [redacted]",
    ]
    assert kinds(outcomes) == [None, "denied", None]


async def test_a_hook_rewrite_is_validated_again() -> None:
    executor = Executor(TOOLSET, before_call=[lambda c: {"a": "not a number", "b": 1}])
    [outcome] = await executor.run(calls(("add", {"a": 1, "b": 2})))
    assert outcome.result.error_kind == "invalid_arguments"
    assert outcome.result.text.startswith("A hook rewrote the arguments")


# -- concurrency -------------------------------------------------------------------------------


async def test_calls_of_a_turn_run_concurrently_and_answer_in_order() -> None:
    started = 0
    all_started = anyio.Event()
    finished = {n: anyio.Event() for n in (1, 2, 3, 4)}
    finished[4].set()

    @tool
    async def wait_for_all(n: int) -> int:
        """Wait until n calls have started."""
        nonlocal started
        started += 1
        if started == 3:
            all_started.set()
        await all_started.wait()  # would never return if calls ran one by one
        await finished[n + 1].wait()  # finish in reverse order
        finished[n].set()
        return n

    toolset = ToolSet([wait_for_all])
    parts = [{"functionCall": {"name": "wait_for_all", "args": {"n": n}}} for n in (1, 2, 3)]
    with anyio.fail_after(5):
        outcomes = await Executor(toolset).run(parse_calls("gemini", parts, toolset))
    assert [o.result.text for o in outcomes] == ["1", "2", "3"]


async def test_a_tool_that_is_not_parallel_safe_runs_alone() -> None:
    running = 0
    log: list[tuple[str, int]] = []

    async def body(name: str) -> str:
        nonlocal running
        running += 1
        log.append((name, running))
        await anyio.sleep(0.01)
        running -= 1
        return name

    @tool
    async def shared(tag: str) -> str:
        """Run beside other calls."""
        return await body(tag)

    @tool(parallel_safe=False)
    async def exclusive(tag: str) -> str:
        """Run alone."""
        return await body(tag)

    toolset = ToolSet([shared, exclusive])
    parts = [
        {"functionCall": {"name": n, "args": {"tag": t}}}
        for n, t in [("shared", "s1"), ("shared", "s2"), ("exclusive", "x"), ("shared", "s3")]
    ]
    outcomes = await Executor(toolset).run(parse_calls("gemini", parts, toolset))
    assert [o.result.text for o in outcomes] == ["s1", "s2", "x", "s3"]
    assert ("x", 1) in log  # alone
    order = [name for name, _ in log]
    assert order.index("x") > max(order.index("s1"), order.index("s2"))
    assert order.index("s3") > order.index("x")


async def test_the_global_concurrency_limit_holds() -> None:
    running = peak = 0

    @tool
    async def work(i: int) -> int:
        """Work a while."""
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await anyio.sleep(0.01)
        running -= 1
        return i

    toolset = ToolSet([work])
    parts = [{"functionCall": {"name": "work", "args": {"i": i}}} for i in range(12)]
    outcomes = await Executor(toolset, max_concurrency=3).run(parse_calls("gemini", parts, toolset))
    assert len(outcomes) == 12
    assert peak == 3


async def test_cancelling_the_turn_still_answers_every_call() -> None:
    gate = anyio.Event()

    @tool
    async def slow() -> str:
        """Take long."""
        gate.set()
        await anyio.sleep(60)
        return "never"

    @tool
    async def quick() -> str:
        """Answer at once."""
        return "quick"  # done in its first step, before slow starts waiting

    toolset = ToolSet([quick, slow])
    executor = Executor(toolset)
    parts = [{"functionCall": {"name": "quick"}}, {"functionCall": {"name": "slow"}}]
    result: list[Any] = []

    async def run_turn() -> None:
        result.extend(await executor.run(parse_calls("gemini", parts, toolset)))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(run_turn)
            await gate.wait()
            executor.cancel()
    assert kinds(result) == [None, "cancelled"]


@pytest.mark.parametrize("run_id", [None, "r1"])
async def test_cancelling_a_one_call_turn_answers_it_cancelled(run_id: str | None) -> None:
    gate = anyio.Event()

    @tool(timeout=30)
    async def slow() -> str:
        """Take long."""
        gate.set()
        await anyio.sleep(60)
        return "never"

    toolset = ToolSet([slow])
    store = MemoryStore()
    executor = Executor(toolset, store=store)
    result: list[Any] = []

    async def run_turn() -> None:
        items = parse_calls("gemini", [{"functionCall": {"name": "slow"}}], toolset)
        result.extend(await executor.run(items, run_id=run_id))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(run_turn)
            await gate.wait()
            executor.cancel("another run")  # not this one
            await anyio.sleep(0.05)
            assert not result
            executor.cancel(run_id)
    assert kinds(result) == ["cancelled"]
    if run_id is not None:  # the claim stays: a resume says interrupted, not "never ran"
        [record] = await store.get_many(run_id, [result[0].item.local_id])
        assert record is not None
        assert record.state == "running"


async def test_a_turn_cancelled_before_its_call_starts_does_not_run_it() -> None:
    class SlowStore(MemoryStore):
        """Claims wait for a gate, so the turn can be cancelled in between."""

        def __init__(self) -> None:
            super().__init__()
            self.claiming = anyio.Event()
            self.release = anyio.Event()

        async def swap(self, run_id: str, expected: Any, record: Any, **options: Any) -> Any:
            if record.state == "running":
                self.claiming.set()
                await self.release.wait()
            return await super().swap(run_id, expected, record, **options)

    store = SlowStore()
    executor = Executor(TOOLSET, store=store)
    result: list[Any] = []

    async def run_turn() -> None:
        result.extend(await executor.run(calls(("add", {"a": 1, "b": 2})), run_id="r"))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(run_turn)
            await store.claiming.wait()
            executor.cancel()
            store.release.set()
    assert kinds(result) == ["cancelled"]
    assert RUNS["add"] == 0


async def test_a_call_left_running_by_a_crash_is_not_rerun() -> None:
    from toolwire.store import CallRecord

    store = MemoryStore()
    executor = Executor(TOOLSET, store=store)
    [call] = calls(("add", {"a": 1, "b": 1}, "c1"))
    from toolwire.ledger import fingerprint as _fingerprint

    running = CallRecord(call_id="c1", tool="add", fingerprint=_fingerprint(call), state="running")
    assert await store.swap("r", None, running) is not None
    [outcome] = await executor.run([call], run_id="r")
    assert outcome.result.error_kind == "interrupted"
    assert RUNS["add"] == 0


# -- the high-level API --------------------------------------------------------------------------


async def test_execute_tool_calls_answers_in_the_providers_shape() -> None:
    response = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {"functionCall": {"name": "add", "args": {"a": 2.0, "b": 3}, "id": "c1"}},
                        {"functionCall": {"name": "missing"}},
                    ],
                }
            }
        ]
    }
    outcome = await execute_tool_calls(TOOLSET, "gemini", response)
    assert outcome.results == [
        {"functionResponse": {"name": "add", "id": "c1", "response": {"output": 5}}},
        {
            "functionResponse": {
                "name": "missing",
                "response": {
                    "error": "Unknown tool 'missing'. "
                    "Available tools: add, send_email, explode, sleepy."
                },
            }
        },
    ]
    assert outcome.halted is False


async def test_execute_tool_calls_resumes_through_the_default_store() -> None:
    from toolwire import decide

    response = [{"functionCall": {"name": "send_email", "args": {"to": "bob"}}}]
    with pytest.raises(ApprovalPending) as info:
        await execute_tool_calls(
            TOOLSET,
            "gemini",
            response,
            policy=ASK_EMAIL,
            approver=DeferredApproval(),
            run_id="api-run",
        )
    await decide("api-run", info.value.pending[0].call_id, halt("enough"))
    outcome = await execute_tool_calls(
        TOOLSET, "gemini", response, policy=ASK_EMAIL, approver=DeferredApproval(), run_id="api-run"
    )
    assert outcome.halted
    assert outcome.results[0]["functionResponse"]["response"] == {"error": "Denied: enough."}
    assert RUNS["send_email"] == 0


def test_the_sync_wrapper_runs_without_an_event_loop() -> None:
    from toolwire import execute_tool_calls_sync

    start = time.monotonic()
    outcome = execute_tool_calls_sync(
        TOOLSET, "gemini", [{"functionCall": {"name": "add", "args": {"a": 1, "b": 1}}}]
    )
    assert outcome.results[0]["functionResponse"]["response"] == {"output": 2}
    assert time.monotonic() - start >= 0  # ran to completion in this thread


async def test_the_sync_wrapper_inside_a_loop_is_a_clear_error() -> None:
    from toolwire import execute_tool_calls_sync

    with pytest.raises(ConfigurationError, match="inside an event loop"):
        execute_tool_calls_sync(TOOLSET, "gemini", [])


async def test_the_per_server_limit_holds_per_server() -> None:
    from toolwire import Tool

    running: Counter[str] = Counter()
    peak: Counter[str] = Counter()

    def make(server: str) -> Tool:
        async def handler(i: int) -> int:
            running[server] += 1
            peak[server] = max(peak[server], running[server])
            await anyio.sleep(0.01)
            running[server] -= 1
            return i

        return Tool(
            name="work",
            server_id=server,
            handler=handler,
            input_schema={"type": "object", "properties": {"i": {"type": "integer"}}},
        )

    toolset = ToolSet([make("a"), make("b")])
    parts = [
        {"functionCall": {"name": f"{s}__work", "args": {"i": i}}}
        for i in range(6)
        for s in ("a", "b")
    ]
    executor = Executor(toolset, max_concurrency=10, max_concurrency_per_server=2)
    outcomes = await executor.run(parse_calls("gemini", parts, toolset))
    assert [o.result.text for o in outcomes] == [str(i) for i in range(6) for _ in "ab"]
    assert peak == {"a": 2, "b": 2}


async def test_make_call_runs_one_tool_directly() -> None:
    from toolwire import make_call

    call = make_call(TOOLSET, "add", {"a": 4, "b": 5})
    [outcome] = await Executor(TOOLSET).run([call])
    assert outcome.result.text == "9"
    with pytest.raises(ToolNotFound):
        make_call(TOOLSET, "ghost", {})


_CANCEL_KINDS = {
    "quick": {None, "cancelled"},
    "hang": {"cancelled"},
    "timed": {"timeout", "cancelled"},
    "boom": {"failed", "cancelled"},
}


@settings(max_examples=60, deadline=None)
@given(
    names=st.lists(st.sampled_from(sorted(_CANCEL_KINDS)), min_size=1, max_size=5),
    checkpoints=st.integers(min_value=0, max_value=8),
)
def test_a_turn_cancelled_at_any_point_answers_every_call_once(
    names: list[str], checkpoints: int
) -> None:
    """Cancel from the given event-loop checkpoint on, whatever the turn is doing then: every
    call has one answer, of a kind its tool allows, and nothing runs twice."""
    started: Counter[str] = Counter()

    @tool
    async def quick() -> str:
        """Answer at once."""
        started["quick"] += 1
        return "done"

    @tool
    async def hang() -> str:
        """Hang until cancelled."""
        started["hang"] += 1
        await anyio.sleep(60)
        return "never"

    @tool(timeout=0.01)
    async def timed() -> str:
        """Take longer than allowed."""
        started["timed"] += 1
        await anyio.sleep(60)
        return "never"

    @tool
    async def boom() -> str:
        """Fail."""
        started["boom"] += 1
        raise RuntimeError("boom")

    toolset = ToolSet([quick, hang, timed, boom])
    executor = Executor(toolset)
    parts = [{"functionCall": {"name": name}} for name in names]
    outcomes: list[Any] = []

    async def run_turn() -> None:
        outcomes.extend(await executor.run(parse_calls("gemini", parts, toolset)))

    async def main() -> None:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(run_turn)
                for _ in range(checkpoints):
                    await anyio.sleep(0)
                while not outcomes:  # a turn not yet started can't be cancelled: keep at it
                    executor.cancel()
                    await anyio.sleep(0)

    anyio.run(main)
    assert len(outcomes) == len(names)
    for name, outcome in zip(names, outcomes, strict=True):
        assert outcome.result.error_kind in _CANCEL_KINDS[name], (name, outcome.result)
    assert all(count <= names.count(name) for name, count in started.items())
