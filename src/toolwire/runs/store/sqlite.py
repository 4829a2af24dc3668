"""The durable default: runs in one SQLite file, shared by every process on the machine."""

from __future__ import annotations

import json
import os
import random
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from functools import partial
from pathlib import Path
from typing import Literal, TypeVar

import anyio.to_thread

from toolwire.errors import ConfigurationError, StoreUnavailable
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
)

__all__ = ["SQLiteStore"]

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS toolwire_runs (
    run_id TEXT PRIMARY KEY,
    expires_at REAL
);
CREATE INDEX IF NOT EXISTS toolwire_runs_expiry ON toolwire_runs (expires_at);
CREATE TABLE IF NOT EXISTS toolwire_calls (
    run_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (run_id, call_id)
);
"""
# Columns added after the first release, to files made before it.
_ADDED_COLUMNS = {
    "toolwire_runs": {"binding": "TEXT"},
    "toolwire_calls": {"pending_since": "REAL", "principal_key": "TEXT"},
}
_PENDING_INDEX = """
DROP INDEX IF EXISTS toolwire_calls_pending;
CREATE INDEX IF NOT EXISTS toolwire_calls_queue
    ON toolwire_calls (pending_since, run_id, call_id) WHERE pending_since IS NOT NULL;
CREATE INDEX IF NOT EXISTS toolwire_calls_queue_of
    ON toolwire_calls (principal_key, pending_since, run_id, call_id)
    WHERE pending_since IS NOT NULL;
"""
# The approval queue: the waiting calls in (since, run, call) order, one principal's too, so a
# page anywhere in the queue is one index range (keyset pagination).
BACKOFF_FIRST = 0.05
"""Seconds of the first pause between two attempts of an operation that met a lock."""
BACKOFF_MOST = 2.0
"""Seconds a pause between two attempts grows to at most."""
_PURGE_EVERY = 256
"""Writes between two sweeps of expired runs (reads ignore them meanwhile)."""


class SQLiteStore:
    """Runs kept in a SQLite database file (WAL mode), safe to share between the processes of
    one machine: each write is one short ``BEGIN IMMEDIATE`` transaction.

    Reads and writes run inline when the database is free, which is nearly always (in WAL mode
    readers never wait for a writer, and a write holds the lock for well under a millisecond);
    when another process holds the write lock, the operation waits for it in a worker thread,
    so the event loop goes on.

    Args:
        path: the database file (created with its tables when missing, unless ``create`` is
            False).
        ttl: seconds a run is kept after its last write; None keeps runs until deleted.
        busy_timeout: seconds one attempt waits for another process's write (SQLite's own
            busy wait).
        busy_retries: attempts after the first, each after a pause that doubles (from
            ``BACKOFF_FIRST``, at most ``BACKOFF_MOST`` seconds, jittered) so that writers
            that keep meeting each other spread out, before the operation gives up with
            [`StoreUnavailable`][toolwire.errors.StoreUnavailable]. The longest an operation
            waits is about ``(busy_retries + 1) * busy_timeout`` plus the pauses. A call's
            answer that still cannot be stored is kept in the turn's outcomes and logged,
            and the call is never run again (a resume finds it interrupted).
        synchronous: SQLite's ``synchronous`` setting. ``"NORMAL"`` (the default, with WAL)
            survives a crash of any process; ``"FULL"`` also survives a power cut, at the cost
            of a disk sync on every write, made on the event loop's thread.
        create: False opens only a run store that is already there: a file that does not
            exist, or holds no run store's tables, is ``StoreUnavailable`` and nothing is
            created. For what only looks at runs made elsewhere (listing the calls waiting
            for a decision, deciding one): a mistyped path is an error, not an empty store.

    Raises:
        ConfigurationError: ``path`` is a URL (``sqlite:///runs.db``: give it to
            [`from_url`][toolwire.store.from_url]) or holds a URL query (``runs.db?ttl=60``:
            options are arguments here).
        StoreUnavailable: the file cannot be opened or is not a SQLite database; with
            ``create=False``, also when it does not exist or holds no run store.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        ttl: float | None = DEFAULT_TTL,
        busy_timeout: float = 5.0,
        busy_retries: int = 4,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
        create: bool = True,
    ) -> None:
        if ttl is not None and not ttl > 0:
            raise ValueError("ttl must be a positive number of seconds, or None")
        if not isinstance(busy_retries, int) or busy_retries < 0:
            raise ValueError(f"busy_retries is a whole number of attempts, not {busy_retries!r}")
        if synchronous not in ("FULL", "NORMAL"):
            raise ValueError(f"synchronous is 'NORMAL' or 'FULL', not {synchronous!r}")
        _refuse_a_url(os.fspath(path))
        self.path = Path(path)
        self.ttl = ttl
        self.busy_timeout = busy_timeout
        self.busy_retries = busy_retries
        self.synchronous = synchronous
        self.create = create
        self._writes = 0
        if not create and not self.path.is_file():
            raise StoreUnavailable(f"{self!r}: no such database file (nothing was created)")
        self._open()

    # -- RunStore ------------------------------------------------------------------------------

    async def get(self, run_id: str, call_id: str) -> CallRecord | None:
        return await self._run(partial(self._get, run_id, call_id))

    async def get_many(self, run_id: str, call_ids: Sequence[str]) -> list[CallRecord | None]:
        found = await self._run(partial(self._get_many, run_id, list(call_ids)))
        return [found.get(call_id) for call_id in call_ids]

    async def load(
        self, run_id: str, call_ids: Sequence[str]
    ) -> tuple[str | None, list[CallRecord | None]]:
        binding, found = await self._run(partial(self._load, run_id, list(call_ids)))
        return binding, [found.get(call_id) for call_id in call_ids]

    async def records(self, run_id: str) -> list[CallRecord]:
        return await self._run(partial(self._records, run_id))

    async def now(self) -> float:
        """The store's time: the host's clock (every process of a SQLite file shares one
        host)."""
        return time.time()

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
            "?", run_id, principal_key, limit, newest_first, after, time.time()
        )
        return await self._run(partial(self._pending, query, parameters))

    async def swap(
        self,
        run_id: str,
        expected: CallRecord | None,
        record: CallRecord,
        *,
        binding: str | None = None,
    ) -> CallRecord | None:
        expected_version = expected.version if expected is not None else 0
        version = await self._run(
            partial(
                self._swap,
                run_id,
                record.call_id,
                expected_version,
                encode_record(record),
                pending_since(record),
                binding,
            )
        )
        return record.with_(version=version) if version is not None else None

    # -- housekeeping ----------------------------------------------------------------------------

    async def purge(self) -> int:
        """Delete the expired runs now; returns how many there were."""
        return await self._run(self._purge)

    def close(self) -> None:
        for connection in (self._inline, self._waiting):
            with connection.lock:
                connection.db.close()

    async def __aenter__(self) -> SQLiteStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self.path)!r})"

    # -- the work, on a connection -------------------------------------------------------------

    async def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        if os.getpid() != self._pid:  # a forked child must not share its parent's handles
            self._open()
        try:
            with self._inline.lock:
                return work(self._inline.db)
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF not in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                raise StoreUnavailable(f"{self!r}: {exc}") from exc
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"{self!r}: {exc}") from exc
        # Another process holds the lock: wait for it off the event loop.
        return await anyio.to_thread.run_sync(partial(self._wait_and_run, work))

    def _wait_and_run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """``work`` on the connection that waits for the lock, tried again after a growing,
        jittered pause while another process keeps the lock (up to ``busy_retries``)."""
        pause = BACKOFF_FIRST
        for attempt in range(self.busy_retries + 1):
            try:
                with self._waiting.lock:
                    return work(self._waiting.db)
            except sqlite3.OperationalError as exc:
                busy = exc.sqlite_errorcode & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
                if not busy or attempt == self.busy_retries:
                    tries = f" (after {attempt + 1} attempt{'s' if attempt else ''})"
                    tries = tries if busy else ""
                    raise StoreUnavailable(f"{self!r}: {exc}{tries}") from exc
            except sqlite3.Error as exc:
                raise StoreUnavailable(f"{self!r}: {exc}") from exc
            time.sleep(pause * random.uniform(0.5, 1.0))  # on a worker thread, not the loop
            pause = min(pause * 2, BACKOFF_MOST)
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _get(self, run_id: str, call_id: str, db: sqlite3.Connection) -> CallRecord | None:
        row = db.execute(
            "SELECT c.version, c.record FROM toolwire_calls c"
            " JOIN toolwire_runs r ON r.run_id = c.run_id"
            " WHERE c.run_id = ? AND c.call_id = ?"
            " AND (r.expires_at IS NULL OR r.expires_at > ?)",
            (run_id, call_id, time.time()),
        ).fetchone()
        return decode_record(row[1], row[0], call_id=call_id) if row is not None else None

    def _get_many(
        self, run_id: str, call_ids: list[str], db: sqlite3.Connection
    ) -> dict[str, CallRecord]:
        rows = db.execute(
            "SELECT c.call_id, c.version, c.record FROM toolwire_calls c"
            " JOIN toolwire_runs r ON r.run_id = c.run_id"
            " WHERE c.run_id = ? AND c.call_id IN (SELECT value FROM json_each(?))"
            " AND (r.expires_at IS NULL OR r.expires_at > ?)",
            (run_id, json.dumps(call_ids), time.time()),
        ).fetchall()
        return {
            call_id: decode_record(encoded, version, call_id=call_id)
            for call_id, version, encoded in rows
        }

    def _load(
        self, run_id: str, call_ids: list[str], db: sqlite3.Connection
    ) -> tuple[str | None, dict[str, CallRecord]]:
        run = db.execute(
            "SELECT binding FROM toolwire_runs WHERE run_id = ?"
            " AND (expires_at IS NULL OR expires_at > ?)",
            (run_id, time.time()),
        ).fetchone()
        if run is None:
            return None, {}
        return run[0], self._get_many(run_id, call_ids, db)

    def _records(self, run_id: str, db: sqlite3.Connection) -> list[CallRecord]:
        rows = db.execute(
            "SELECT c.call_id, c.version, c.record FROM toolwire_calls c"
            " JOIN toolwire_runs r ON r.run_id = c.run_id"
            " WHERE c.run_id = ? AND (r.expires_at IS NULL OR r.expires_at > ?)",
            (run_id, time.time()),
        ).fetchall()
        return [
            decode_record(encoded, version, call_id=call_id) for call_id, version, encoded in rows
        ]

    def _pending(
        self, query: str, parameters: list[object], db: sqlite3.Connection
    ) -> list[tuple[str, CallRecord | DamagedRecord]]:
        rows = db.execute(query, parameters).fetchall()
        return [
            (run, listed_record(run, call_id, encoded, version, since))
            for run, call_id, version, encoded, since in rows
        ]

    def _swap(
        self,
        run_id: str,
        call_id: str,
        expected: int,
        encoded: str,
        pending: tuple[float, str] | None,
        binding: str | None,
        db: sqlite3.Connection,
    ) -> int | None:
        now = time.time()
        with _transaction(db):
            run = db.execute(
                "SELECT expires_at, binding FROM toolwire_runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            if run is not None and run[0] is not None and run[0] <= now:
                _delete_runs(db, "run_id = ?", (run_id,))
                run = None
            row = db.execute(
                "SELECT version FROM toolwire_calls WHERE run_id = ? AND call_id = ?",
                (run_id, call_id),
            ).fetchone()
            if (row[0] if row is not None else 0) != expected:
                return None
            if run is not None and binding is not None and run[1] not in (None, binding):
                raise binding_conflict(run_id)
            since, principal_key = pending if pending is not None else (None, None)
            db.execute(
                "INSERT INTO toolwire_calls"
                " (run_id, call_id, version, record, pending_since, principal_key)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, call_id)"
                " DO UPDATE SET version = excluded.version, record = excluded.record,"
                " pending_since = excluded.pending_since, principal_key = excluded.principal_key",
                (run_id, call_id, expected + 1, encoded, since, principal_key),
            )
            db.execute(
                "INSERT INTO toolwire_runs (run_id, expires_at, binding) VALUES (?, ?, ?)"
                " ON CONFLICT (run_id) DO UPDATE SET expires_at = excluded.expires_at,"
                " binding = coalesce(toolwire_runs.binding, excluded.binding)",
                (run_id, now + self.ttl if self.ttl is not None else None, binding),
            )
            self._writes += 1
            if self._writes % _PURGE_EVERY == 0:
                _delete_runs(db, "expires_at <= ?", (now,))
        return expected + 1

    def _purge(self, db: sqlite3.Connection) -> int:
        with _transaction(db):
            return _delete_runs(db, "expires_at <= ?", (time.time(),))

    # -- the connections ---------------------------------------------------------------------------

    def _open(self) -> None:
        self._pid = os.getpid()
        self._inline = _Connection(self._connect(busy_timeout=0, setup=True))  # busy → thread
        self._waiting = _Connection(self._connect(busy_timeout=self.busy_timeout))

    def _connect(self, *, busy_timeout: float, setup: bool = False) -> sqlite3.Connection:
        """A connection; with ``setup``, also WAL mode and the tables (both are kept in the
        file, so one connection per process is enough)."""
        # Without `create`, SQLite's own read-write mode: a file gone since is never made anew.
        target = self.path if self.create else f"{self.path.absolute().as_uri()}?mode=rw"
        try:
            db = sqlite3.connect(
                target,
                timeout=self.busy_timeout,  # setting up may wait for other processes
                isolation_level=None,  # autocommit; writes open their own transactions
                check_same_thread=False,
                uri=not self.create,
            )
            if setup and not self.create and not _holds_a_run_store(db):
                db.close()
                raise StoreUnavailable(f"{self!r} holds no run store (nothing was created)")
            if setup:
                db.execute("PRAGMA journal_mode=WAL")
                if self.create:
                    db.executescript(_SCHEMA)
                _add_columns(db)
            db.execute(f"PRAGMA synchronous={self.synchronous}")  # per connection
            db.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"{self!r} cannot be opened: {exc}") from exc
        return db


_URL = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.-]+:/|file:)")
"""A URL's start (``sqlite://``, ``file:``); a drive letter (``C:/``) is a path's."""
_QUERY = re.compile(r"\?[A-Za-z_][\w.-]*=")
"""A URL query in a file name (``runs.db?ttl=60``); a lone ``?`` (``what?.db``) is a name's."""


def _refuse_a_url(path: str) -> None:
    """Refuse a URL given as a path, and a path carrying a URL's options: either would name
    a file of that literal name and drop the options. The message repeats no more of the URL
    than its scheme, nor a query's values (a URL may hold a password).

    Raises:
        ConfigurationError: naming what to write instead.
    """
    if _URL.match(path):
        scheme = path.partition(":")[0][:20]
        raise ConfigurationError(
            f"SQLiteStore takes a file path, not a URL ({scheme}:...): give the path "
            f"(SQLiteStore({_path_of(path)!r})), or the URL to toolwire.store.from_url"
        )
    name = path.replace("\\", "/").rpartition("/")[2]
    query = _QUERY.search(name)
    if query is not None:
        at = len(path) - len(name) + query.start()
        file, keys = path[:at][:200], _keys(path[at + 1 :])
        raise ConfigurationError(
            f"SQLiteStore's path {file!r} is followed by a URL query ({keys}): options are "
            f"arguments here (SQLiteStore({file!r}, ttl=...)), or give the URL to "
            f"toolwire.store.from_url ('sqlite:///{file}?{keys}')"
        )


def _keys(query: str) -> str:
    """A query's keys, without their values: ``ttl=...&mode=...``."""
    keys = [part.partition("=")[0][:40] for part in query.split("&")[:5]]
    return "&".join(f"{key}=..." for key in keys)


def _path_of(url: str) -> str:
    """The file a ``sqlite:///path`` URL names (as [`from_url`][toolwire.store.from_url] reads
    it), or an example for a URL of another kind."""
    scheme, _, rest = url.partition("://")
    target = rest.partition("?")[0]
    if scheme.lower() == "sqlite" and target.startswith("/") and target != "/":
        return target[1:201]
    return "runs.db"


def _holds_a_run_store(db: sqlite3.Connection) -> bool:
    """Whether the database has the tables of a run store."""
    tables = {"toolwire_runs", "toolwire_calls"}
    found = db.execute(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN (?, ?)",
        tuple(sorted(tables)),
    ).fetchone()
    return bool(found[0] == len(tables))


def _add_columns(db: sqlite3.Connection) -> None:
    """Bring a file made by an earlier release up to date (columns are only ever added)."""
    for table, columns in _ADDED_COLUMNS.items():
        have = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        for name, kind in columns.items():
            if name not in have:
                with suppress(sqlite3.OperationalError):  # another process added it meanwhile
                    db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")
    db.executescript(_PENDING_INDEX)


class _Connection:
    """A connection and the lock that makes its users take turns."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.lock = threading.Lock()


@contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    db.execute("BEGIN IMMEDIATE")  # take the write lock now: reads then writes see one state
    try:
        yield
    except BaseException:
        with suppress(sqlite3.Error):  # the error that got here is the one to report
            db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _delete_runs(db: sqlite3.Connection, where: str, parameters: tuple[object, ...]) -> int:
    expired = f"SELECT run_id FROM toolwire_runs WHERE {where}"
    db.execute(f"DELETE FROM toolwire_calls WHERE run_id IN ({expired})", parameters)
    return db.execute(f"DELETE FROM toolwire_runs WHERE {where}", parameters).rowcount
