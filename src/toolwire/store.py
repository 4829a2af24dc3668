"""Where a run remembers its calls: decisions recorded for them and outcomes of those that ran.

A run is one turn's calls, named by a ``run_id`` the caller chooses (or the executor generates
when approval is pending). Answering a call again from its stored outcome is what keeps a
resumed turn from running anything twice.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Literal, Protocol, runtime_checkable

from toolwire.approval import Decision
from toolwire.calls import ToolResult

__all__ = ["CallRecord", "CallState", "MemoryStore", "RunStore", "default_store"]

CallState = Literal["pending", "approved", "denied", "running", "completed"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CallRecord:
    """What a run knows about one of its calls."""

    call_id: str
    fingerprint: str
    """The tool and its canonical arguments, hashed: the same id with other content is
    another call, not a resume."""
    state: CallState
    decision: Decision | None = None
    result: ToolResult | None = None

    def with_(self, **changes: object) -> CallRecord:
        return replace(self, **changes)  # type: ignore[arg-type]


@runtime_checkable
class RunStore(Protocol):
    """The store interface; implementations must be safe to share between tasks."""

    async def get(self, run_id: str, call_id: str) -> CallRecord | None:
        """The record of ``call_id`` in ``run_id``, if any."""
        ...

    async def put(self, run_id: str, record: CallRecord) -> None:
        """Create or replace the record of ``record.call_id`` in ``run_id``."""
        ...


class MemoryStore:
    """A bounded in-process store: the ``max_runs`` most recently used runs are kept."""

    def __init__(self, max_runs: int = 1024) -> None:
        if max_runs < 1:
            raise ValueError("max_runs must be at least 1")
        self.max_runs = max_runs
        self._runs: OrderedDict[str, dict[str, CallRecord]] = OrderedDict()
        self._lock = threading.Lock()  # callers may share a store across event loops

    async def get(self, run_id: str, call_id: str) -> CallRecord | None:
        with self._lock:
            calls = self._runs.get(run_id)
            if calls is None:
                return None
            self._runs.move_to_end(run_id)
            return calls.get(call_id)

    async def put(self, run_id: str, record: CallRecord) -> None:
        with self._lock:
            calls = self._runs.get(run_id)
            if calls is None:
                calls = self._runs[run_id] = {}
                while len(self._runs) > self.max_runs:
                    self._runs.popitem(last=False)
            else:
                self._runs.move_to_end(run_id)
            calls[record.call_id] = record

    def __len__(self) -> int:
        return len(self._runs)


_default: MemoryStore | None = None
_default_lock = threading.Lock()


def default_store() -> MemoryStore:
    """The process-wide store used when the caller passes none (created on first use)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = MemoryStore()
        return _default
