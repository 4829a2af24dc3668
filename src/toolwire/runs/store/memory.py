"""The in-process store: bounded, and optionally expiring."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

from toolwire.errors import StoreUnavailable
from toolwire.runs.store._base import (
    CallRecord,
    DamagedRecord,
    QueuePlace,
    binding_conflict,
    pending_since,
)

__all__ = ["MemoryStore"]


@dataclass(slots=True)
class _Run:
    calls: dict[str, CallRecord] = field(default_factory=dict)
    touched: float = 0.0
    binding: str | None = None
    unfinished: int = 0
    """Calls not answered yet (waiting for a decision, decided but not run or answered,
    running): a run with any is never evicted."""


class MemoryStore:
    """Runs kept in this process: up to ``max_runs``, each for ``ttl`` seconds after its last
    write (None: until evicted).

    When a new run needs room, the least recently written run with nothing unfinished (no
    call waiting for a decision, approved but not run, or running) is forgotten; when every
    run kept is unfinished, starting another raises
    [`StoreUnavailable`][toolwire.errors.StoreUnavailable], so a paused run is never forgotten
    silently.
    Nothing survives the process; use [`SQLiteStore`][toolwire.store.SQLiteStore] or
    [`RedisStore`][toolwire.store.redis.RedisStore] when a turn may resume elsewhere.
    """

    def __init__(self, max_runs: int = 1024, *, ttl: float | None = None) -> None:
        if max_runs < 1:
            raise ValueError("max_runs must be at least 1")
        if ttl is not None and not ttl > 0:
            raise ValueError("ttl must be a positive number of seconds, or None")
        self.max_runs = max_runs
        self.ttl = ttl
        self._runs: OrderedDict[str, _Run] = OrderedDict()
        # (run id, call id) -> (requested at, principal key), for the calls waiting
        self._pending: dict[tuple[str, str], tuple[float, str]] = {}
        self._lock = threading.Lock()  # callers may share a store across event loops

    async def get(self, run_id: str, call_id: str) -> CallRecord | None:
        with self._lock:
            run = self._live(run_id)
            return run.calls.get(call_id) if run is not None else None

    async def get_many(self, run_id: str, call_ids: Sequence[str]) -> list[CallRecord | None]:
        with self._lock:
            run = self._live(run_id)
            if run is None:
                return [None] * len(call_ids)
            return [run.calls.get(call_id) for call_id in call_ids]

    async def load(
        self, run_id: str, call_ids: Sequence[str]
    ) -> tuple[str | None, list[CallRecord | None]]:
        with self._lock:
            run = self._live(run_id)
            if run is None:
                return None, [None] * len(call_ids)
            return run.binding, [run.calls.get(call_id) for call_id in call_ids]

    async def records(self, run_id: str) -> list[CallRecord]:
        with self._lock:
            run = self._live(run_id)
            return list(run.calls.values()) if run is not None else []

    async def now(self) -> float:
        """The store's time: this process's clock."""
        return time.time()

    async def pending(
        self,
        *,
        run_id: str | None = None,
        principal_key: str | None = None,
        limit: int = 100,
        newest_first: bool = False,
        after: QueuePlace | None = None,
    ) -> list[tuple[str, CallRecord | DamagedRecord]]:
        with self._lock:
            waiting = sorted(
                (
                    QueuePlace(since, *key)
                    for key, (since, principal) in self._pending.items()
                    if (run_id is None or key[0] == run_id)
                    and (principal_key is None or principal == principal_key)
                ),
                reverse=newest_first,
            )
            if after is not None:
                waiting = [p for p in waiting if (p < after if newest_first else p > after)]
            found: list[tuple[str, CallRecord | DamagedRecord]] = []
            for place in waiting:
                run, call_id = place.run_id, place.call_id
                live = self._live(run)
                if live is not None and call_id in live.calls:
                    found.append((run, live.calls[call_id]))
                    if len(found) >= limit:
                        break
            return found

    async def swap(
        self,
        run_id: str,
        expected: CallRecord | None,
        record: CallRecord,
        *,
        binding: str | None = None,
    ) -> CallRecord | None:
        with self._lock:
            run = self._live(run_id)
            current = run.calls.get(record.call_id) if run is not None else None
            if (current.version if current else 0) != (expected.version if expected else 0):
                return None
            if run is not None and binding is not None and run.binding not in (None, binding):
                raise binding_conflict(run_id)
            if run is None:
                self._make_room()
                run = self._runs[run_id] = _Run()
            else:
                self._runs.move_to_end(run_id)
            if run.binding is None:
                run.binding = binding
            run.touched = time.monotonic()
            stored = run.calls[record.call_id] = record.with_(
                version=(current.version if current else 0) + 1
            )
            run.unfinished += (stored.result is None) - (
                current is not None and current.result is None
            )
            key = (run_id, record.call_id)
            since = pending_since(stored)
            if since is not None:
                self._pending[key] = since
            else:
                self._pending.pop(key, None)
            return stored

    def _make_room(self) -> None:
        """Forget the least recently written finished run while the store is full (expired
        runs first)."""
        if len(self._runs) >= self.max_runs and self.ttl is not None:
            for run_id in list(self._runs):
                self._live(run_id)
        while len(self._runs) >= self.max_runs:
            for run_id, run in self._runs.items():  # oldest first
                if not run.unfinished:
                    self._forget(run_id)
                    break
            else:
                raise StoreUnavailable(
                    f"the in-memory store holds {len(self._runs)} runs with calls waiting or "
                    "running (its max_runs); decide or finish some, or use a larger or durable "
                    "store"
                )

    def _forget(self, run_id: str) -> None:
        run = self._runs.pop(run_id)
        for call_id in run.calls:
            self._pending.pop((run_id, call_id), None)

    def _live(self, run_id: str) -> _Run | None:
        run = self._runs.get(run_id)
        if run is not None and self.ttl is not None and time.monotonic() - run.touched > self.ttl:
            self._forget(run_id)
            return None
        return run

    def __len__(self) -> int:
        return len(self._runs)
