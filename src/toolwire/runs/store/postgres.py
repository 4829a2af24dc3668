"""Runs in PostgreSQL, for teams whose application already runs on it (extra
``toolwire[postgres]``: psycopg 3 with its connection pool).

Two tables (``<prefix>runs``, ``<prefix>calls``) and one function (``<prefix>swap``) that does
a compare-and-swap in one round trip: it locks the call's row, compares versions, keeps the
run's binding and expiry, and writes the record with its place in the pending index (a partial
index on the time the call was asked about). Expired runs are ignored by reads and deleted by
every few hundredth write.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from toolwire.errors import (
    ConfigurationError,
    MissingDependency,
    StoreUnavailable,
)
from toolwire.runs.store._base import (
    DEFAULT_TTL,
    CallRecord,
    DamagedRecord,
    QueuePlace,
    binding_conflict,
    decode_record,
    encode_record,
    listed_record,
    pending_since,
    queue_query,
    without_password,
)

try:
    import psycopg
    from psycopg_pool import AsyncConnectionPool
except ImportError:  # pragma: no cover - exercised without the extra
    raise MissingDependency("psycopg", "postgres") from None

__all__ = ["PostgresStore"]

_PREFIX = re.compile(r"[a-z_][a-z0-9_]{0,39}")
_BINDING_CONFLICT = "toolwire: run binding conflict"
_PURGE_EVERY = 256
"""Writes between two sweeps of expired runs (reads ignore them meanwhile)."""


def _schema(prefix: str) -> str:
    runs, calls, swap = f"{prefix}runs", f"{prefix}calls", f"{prefix}swap"
    return f"""
CREATE TABLE IF NOT EXISTS {runs} (
    run_id TEXT PRIMARY KEY,
    expires_at DOUBLE PRECISION,
    binding TEXT
);
CREATE INDEX IF NOT EXISTS {runs}_expiry ON {runs} (expires_at);
CREATE TABLE IF NOT EXISTS {calls} (
    run_id TEXT NOT NULL REFERENCES {runs} (run_id) ON DELETE CASCADE,
    call_id TEXT NOT NULL,
    version BIGINT NOT NULL,
    record TEXT NOT NULL,
    pending_since DOUBLE PRECISION,
    principal_key TEXT,
    PRIMARY KEY (run_id, call_id)
);
DROP INDEX IF EXISTS {calls}_pending;
CREATE INDEX IF NOT EXISTS {calls}_queue ON {calls} (pending_since, run_id, call_id)
    WHERE pending_since IS NOT NULL;
CREATE INDEX IF NOT EXISTS {calls}_queue_of
    ON {calls} (principal_key, pending_since, run_id, call_id)
    WHERE pending_since IS NOT NULL;
CREATE OR REPLACE FUNCTION {swap}(
    p_run TEXT, p_call TEXT, p_expected BIGINT, p_record TEXT, p_since DOUBLE PRECISION,
    p_principal TEXT, p_binding TEXT, p_now DOUBLE PRECISION, p_expires DOUBLE PRECISION
) RETURNS BIGINT LANGUAGE plpgsql AS $$
DECLARE
    current BIGINT;
    bound TEXT;
BEGIN
    DELETE FROM {runs} WHERE run_id = p_run AND expires_at <= p_now;
    SELECT version INTO current FROM {calls}
        WHERE run_id = p_run AND call_id = p_call FOR UPDATE;
    IF coalesce(current, 0) <> p_expected THEN
        RETURN -1;
    END IF;
    INSERT INTO {runs} AS r (run_id, expires_at, binding) VALUES (p_run, p_expires, p_binding)
        ON CONFLICT (run_id) DO UPDATE
        SET expires_at = excluded.expires_at, binding = coalesce(r.binding, excluded.binding)
        RETURNING binding INTO bound;
    IF p_binding IS NOT NULL AND bound IS DISTINCT FROM p_binding THEN
        RAISE EXCEPTION '{_BINDING_CONFLICT}';
    END IF;
    IF p_expected = 0 THEN
        INSERT INTO {calls} (run_id, call_id, version, record, pending_since, principal_key)
            VALUES (p_run, p_call, 1, p_record, p_since, p_principal)
            ON CONFLICT (run_id, call_id) DO NOTHING;
    ELSE
        UPDATE {calls} SET version = p_expected + 1, record = p_record,
            pending_since = p_since, principal_key = p_principal
            WHERE run_id = p_run AND call_id = p_call AND version = p_expected;
    END IF;
    IF NOT FOUND THEN
        RETURN -1;
    END IF;
    RETURN p_expected + 1;
END;
$$;
"""


class PostgresStore:
    """Runs kept in PostgreSQL, shared by every worker that reaches the database.

    Args:
        conninfo: a ``postgresql://`` URL (or libpq connection string); each event loop gets
            a connection pool of its own, opened on first use.
        ttl: seconds a run is kept after its last write; None keeps runs until deleted.
        prefix: the start of the names of the tables and the function this store makes
            (lower-case letters, digits and ``_``), so several stores may share a database.
        timeout: seconds to wait for a connection (and for the server's answer).
        max_connections: the most connections each pool opens (``?max_connections=N`` in a
            URL given to ``from_url``).

    Connections: one pool per process and event loop. It opens one connection, which the
    store keeps for the operations that come one at a time (most of them); operations at
    the same moment (a turn's calls side by side, a lease renewed while its call writes)
    take more from the pool, up to ``max_connections``, and the pool closes them again
    after ten idle minutes. A worker process running one turn at a time holds 1 or 2; a
    default PostgreSQL server (``max_connections`` 100, 3 of them kept for superusers)
    takes about 45 such workers, or 9 at the default bound of 10 each when every worker is
    busy at once. Set ``max_connections`` so that workers times the bound stay under the server's
    (or put PgBouncer in front, in transaction mode).

    Works on asyncio (psycopg's asynchronous connections), not on trio.
    """

    def __init__(
        self,
        conninfo: str,
        *,
        ttl: float | None = DEFAULT_TTL,
        prefix: str = "toolwire_",
        timeout: float = 5.0,
        max_connections: int = 10,
    ) -> None:
        if ttl is not None and not ttl > 0:
            raise ValueError("ttl must be a positive number of seconds, or None")
        if not _PREFIX.fullmatch(prefix):
            raise ValueError("prefix is lower-case letters, digits and _ (up to 40)")
        if max_connections < 1:
            raise ValueError("max_connections must be at least 1")
        self.conninfo = conninfo
        self.ttl = ttl
        self.prefix = prefix
        self.timeout = timeout
        self.max_connections = max_connections
        self._runs, self._calls = f"{prefix}runs", f"{prefix}calls"
        # One pool per event loop (a connection belongs to the loop that opened it); a program
        # may run several loops, one per sync call. Not weakly keyed: a pool refers to its loop.
        self._pools: dict[asyncio.AbstractEventLoop, AsyncConnectionPool] = {}
        self._kept: dict[AsyncConnectionPool, _Kept] = {}
        self._opening: dict[asyncio.AbstractEventLoop, asyncio.Lock] = {}
        self._writes = 0

    # -- RunStore ------------------------------------------------------------------------------

    async def get(self, run_id: str, call_id: str) -> CallRecord | None:
        rows = await self._fetch(
            f"SELECT c.version, c.record FROM {self._calls} c"
            f" JOIN {self._runs} r ON r.run_id = c.run_id"
            " WHERE c.run_id = %s AND c.call_id = %s"
            " AND (r.expires_at IS NULL OR r.expires_at > %s)",
            (run_id, call_id, time.time()),
        )
        return decode_record(rows[0][1], rows[0][0], call_id=call_id) if rows else None

    async def get_many(self, run_id: str, call_ids: Sequence[str]) -> list[CallRecord | None]:
        return (await self.load(run_id, call_ids))[1]

    async def load(
        self, run_id: str, call_ids: Sequence[str]
    ) -> tuple[str | None, list[CallRecord | None]]:
        rows = await self._fetch(
            f"SELECT r.binding, c.call_id, c.version, c.record FROM {self._runs} r"
            f" LEFT JOIN {self._calls} c ON c.run_id = r.run_id AND c.call_id = ANY(%s)"
            " WHERE r.run_id = %s AND (r.expires_at IS NULL OR r.expires_at > %s)",
            (list(call_ids), run_id, time.time()),
        )
        if not rows:
            return None, [None] * len(call_ids)
        found = {
            call_id: decode_record(record, version, call_id=call_id)
            for _, call_id, version, record in rows
            if call_id is not None
        }
        return rows[0][0], [found.get(call_id) for call_id in call_ids]

    async def records(self, run_id: str) -> list[CallRecord]:
        rows = await self._fetch(
            f"SELECT c.call_id, c.version, c.record FROM {self._calls} c"
            f" JOIN {self._runs} r ON r.run_id = c.run_id"
            " WHERE c.run_id = %s AND (r.expires_at IS NULL OR r.expires_at > %s)",
            (run_id, time.time()),
        )
        return [
            decode_record(record, version, call_id=call_id) for call_id, version, record in rows
        ]

    async def now(self) -> float:
        """The server's time (``clock_timestamp()``), which every worker's leases are judged
        by."""
        rows = await self._fetch("SELECT extract(epoch FROM clock_timestamp())::float8", ())
        return float(rows[0][0])

    async def pending(
        self,
        *,
        run_id: str | None = None,
        principal_key: str | None = None,
        limit: int = 100,
        newest_first: bool = False,
        after: QueuePlace | None = None,
    ) -> list[tuple[str, CallRecord | DamagedRecord]]:
        query, parameters = queue_query(
            "%s",
            run_id,
            principal_key,
            limit,
            newest_first,
            after,
            time.time(),
            calls=self._calls,
            runs=self._runs,
        )
        rows = await self._fetch(query, tuple(parameters))
        return [
            (run, listed_record(run, call_id, record, version, since))
            for run, call_id, version, record, since in rows
        ]

    async def swap(
        self,
        run_id: str,
        expected: CallRecord | None,
        record: CallRecord,
        *,
        binding: str | None = None,
    ) -> CallRecord | None:
        now = time.time()
        since = pending_since(record)
        rows = await self._fetch(
            f"SELECT {self.prefix}swap(%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (
                run_id,
                record.call_id,
                expected.version if expected is not None else 0,
                encode_record(record),
                since[0] if since is not None else None,
                since[1] if since is not None else None,
                binding,
                now,
                now + self.ttl if self.ttl is not None else None,
            ),
        )
        version = int(rows[0][0])
        self._writes += 1
        if self._writes % _PURGE_EVERY == 0:
            await self.purge()
        return record.with_(version=version) if version > 0 else None

    # -- housekeeping ----------------------------------------------------------------------------

    async def purge(self) -> int:
        """Delete the expired runs now (their calls go with them); returns how many."""
        pool = await self._pool()
        with self._reaching():
            async with pool.connection() as connection:
                cursor = await connection.execute(
                    f"DELETE FROM {self._runs} WHERE expires_at <= %s", (time.time(),)
                )
                return cursor.rowcount

    async def delete(self, run_id: str) -> None:
        """Forget a run now."""
        pool = await self._pool()
        with self._reaching():
            async with pool.connection() as connection:
                await connection.execute(f"DELETE FROM {self._runs} WHERE run_id = %s", (run_id,))

    async def aclose(self) -> None:
        """Close the pools this store opened."""
        for pool in list(self._pools.values()):
            kept = self._kept.pop(pool, None)
            if kept is not None:
                await pool.putconn(kept.connection)
            await pool.close()
        self._pools.clear()

    async def __aenter__(self) -> PostgresStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"PostgresStore({without_password(self.conninfo)!r})"

    # -- connections -------------------------------------------------------------------------------

    async def _fetch(self, query: str, parameters: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        pool = await self._pool()
        kept = self._kept.get(pool)
        with self._reaching():
            if kept is not None and not kept.busy:
                # The common case, one operation at a time: the connection kept out of the pool
                # (taking one from the pool and giving it back costs about 30 µs each time).
                kept.busy = True
                try:
                    cursor = await kept.connection.execute(query, parameters)
                    return await cursor.fetchall()
                except BaseException:
                    # Broken, or cut off mid-query: the pool checks it and replaces it.
                    del self._kept[pool]
                    await pool.putconn(kept.connection)
                    raise
                finally:
                    kept.busy = False
            async with pool.connection() as connection:
                cursor = await connection.execute(query, parameters)
                return await cursor.fetchall()

    async def _pool(self) -> AsyncConnectionPool:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # e.g. on trio
            raise ConfigurationError(
                "PostgresStore runs on asyncio (psycopg's asynchronous connections)"
            ) from None
        pool = self._pools.get(loop)
        if pool is not None:
            return pool
        # One opener per loop: the turns that start together would each open a pool of their
        # own (and keep its connections) while the first one is still being opened.
        opening = self._opening.setdefault(loop, asyncio.Lock())
        async with opening:
            pool = self._pools.get(loop)
            if pool is None:
                pool = await self._open_pool(loop)
        self._opening.pop(loop, None)
        return pool

    async def _open_pool(self, loop: asyncio.AbstractEventLoop) -> AsyncConnectionPool:
        for gone in [other for other in self._pools if other.is_closed()]:
            # Its loop ended without aclose(): the pool's tasks ended with it, and dropping it
            # lets its connections be closed as they are collected.
            self._kept.pop(self._pools.pop(gone), None)
        options: dict[str, Any] = {
            "autocommit": True,
            "connect_timeout": max(1, int(self.timeout)),
        }
        with self._reaching():
            # One plain connection first: a server that is down, or refuses the login, is one
            # error after one attempt, not the pool's retries (each one logged) until it gives
            # up. It makes the tables, one creator at a time (CREATE ... IF NOT EXISTS races
            # with itself).
            first = await psycopg.AsyncConnection.connect(self.conninfo, **options)
            try:
                async with first.transaction():
                    await first.execute("SELECT pg_advisory_xact_lock(7270718)")
                    await first.execute(_schema(self.prefix))
            finally:
                await first.close()
        pool = AsyncConnectionPool(
            self.conninfo,
            min_size=1,
            max_size=self.max_connections,
            timeout=self.timeout,
            kwargs=options,
            open=False,
        )
        with self._reaching():
            try:
                await pool.open(wait=True, timeout=self.timeout)
            except BaseException:
                await pool.close()
                raise
        self._pools[loop] = pool
        with self._reaching():
            self._kept[pool] = _Kept(await pool.getconn())
        return pool

    @contextmanager
    def _reaching(self) -> Iterator[None]:
        """Around each use: the driver's and the pool's errors become StoreUnavailable."""
        from psycopg_pool import PoolTimeout

        try:
            yield
        except psycopg.errors.RaiseException as exc:  # raised by the swap function
            if _BINDING_CONFLICT not in str(exc):
                raise StoreUnavailable(f"{self!r}: {_one_line(exc)}") from exc
            raise binding_conflict(None) from None
        except (psycopg.Error, PoolTimeout, OSError) as exc:
            raise StoreUnavailable(f"{self!r} cannot be used: {_one_line(exc)}") from exc


class _Kept:
    """A connection kept out of a pool for operations that come one at a time."""

    __slots__ = ("busy", "connection")

    def __init__(self, connection: psycopg.AsyncConnection[Any]) -> None:
        self.connection = connection
        self.busy = False


def _one_line(exc: BaseException) -> str:
    """The driver's message on one line (libpq adds hints on lines of their own)."""
    return " ".join(str(exc).split())
