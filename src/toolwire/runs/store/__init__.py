"""Where a run remembers its calls: decisions, claims and outcomes.

A run is one turn's calls, named by a ``run_id`` the caller chooses (or the executor generates
when approval is pending). Three stores implement [`RunStore`][]:

- [`MemoryStore`][]: bounded, in this process (the default);
- [`SQLiteStore`][]: a file, shared by the processes of one machine (the durable default);
- [`RedisStore`][toolwire.store.redis.RedisStore] (extra ``toolwire[redis]``): several workers and
  machines;
- [`PostgresStore`][toolwire.store.postgres.PostgresStore] (extra ``toolwire[postgres]``):
  teams whose application already runs on PostgreSQL.

[`from_url`][] makes any of them from a URL, for configuration files and the CLI.

Every write is a compare-and-swap on the record's version, so two workers resuming the same run
cannot both move a call to ``running``: the one that loses sees the winner's record.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from toolwire.errors import ConfigurationError
from toolwire.runs.store._base import (
    DEFAULT_TTL,
    CallRecord,
    CallState,
    DamagedRecord,
    QueuePlace,
    RunStore,
)

# For the run, the executor and the servers (not public API): the store's clock, reachability.
from toolwire.runs.store._clock import StoreClock as StoreClock
from toolwire.runs.store._clock import clock_of as clock_of
from toolwire.runs.store._reach import check_reachable as check_reachable
from toolwire.runs.store._reach import in_process as in_process
from toolwire.runs.store.memory import MemoryStore
from toolwire.runs.store.sqlite import SQLiteStore

if TYPE_CHECKING:
    from toolwire.runs.store.postgres import PostgresStore
    from toolwire.runs.store.redis import RedisStore

__all__ = [
    "DEFAULT_TTL",
    "CallRecord",
    "CallState",
    "DamagedRecord",
    "MemoryStore",
    "PostgresStore",
    "QueuePlace",
    "RedisStore",
    "RunStore",
    "SQLiteStore",
    "default_store",
    "from_url",
]


def __getattr__(name: str) -> Any:
    if name == "RedisStore":  # imported on use: it needs the ``redis`` extra
        from toolwire.runs.store.redis import RedisStore

        return RedisStore
    if name == "PostgresStore":  # imported on use: it needs the ``postgres`` extra
        from toolwire.runs.store.postgres import PostgresStore

        return PostgresStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def from_url(url: str, *, create: bool = True) -> RunStore:
    """A store from a URL:

    - ``memory://`` (optionally ``memory://?max_runs=N``): a [`MemoryStore`][];
    - ``sqlite:///relative/path.db`` or ``sqlite:////absolute/path.db``: a
      [`SQLiteStore`][];
    - ``redis://...``, ``rediss://...``, ``unix://...``: a
      [`RedisStore`][toolwire.store.redis.RedisStore] (extra ``toolwire[redis]``);
    - ``postgresql://...`` or ``postgres://...``: a
      [`PostgresStore`][toolwire.store.postgres.PostgresStore] (extra ``toolwire[postgres]``).

    Any of them takes ``ttl`` (seconds, or ``none``) in its query string, and a PostgreSQL URL
    ``max_connections`` (its pool's bound, per process and event loop); the rest of a URL goes
    to the driver unchanged.

    ``create=False`` opens only a store that is already there, for what looks at runs made
    elsewhere: a SQLite file that does not exist is ``StoreUnavailable`` (see
    [`SQLiteStore`][]'s ``create``), and ``memory://``, new and empty in each process, is a
    ``ConfigurationError``. A server's database is the server's: it is there or cannot be
    reached.

    Raises:
        ConfigurationError: for a URL of no known kind, or a bad ``ttl``, ``max_runs`` or
            ``max_connections``.
        MissingDependency: when the store's extra is not installed.
        StoreUnavailable: with ``create=False``, a SQLite file that does not exist or holds
            no run store.
    """
    scheme, sep, rest = url.partition("://") if isinstance(url, str) else ("", "", "")
    if not sep:
        raise ConfigurationError(f"a store URL looks like kind://..., not {url!r}")
    scheme = scheme.lower()
    target, options = _split_options(rest)
    ttl = _ttl(options)
    if scheme == "memory":
        max_runs = options.pop("max_runs", "1024")
        _no_more(options, url)
        if not create:
            raise ConfigurationError(
                f"{url!r} is a new, empty store: give the store the runs are kept in"
            )
        if not max_runs.isdigit() or int(max_runs) < 1:
            raise ConfigurationError(f"max_runs must be a positive integer, not {max_runs!r}")
        return MemoryStore(int(max_runs), ttl=ttl if ttl is not _DEFAULT else None)
    if scheme == "sqlite":
        _no_more(options, url)
        if not target.startswith("/") or target == "/":
            raise ConfigurationError(
                "a SQLite URL is sqlite:///relative/path or sqlite:////absolute/path"
            )
        path = target[1:]
        if ttl is _DEFAULT:
            return SQLiteStore(path, create=create)
        return SQLiteStore(path, ttl=ttl, create=create)
    pool_size = options.pop("max_connections", None) if scheme.startswith("postgres") else None
    driver_url = f"{scheme}://{target}" + (f"?{_join(options)}" if options else "")
    if scheme in ("redis", "rediss", "unix"):
        from toolwire.runs.store.redis import RedisStore

        return RedisStore(driver_url) if ttl is _DEFAULT else RedisStore(driver_url, ttl=ttl)
    if scheme in ("postgresql", "postgres"):
        from toolwire.runs.store.postgres import PostgresStore

        settings: dict[str, Any] = {} if ttl is _DEFAULT else {"ttl": ttl}
        if pool_size is not None:
            if not pool_size.isdigit() or int(pool_size) < 1:
                raise ConfigurationError(
                    f"max_connections must be a positive integer, not {pool_size!r}"
                )
            settings["max_connections"] = int(pool_size)
        return PostgresStore(driver_url, **settings)
    raise ConfigurationError(
        f"unknown store URL scheme {scheme!r} (memory, sqlite, redis, postgresql)"
    )


_DEFAULT: Any = object()


def _split_options(rest: str) -> tuple[str, dict[str, str]]:
    from urllib.parse import parse_qsl

    target, _, query = rest.partition("?")
    return target, dict(parse_qsl(query, keep_blank_values=True))


def _join(options: dict[str, str]) -> str:
    from urllib.parse import urlencode

    return urlencode(options)


def _ttl(options: dict[str, str]) -> Any:
    if "ttl" not in options:
        return _DEFAULT
    text = options.pop("ttl")
    if text.lower() == "none":
        return None
    try:
        ttl = float(text)
    except ValueError:
        ttl = -1.0
    if not ttl > 0:
        raise ConfigurationError(f"ttl must be a positive number of seconds or none, not {text!r}")
    return ttl


def _no_more(options: dict[str, str], url: str) -> None:
    if options:
        raise ConfigurationError(f"unknown options {sorted(options)} in store URL {url!r}")


_default: MemoryStore | None = None
_default_lock = threading.Lock()


def default_store() -> MemoryStore:
    """The process-wide store used when the caller passes none (created on first use)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = MemoryStore()
        return _default
