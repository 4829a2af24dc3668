"""Concurrency limits shared by the executor and the MCP hub."""

from __future__ import annotations

import anyio

__all__ = ["acquire"]


async def acquire(limiter: anyio.Semaphore) -> None:
    """``await limiter.acquire()``, without a trip through the event loop when a token is
    free (the common case; each trip costs every call of a turn). Limits are semaphores, not
    capacity limiters: they need no per-task bookkeeping, which costs as much again."""
    try:
        limiter.acquire_nowait()
    except anyio.WouldBlock:
        await limiter.acquire()
