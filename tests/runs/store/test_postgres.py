"""``PostgresStore`` on a real server: how many connections a worker holds (what its docstring
says, counted in ``pg_stat_activity``), and an unreachable server or a missing database as one
clear error at once. (The contract every store keeps is ``test_store_contract``.)"""

from __future__ import annotations

import itertools
import logging
import uuid

import anyio
import pytest
from store_kit import RUNS, TOOLS, closed_port

import toolwire
from toolwire import Executor, StoreUnavailable, make_call
from toolwire.errors import ConfigurationError
from toolwire.store import from_url

pytestmark = pytest.mark.anyio

pytest.importorskip("psycopg")

_names = itertools.count()


def _labelled(url: str) -> tuple[str, str]:
    """``url`` with an application name of its own, to count its connections by."""
    name = f"toolwire_conn_{next(_names)}_{uuid.uuid4().hex[:6]}"
    return f"{url}?application_name={name}", name


async def _connections(url: str, name: str) -> int:
    import psycopg

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as connection:
        cursor = await connection.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (name,)
        )
        row = await cursor.fetchone()
        assert row is not None
        return int(row[0])


@toolwire.tool
async def wait_a_little(n: int) -> int:
    """Take a moment."""
    await anyio.sleep(0.02)
    return n


async def test_a_worker_one_turn_at_a_time_holds_one_or_two_connections(
    postgres_url: str,
) -> None:
    url, name = _labelled(postgres_url)
    store = from_url(f"{url}&max_connections=10")
    try:
        for turn in range(20):
            calls = [{"functionCall": {"name": "wait_a_little", "args": {"n": turn}}}]
            response = {"candidates": [{"content": {"role": "model", "parts": calls}}]}
            await toolwire.execute_tool_calls(
                [wait_a_little], "gemini", response, store=store, run_id=f"one-{turn}"
            )
        assert 1 <= await _connections(postgres_url, name) <= 2
    finally:
        await store.aclose()  # type: ignore[attr-defined]
    assert await _connections(postgres_url, name) == 0


async def test_concurrent_turns_never_take_more_than_max_connections(postgres_url: str) -> None:
    url, name = _labelled(postgres_url)
    store = from_url(f"{url}&max_connections=3")
    most = 0
    done = anyio.Event()

    async def count() -> None:
        nonlocal most
        while not done.is_set():
            most = max(most, await _connections(postgres_url, name))
            await anyio.sleep(0.01)

    async def turn(k: int) -> None:
        calls = [
            {"functionCall": {"name": "wait_a_little", "args": {"n": i}, "id": f"c{i}"}}
            for i in range(4)
        ]
        response = {"candidates": [{"content": {"role": "model", "parts": calls}}]}
        await toolwire.execute_tool_calls(
            [wait_a_little], "gemini", response, store=store, run_id=f"many-{k}"
        )

    try:
        async with anyio.create_task_group() as counting:
            counting.start_soon(count)
            async with anyio.create_task_group() as turns:
                for k in range(16):
                    turns.start_soon(turn, k)
            done.set()
        assert 2 <= most <= 3  # more than one at once, never past the bound
    finally:
        await store.aclose()  # type: ignore[attr-defined]


def test_the_bound_is_given_in_the_url_and_checked() -> None:
    store = from_url("postgresql://127.0.0.1:1/runs?max_connections=4&ttl=60")
    assert store.max_connections == 4  # type: ignore[attr-defined]
    assert store.conninfo == "postgresql://127.0.0.1:1/runs"  # type: ignore[attr-defined]
    with pytest.raises(ConfigurationError, match="max_connections must be a positive integer"):
        from_url("postgresql://127.0.0.1:1/runs?max_connections=0")


# -- an unreachable server, a missing database ----------------------------------------------


async def test_an_unreachable_postgres_is_one_attempt_one_line_and_no_pool_noise(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from toolwire.store.postgres import PostgresStore

    url = f"postgresql://someone:hunter2@127.0.0.1:{closed_port()}/runs"
    store = PostgresStore(url, timeout=2)
    with caplog.at_level(logging.DEBUG, logger="psycopg"):
        with pytest.raises(StoreUnavailable, match="cannot be used") as raised:
            await Executor(TOOLS, store=store).run(
                [make_call(TOOLS, "add", {"a": 1, "b": 2}, call_id="c1")], run_id="r"
            )
        await store.aclose()
    assert isinstance(raised.value, ConnectionError)
    message = str(raised.value)
    assert "\n" not in message
    assert "Connection refused" in message
    assert "hunter2" not in message
    # The pool never started: no retries, and none of its "error connecting" lines.
    assert [r.getMessage() for r in caplog.records if r.name.startswith("psycopg.pool")] == []
    assert RUNS["add"] == 0


async def test_a_postgres_database_that_is_not_there_is_one_error_at_once(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    from toolwire.store.postgres import PostgresStore

    store = PostgresStore(postgres_url.rsplit("/", 1)[0] + "/no_such_database", timeout=2)
    with caplog.at_level(logging.DEBUG, logger="psycopg"):
        with pytest.raises(StoreUnavailable, match='"no_such_database" does not exist'):
            await store.pending()
        await store.aclose()
    assert [r.getMessage() for r in caplog.records if r.name.startswith("psycopg.pool")] == []
