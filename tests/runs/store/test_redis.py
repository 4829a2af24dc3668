"""``RedisStore`` on a real Redis server: its runs expire, an unreachable server is one clear
error naming it without its password, the extra is named when missing, and its pending index
survives members it did not write. (The contract every store keeps is ``test_store_contract``.)"""

from __future__ import annotations

import anyio
import pytest
from store_kit import RUNS, TOOLS, closed_port, record

import toolwire
from toolwire import (
    ApprovalPending,
    DeferredApproval,
    Executor,
    Policy,
    Rule,
    RunStore,
    StoreUnavailable,
    make_call,
)

pytestmark = pytest.mark.anyio


async def _gone(store: RunStore, run_id: str) -> bool:
    with anyio.fail_after(10):  # bounded: expiry is a few hundred ms away
        while await store.get(run_id, "c1") is not None:
            await anyio.sleep(0.02)
    return True


async def test_redis_runs_expire(redis_url: str) -> None:
    from toolwire.store.redis import RedisStore

    async with RedisStore(redis_url, ttl=0.2, prefix="expiry:") as store:
        first = await store.swap("r", None, record())
        assert first is not None
        assert await store.get("r", "c1") == first
        assert await _gone(store, "r")


async def test_an_unreachable_redis_is_a_clear_error_and_nothing_runs() -> None:
    from toolwire.store.redis import RedisStore

    store = RedisStore(f"redis://127.0.0.1:{closed_port()}/0", timeout=2)
    with pytest.raises(StoreUnavailable, match="cannot be reached") as raised:
        await Executor(TOOLS, store=store).run(
            [make_call(TOOLS, "add", {"a": 1, "b": 2}, call_id="c1")], run_id="r"
        )
    await store.aclose()
    assert isinstance(raised.value, ConnectionError)
    assert RUNS["add"] == 0


async def test_an_unreachable_redis_names_it_without_its_password() -> None:
    from toolwire.store.redis import RedisStore

    store = RedisStore(f"redis://someone:hunter2@127.0.0.1:{closed_port()}/0", timeout=2)
    with pytest.raises(StoreUnavailable, match="cannot be reached") as raised:
        await store.pending()
    await store.aclose()
    assert "hunter2" not in str(raised.value)
    assert "\n" not in str(raised.value)
    assert "someone:***@127.0.0.1" in str(raised.value)


def test_the_redis_store_without_its_extra_names_the_extra() -> None:
    import subprocess
    import sys

    program = (
        "import sys\n"
        "sys.modules['redis'] = None\n"
        "import toolwire.store\n"
        "try:\n"
        "    toolwire.store.RedisStore\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == (
        "MissingDependency redis is not installed; install it with: pip install 'toolwire[redis]' "
        "(from a checkout: pip install -e '.[redis]')"
    )


async def test_a_redis_pending_index_with_members_it_did_not_write_still_lists(
    redis_url: str,
) -> None:
    import redis.asyncio as aioredis

    from toolwire.store.redis import RedisStore

    async with RedisStore(redis_url, prefix="garbage:") as store:
        executor = Executor(
            TOOLS, store=store, policy=Policy(Rule("ask", "*")), approver=DeferredApproval()
        )
        with pytest.raises(ApprovalPending):
            await executor.run(
                [make_call(TOOLS, "add", {"a": 1, "b": 2}, call_id="c1")], run_id="r"
            )
        client = aioredis.Redis.from_url(redis_url)
        await client.zadd("garbage:\x00pending", {"not json": 0, "[1, 2]": 0, '"x"': 0})
        await client.aclose()
        [request] = await toolwire.pending(store=store)
        assert (request.run_id, request.call_id) == ("r", "c1")
