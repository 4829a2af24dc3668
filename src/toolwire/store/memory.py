"""The in-process store: bounded, and optionally expiring."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

from toolwire.store._base import CallRecord

__all__ = ["MemoryStore"]


@dataclass(slots=True)
class _Run:
    calls: dict[str, CallRecord] = field(default_factory=dict)
    touched: float = 0.0


class MemoryStore:
    """Runs kept in this process: the ``max_runs`` most recently written, each for ``ttl``
    seconds after its last write (None: until evicted).

    Nothing survives the process; use :class:`~toolwire.store.SQLiteStore` or
    :class:`~toolwire.store.redis.RedisStore` when a turn may resume elsewhere.
    """

    def __init__(self, max_runs: int = 1024, *, ttl: float | None = None) -> None:
        if max_runs < 1:
            raise ValueError("max_runs must be at least 1")
        if ttl is not None and not ttl > 0:
            raise ValueError("ttl must be a positive number of seconds, or None")
        self.max_runs = max_runs
        self.ttl = ttl
        self._runs: OrderedDict[str, _Run] = OrderedDict()
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

    async def swap(
        self, run_id: str, expected: CallRecord | None, record: CallRecord
    ) -> CallRecord | None:
        with self._lock:
            run = self._live(run_id)
            current = run.calls.get(record.call_id) if run is not None else None
            if (current.version if current else 0) != (expected.version if expected else 0):
                return None
            if run is None:
                run = self._runs[run_id] = _Run()
                while len(self._runs) > self.max_runs:
                    self._runs.popitem(last=False)
            else:
                self._runs.move_to_end(run_id)
            run.touched = time.monotonic()
            stored = run.calls[record.call_id] = record.with_(
                version=(current.version if current else 0) + 1
            )
            return stored

    def _live(self, run_id: str) -> _Run | None:
        run = self._runs.get(run_id)
        if run is not None and self.ttl is not None and time.monotonic() - run.touched > self.ttl:
            del self._runs[run_id]
            return None
        return run

    def __len__(self) -> int:
        return len(self._runs)
