"""Runs in Redis, for several workers and machines (extra ``toolwire[redis]``).

One hash per run (``<prefix><run_id>``), one field per call holding ``<version>:<record JSON>``.
The compare-and-swap is a Lua script, so it is atomic on the server whatever the number of
clients; the run's expiry is renewed on every write.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from toolwire.errors import ConfigurationError, MissingDependency, StoreUnavailable
from toolwire.store._base import DEFAULT_TTL, CallRecord, decode_record, encode_record

try:
    import redis.asyncio as aioredis
    from redis.exceptions import RedisError
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise MissingDependency("redis", "redis") from exc

if TYPE_CHECKING:
    from redis.commands.core import AsyncScript

__all__ = ["RedisStore"]

# KEYS[1] the run's hash; ARGV: call id, expected version, record JSON, ttl in ms ("" for none).
_SWAP = """
local current = redis.call('HGET', KEYS[1], ARGV[1])
local version = 0
if current then
    version = tonumber(string.sub(current, 1, string.find(current, ':', 1, true) - 1))
end
if version ~= tonumber(ARGV[2]) then
    return -1
end
redis.call('HSET', KEYS[1], ARGV[1], (version + 1) .. ':' .. ARGV[3])
if ARGV[4] ~= '' then
    redis.call('PEXPIRE', KEYS[1], ARGV[4])
end
return version + 1
"""


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
        return _decoded(value)

    async def get_many(self, run_id: str, call_ids: Sequence[str]) -> list[CallRecord | None]:
        if not call_ids:
            return []
        with self._reaching():
            values = await self._connection().hmget(self.prefix + run_id, list(call_ids))
        return [_decoded(value) for value in values]

    async def swap(
        self, run_id: str, expected: CallRecord | None, record: CallRecord
    ) -> CallRecord | None:
        client = self._connection()
        script = self._scripts.get(client)
        if script is None:
            script = self._scripts[client] = client.register_script(_SWAP)
        ttl_ms = str(max(1, int(self.ttl * 1000))) if self.ttl is not None else ""
        expected_version = expected.version if expected is not None else 0
        with self._reaching():
            version = await script(
                keys=[self.prefix + run_id],
                args=[record.call_id, expected_version, encode_record(record), ttl_ms],
            )
        return record.with_(version=int(version)) if int(version) > 0 else None

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
        return f"RedisStore({self._url or self._client!r})"

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
            raise StoreUnavailable(f"{self!r} cannot be reached: {exc}") from exc


def _decoded(value: bytes | str | None) -> CallRecord | None:
    if value is None:
        return None
    try:
        text = value.decode() if isinstance(value, bytes) else value  # per decode_responses
    except UnicodeDecodeError as exc:  # written by something else, or damaged
        raise StoreUnavailable(f"a stored call record is not UTF-8 text: {exc}") from exc
    version, _, encoded = text.partition(":")
    if not version.isdigit():
        raise StoreUnavailable(f"a stored call record cannot be read: {text[:80]!r}")
    return decode_record(encoded, int(version))
