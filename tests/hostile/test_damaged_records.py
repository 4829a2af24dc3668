"""Records edited in a durable store: a record whose shape does not fit (a nested field of the
wrong type included) is ``StoreUnavailable`` for its call, never a foreign exception, and
nothing of it runs; listings name it and go on with the other runs' requests."""

from __future__ import annotations

import itertools
import json
import logging
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import toolwire
from toolwire import Executor, StoreUnavailable, ledger
from toolwire.approval import ApprovalPending, ApprovalRequest, DeferredApproval, allow
from toolwire.executor import make_call
from toolwire.inputs import InputDeferred, InputRequest, accept
from toolwire.runs.store._base import decode_record, encode_record, pending_since
from toolwire.store import CallRecord, RunStore, SQLiteStore

pytestmark = pytest.mark.anyio

RAN: list[str] = []


@toolwire.tool
def send_money(to: str, amount: int) -> str:
    """Send money."""
    RAN.append(to)
    return f"sent {amount} to {to}"


ASK = toolwire.Policy(default="ask")
_prefixes = itertools.count()


@pytest.fixture(autouse=True)
def _nothing_ran() -> None:
    RAN.clear()


Damage = Callable[[str, str, str], Any]
"""``damage(run_id, call_id, text)``: writes ``text`` as the call's stored record."""


@pytest.fixture(params=["sqlite", "redis", "postgres"])
async def durable(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[tuple[RunStore, Damage]]:
    """A durable store, and a way to edit a record in it behind the library's back."""
    if request.param == "sqlite":
        path = tmp_path / "runs.db"
        store = SQLiteStore(path)

        async def damage_sqlite(run_id: str, call_id: str, text: str) -> None:
            with sqlite3.connect(path) as db:
                db.execute(
                    "UPDATE toolwire_calls SET record = ? WHERE run_id = ? AND call_id = ?",
                    (text, run_id, call_id),
                )

        yield store, damage_sqlite
        store.close()
    elif request.param == "redis":
        from toolwire.store.redis import RedisStore

        prefix = f"damaged{next(_prefixes)}:"
        async with RedisStore(request.getfixturevalue("redis_url"), prefix=prefix) as store:

            async def damage_redis(run_id: str, call_id: str, text: str) -> None:
                client = store._connection()
                version = (await client.hget(prefix + run_id, call_id)).partition(b":")[0]
                await client.hset(prefix + run_id, call_id, version + b":" + text.encode())

            yield store, damage_redis
    else:
        import psycopg

        from toolwire.store.postgres import PostgresStore

        url = request.getfixturevalue("postgres_url")
        prefix = f"damaged{next(_prefixes)}_"
        async with PostgresStore(url, prefix=prefix) as store:

            async def damage_postgres(run_id: str, call_id: str, text: str) -> None:
                async with await psycopg.AsyncConnection.connect(url, autocommit=True) as db:
                    await db.execute(
                        f"UPDATE {prefix}calls SET record = %s WHERE run_id = %s AND call_id = %s",
                        (text, run_id, call_id),
                    )

            yield store, damage_postgres


def _call(call_id: str, to: str) -> toolwire.ToolCall:
    return make_call(
        toolwire.ToolSet([send_money]), "send_money", {"to": to, "amount": 5}, call_id=call_id
    )


async def _waiting_run(store: RunStore, run_id: str, to: str) -> Executor:
    """A run whose one call waits for approval."""
    executor = Executor([send_money], policy=ASK, approver=DeferredApproval(), store=store)
    with pytest.raises(ApprovalPending):
        await executor.run([_call("c1", to)], run_id=run_id)
    return executor


async def _stored(store: RunStore, run_id: str, call_id: str) -> dict[str, Any]:
    record = await store.get(run_id, call_id)
    assert record is not None
    body: dict[str, Any] = json.loads(encode_record(record))
    return body


DAMAGES: dict[str, Callable[[dict[str, Any]], None]] = {
    "decision.arguments a string": lambda body: body.update(
        state="approved",
        decision={"kind": "allow", "reason": None, "arguments": "to=mallory"},
    ),
    "request a string": lambda body: body.update(request="/srv/app/logs/old.log"),
    "lease_until a string": lambda body: body.update(state="running", lease_until="9999999999"),
    "request.arguments a list": lambda body: body["request"].update(arguments=["mallory"]),
    "request.requested_at a string": lambda body: body["request"].update(requested_at="now"),
    "a result part without its text": lambda body: body.update(
        state="completed", result={"content": [{"type": "text"}]}
    ),
    "another call's record": lambda body: body.update(call_id="c9"),
}


@pytest.mark.parametrize("damage_name", list(DAMAGES))
async def test_a_damaged_record_is_store_unavailable_everywhere_and_nothing_runs(
    durable: tuple[RunStore, Damage], damage_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    store, damage = durable
    executor = await _waiting_run(store, "damaged", "mallory")
    await _waiting_run(store, "intact", "alice")
    body = await _stored(store, "damaged", "c1")
    DAMAGES[damage_name](body)
    await damage("damaged", "c1", json.dumps(body))

    # Resuming the run: a typed error naming the call, and the tool never runs.
    with pytest.raises(StoreUnavailable, match="'c1'"):
        await executor.run([_call("c1", "mallory")], run_id="damaged")
    with pytest.raises(StoreUnavailable, match="'c1'"):
        await toolwire.decide("damaged", "c1", allow(), store=store)
    with pytest.raises(StoreUnavailable, match="'c1'"):
        await toolwire.history("damaged", store=store)
    assert RAN == []

    # Listing: the other run's request, and the damaged call named (logged by pending()).
    found = await ledger.waiting(store)
    assert [request.run_id for request in found.requests] == ["intact"]
    assert [(d.run_id, d.call_id) for d in found.damaged] == [("damaged", "c1")]
    with caplog.at_level(logging.WARNING, logger="toolwire"):
        listed = await toolwire.pending(store=store)
    assert [request.run_id for request in listed] == ["intact"]
    assert any("'c1'" in message for message in caplog.messages)

    # The intact run still resumes and runs once its call is approved.
    await toolwire.decide("intact", "c1", allow(), store=store)
    outcomes = await Executor([send_money], policy=ASK, store=store).run(
        [_call("c1", "alice")], run_id="intact"
    )
    assert outcomes[0].result.text == "sent 5 to alice"
    assert RAN == ["alice"]


async def test_the_console_lists_the_other_runs_and_names_the_damaged_call(
    durable: tuple[RunStore, Damage],
) -> None:
    pytest.importorskip("starlette")
    from toolwire.inbox import app

    store, damage = durable
    await _waiting_run(store, "damaged", "mallory")
    await _waiting_run(store, "intact", "alice")
    body = await _stored(store, "damaged", "c1")
    body["request"] = "not a request"
    await damage("damaged", "c1", json.dumps(body))

    console = app(store, authorize=lambda request: "approver")
    transport = httpx.ASGITransport(app=console)
    async with httpx.AsyncClient(transport=transport, base_url="http://console") as client:
        listing = await client.get("/api/pending")
        page = await client.get("/")
        request_page = await client.get("/runs/damaged/calls/c1")
        intact_page = await client.get("/runs/intact/calls/c1")

    assert listing.status_code == 200
    payload = listing.json()
    assert [item["run_id"] for item in payload["items"]] == ["intact"]
    assert [(d["run_id"], d["call_id"]) for d in payload["damaged"]] == [("damaged", "c1")]
    assert "request" in payload["damaged"][0]["problem"]
    assert page.status_code == 200
    assert 'class="damaged"' in page.text
    assert "<code>damaged</code>" in page.text  # the damaged run, named
    assert "/runs/intact/calls/c1" in page.text  # the other run's request, listed
    assert request_page.status_code == 503
    assert "&#x27;c1&#x27;" in request_page.text or "'c1'" in request_page.text
    assert intact_page.status_code == 200


# -- every field, every wrong type -------------------------------------------------------------


def _full_record() -> dict[str, Any]:
    """The JSON form of a record with every part set: a request waiting for input (questions,
    an answer, the server's state), a decision, a result with each kind of content part."""
    request = ApprovalRequest(
        run_id="r",
        call_id="c1",
        tool=None,
        exposed_name="send_money",
        arguments={"to": "bob", "amount": 5},
        principal={"user": "ana"},
        reason="asks",
        server="bank",
        tool_name="send_money",
        requested_at=1.0,
        expires_at=2.0,
    )
    waiting = InputDeferred(
        [
            InputRequest(key="k1", message="Which account?", requested_schema={"type": "object"}),
            InputRequest(key="k2", message="Open", mode="url", url="https://example.test/x"),
        ],
        answered={"k1": accept({"account": "main"})},
        state="opaque",
        protocol="2026-07-28",
        sent="digest",
    )
    base = CallRecord(call_id="c1", tool="send_money", fingerprint="f", state="running")
    record = ledger.input_record(base, request, waiting).with_(
        decision=allow(arguments={"to": "bob", "amount": 4}),
        decided_by={"user": "ana"},
        decided_at=3.0,
        owner="host:1:abc",
        started_at=1.5,
        lease_until=9.0,
        finished_at=4.0,
        tool_id="bank/send_money",
        definition="d",
        result=toolwire.ToolResult(
            content=(
                toolwire.TextContent("done"),
                toolwire.ImageContent(b"\x89PNG", "image/png"),
                toolwire.AudioContent(b"RIFF", "audio/wav"),
                toolwire.ResourceLink(uri="file:///x", name="x"),
                toolwire.EmbeddedResource(uri="file:///y", text="y"),
            ),
            structured_content={"ok": True},
        ),
    )
    body: dict[str, Any] = json.loads(encode_record(record))
    return body


FULL = _full_record()


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*path, index))
    return found


PATHS = _paths(FULL)[1:]
WRONG = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False),
    st.text(max_size=8),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)


def _replaced(body: Any, path: tuple[Any, ...], value: Any) -> Any:
    copy = json.loads(json.dumps(body))
    target = copy
    for step in path[:-1]:
        target = target[step]
    if value is _DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return copy


_DELETE = object()


def _read_everything(record: CallRecord) -> None:
    """What the ledger and the console read of a record."""
    ledger.trail_of(record).to_dict()
    ledger.expired(record)
    ledger.held(record)
    ledger.awaits_input(record)
    ledger.input_resume(record)
    ledger.input_round(record)
    pending_since(record)
    if record.request is not None:
        ledger.request_of("r", record).to_dict()


@settings(max_examples=400, deadline=None)
@given(path=st.sampled_from(PATHS), value=st.one_of(WRONG, st.just(_DELETE)))
# Python writes an infinity as ``Infinity``, which a field of any JSON value took (found by
# this test): no record holds one, since none could have been written.
@example(path=("request", "arguments", "to"), value=float("inf"))
@example(path=("result", "structured_content", "ok"), value=float("-inf"))
def test_any_field_of_any_wrong_type_is_store_unavailable_or_read_safely(
    path: tuple[Any, ...], value: Any
) -> None:
    text = json.dumps(_replaced(FULL, path, value))
    try:
        record = decode_record(text, 1, call_id="c1")
    except StoreUnavailable:
        return
    _read_everything(record)  # a record that fits is one every reader can read


@settings(max_examples=100, deadline=None)
@given(text=st.one_of(st.text(max_size=50), st.binary(max_size=50)))
def test_any_text_is_a_record_or_store_unavailable(text: str | bytes) -> None:
    try:
        record = decode_record(text, 1)
    except StoreUnavailable:
        return
    _read_everything(record)


def test_the_named_damages_are_refused_by_the_decoder() -> None:
    for damage in DAMAGES.values():
        body = json.loads(json.dumps(FULL))
        damage(body)
        with pytest.raises(StoreUnavailable):
            decode_record(json.dumps(body), 1, call_id="c1")
