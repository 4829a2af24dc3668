"""Runs in Redis, for several workers and machines (extra ``toolwire[redis]``).

One hash per run (``<prefix><run_id>``), one field per call holding ``<version>:<record JSON>``
and the field ``"\\0binding"`` holding the run's binding (ids never hold NUL). Calls waiting for
a decision are listed in one sorted set (``<prefix>\\0pending``), scored by when they were
asked about. The compare-and-swap is a Lua script, so it is atomic on the server whatever the
number of clients; the run's expiry is renewed on every write.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from toolwire._json import load_json
from toolwire.errors import ConfigurationError, MissingDependency, StoreUnavailable
from toolwire.runs.store._base import (
    DEFAULT_TTL,
    CallRecord,
    DamagedRecord,
    QueuePlace,
    binding_conflict,
    decode_record,
    encode_record,
    pending_since,
    without_password,
)

try:
    import redis.asyncio as aioredis
    from redis.exceptions import RedisError
except ImportError:  # pragma: no cover - exercised without the extra
    raise MissingDependency("redis", "redis") from None

if TYPE_CHECKING:
    from redis.commands.core import AsyncScript

__all__ = ["RedisStore"]

# KEYS[1] the run's hash, KEYS[2] the pending index; ARGV: call id, expected version, record
# JSON, ttl in ms ("" for none), binding ("" for none), the binding's field, the pending score
# ("" when the call waits for nothing), the call's member in the index.
_SWAP = """
local current = redis.call('HGET', KEYS[1], ARGV[1])
local version = 0
if current then
    version = tonumber(string.sub(current, 1, string.find(current, ':', 1, true) - 1))
end
if version ~= tonumber(ARGV[2]) then
    return -1
end
if ARGV[5] ~= '' then
    local bound = redis.call('HGET', KEYS[1], ARGV[6])
    if bound and bound ~= ARGV[5] then
        return -2
    end
    if not bound then
        redis.call('HSET', KEYS[1], ARGV[6], ARGV[5])
    end
end
redis.call('HSET', KEYS[1], ARGV[1], (version + 1) .. ':' .. ARGV[3])
if ARGV[4] ~= '' then
    redis.call('PEXPIRE', KEYS[1], ARGV[4])
end
if ARGV[7] ~= '' then
    redis.call('ZADD', KEYS[2], ARGV[7], ARGV[8])
else
    redis.call('ZREM', KEYS[2], ARGV[8])
end
return version + 1
"""
_BINDING = "\0binding"
"""The run hash's field holding its binding (no call id holds NUL)."""


class RedisStore:
    """Runs kept in Redis, shared by every worker that reaches the server.

    Args:
        client: a ``redis://`` URL, or a ``redis.asyncio.Redis`` client of your own (used
            as is; it belongs to the event loop it was first used on).
        ttl: seconds a run is kept after its last write; None keeps runs until deleted.
        prefix: the start of every key this store writes.
        timeout: seconds to wait for the server (connecting and answering) when ``client`` is
            a URL.

    Works on asyncio (the ``redis`` client's own event loop library), not on trio.
    """

    def __init__(
        self,
        client: str | aioredis.Redis = "redis://127.0.0.1:6379/0",
        *,
        ttl: float | None = DEFAULT_TTL,
        prefix: str = "toolwire:run:",
        timeout: float = 5.0,
    ) -> None:
        if ttl is not None and not ttl > 0:
            raise ValueError("ttl must be a positive number of seconds, or None")
        self.ttl = ttl
        self.prefix = prefix
        self.timeout = timeout
        self._url = client if isinstance(client, str) else None
        self._client = None if isinstance(client, str) else client
        # A URL gets one client per event loop: a redis client's connections belong to the
        # loop that opened them, and a program may run several loops (one per sync call).
        self._per_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, aioredis.Redis]
        self._per_loop = weakref.WeakKeyDictionary()
        self._scripts: weakref.WeakKeyDictionary[aioredis.Redis, AsyncScript]
        self._scripts = weakref.WeakKeyDictionary()

    # -- RunStore ------------------------------------------------------------------------------

    async def get(self, run_id: str, call_id: str) -> CallRecord | None:
        with self._reaching():
            value = await self._connection().hget(self.prefix + run_id, call_id)
        return _decoded(value, call_id)

    async def get_many(self, run_id: str, call_ids: Sequence[str]) -> list[CallRecord | None]:
        if not call_ids:
            return []
        with self._reaching():
            values = await self._connection().hmget(self.prefix + run_id, list(call_ids))
        return [_decoded(value, call_id) for call_id, value in zip(call_ids, values, strict=True)]

    async def load(
        self, run_id: str, call_ids: Sequence[str]
    ) -> tuple[str | None, list[CallRecord | None]]:
        with self._reaching():
            values = await self._connection().hmget(self.prefix + run_id, [_BINDING, *call_ids])
        binding = values[0]
        if isinstance(binding, bytes):
            binding = binding.decode("utf-8", "replace")  # compared, never trusted
        records = [
            _decoded(value, call_id) for call_id, value in zip(call_ids, values[1:], strict=True)
        ]
        return binding, records

    async def records(self, run_id: str) -> list[CallRecord]:
        with self._reaching():
            values = await self._connection().hgetall(self.prefix + run_id)
        return [
            record
            for field, value in values.items()
            if field not in (_BINDING, _BINDING.encode())
            and (record := _decoded(value, _text(field))) is not None
        ]

    async def now(self) -> float:
        """The server's time (``TIME``), which every worker's leases are judged by."""
        with self._reaching():
            seconds, micros = await self._connection().time()
        return float(seconds) + float(micros) / 1_000_000

    async def pending(
        self,
        *,
        run_id: str | None = None,
        principal_key: str | None = None,
        limit: int = 100,
        newest_first: bool = False,
        after: QueuePlace | None = None,
    ) -> list[tuple[str, CallRecord | DamagedRecord]]:
        if run_id is not None:  # one run: its own hash is the smaller index
            return await self._pending_of(run_id, principal_key, limit, newest_first, after)
        client = self._connection()
        # The index orders members by score (when put up), then by their bytes; a page starts
        # at the place after's score and skips what is at or before after's member there.
        mark = json.dumps([after.run_id, after.call_id]) if after is not None else None
        edge: Any = after.since if after is not None else ("+inf" if newest_first else "-inf")
        far = "-inf" if newest_first else "+inf"
        found: list[tuple[str, CallRecord | DamagedRecord]] = []
        offset = 0
        while len(found) < limit:
            # Without a principal to filter by, nearly every member is listed: read what the
            # page lacks (and one more, for the place it starts after); with one, read ahead.
            wanted = limit - len(found)
            page = wanted + 1 if principal_key is None else max(wanted * 2, 64)
            with self._reaching():
                members: list[Any] = await client.zrange(
                    self._pending_key,
                    edge,
                    far,
                    desc=newest_first,
                    byscore=True,
                    offset=offset,
                    num=page,
                    withscores=True,
                )
            if not members:
                break
            offset += len(members)
            gone: list[Any] = []
            listed: list[tuple[Any, float, tuple[str, str]]] = []
            for member, score in members:
                if mark is not None and score == edge:
                    text = _text(member)
                    if text >= mark if newest_first else text <= mark:
                        continue  # at or before the place the page starts after
                key = _index_key(member)
                if key is None:
                    gone.append(member)
                else:
                    listed.append((member, score, key))
            with self._reaching():
                async with client.pipeline(transaction=False) as pipe:
                    for _, _, (run, call_id) in listed:
                        pipe.hget(self.prefix + run, call_id)
                    values = await pipe.execute()
            for (member, score, (run, call_id)), value in zip(listed, values, strict=True):
                try:
                    record = _decoded(value, call_id)
                except StoreUnavailable as exc:
                    # Whose it is cannot be read: listed only when no principal is asked for.
                    if principal_key is None:
                        found.append((run, DamagedRecord(run, call_id, str(exc), score)))
                    continue
                since = pending_since(record) if record is not None else None
                if record is None or since is None:
                    gone.append(member)  # its run expired (or was deleted)
                    continue
                if principal_key is None or since[1] == principal_key:
                    found.append((run, record))
                    if len(found) >= limit:
                        break
            if gone:
                with self._reaching():
                    await client.zrem(self._pending_key, *gone)
                offset -= len(gone)
        return found

    async def _pending_of(
        self,
        run_id: str,
        principal_key: str | None,
        limit: int,
        newest_first: bool,
        after: QueuePlace | None,
    ) -> list[tuple[str, CallRecord | DamagedRecord]]:
        client = self._connection()
        with self._reaching():
            values = await client.hgetall(self.prefix + run_id)
        waiting: list[tuple[float, str, CallRecord | DamagedRecord]] = []
        for field, value in values.items():
            call_id = _text(field)
            if call_id == _BINDING:
                continue
            try:
                record = _decoded(value, call_id)
            except StoreUnavailable as exc:
                # Listed when the index has it, and no principal (which cannot be read) is asked.
                member = json.dumps([run_id, call_id])
                with self._reaching():
                    since = await client.zscore(self._pending_key, member)
                if since is not None and principal_key is None:
                    damaged = DamagedRecord(run_id, call_id, str(exc), since)
                    waiting.append((since, call_id, damaged))
                continue
            listed = pending_since(record) if record is not None else None
            if (
                record is not None
                and listed is not None
                and (principal_key is None or listed[1] == principal_key)
            ):
                waiting.append((listed[0], call_id, record))
        waiting.sort(key=lambda entry: entry[:2], reverse=newest_first)
        if after is not None:
            place = (after.since, after.call_id)
            waiting = [w for w in waiting if (w[:2] < place if newest_first else w[:2] > place)]
        return [(run_id, record) for _, _, record in waiting[:limit]]

    async def swap(
        self,
        run_id: str,
        expected: CallRecord | None,
        record: CallRecord,
        *,
        binding: str | None = None,
    ) -> CallRecord | None:
        client = self._connection()
        script = self._scripts.get(client)
        if script is None:
            script = self._scripts[client] = client.register_script(_SWAP)
        ttl_ms = str(max(1, int(self.ttl * 1000))) if self.ttl is not None else ""
        expected_version = expected.version if expected is not None else 0
        since = pending_since(record)
        with self._reaching():
            version = int(
                await script(
                    keys=[self.prefix + run_id, self._pending_key],
                    args=[
                        record.call_id,
                        expected_version,
                        encode_record(record),
                        ttl_ms,
                        binding or "",
                        _BINDING,
                        repr(since[0]) if since is not None else "",
                        json.dumps([run_id, record.call_id]),
                    ],
                )
            )
        if version == -2:
            raise binding_conflict(run_id)
        return record.with_(version=version) if version > 0 else None

    @property
    def _pending_key(self) -> str:
        return self.prefix + "\0pending"

    # -- housekeeping ----------------------------------------------------------------------------

    async def delete(self, run_id: str) -> None:
        """Forget a run now."""
        with self._reaching():
            await self._connection().delete(self.prefix + run_id)

    async def aclose(self) -> None:
        """Close the clients this store opened (a client passed in is the caller's to close)."""
        for client in list(self._per_loop.values()):
            await client.aclose()
        self._per_loop.clear()

    async def __aenter__(self) -> RedisStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        # Errors name the store by its repr: never with the URL's password.
        return f"RedisStore({without_password(self._url) if self._url else self._client!r})"

    def _connection(self) -> aioredis.Redis:
        if self._client is not None:
            return self._client
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # e.g. on trio
            raise ConfigurationError(
                "RedisStore runs on asyncio (the redis client's own event loop)"
            ) from None
        client = self._per_loop.get(loop)
        if client is None:
            assert self._url is not None
            options: dict[str, Any] = {
                "socket_connect_timeout": self.timeout,
                "socket_timeout": self.timeout,
            }
            client = self._per_loop[loop] = aioredis.Redis.from_url(self._url, **options)
        return client

    @contextmanager
    def _reaching(self) -> Iterator[None]:
        """Around each command: the client's connection errors become StoreUnavailable."""
        try:
            yield
        except (RedisError, OSError) as exc:
            message = " ".join(str(exc).split())  # one line, whatever the client says
            raise StoreUnavailable(f"{self!r} cannot be reached: {message}") from exc


def _index_key(member: bytes | str) -> tuple[str, str] | None:
    """The (run id, call id) a pending-index member names; None for one this store did not
    write (it is dropped from the index)."""
    found = load_json(member)
    if not isinstance(found, list) or len(found) != 2:
        return None
    run, call_id = found
    if not (isinstance(run, str) and isinstance(call_id, str)):
        return None
    return run, call_id


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _decoded(value: bytes | str | None, call_id: str) -> CallRecord | None:
    if value is None:
        return None
    try:
        text = value.decode() if isinstance(value, bytes) else value  # per decode_responses
    except UnicodeDecodeError as exc:  # written by something else, or damaged
        raise StoreUnavailable(
            f"the stored record of call {call_id!r} is not UTF-8 text: {exc}"
        ) from exc
    version, _, encoded = text.partition(":")
    if not (version.isascii() and version.isdigit()):
        raise StoreUnavailable(
            f"the stored record of call {call_id!r} cannot be read: {text[:80]!r}"
        )
    return decode_record(encoded, int(version), call_id=call_id)
