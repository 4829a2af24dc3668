"""``MemoryStore``: runs kept in this process, bounded in number and in time. (What every store
does alike is in ``test_store_contract``; how the memory store keeps paused runs against
eviction, in ``tests/runs/test_ledger.py``.)"""

from __future__ import annotations

import time

import pytest
from store_kit import record

from toolwire import MemoryStore

pytestmark = pytest.mark.anyio


async def test_memory_runs_expire(monkeypatch: pytest.MonkeyPatch) -> None:
    store = MemoryStore(ttl=60)
    await store.swap("r", None, record())
    now = time.monotonic()
    monkeypatch.setattr(time, "monotonic", lambda: now + 61)
    assert await store.get("r", "c1") is None
    assert await store.swap("r", None, record()) is not None  # a fresh run under the old name
