"""Attacks on how a gateway's tasks go on once decided: the sealed copy of a redacted task's
arguments (moved to another task, forged, read through the console), decided tasks read all at
once on one worker and on two (the worker's limits hold for every start), and an expiring
request while the worker is full. Over real HTTP on 127.0.0.1, a real SQLite store shared by
the gateways. A failing test here names the invariant it breaks in its comment."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")
pytest.importorskip("uvicorn")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp_gateway"))

import httpx2
from auth_support import BOUND, served
from task_client import Client, _text

import toolwire
from toolwire import Policy, Rule, SQLiteStore
from toolwire.mcp import TaskSettings
from toolwire.mcp.server._sealed import SEALED_KEY
from toolwire.runs._run import Keep, update
from toolwire.store import CallRecord

pytestmark = pytest.mark.anyio

KEY = "s" * 32
QUICK = TaskSettings(after=0.05, poll=0.05)
POLICY = Policy(Rule("ask", "pay"), Rule("ask", "hold"))

paid: list[int] = []


class Holding:
    """The runs of ``hold`` going on now, the most at once, and the gate that ends them."""

    def __init__(self) -> None:
        self.running = 0
        self.started = 0
        self.peak = 0
        self.release = anyio.Event()


held = Holding()


@pytest.fixture(autouse=True)
def _fresh() -> None:
    global held
    held = Holding()
    paid.clear()


@toolwire.tool
def pay(amount: int) -> str:
    """Pay an amount."""
    paid.append(amount)
    return f"paid {amount}"


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


def hidden(request: toolwire.ApprovalRequest) -> dict[str, Any]:
    return dict.fromkeys(request.arguments, "<hidden>")


@asynccontextmanager
async def shared_store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    store = SQLiteStore(tmp_path / "runs.db")
    try:
        yield store
    finally:
        store.close()


def gateway(store: SQLiteStore, **options: Any) -> Any:
    options.setdefault("tasks", QUICK)
    return served([pay, hold], policy=POLICY, store=store, **options)


async def set_sealed(store: SQLiteStore, task_id: str, sealed: Any) -> None:
    """What someone writing the store by hand makes of a task's sealed copy."""

    def changed(record: CallRecord | None) -> CallRecord | Keep[None]:
        assert record is not None
        assert record.request is not None
        return record.with_(request={**record.request, SEALED_KEY: sealed})

    await update(store, task_id, "call", changed)


async def sealed_of(store: SQLiteStore, task_id: str) -> Any:
    record = await toolwire.ledger.record(store, task_id, "call")
    assert record is not None
    assert record.request is not None
    return record.request.get(SEALED_KEY)


@pytest.mark.parametrize("forged", ["moved", "garbage", "not-a-string"])
async def test_a_sealed_copy_moved_or_forged_runs_nothing(tmp_path: Path, forged: str) -> None:
    # Breaks "what runs is what the run was bound to": a redacted task ran another task's
    # arguments, or the view a human saw.
    with anyio.fail_after(BOUND):
        async with (
            shared_store(tmp_path) as store,
            gateway(store, redact=hidden, state_keys=[KEY]) as url,
            httpx2.AsyncClient(timeout=BOUND) as http,
        ):
            client = Client(http, url)
            mine = (await client.call("pay", amount=1))["taskId"]
            theirs = (await client.call("pay", amount=1_000_000))["taskId"]
            replacement = {
                "moved": await sealed_of(store, theirs),
                "garbage": "v1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                "not-a-string": {"amount": 1_000_000},
            }[forged]
            assert isinstance(await sealed_of(store, mine), str)
            await set_sealed(store, mine, replacement)
            await toolwire.decide(mine, "call", toolwire.allow(), store=store)
            done = await client.until(mine, "completed", "failed")
            assert done["result"]["isError"] is True
            assert "Not run" in _text(done["result"])
    assert paid == []


async def test_the_console_shows_none_of_a_redacted_tasks_values(tmp_path: Path) -> None:
    pytest.importorskip("starlette")
    import httpx

    from toolwire.inbox import app

    with anyio.fail_after(BOUND):
        async with (
            shared_store(tmp_path) as store,
            gateway(store, redact=hidden, state_keys=[KEY]) as url,
            httpx2.AsyncClient(timeout=BOUND) as http,
        ):
            task_id = (await Client(http, url).call("pay", amount=734519))["taskId"]
            console = app(store, authorize=lambda request: "ops")
            transport = httpx.ASGITransport(app=console)
            async with httpx.AsyncClient(transport=transport, base_url="http://inbox") as web:
                for path in ("/api/pending", f"/api/runs/{task_id}", f"/runs/{task_id}/calls/call"):
                    shown = await web.get(path)
                    assert shown.status_code == 200, path
                    assert "734519" not in shown.text, path
                    assert SEALED_KEY not in shown.text, path
            (request,) = await toolwire.pending(store=store)
            assert "734519" not in json.dumps(request.to_dict())


async def decided_holds(store: SQLiteStore, http: Any, count: int) -> list[str]:
    """``count`` calls of ``hold`` made tasks on a gateway, each decided allow."""
    async with gateway(store) as url:
        client = Client(http, url)
        ids = [(await client.call("hold", n=n))["taskId"] for n in range(count)]
    for task_id in ids:
        await toolwire.decide(task_id, "call", toolwire.allow(), store=store)
    return ids


async def test_decided_tasks_read_all_at_once_start_within_the_limits(tmp_path: Path) -> None:
    # Breaks "every start of a call counts": reads racing each other started more restarts
    # than the worker's per-principal limit.
    limited = TaskSettings(after=0.05, poll=0.05, per_principal=2)
    with anyio.fail_after(BOUND * 2):
        async with shared_store(tmp_path) as store, httpx2.AsyncClient(timeout=BOUND) as http:
            ids = await decided_holds(store, http, 12)
            async with gateway(store, tasks=limited) as url:
                client = Client(http, url)
                async with anyio.create_task_group() as reads:
                    for task_id in ids * 3:
                        reads.start_soon(client.get, task_id)
                while held.running < 2:
                    await anyio.sleep(0.01)
                for task_id in ids:
                    await client.get(task_id)
                assert held.started == 2
                held.release.set()
                for task_id in ids:
                    await client.until(task_id, "completed")
    assert (held.started, held.peak) == (12, 2)


async def test_two_limited_workers_run_each_decided_task_once(tmp_path: Path) -> None:
    # Breaks "a task runs once": two workers restarting the same decided tasks, each within
    # its own limit, ran one twice.
    limited = TaskSettings(after=0.05, poll=0.05, per_principal=2)
    with anyio.fail_after(BOUND * 2):
        async with shared_store(tmp_path) as store, httpx2.AsyncClient(timeout=BOUND) as http:
            ids = await decided_holds(store, http, 8)
            async with (
                SQLiteStore(tmp_path / "runs.db") as other,
                gateway(store, tasks=limited) as url_a,
                gateway(other, tasks=limited) as url_b,
            ):
                a, b = Client(http, url_a), Client(http, url_b)
                for task_id in ids[:4]:
                    await a.get(task_id)
                for task_id in ids[4:]:
                    await b.get(task_id)
                while held.running < 4:
                    await anyio.sleep(0.01)
                for task_id in ids:  # each worker full: reading more starts nothing
                    await a.get(task_id)
                    await b.get(task_id)
                assert held.started == 4  # two on each worker
                held.release.set()
                done = [await (a if n % 2 else b).until(t, "completed") for n, t in enumerate(ids)]
    assert sorted(_text(d["result"]) for d in done) == sorted(f"held {n}" for n in range(8))
    assert held.started == 8


async def test_an_expiring_request_on_a_full_worker_offers_no_form_and_is_answered_later(
    tmp_path: Path,
) -> None:
    # Breaks "an expired request answers its task and the form goes away": a worker too busy
    # to answer it at once still offered its form.
    limited = TaskSettings(after=0.05, poll=0.05, per_principal=1)
    with anyio.fail_after(BOUND * 2):
        async with shared_store(tmp_path) as store, httpx2.AsyncClient(timeout=BOUND) as http:
            (busy,) = await decided_holds(store, http, 1)
            async with gateway(store, tasks=limited, approval_ttl=0.3, approve_by="client") as url:
                client = Client(http, url, elicit=True)
                task_id = (await client.call("pay", amount=3))["taskId"]
                while held.running < 1:  # its restart takes the worker's one place
                    await client.get(busy)
                    await anyio.sleep(0.01)
                waiting = [r for r in await toolwire.pending(store=store) if r.run_id == task_id]
                (request,) = waiting
                assert request.expires_at is not None
                while await toolwire.ledger.store_time(store) < request.expires_at:
                    await anyio.sleep(0.02)
                shown = await client.get(task_id)
                assert shown["status"] == "working"  # not answered yet: the worker is full
                assert "inputRequests" not in shown
                assert "expired" in shown["statusMessage"]
                held.release.set()
                done = await client.until(task_id, "completed")
                assert "expired" in _text(done["result"])
                await client.until(busy, "completed")
    assert paid == []


async def test_tasks_approved_by_their_client_start_within_the_limits(tmp_path: Path) -> None:
    # Breaks "every start of a call counts": approving waiting tasks with tasks/update
    # started every one of them at once, past per_principal.
    limited = TaskSettings(after=0.05, poll=0.05, per_principal=2)
    approve = {"toolwire_approval": {"action": "accept", "content": {"approve": True}}}
    with anyio.fail_after(BOUND * 2):
        async with (
            shared_store(tmp_path) as store,
            gateway(store, tasks=limited, approve_by="client") as url,
            httpx2.AsyncClient(timeout=BOUND) as http,
        ):
            client = Client(http, url, elicit=True)
            ids = []
            for n in range(6):  # each waits for its form: no job holds a place meanwhile
                handle = await client.call("hold", n=n)
                assert handle["status"] == "input_required", handle
                ids.append(handle["taskId"])
            for task_id in ids:
                await client.task("update", task_id, inputResponses=approve)
            while held.running < 2:
                await anyio.sleep(0.01)
            for task_id in ids:
                await client.get(task_id)
            assert held.started == 2
            held.release.set()
            for task_id in ids:
                await client.until(task_id, "completed")
    assert (held.started, held.peak) == (6, 2)
