"""The store interface (what every run store implements), with the record it keeps and its
JSON form (from ``toolwire.runs._record`` and ``_record_json``) for the stores' use."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from toolwire.errors import RunBindingConflict
from toolwire.runs._record import ANSWERED, CallRecord, CallState, pending_since
from toolwire.runs._record_json import (
    DamagedRecord,
    QueuePlace,
    decode_record,
    encode_record,
    listed_record,
    place_of,
)

__all__ = [
    "ANSWERED",
    "DEFAULT_TTL",
    "CallRecord",
    "CallState",
    "DamagedRecord",
    "QueuePlace",
    "RunStore",
    "binding_conflict",
    "decode_record",
    "encode_record",
    "listed_record",
    "pending_since",
    "place_of",
    "queue_query",
    "without_password",
]

DEFAULT_TTL = 7 * 24 * 3600.0
"""Seconds a durable store keeps a run after its last write (a week: long enough for a human
to answer an approval request, short enough that runs don't pile up)."""


@runtime_checkable
class RunStore(Protocol):
    """The store interface; implementations must be safe to share between tasks.

    Durable implementations are shared between processes too: ``swap`` is atomic across every
    process using the same database. A store may also tell its own time (``async def now() ->
    float``, seconds since the epoch), which every worker then judges leases and approval
    deadlines by; toolwire's stores all do (see ``toolwire.runs.store._clock``).
    """

    async def get(self, run_id: str, call_id: str) -> CallRecord | None:
        """The record of ``call_id`` in ``run_id``, if any (expired runs have none)."""
        ...

    async def get_many(self, run_id: str, call_ids: Sequence[str]) -> list[CallRecord | None]:
        """The records of several calls of ``run_id`` at once (one round trip), in order."""
        ...

    async def swap(
        self,
        run_id: str,
        expected: CallRecord | None,
        record: CallRecord,
        *,
        binding: str | None = None,
    ) -> CallRecord | None:
        """Store ``record`` if the call's record is still ``expected`` (None: there is none).

        Compares versions, not contents. Returns the stored record (its ``version`` one more
        than ``expected``'s), or None when another writer got there first: read it again.

        ``binding`` (what the run is for: its principal and its calls) is kept with the run by
        its first write that gives one; a later write giving another is refused. A record in
        state ``pending`` is listed by [`pending`][] until it leaves that state.

        Raises:
            RunBindingConflict: the run is bound to another principal or other calls.
            StoreUnavailable: the store cannot be reached.
        """
        ...

    async def load(
        self, run_id: str, call_ids: Sequence[str]
    ) -> tuple[str | None, list[CallRecord | None]]:
        """The run's binding (None before its first bound write) and the records of
        ``call_ids``, in order, in one round trip."""
        ...

    async def records(self, run_id: str) -> list[CallRecord]:
        """Every record of the run (its calls' trail)."""
        ...

    async def pending(
        self,
        *,
        run_id: str | None = None,
        principal_key: str | None = None,
        limit: int = 100,
        newest_first: bool = False,
        after: QueuePlace | None = None,
    ) -> list[tuple[str, CallRecord | DamagedRecord]]:
        """Calls waiting for a decision, as ``(run_id, record)``, oldest request first (newest
        first with ``newest_first``), from an index (never a scan of every run); only those of
        ``run_id`` and of the principal whose key is ``principal_key`` when given; only those
        that come after the place ``after`` in that order (the next page: keyset pagination,
        as fast deep in the queue as at its head). A record that cannot be read is listed as a
        [`DamagedRecord`][] rather than failing the whole list."""
        ...


def queue_query(
    mark: str,
    run_id: str | None,
    principal_key: str | None,
    limit: int,
    newest_first: bool,
    after: QueuePlace | None,
    now: float,
    *,
    calls: str = "toolwire_calls",
    runs: str = "toolwire_runs",
) -> tuple[str, list[object]]:
    """The SQL of one page of the approval queue (SQLite and PostgreSQL alike, ``mark`` their
    parameter mark): the waiting calls of live runs in (since, run, call) order, or the
    reverse, after ``after``; each condition written only when given, so the page is one range
    of the queue's index."""
    where = ["c.pending_since IS NOT NULL", "(r.expires_at IS NULL OR r.expires_at > {m})"]
    parameters: list[object] = [now]
    if run_id is not None:
        where.append("c.run_id = {m}")
        parameters.append(run_id)
    if principal_key is not None:
        where.append("c.principal_key = {m}")
        parameters.append(principal_key)
    if after is not None:
        where.append(
            f"(c.pending_since, c.run_id, c.call_id) {'<' if newest_first else '>'} "
            "({m}, {m}, {m})"
        )
        parameters += [after.since, after.run_id, after.call_id]
    order = " DESC" if newest_first else ""
    query = (
        "SELECT c.run_id, c.call_id, c.version, c.record, c.pending_since"
        f" FROM {calls} c JOIN {runs} r ON r.run_id = c.run_id"
        f" WHERE {' AND '.join(where)}"
        f" ORDER BY c.pending_since{order}, c.run_id{order}, c.call_id{order} LIMIT {{m}}"
    )
    return query.replace("{m}", mark), [*parameters, limit]


def binding_conflict(run_id: str | None) -> RunBindingConflict:
    """What a store raises when a bound write gives another binding than the run's."""
    run = f"run {run_id!r}" if run_id is not None else "the run"
    return RunBindingConflict(
        f"{run} was started for another principal or another model response; use a new run "
        "id per model response"
    )


_USERINFO_PASSWORD = re.compile(r"(://[^:/@]*:)[^@]*@")
_PASSWORD_SETTING = re.compile(
    r"(?i)(^|[?&;\s])((?:ssl)?password|passwd|pass)=('(?:[^'\\]|\\.)*'|[^&;\s]*)"
)


def without_password(url: str) -> str:
    """A store's URL (or PostgreSQL connection string) as errors and logs may show it: the
    password of its user part and any ``password=`` setting (in its query, or a
    ``key=value`` connection string's) replaced by ``***``."""
    shown = _USERINFO_PASSWORD.sub(r"\1***@", url)
    return _PASSWORD_SETTING.sub(r"\1\2=***", shown)
