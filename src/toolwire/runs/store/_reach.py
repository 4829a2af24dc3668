"""What a server (the MCP gateway, the approval console) checks of its run store before it
serves: that other processes can reach the runs it keeps, and that it answers at all."""

from __future__ import annotations

import anyio

from toolwire.errors import StoreUnavailable, ToolwireError
from toolwire.runs.store._base import RunStore
from toolwire.runs.store.memory import MemoryStore
from toolwire.runs.store.sqlite import SQLiteStore

__all__ = ["REACH_SECONDS", "check_reachable", "in_process"]

REACH_SECONDS = 10.0
"""The most seconds a store may take to answer the check at start."""
_NO_RUN = "toolwire-reach-check"
"""A run id no run has: reading its one call is a round trip that finds nothing."""


def in_process(store: RunStore) -> bool:
    """Whether ``store`` lives in this process's memory, out of reach of every other process
    (``toolwire decide``, the inbox, another worker): a [`MemoryStore`][], or a SQLite
    database named ``:memory:`` (``sqlite:///:memory:``)."""
    if isinstance(store, MemoryStore):
        return True
    return isinstance(store, SQLiteStore) and str(store.path) == ":memory:"


async def check_reachable(store: RunStore, *, within: float = REACH_SECONDS) -> None:
    """Read from ``store`` once, so that a server refuses to start on a store it cannot
    reach rather than failing its first request.

    Raises:
        StoreUnavailable: one line naming the store as its ``repr`` does (toolwire's stores
            never show a password there) and why: the store's own error, or no answer within
            ``within`` seconds.
    """
    try:
        with anyio.fail_after(within):
            await store.get(_NO_RUN, _NO_RUN)
    except TimeoutError:
        raise StoreUnavailable(f"{store!r} did not answer within {within:g} s") from None
    except ToolwireError:
        raise
    except Exception as exc:  # a store of the application's own: its error, on one line
        said = " ".join(str(exc).split())[:300]
        raise StoreUnavailable(f"{store!r} cannot be reached: {said}") from None
