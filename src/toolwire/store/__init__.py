"""Where a run remembers its calls: the run stores.

Their home is ``toolwire.runs.store``; this is the path the documentation names.
"""

from typing import TYPE_CHECKING, Any

from toolwire.runs import store as _home
from toolwire.runs.store import (
    DEFAULT_TTL,
    CallRecord,
    CallState,
    DamagedRecord,
    MemoryStore,
    QueuePlace,
    RunStore,
    SQLiteStore,
    default_store,
    from_url,
)

if TYPE_CHECKING:
    from toolwire.runs.store.postgres import PostgresStore
    from toolwire.runs.store.redis import RedisStore

__all__ = [
    "DEFAULT_TTL",
    "CallRecord",
    "CallState",
    "DamagedRecord",
    "MemoryStore",
    "PostgresStore",
    "QueuePlace",
    "RedisStore",
    "RunStore",
    "SQLiteStore",
    "default_store",
    "from_url",
]


def __getattr__(name: str) -> Any:
    # RedisStore and PostgresStore are imported on use: each needs its extra.
    return getattr(_home, name)
