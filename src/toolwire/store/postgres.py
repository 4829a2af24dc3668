"""The PostgreSQL run store (home: ``toolwire.runs.store.postgres``)."""

from toolwire.runs.store.postgres import (
    PostgresStore,
)

__all__ = [
    "PostgresStore",
]
