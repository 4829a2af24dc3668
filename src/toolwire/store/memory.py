"""The in-memory run store (home: ``toolwire.runs.store.memory``)."""

from toolwire.runs.store.memory import (
    MemoryStore,
)

__all__ = [
    "MemoryStore",
]
