"""``toolwire.runs.store._reach``: what a server checks of its store before it serves: whether
other processes can reach the runs it keeps, and that it answers at all, within a bound, as one
line of the library's own error naming the store without its password."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from store_kit import closed_port

from toolwire import MemoryStore, SQLiteStore, StoreUnavailable
from toolwire.runs.store import check_reachable, in_process

pytestmark = pytest.mark.anyio


def test_only_a_store_in_this_processs_memory_is_in_process(tmp_path: Path) -> None:
    assert in_process(MemoryStore())
    memory, shared = SQLiteStore(":memory:"), SQLiteStore(tmp_path / "runs.db")
    try:
        assert in_process(memory)
        assert not in_process(shared)
    finally:
        memory.close()
        shared.close()


async def test_a_store_that_answers_is_reachable(tmp_path: Path) -> None:
    await check_reachable(MemoryStore())
    async with SQLiteStore(tmp_path / "runs.db") as store:
        await check_reachable(store)


async def test_an_unreachable_redis_is_one_line_without_its_password() -> None:
    from toolwire.store.redis import RedisStore

    store = RedisStore(f"redis://someone:hunter2@127.0.0.1:{closed_port()}/0", timeout=2)
    try:
        with pytest.raises(StoreUnavailable) as raised:
            await check_reachable(store)
    finally:
        await store.aclose()
    assert "hunter2" not in str(raised.value)
    assert "\n" not in str(raised.value)


class Silent:
    """A store of the application's own that never answers."""

    async def get(self, run_id: str, call_id: str) -> Any:
        await anyio.sleep_forever()

    def __repr__(self) -> str:
        return "Silent()"


class Broken:
    """A store of the application's own whose reads fail with its own error."""

    async def get(self, run_id: str, call_id: str) -> Any:
        raise OSError("disk\non fire")

    def __repr__(self) -> str:
        return "Broken()"


async def test_a_store_that_does_not_answer_in_time_or_fails_is_unavailable_on_one_line() -> None:
    with (
        anyio.fail_after(10),
        pytest.raises(StoreUnavailable, match=r"Silent\(\) did not answer within 0.05 s"),
    ):
        await check_reachable(Silent(), within=0.05)  # type: ignore[arg-type]
    with pytest.raises(StoreUnavailable, match=r"Broken\(\) cannot be reached: disk on fire"):
        await check_reachable(Broken())  # type: ignore[arg-type]
