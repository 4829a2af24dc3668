"""The time leases and approval deadlines are judged by: the store's clock, not each worker's.

A dead worker's call is taken over once its lease has run out. Judged by the clock of the
worker that looks, a live worker's lease can look run out to a worker on a host whose clock is
minutes ahead, and the call would run twice. So a worker writes and reads leases (and an
approval request's deadline) in the store's time: PostgreSQL's ``clock_timestamp()``, Redis's
``TIME``; SQLite and memory are one host's, so theirs is the host's.

The store is asked for its time at most once every ``REFRESH`` seconds; between two readings
the time is carried forward on the host's monotonic clock, which a change to the host's wall
clock does not move. A store whose clock cannot be read before its first reading is
unavailable (``StoreUnavailable``), never judged by the host's clock; once read, a failed
reading carries the last one on. A store without ``now()`` (a third party's) is judged by
the host's clock.
"""

from __future__ import annotations

import inspect
import logging
import math
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from toolwire._values import describe_exception
from toolwire.errors import StoreUnavailable

__all__ = ["READ_TIMEOUT", "REFRESH", "StoreClock", "clock_of"]

REFRESH = 10.0
"""Seconds a reading of the store's clock is carried forward before it is read again."""
READ_TIMEOUT = 10.0
"""Seconds a reading of the store's clock may take."""

_log = logging.getLogger("toolwire")


class StoreClock:
    """A store's time in seconds since the epoch (see the module docstring)."""

    def __init__(self, store: Any) -> None:
        read = getattr(store, "now", None)
        self._read: Callable[[], Awaitable[float]] | None = None
        if callable(read):
            try:  # held weakly: the clock must not keep its store (and its connections) alive
                self._read = _weak_reader(weakref.WeakMethod(read))
            except TypeError:  # not a bound method: a function the store holds
                self._read = read
        self._offset: float | None = None
        """The store's time minus the monotonic clock, as last read."""
        self._read_at = -math.inf

    async def now(self) -> float:
        """The store's time now, read again when the last reading is ``REFRESH`` old."""
        if self._read is not None and time.monotonic() - self._read_at >= REFRESH:
            await self._refresh()
        return self.current()

    def current(self) -> float:
        """The store's time now, by the last reading (the host's before the first)."""
        if self._offset is None:
            return time.time()
        return time.monotonic() + self._offset

    async def _refresh(self) -> None:
        """Read the store's time. When it cannot be read, a reading taken before is carried
        on (the monotonic clock keeps it true); without one, the store is unavailable: judging
        leases by this host's clock instead could run a live call twice.

        Raises:
            StoreUnavailable: the store's clock failed, gave no time, or took longer than
                ``READ_TIMEOUT`` seconds, and it was never read before.
        """
        assert self._read is not None
        before = time.monotonic()
        try:
            with anyio.fail_after(READ_TIMEOUT):
                told: Any = self._read()
                if inspect.isawaitable(told):
                    told = await told
            if told.__class__ not in (int, float) or not math.isfinite(told):
                raise ValueError(f"it gave {str(told)[:50]!r}, not a time")
        except Exception as exc:
            if self._offset is not None:  # the store is away: its operations will say so
                _log.warning("reading the run store's clock failed: %s", describe_exception(exc))
                return
            raise StoreUnavailable(
                f"the run store's clock cannot be read ({describe_exception(exc)}); leases are "
                "judged by it, never by this host's clock"
            ) from None
        after = time.monotonic()
        self._offset = told - (before + after) / 2  # the reading is taken halfway, give or take
        self._read_at = after


def _weak_reader(method: weakref.WeakMethod[Any]) -> Callable[[], Any]:
    """A reader of the store's time that does not keep the store alive."""

    def read() -> Any:
        bound = method()
        if bound is None:
            raise RuntimeError("the store is gone")
        return bound()

    return read


_clocks: weakref.WeakKeyDictionary[Any, StoreClock] = weakref.WeakKeyDictionary()


def clock_of(store: Any) -> StoreClock:
    """The clock of ``store``, one per store object (its readings shared by every run)."""
    try:
        return _clocks[store]
    except KeyError:
        return _clocks.setdefault(store, StoreClock(store))
    except TypeError:  # a store that cannot be weakly referenced gets a clock per use
        return StoreClock(store)
