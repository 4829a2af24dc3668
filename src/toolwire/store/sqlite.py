"""The SQLite run store (home: ``toolwire.runs.store.sqlite``)."""

from toolwire.runs.store.sqlite import (
    SQLiteStore,
)

__all__ = [
    "SQLiteStore",
]
