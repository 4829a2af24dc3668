"""The gateway's calls served as MCP tasks (``io.modelcontextprotocol/tasks``, SEP-2663) to
2026-07-28 clients that declare the extension, spoken as raw JSON-RPC over streamable HTTP to
gateways served on 127.0.0.1: a task is a run of the store, so every gateway on the store
answers for it, a gateway restarted keeps it, and a gateway stopped mid-call leaves it failed,
never run twice."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")
pytest.importorskip("uvicorn")

import httpx2
import mcp_types as types
from auth_support import BOUND, served
from task_client import EXTENSION, Client, _result, _text

import toolwire
import toolwire.mcp
from toolwire import Policy, Rule, RunStore, SQLiteStore
from toolwire.mcp import TaskSettings

pytestmark = pytest.mark.anyio


paid: list[int] = []
"""Each run of ``pay``: its amount."""
slept: list[str] = []
"""What each run of ``slow`` got to: ``started``, then ``finished`` or ``cancelled``."""


@pytest.fixture(autouse=True)
def _fresh_counts() -> None:
    paid.clear()
    slept.clear()


@toolwire.tool
def pay(amount: int) -> str:
    """Pay an amount."""
    paid.append(amount)
    return f"paid {amount}"


@toolwire.tool
async def slow(seconds: float) -> str:
    """Take a while."""
    slept.append("started")
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        slept.append("cancelled")
        raise
    slept.append("finished")
    return f"slept {seconds}"


TOOLS = [pay, slow]
POLICY = Policy(Rule("ask", "pay"))
QUICK = TaskSettings(after=0.2, poll=0.05)
"""A slow call becomes a task soon."""


# -- the stores tasks are kept in ----------------------------------------------------------------

_prefixes = itertools.count()

Opener = Callable[[], AbstractAsyncContextManager[RunStore]]


@pytest.fixture(params=["sqlite", "postgres"])
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    """Opens a new connection (a store object of its own) to one shared store, as each worker
    of a deployment would."""
    if request.param == "sqlite":
        path = tmp_path / "runs.db"

        @asynccontextmanager
        async def sqlite() -> AsyncIterator[RunStore]:
            store = SQLiteStore(path)
            try:
                yield store
            finally:
                store.close()

        return sqlite
    from toolwire.store.postgres import PostgresStore

    url = request.getfixturevalue("postgres_url")  # skipped as the store tests skip it
    prefix = f"tasks{next(_prefixes)}_"

    @asynccontextmanager
    async def postgres() -> AsyncIterator[RunStore]:
        async with PostgresStore(url, prefix=prefix) as store:
            yield store

    return postgres


@asynccontextmanager
async def sqlite_store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    store = SQLiteStore(tmp_path / "runs.db")
    try:
        yield store
    finally:
        store.close()


def gateway(store: RunStore, **options: Any) -> AbstractAsyncContextManager[str]:
    """The tools served over HTTP on 127.0.0.1, their calls kept in ``store``."""
    options.setdefault("tasks", QUICK)
    return served(TOOLS, policy=POLICY, store=store, **options)


# -- tests ----------------------------------------------------------------------------------------


async def test_a_task_made_on_one_gateway_is_read_decided_and_answered_on_another(
    open_store: Opener,
) -> None:
    with anyio.fail_after(BOUND * 2):
        async with (
            open_store() as store_a,
            open_store() as store_b,
            open_store() as deciding,
            gateway(store_a) as url_a,
            gateway(store_b) as url_b,
            httpx2.AsyncClient(timeout=BOUND) as http,
        ):
            on_a, on_b = Client(http, url_a), Client(http, url_b)
            handle = await on_a.call("pay", amount=7)
            assert handle["resultType"] == "task"
            assert handle["status"] == "working"  # no elicitation: decided out of band
            for key in ("createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"):
                assert key in handle
            task_id = handle["taskId"]

            seen = await on_b.get(task_id)
            assert seen["resultType"] == "complete"
            assert seen["taskId"] == task_id
            assert seen["status"] == "working"
            assert "inputRequests" not in seen
            assert "result" not in seen
            assert paid == []

            await toolwire.decide(task_id, "call", toolwire.allow(), store=deciding)
            done = await on_b.until(task_id, "completed")
            assert not done["result"].get("isError")
            assert _text(done["result"]) == "paid 7"
            # read again, on either gateway: the same answer, the call run once
            assert _text((await on_a.get(task_id))["result"]) == "paid 7"
            assert _text((await on_b.get(task_id))["result"]) == "paid 7"
    assert paid == [7]


async def test_a_task_outlives_its_gateway_and_a_new_one_runs_it_once_decided(
    open_store: Opener,
) -> None:
    with anyio.fail_after(BOUND * 2):
        async with httpx2.AsyncClient(timeout=BOUND) as http:
            async with open_store() as store, gateway(store) as url:
                handle = await Client(http, url).call("pay", amount=3)
                assert handle["resultType"] == "task"
                assert handle["status"] == "working"
                task_id = handle["taskId"]
            # the gateway is gone; the task is decided in the store it kept it in
            async with open_store() as deciding:
                await toolwire.decide(task_id, "call", toolwire.allow(), store=deciding)
            assert paid == []
            async with open_store() as store, gateway(store) as url:
                restarted = Client(http, url)
                done = await restarted.until(task_id, "completed")
                assert _text(done["result"]) == "paid 3"
                assert _text((await restarted.get(task_id))["result"]) == "paid 3"
    assert paid == [3]


async def test_a_client_that_answers_forms_approves_its_task_with_tasks_update(
    tmp_path: Path,
) -> None:
    with anyio.fail_after(BOUND):
        async with (
            sqlite_store(tmp_path) as store_a,
            sqlite_store(tmp_path) as store_b,
            gateway(store_a, approve_by="client") as url_a,
            gateway(store_b, approve_by="client") as url_b,
            httpx2.AsyncClient(timeout=BOUND) as http,
        ):
            on_a = Client(http, url_a, elicit=True)
            on_b = Client(http, url_b, elicit=True)
            handle = await on_a.call("pay", amount=9)
            assert handle["resultType"] == "task"
            assert handle["status"] == "input_required"
            task_id = handle["taskId"]
            asked = await on_b.get(task_id)
            assert asked["status"] == "input_required"
            (key,) = asked["inputRequests"]
            assert asked["inputRequests"][key]["method"] == "elicitation/create"
            assert paid == []

            approval = {"action": "accept", "content": {"approve": True}}
            updated = await on_b.task("update", task_id, inputResponses={key: approval})
            assert _result(updated)["resultType"] == "complete"
            done = await on_a.until(task_id, "completed")
            assert _text(done["result"]) == "paid 9"
    assert paid == [9]


async def test_a_task_whose_gateway_stopped_mid_call_is_failed_and_never_run_again(
    tmp_path: Path,
) -> None:
    with anyio.fail_after(BOUND * 2):
        async with (
            sqlite_store(tmp_path) as store_a,
            sqlite_store(tmp_path) as store_b,
            gateway(store_b, lease=1.0) as url_b,
            httpx2.AsyncClient(timeout=BOUND) as http,
        ):
            async with gateway(store_a, lease=1.0) as url_a:
                handle = await Client(http, url_a).call("slow", seconds=2)
                assert handle["resultType"] == "task"
                assert handle["status"] == "working"
                task_id = handle["taskId"]
                assert slept == ["started"]
            # gateway A stopped while the call ran: the next reader finds its worker gone
            on_b = Client(http, url_b)
            failed = await on_b.until(task_id, "failed")
            assert failed["error"]["code"] == types.INTERNAL_ERROR
            assert "not run again" in failed["error"]["message"]
            assert "result" not in failed
            # it stays failed, and nothing runs it again
            again = await on_b.get(task_id)
            assert again["status"] == "failed"
            assert again["error"] == failed["error"]
    assert slept.count("started") == 1
    assert "finished" not in slept


async def test_a_cancelled_task_is_cancelled_and_its_call_ends(tmp_path: Path) -> None:
    with anyio.fail_after(BOUND):
        async with (
            sqlite_store(tmp_path) as store,
            gateway(store) as url,
            httpx2.AsyncClient(timeout=BOUND) as http,
        ):
            client = Client(http, url)
            handle = await client.call("slow", seconds=5)
            assert handle["resultType"] == "task"
            task_id = handle["taskId"]
            assert (await client.get(task_id))["status"] == "working"

            acked = await client.task("cancel", task_id)
            assert _result(acked)["resultType"] == "complete"
            cancelled = await client.get(task_id)
            assert cancelled["status"] == "cancelled"
            assert "result" not in cancelled
            while "cancelled" not in slept:  # the call itself is ended
                await anyio.sleep(0.02)
            assert (await client.get(task_id))["status"] == "cancelled"
    assert slept == ["started", "cancelled"]


async def test_another_principals_task_is_no_task_at_all(tmp_path: Path) -> None:
    with anyio.fail_after(BOUND):
        async with (
            sqlite_store(tmp_path) as store_a,
            sqlite_store(tmp_path) as store_b,
            sqlite_store(tmp_path) as store_c,
            gateway(store_a, principal="alice") as alices,
            gateway(store_b, principal="alice") as alices_other,
            gateway(store_c, principal="bob") as bobs,
            httpx2.AsyncClient(timeout=BOUND) as http,
        ):
            alice, bob = Client(http, alices), Client(http, bobs)
            handle = await alice.call("pay", amount=5)
            assert handle["resultType"] == "task"
            task_id = handle["taskId"]

            attempts: list[tuple[str, dict[str, Any]]] = [
                ("get", {}),
                ("cancel", {}),
                ("update", {"inputResponses": {}}),
            ]
            for method, params in attempts:
                refused = await bob.task(method, task_id, **params)
                assert "result" not in refused, (method, refused)
                assert refused["error"]["code"] == types.INVALID_PARAMS, (method, refused)
            # as for an id never issued
            never = await bob.task("get", "task-0-nosuchtasknosuchtask-0000000000000000")
            assert never["error"]["code"] == types.INVALID_PARAMS

            # alice's other gateway finds it, untouched by bob's cancel
            still = await Client(http, alices_other).get(task_id)
            assert still["status"] == "working"
            await toolwire.decide(task_id, "call", toolwire.allow(), store=store_a)
            done = await alice.until(task_id, "completed")
            assert _text(done["result"]) == "paid 5"
    assert paid == [5]


async def test_a_client_that_declares_no_tasks_gets_its_answer_and_no_task(
    tmp_path: Path,
) -> None:
    with anyio.fail_after(BOUND):
        async with (
            sqlite_store(tmp_path) as store,
            gateway(store) as url,
            httpx2.AsyncClient(timeout=BOUND) as http,
        ):
            plain, tasking = Client(http, url, tasks=False), Client(http, url)
            answered = await plain.call("slow", seconds=1)
            assert answered.get("resultType", "complete") == "complete"
            assert "taskId" not in answered
            assert not answered.get("isError")
            assert _text(answered) == "slept 1.0"

            # the same call from a client that declares tasks is one
            handle = await tasking.call("slow", seconds=1)
            assert handle["resultType"] == "task"
            task_id = handle["taskId"]
            refused = await plain.task("get", task_id)
            assert "result" not in refused
            assert refused["error"]["code"] == types.MISSING_REQUIRED_CLIENT_CAPABILITY
            assert EXTENSION in json.dumps(refused["error"])
            done = await tasking.until(task_id, "completed")
            assert _text(done["result"]) == "slept 1.0"
    assert slept == ["started", "finished"] * 2


# -- an outside attack's findings, each failing before its fix -----------------------------------

APPROVE = {"action": "accept", "content": {"approve": True}}


@pytest.mark.parametrize(
    ("elicit", "gateway_elicits"),
    [(False, True), (True, False)],
    ids=["client-answers-no-forms", "gateway-asks-no-forms"],
)
async def test_a_client_the_gateway_does_not_ask_cannot_approve_its_own_task(
    tmp_path: Path, elicit: bool, gateway_elicits: bool
) -> None:
    """A decision the gateway leaves to a human outside it (its client declared no forms, or
    the gateway asks none) cannot be made by the client with a forged form answer."""
    with anyio.fail_after(BOUND):
        async with (
            sqlite_store(tmp_path) as store,
            gateway(store, approve_by="client" if gateway_elicits else "ledger") as url,
            httpx2.AsyncClient(timeout=BOUND) as http,
        ):
            client = Client(http, url, elicit=elicit)
            task_id = (await client.call("pay", amount=999))["taskId"]
            forged = await client.task(
                "update", task_id, inputResponses={"toolwire_approval": APPROVE}
            )
            assert forged["error"]["code"] == types.INVALID_PARAMS
            assert "cannot decide" in forged["error"]["message"]
            still = await client.get(task_id)
            assert still["status"] == "working"
            assert "toolwire decide" in still["statusMessage"]
    assert paid == []


async def test_a_task_the_store_no_longer_keeps_is_no_task(tmp_path: Path) -> None:
    """A made-up id with the client's own owner digest, and a task whose run a bounded store
    evicted, are unknown (not ``working`` forever); an id dated far ahead is refused, not an
    internal error."""
    store = toolwire.MemoryStore(max_runs=2)
    with anyio.fail_after(BOUND):
        async with gateway(store) as url, httpx2.AsyncClient(timeout=BOUND) as http:
            client = Client(http, url)
            first = (await client.call("slow", seconds=0.4))["taskId"]
            await client.until(first, "completed")
            owner = first.rsplit("-", 1)[1]
            made_up = f"task-1a235106f40-{'A' * 22}-{owner}"
            far_ahead = f"task-ffffffffffff-{'A' * 22}-{owner}"
            for _ in range(3):  # calls of a task-declaring client are runs too: evicts it
                await client.call("slow", seconds=0)
            for task_id in (made_up, far_ahead, first):
                for method, params in (
                    ("get", {}),
                    ("cancel", {}),
                    ("update", {"inputResponses": {}}),
                ):
                    answer = await client.task(method, task_id, **params)
                    assert answer.get("error", {}).get("code") == types.INVALID_PARAMS, (
                        task_id,
                        method,
                        answer,
                    )


async def test_a_client_cannot_start_tasks_without_bound(tmp_path: Path) -> None:
    """A task costs its client one request and its gateway a job: past ``per_principal`` of
    one client's tasks running on a worker, its calls are refused, and taken again once one
    ends."""
    settings = TaskSettings(after=0.05, poll=0.05, per_principal=2)
    with anyio.fail_after(BOUND):
        async with (
            sqlite_store(tmp_path) as store,
            gateway(store, tasks=settings) as url,
            httpx2.AsyncClient(timeout=BOUND) as http,
        ):
            client = Client(http, url)
            first = await client.call("slow", seconds=30)
            second = await client.call("slow", seconds=30)
            assert first["resultType"] == second["resultType"] == "task"
            refused = await client.call("slow", seconds=30)
            assert refused.get("isError") is True
            assert "2 tasks of this client run on this gateway now" in _text(refused)
            await client.task("cancel", first["taskId"])
            await client.until(first["taskId"], "cancelled")
            while True:  # its job ends a moment after its answer is kept
                taken = await client.call("slow", seconds=30)
                if taken.get("resultType") == "task":
                    break
                await anyio.sleep(0.02)
            for handle in (second, taken):
                await client.task("cancel", handle["taskId"])
    assert slept.count("started") == 3


# -- round four: restarts go through the same path and the same limits as first starts ----------


def hidden(request: toolwire.ApprovalRequest) -> dict[str, Any]:
    """What a waiting call's run keeps of its arguments: none of their values."""
    return dict.fromkeys(request.arguments, "<hidden>")


async def test_a_redacted_task_runs_with_its_own_arguments_once_decided(
    open_store: Opener,
) -> None:
    with anyio.fail_after(BOUND * 2):
        async with (
            httpx2.AsyncClient(timeout=BOUND) as http,
            open_store() as store,
            gateway(store, redact=hidden) as url,
        ):
            client = Client(http, url)
            task_id = (await client.call("pay", amount=7))["taskId"]
            waiting = await client.get(task_id)
            assert waiting["status"] == "working"
            (request,) = await toolwire.pending(store=store)
            assert request.arguments == {"amount": "<hidden>"}  # the store keeps no value
            await toolwire.decide(task_id, "call", toolwire.allow(), store=store)
            done = await client.until(task_id, "completed", "failed")
            assert _text(done["result"]) == "paid 7"
    assert paid == [7]


KEY = "k" * 32
"""The state key gateways of one deployment share."""


async def test_a_redacted_task_keeps_no_value_in_clear_and_outlives_its_gateway(
    tmp_path: Path,
) -> None:
    """The run keeps the call's own arguments sealed beside the redacted ones: the store shows
    none of their values, and another gateway given the same state keys runs the task."""
    with anyio.fail_after(BOUND * 2):
        async with sqlite_store(tmp_path) as store, httpx2.AsyncClient(timeout=BOUND) as http:
            async with gateway(store, redact=hidden, state_keys=[KEY]) as url:
                task_id = (await Client(http, url).call("pay", amount=734519))["taskId"]
                kept = await toolwire.ledger.record(store, task_id, "call")
                assert kept is not None
                assert kept.request is not None
                assert "734519" not in json.dumps(kept.request)
            await toolwire.decide(task_id, "call", toolwire.allow(), store=store)
            async with gateway(store, redact=hidden, state_keys=[KEY]) as url:
                done = await Client(http, url).until(task_id, "completed", "failed")
                assert _text(done["result"]) == "paid 734519"
    assert paid == [734519]


async def test_a_redacted_task_another_gateway_cannot_open_is_answered_not_run(
    tmp_path: Path,
) -> None:
    """A gateway restarted without the keys that sealed a task's arguments answers the task
    (never runs it with the redacted view, never leaves it working)."""
    with anyio.fail_after(BOUND * 2):
        async with sqlite_store(tmp_path) as store, httpx2.AsyncClient(timeout=BOUND) as http:
            async with gateway(store, redact=hidden) as url:  # a key of its process only
                task_id = (await Client(http, url).call("pay", amount=5))["taskId"]
            await toolwire.decide(task_id, "call", toolwire.allow(), store=store)
            async with gateway(store, redact=hidden, state_keys=[KEY]) as url:
                client = Client(http, url)
                done = await client.until(task_id, "completed", "failed")
                assert done["result"]["isError"] is True
                assert "sealed" in _text(done["result"])
                assert "state keys" in _text(done["result"])
                assert (await client.get(task_id))["result"] == done["result"]
    assert paid == []


class Holding:
    """The runs of ``hold`` going on now, the most at once, and the gate that ends them."""

    def __init__(self) -> None:
        self.running = 0
        self.started = 0
        self.peak = 0
        self.release = anyio.Event()


held = Holding()


@toolwire.tool
async def hold(n: int) -> str:
    """Hold until released."""
    state = held
    state.running += 1
    state.started += 1
    state.peak = max(state.peak, state.running)
    try:
        await state.release.wait()
    finally:
        state.running -= 1
    return f"held {n}"


@pytest.mark.parametrize(
    ("per_principal", "most", "at_once"), [(2, 3, 2), (64, 3, 3)], ids=["per-principal", "most"]
)
async def test_decided_tasks_restart_within_the_workers_limits(
    tmp_path: Path, per_principal: int, most: int, at_once: int
) -> None:
    """Ten decided tasks read at once on a worker with limits start no more calls than the
    limits let it run (a restart is a start); the others start as those end."""
    global held
    held = Holding()
    limited = TaskSettings(after=0.05, poll=0.05, per_principal=per_principal, most=most)
    policy = Policy(Rule("ask", "hold"))
    with anyio.fail_after(BOUND * 2):
        async with sqlite_store(tmp_path) as store, httpx2.AsyncClient(timeout=BOUND) as http:
            async with served([hold], policy=policy, store=store, tasks=QUICK) as url:
                client = Client(http, url)
                ids = [(await client.call("hold", n=n))["taskId"] for n in range(10)]
            for task_id in ids:
                await toolwire.decide(task_id, "call", toolwire.allow(), store=store)
            async with served([hold], policy=policy, store=store, tasks=limited) as url:
                client = Client(http, url)
                for task_id in ids:
                    assert (await client.get(task_id))["status"] == "working"
                while held.running < at_once:
                    await anyio.sleep(0.01)
                for task_id in ids:  # read again: nothing more starts while they run
                    assert (await client.get(task_id))["status"] == "working"
                assert (held.started, held.running) == (at_once, at_once)
                held.release.set()
                answers = [await client.until(task_id, "completed") for task_id in ids]
    assert [_text(done["result"]) for done in answers] == [f"held {n}" for n in range(10)]
    assert (held.started, held.peak) == (10, at_once)


async def expired_by_the_store(store: RunStore) -> None:
    """Until the store's clock is past the one waiting request's deadline."""
    (request,) = await toolwire.pending(store=store)
    assert request.expires_at is not None
    while await toolwire.ledger.store_time(store) < request.expires_at:
        await anyio.sleep(0.02)


@pytest.mark.parametrize("first", ["read", "answered"])
async def test_an_expired_task_approval_answers_its_task_and_offers_no_form(
    tmp_path: Path, first: str
) -> None:
    with anyio.fail_after(BOUND):
        async with (
            sqlite_store(tmp_path) as store,
            gateway(store, approval_ttl=0.2, approve_by="client") as url,
            httpx2.AsyncClient(timeout=BOUND) as http,
        ):
            client = Client(http, url, elicit=True)
            task_id = (await client.call("pay", amount=9))["taskId"]
            asked = await client.get(task_id)
            assert list(asked["inputRequests"]) == ["toolwire_approval"]
            await expired_by_the_store(store)
            if first == "answered":  # too late: taken as no decision
                late = await client.task(
                    "update", task_id, inputResponses={"toolwire_approval": APPROVE}
                )
                assert _result(late)["resultType"] == "complete"
            done = await client.until(task_id, "completed")
            assert "inputRequests" not in done
            assert done["result"]["isError"] is True
            assert "expired" in _text(done["result"])
            assert await toolwire.pending(store=store) == []
    assert paid == []


async def test_an_expired_task_decided_outside_is_answered_too(tmp_path: Path) -> None:
    with anyio.fail_after(BOUND):
        async with (
            sqlite_store(tmp_path) as store,
            gateway(store, approval_ttl=0.2, approve_by="client") as url,
            httpx2.AsyncClient(timeout=BOUND) as http,
        ):
            client = Client(http, url)  # answers no forms: a human decides, too late
            task_id = (await client.call("pay", amount=9))["taskId"]
            await expired_by_the_store(store)
            with pytest.raises(toolwire.ToolwireError, match="expired"):
                await toolwire.decide(task_id, "call", toolwire.allow(), store=store)
            done = await client.until(task_id, "completed")
            assert "expired" in _text(done["result"])
    assert paid == []


async def test_a_task_its_client_abandons_stops_waiting_for_a_person_when_it_ends(
    tmp_path: Path,
) -> None:
    """Its request for approval expires with the task (``ttl``): the inbox does not keep
    asking a person about a call no client will ever read the answer of."""
    short = TaskSettings(after=0.2, poll=0.05, ttl=1.0)
    with anyio.fail_after(BOUND):
        async with (
            sqlite_store(tmp_path) as store,
            gateway(store, tasks=short) as url,
            httpx2.AsyncClient(timeout=BOUND) as http,
        ):
            task_id = (await Client(http, url).call("pay", amount=4))["taskId"]
            (waiting,) = await toolwire.pending(store=store)
            while await toolwire.pending(store=store):  # nobody reads the task again
                await anyio.sleep(0.1)
            with pytest.raises(toolwire.ToolwireError):
                await toolwire.decide(
                    waiting.run_id, waiting.call_id, toolwire.allow(), store=store
                )
    assert waiting.run_id == task_id
    assert waiting.expires_at is not None
    assert paid == []
