"""Where a run remembers its calls: decisions, claims and outcomes.

A run is one turn's calls, named by a ``run_id`` the caller chooses (or the executor generates
when approval is pending). Three stores implement :class:`RunStore`:

- :class:`MemoryStore`: bounded, in this process (the default);
- :class:`SQLiteStore`: a file, shared by the processes of one machine (the durable default);
- :class:`~toolwire.store.redis.RedisStore` (extra ``toolwire[redis]``): several workers and
  machines.

Every write is a compare-and-swap on the record's version, so two workers resuming the same run
cannot both move a call to ``running``: the one that loses sees the winner's record.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from toolwire.store._base import DEFAULT_TTL, CallRecord, CallState, RunStore
from toolwire.store.memory import MemoryStore
from toolwire.store.sqlite import SQLiteStore

if TYPE_CHECKING:
    from toolwire.store.redis import RedisStore

__all__ = [
    "DEFAULT_TTL",
    "CallRecord",
    "CallState",
    "MemoryStore",
    "RedisStore",
    "RunStore",
    "SQLiteStore",
    "default_store",
]


def __getattr__(name: str) -> Any:
    if name == "RedisStore":  # imported on use: it needs the ``redis`` extra
        from toolwire.store.redis import RedisStore

        return RedisStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_default: MemoryStore | None = None
_default_lock = threading.Lock()


def default_store() -> MemoryStore:
    """The process-wide store used when the caller passes none (created on first use)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = MemoryStore()
        return _default
