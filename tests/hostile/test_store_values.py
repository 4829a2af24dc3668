"""What the run stores hold is untrusted too: damaged values are StoreUnavailable, ids that no
store can hold are refused before a store sees them, and odd results round-trip."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolwire import (
    ConfigurationError,
    Executor,
    SQLiteStore,
    StoreUnavailable,
    Tool,
    ToolSet,
    allow,
    decide,
    make_call,
)

pytestmark = pytest.mark.anyio

TOOLS = ToolSet([Tool(name="echo", handler=lambda: {"bytes": b"\xff\x00", "text": "a\ud800b"})])


async def test_a_redis_value_that_is_not_utf8_is_store_unavailable(redis_url: str) -> None:
    import redis.asyncio as aioredis

    from toolwire.store.redis import RedisStore

    async with RedisStore(redis_url, prefix="hostile:utf8:") as store:
        raw = aioredis.Redis.from_url(redis_url)
        try:
            await raw.hset("hostile:utf8:r", "c1", b"1:\xff\xfe{not text")
        finally:
            await raw.aclose()
        with pytest.raises(StoreUnavailable):
            await store.get("r", "c1")
        executor = Executor(TOOLS, store=store)
        with pytest.raises(StoreUnavailable):  # before anything runs
            await executor.run([make_call(TOOLS, "echo", {}, call_id="c1")], run_id="r")


@pytest.mark.parametrize("run_id", ["r\ud800", 7])
async def test_a_run_id_no_store_can_hold_is_refused(run_id: object, tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "runs.db")
    try:
        executor = Executor(TOOLS, store=store)
        with pytest.raises(ConfigurationError):
            await executor.run([make_call(TOOLS, "echo", {}, call_id="c1")], run_id=run_id)  # type: ignore[arg-type]
        with pytest.raises(ConfigurationError):
            await decide(run_id, "c1", allow(), store=store)  # type: ignore[arg-type]
    finally:
        store.close()


async def test_a_call_id_no_store_can_hold_is_answered_not_stored(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "runs.db")
    try:
        executor = Executor(TOOLS, store=store)
        bad, good = (make_call(TOOLS, "echo", {}, call_id=i) for i in ("c\udc80", "c2"))
        outcomes = await executor.run([bad, good], run_id="r")
        assert outcomes[0].result.error_kind == "invalid_arguments"
        assert "valid Unicode" in outcomes[0].result.text
        assert outcomes[1].result.error_kind is None
    finally:
        store.close()


async def test_bytes_and_surrogates_in_a_result_round_trip_through_sqlite(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "runs.db")
    try:
        executor = Executor(TOOLS, store=store)
        call = make_call(TOOLS, "echo", {}, call_id="c1")
        (first,) = await executor.run([call], run_id="r")
        assert first.result.structured_content == {"bytes": "/wA=", "text": "a\ufffdb"}
        (again,) = await executor.run([call], run_id="r")
        assert again.from_store
        assert again.result == first.result
    finally:
        store.close()
