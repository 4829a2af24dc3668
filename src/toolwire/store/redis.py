"""The Redis run store (home: ``toolwire.runs.store.redis``)."""

from toolwire.runs.store.redis import (
    RedisStore,
)

__all__ = [
    "RedisStore",
]
