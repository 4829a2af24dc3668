"""Attacks on the servers' run store: a store that refuses connections, one that accepts them
and never answers, one that goes away once the gateway serves, and passwords written every way
a store URL takes them. A server never starts on a store it cannot reach, says so on one line
naming the store without its password, and a call whose store failed later is answered. A
failing test here names the invariant it breaks in its comment."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

import mcp

import toolwire
import toolwire.mcp
from toolwire import Policy, Rule, StoreUnavailable
from toolwire.mcp import Gateway
from toolwire.runs.store._base import without_password
from toolwire.runs.store._reach import check_reachable

pytestmark = pytest.mark.anyio

BOUND = 60.0


@toolwire.tool
def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


@toolwire.tool(annotations={"readOnlyHint": True})
def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order}"


@pytest.fixture
def refusing_port() -> Iterator[int]:
    """A loopback port bound by no listener: a connection to it is refused at once."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port that accepts connections and never says a word."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join(5)
        for connection in accepted:
            connection.close()
        listener.close()


def redis_store(url: str) -> Any:
    pytest.importorskip("redis")
    from toolwire.store.redis import RedisStore

    return RedisStore(url)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://ops:hunter2@db:6379/0", "redis://ops:***@db:6379/0"),
        ("redis://:hunter2@db/0", "redis://:***@db/0"),
        ("redis://db/0?password=hunter2&ssl=true", "redis://db/0?password=***&ssl=true"),
        ("postgresql://ops:p%40ss:w@db/runs", "postgresql://ops:***@db/runs"),
        ("postgresql://ops@db/runs?sslmode=require&password=hunter2", None),
        ("postgresql://ops@db/runs?PassWord=hunter2", None),
        ("host=db user=ops password=hunter2 dbname=runs", None),
        ("host=db password='hunter 2' dbname=runs", None),
        ("postgresql://db/runs?sslpassword=hunter2", None),
    ],
)
def test_a_store_url_is_shown_without_its_password(url: str, shown: str | None) -> None:
    seen = without_password(url)
    assert "hunter" not in seen
    if shown is not None:
        assert seen == shown


async def test_a_store_refusing_connections_stops_the_gateway_before_it_serves(
    refusing_port: int,
) -> None:
    # Breaks "a store that cannot be reached at start is a refusal to start": the gateway
    # served, and its first gated call failed.
    listening: list[str] = []
    url = f"redis://ops:hunter2@127.0.0.1:{refusing_port}/0"
    with anyio.fail_after(BOUND), pytest.raises(StoreUnavailable) as refused:
        await toolwire.mcp.serve(
            [refund], policy=Policy(Rule("ask", "refund")), store=url, transport="http",
            port=0, on_listening=listening.append,
        )  # fmt: skip
    said = str(refused.value)
    assert said.startswith("the gateway does not start: its run store: ")
    assert "\n" not in said
    assert f"127.0.0.1:{refusing_port}" in said
    assert "hunter2" not in said
    assert listening == []


async def test_a_store_that_never_answers_is_refused_within_the_bound(silent_port: int) -> None:
    store = redis_store(f"redis://127.0.0.1:{silent_port}/0")
    try:
        with anyio.fail_after(BOUND), pytest.raises(StoreUnavailable, match="did not answer"):
            await check_reachable(store, within=0.5)
    finally:
        await store.aclose()


async def test_the_console_does_not_start_on_a_store_it_cannot_reach(refusing_port: int) -> None:
    pytest.importorskip("starlette")
    pytest.importorskip("uvicorn")
    from toolwire.inbox._serve import serve

    announced: list[str] = []
    store = redis_store(f"redis://ops:hunter2@127.0.0.1:{refusing_port}/0")
    try:
        with anyio.fail_after(BOUND), pytest.raises(StoreUnavailable) as refused:
            await serve(store, port=0, announce=announced.append)
    finally:
        await store.aclose()
    assert str(refused.value).startswith("the inbox does not start: its run store: ")
    assert "hunter2" not in str(refused.value)
    assert announced == []


async def test_a_gated_call_whose_store_went_away_is_answered_and_others_still_run(
    refusing_port: int,
) -> None:
    # Breaks "every call is answered exactly once, with toolwire's own error": the client got
    # "Internal server error" and a traceback went to stderr.
    store = redis_store(f"redis://ops:hunter2@127.0.0.1:{refusing_port}/0")
    gateway = Gateway([refund, lookup], policy=Policy(Rule("ask", "refund")), store=store)
    try:
        with anyio.fail_after(BOUND):
            async with mcp.Client(gateway.server()) as client:
                gated = await client.call_tool("refund", {"order": "o1"})
                free = await client.call_tool("lookup", {"order": "o1"})
    finally:
        await store.aclose()
    text = "".join(getattr(part, "text", "") for part in gated.content)
    assert gated.is_error is True
    assert text.startswith("The call could not run: ")
    assert f"127.0.0.1:{refusing_port}" in text
    assert "hunter2" not in text
    assert (free.is_error, free.content[0].text) == (False, "order o1")  # type: ignore[union-attr]
