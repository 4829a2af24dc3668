"""What a durable run store costs per call, against the in-memory one and against its floor.

For each store, turns of a trivial async tool run with a fresh ``run_id`` each (so every call
is claimed, run and its answer stored: one read and two compare-and-swap writes), then the same
turns again (a resume: every call answered from the store, one read each). Turns of 1 and of
10 calls. The stores take turns block by block and medians are reported, so a busy moment of
the machine lands on all of them alike.

The floor of a durable store is the same reads and writes done directly with its driver
(sqlite3, redis, psycopg) on the same database, with records encoded beforehand: what no
library on top of that database can go below. ``vs floor`` is the store's time per call in a
new run over its floor's.

    python benchmarks/store.py [--turns 200] [--blocks 7] [--redis-url redis://...]
        [--postgres-url postgresql://...] [--json FILE]

Without ``--redis-url`` a ``redis-server`` on the PATH is started on a free loopback port (and
stopped); without ``--postgres-url`` a PostgreSQL server is made with ``initdb`` in a temporary
directory (as the ``postgres`` user when run as root) and stopped. A server that cannot be had
is left out. With ``--json FILE`` the figures are also written to FILE as JSON.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio

import toolwire
from toolwire import Executor, MemoryStore, RunStore, SQLiteStore, ToolSet, ledger, make_call, tool
from toolwire.calls import ToolResult
from toolwire.runs.store._base import encode_record
from toolwire.store import CallRecord


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


TOOLS = ToolSet([add])


def _wait_for(port: int, seconds: float) -> None:
    """Until something listens on the loopback ``port`` (or ``seconds`` pass)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)


@contextmanager
def redis_server(url: str | None) -> Iterator[str | None]:
    if url is not None:
        yield url
        return
    binary = shutil.which("redis-server")
    if binary is None:
        yield None
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as workdir:
        server = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", workdir],
            stdout=subprocess.DEVNULL,
        )
        try:
            _wait_for(port, 20)
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            server.terminate()
            server.wait()


@contextmanager
def postgres_server(url: str | None) -> Iterator[str | None]:
    if url is not None:
        yield url
        return
    found = shutil.which("initdb") or next(
        iter(sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True)), None
    )
    if found is None:
        yield None
        return
    bin_dir = Path(found).parent
    user = "postgres" if os.geteuid() == 0 else None  # initdb refuses to run as root
    workdir = Path(tempfile.mkdtemp(prefix="toolwire-bench-pg-"))
    if user is not None:
        shutil.chown(workdir, user=user)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = workdir / "data"
    subprocess.run(
        [bin_dir / "initdb", "-D", data, "-U", "bench", "--auth=trust", "--no-sync"],
        check=True,
        capture_output=True,
        user=user,
    )
    # Durable settings (fsync on), as a team's server runs.
    server = subprocess.Popen(
        [bin_dir / "postgres", "-D", data, "-p", str(port), "-k", workdir,
         "-c", "listen_addresses=127.0.0.1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        user=user,
    )  # fmt: skip
    try:
        _wait_for(port, 30)
        time.sleep(0.5)  # accepting connections a moment after it listens
        yield f"postgresql://bench@127.0.0.1:{port}/postgres"
    finally:
        # A fast shutdown: the default (smart) one waits for every client to go, and a
        # benchmark's pools may still hold connections.
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        shutil.rmtree(workdir, ignore_errors=True)


# -- the floors: the same reads and writes, straight to the driver -----------------------------

_RECORD = CallRecord(call_id="c", tool="add", fingerprint="f" * 27, state="running", owner="w")
_CLAIM = encode_record(_RECORD)
_ANSWER = encode_record(_RECORD.with_(state="completed", result=ToolResult.from_value(3)))
_BINDING = json.dumps({"principal": "p" * 32, "calls": "c" * 32})


def sqlite_floor(path: Path) -> Any:
    """A new run of ``size`` calls, as SQLiteStore does it: one read, two writes per call."""
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA synchronous=NORMAL")
    SQLiteStore(path).close()  # its tables

    def write(run_id: str, call_id: str, expected: int, record: str) -> None:
        db.execute("BEGIN IMMEDIATE")
        db.execute(
            "SELECT expires_at, binding FROM toolwire_runs WHERE run_id = ?", (run_id,)
        ).fetchone()
        db.execute(
            "SELECT version FROM toolwire_calls WHERE run_id = ? AND call_id = ?",
            (run_id, call_id),
        ).fetchone()
        db.execute(
            "INSERT INTO toolwire_calls"
            " (run_id, call_id, version, record, pending_since, principal_key)"
            " VALUES (?, ?, ?, ?, NULL, NULL) ON CONFLICT (run_id, call_id)"
            " DO UPDATE SET version = excluded.version, record = excluded.record,"
            " pending_since = excluded.pending_since, principal_key = excluded.principal_key",
            (run_id, call_id, expected + 1, record),
        )
        db.execute(
            "INSERT INTO toolwire_runs (run_id, expires_at, binding) VALUES (?, ?, ?)"
            " ON CONFLICT (run_id) DO UPDATE SET expires_at = excluded.expires_at,"
            " binding = coalesce(toolwire_runs.binding, excluded.binding)",
            (run_id, time.time() + 3600, _BINDING),
        )
        db.execute("COMMIT")

    async def turn(run_id: str, size: int) -> None:
        ids = [f"c{i}" for i in range(size)]
        db.execute(
            "SELECT binding FROM toolwire_runs WHERE run_id = ?"
            " AND (expires_at IS NULL OR expires_at > ?)",
            (run_id, time.time()),
        ).fetchone()
        for call_id in ids:
            write(run_id, call_id, 0, _CLAIM)
            write(run_id, call_id, 1, _ANSWER)

    return turn


def redis_floor(url: str) -> Any:
    import redis.asyncio as aioredis

    from toolwire.store.redis import _SWAP

    client = aioredis.Redis.from_url(url)
    script = client.register_script(_SWAP)

    async def turn(run_id: str, size: int) -> None:
        key = "floor:" + run_id
        ids = [f"c{i}" for i in range(size)]
        await client.hmget(key, ["\0binding", *ids])
        for call_id in ids:
            member = json.dumps([run_id, call_id])
            for expected, record in ((0, _CLAIM), (1, _ANSWER)):
                args = [call_id, expected, record, "3600000", _BINDING, "\0binding", "", member]
                await script(keys=[key, "floor:\0pending"], args=args)

    return turn


async def postgres_floor(url: str) -> Any:
    import psycopg

    from toolwire.store.postgres import PostgresStore

    async with PostgresStore(url, prefix="floor_") as store:  # its tables and function
        await store.get("none", "none")
    connection = await psycopg.AsyncConnection.connect(url, autocommit=True)

    async def turn(run_id: str, size: int) -> None:
        ids = [f"c{i}" for i in range(size)]
        cursor = await connection.execute(
            "SELECT r.binding, c.call_id, c.version, c.record FROM floor_runs r"
            " LEFT JOIN floor_calls c ON c.run_id = r.run_id AND c.call_id = ANY(%s)"
            " WHERE r.run_id = %s AND (r.expires_at IS NULL OR r.expires_at > %s)",
            (ids, run_id, time.time()),
        )
        await cursor.fetchall()
        for call_id in ids:
            for expected, record in ((0, _CLAIM), (1, _ANSWER)):
                now = time.time()
                cursor = await connection.execute(
                    "SELECT floor_swap(%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    (run_id, call_id, expected, record, None, None, _BINDING, now, now + 3600),
                )
                await cursor.fetchall()

    turn.close = connection.close  # type: ignore[attr-defined]
    return turn


async def timed_floor(turn: Any, turns: int, size: int, tag: str) -> float:
    start = time.perf_counter()
    for t in range(turns):
        await turn(f"{tag}-{t}", size)
    return (time.perf_counter() - start) / (turns * size)


async def timed_turns(
    executor: Executor, turns: int, size: int, tag: str, *, with_run: bool
) -> tuple[float, float]:
    """Seconds per call for fresh runs, then for resuming the same runs."""
    batches = [
        [make_call(TOOLS, "add", {"a": t, "b": i}, call_id=f"c{i}") for i in range(size)]
        for t in range(turns)
    ]
    run_ids = [f"{tag}-{t}" if with_run else None for t in range(turns)]
    start = time.perf_counter()
    for calls, run_id in zip(batches, run_ids, strict=True):
        await executor.run(calls, run_id=run_id)
    fresh = (time.perf_counter() - start) / (turns * size)
    start = time.perf_counter()
    for calls, run_id in zip(batches, run_ids, strict=True):
        await executor.run(calls, run_id=run_id)
    resumed = (time.perf_counter() - start) / (turns * size)
    return fresh, resumed


# -- the approval queue ------------------------------------------------------------------------


def _waiting(call_id: str, at: float) -> CallRecord:
    request = {
        "exposed_name": "transfer",
        "tool_name": "transfer",
        "arguments": {"amount": 100, "to": "acct-42"},
        "principal": "alice",
        "principal_key": ledger.principal_key("alice"),
        "requested_at": at,
        "reason": "money needs a human",
    }
    return CallRecord(
        call_id=call_id, tool="transfer", fingerprint="f" * 27, state="pending", request=request
    )


async def fill_queue(store: RunStore, count: int) -> None:
    """``count`` waiting calls, 10 per run, put up one millisecond apart."""
    start = time.time() - count / 1000
    limit = anyio.Semaphore(8)

    async def put(n: int) -> None:
        async with limit:
            record = _waiting(f"c{n % 10}", start + n / 1000)
            await store.swap(f"queue-{n // 10}", None, record)

    async with anyio.create_task_group() as group:
        for n in range(count):
            group.start_soon(put, n)


def direct_page(name: str, target: Any, limit: int) -> Any:
    """The floor of one page: the newest ``limit`` waiting calls by the store's index, read
    with the database's own driver, each record parsed from JSON (what showing one needs)."""
    if name.startswith("SQLite"):
        db = sqlite3.connect(target)

        async def sqlite_page() -> int:
            rows = db.execute(
                "SELECT run_id, call_id, record FROM toolwire_calls WHERE pending_since IS NOT NULL"
                " ORDER BY pending_since DESC, run_id DESC, call_id DESC LIMIT ?",
                (limit,),
            ).fetchall()
            return len([json.loads(row[2]) for row in rows])

        return sqlite_page
    if name.startswith("Redis"):
        import redis.asyncio as aioredis

        client = aioredis.Redis.from_url(target)

        async def redis_page() -> int:
            members = await client.zrange(
                "queue:\0pending", "+inf", "-inf", desc=True, byscore=True, offset=0, num=limit
            )
            async with client.pipeline(transaction=False) as pipe:
                for member in members:
                    run, call_id = json.loads(member)
                    pipe.hget("queue:" + run, call_id)
                values = await pipe.execute()
            return len([json.loads(value.partition(b":")[2]) for value in values])

        return redis_page

    async def postgres_page() -> int:
        import psycopg

        if not hasattr(postgres_page, "connection"):
            postgres_page.connection = await psycopg.AsyncConnection.connect(  # type: ignore[attr-defined]
                target, autocommit=True
            )
        cursor = await postgres_page.connection.execute(  # type: ignore[attr-defined]
            "SELECT run_id, call_id, record FROM queue_calls WHERE pending_since IS NOT NULL"
            " ORDER BY pending_since DESC, run_id DESC, call_id DESC LIMIT %s",
            (limit,),
        )
        return len([json.loads(row[2]) for row in await cursor.fetchall()])

    return postgres_page


QUEUE_ROUNDS = 61


async def interleaved_medians_ms(works: dict[str, Any], rounds: int) -> dict[str, float]:
    """Each work's median time in ms, the works taking turns round by round (so a busy
    moment of the machine lands on all of them alike, the floor included)."""
    times: dict[str, list[float]] = {name: [] for name in works}
    for _ in range(rounds):
        for name, work in works.items():
            start = time.perf_counter()
            await work()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(spent) * 1000 for name, spent in times.items()}


async def queue_figures(
    count: int, redis_url: str | None, postgres_url: str | None, workdir: Path
) -> dict[str, Any]:
    """The approval queue with ``count`` calls waiting, per store: ``toolwire.pending`` of
    the newest 50, the console's page (its list: ``ledger.waiting``, newest first) at the head
    and half-way down, against the floor of one page."""
    stores: dict[str, tuple[RunStore, Any]] = {
        "SQLiteStore": (SQLiteStore(workdir / "queue.db"), workdir / "queue.db")
    }
    if redis_url is not None:
        from toolwire.store.redis import RedisStore

        stores["RedisStore"] = (RedisStore(redis_url, prefix="queue:"), redis_url)
    if postgres_url is not None:
        from toolwire.store.postgres import PostgresStore

        stores["PostgresStore"] = (PostgresStore(postgres_url, prefix="queue_"), postgres_url)
    rows: dict[str, dict[str, float]] = {}
    print(
        f"the approval queue with {count:,} calls waiting; ms per page of 50"
        f" (median of {QUEUE_ROUNDS}, taking turns)"
    )
    print(f"  {'store':14} {'floor':>8} {'pending':>8} {'console':>8} {'deep':>8} {'ratio':>7}")
    for name, (store, target) in stores.items():
        await fill_queue(store, count)
        floor = direct_page(name, target, 50)
        deep = None
        for _ in range(max(1, count // 20_000)):  # half-way down, by pages of 10,000
            deep = (await ledger.waiting(store, limit=10_000, newest_first=True, after=deep)).next

        async def pending(store: RunStore = store) -> None:
            await toolwire.pending(store=store, limit=50, newest_first=True)

        async def console(store: RunStore = store) -> None:
            await ledger.waiting(store, limit=50, newest_first=True)

        async def deep_page(store: RunStore = store, after: Any = deep) -> None:
            await ledger.waiting(store, limit=50, newest_first=True, after=after)

        figures = await interleaved_medians_ms(
            {"floor_ms": floor, "pending_ms": pending, "console_ms": console, "deep_ms": deep_page},
            QUEUE_ROUNDS,
        )
        figures["ratio"] = (
            max(figures["pending_ms"], figures["console_ms"], figures["deep_ms"])
            / figures["floor_ms"]
        )
        rows[name] = figures
        print(
            f"  {name:14} {figures['floor_ms']:8.2f} {figures['pending_ms']:8.2f} "
            f"{figures['console_ms']:8.2f} {figures['deep_ms']:8.2f} {figures['ratio']:6.2f}x"
        )
        if isinstance(store, SQLiteStore):
            store.close()
        elif hasattr(store, "aclose"):
            await store.aclose()
    print()
    return {"count": count, "rounds": QUEUE_ROUNDS, "stores": rows}


async def main(
    turns: int,
    blocks: int,
    redis_url: str | None,
    postgres_url: str | None,
    workdir: Path,
    json_path: str | None = None,
    queue: int = 0,
) -> None:
    queue_result = await queue_figures(queue, redis_url, postgres_url, workdir) if queue else None
    stores: dict[str, RunStore | None] = {
        "no run_id (no store)": None,
        "MemoryStore": MemoryStore(max_runs=100_000),
        "SQLiteStore (synchronous=FULL)": SQLiteStore(workdir / "full.db", synchronous="FULL"),
        "SQLiteStore (synchronous=NORMAL)": SQLiteStore(
            workdir / "normal.db", synchronous="NORMAL"
        ),
    }
    if redis_url is not None:
        from toolwire.store.redis import RedisStore

        stores["RedisStore (loopback)"] = RedisStore(redis_url, prefix="bench:")
    if postgres_url is not None:
        from toolwire.store.postgres import PostgresStore

        stores["PostgresStore (loopback)"] = PostgresStore(postgres_url, prefix="bench_")
    floors: dict[str, Any] = {
        "SQLiteStore (synchronous=NORMAL)": sqlite_floor(workdir / "floor.db")
    }
    if redis_url is not None:
        floors["RedisStore (loopback)"] = redis_floor(redis_url)
    if postgres_url is not None:
        floors["PostgresStore (loopback)"] = await postgres_floor(postgres_url)
    executors = {
        name: Executor(TOOLS, store=store if store is not None else MemoryStore())
        for name, store in stores.items()
    }
    samples: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for block in range(blocks):
        for size in (1, 10):
            for name, executor in executors.items():
                result = await timed_turns(
                    executor,
                    turns,
                    size,
                    f"b{block}-s{size}",
                    with_run=stores[name] is not None,
                )
                samples.setdefault((name, size), []).append(result)
            for name, floor in floors.items():
                spent = await timed_floor(floor, turns, size, f"b{block}-s{size}")
                samples.setdefault((f"floor {name}", size), []).append((spent, spent))

    def median_us(name: str, size: int, which: int) -> float:
        return statistics.median(s[which] for s in samples[(name, size)]) * 1e6

    print(f"{turns} turns per block, {blocks} blocks, medians; µs per call\n")
    figures: dict[str, Any] = {"turns": turns, "blocks": blocks, "sizes": {}}
    for size in (1, 10):
        rows: dict[str, dict[str, float | None]] = {}
        figures["sizes"][str(size)] = rows
        base = median_us("MemoryStore", size, 0)
        bare = median_us("no run_id (no store)", size, 0)
        print(f"turns of {size} call{'s' if size > 1 else ''}")
        header = (
            f"  {'store':34} {'new run':>9} {'vs memory':>10} {'added':>9} {'resume':>9}"
            f" {'floor':>9} {'vs floor':>9}"
        )
        print(header)
        for name in stores:
            fresh = median_us(name, size, 0)
            resumed = median_us(name, size, 1)
            ratio = fresh / base
            added = fresh - bare
            floor = median_us(f"floor {name}", size, 0) if name in floors else float("nan")
            print(
                f"  {name:34} {fresh:9.1f} {ratio:9.2f}x {added:+9.1f} "
                f"{resumed if stores[name] is not None else float('nan'):9.1f}"
                f" {floor:9.1f} {fresh / floor:8.2f}x"
            )
            rows[name] = {
                "new_run_us": fresh,
                "vs_memory": ratio,
                "added_us": added,
                "resume_us": resumed if stores[name] is not None else None,
                "floor_us": floor if name in floors else None,
                "vs_floor": fresh / floor if name in floors else None,
            }
        print()
    if queue_result is not None:
        figures["queue"] = queue_result
    if json_path is not None:
        with open(json_path, "w", encoding="utf-8") as f:
            json.dump(figures, f, indent=2)
    for floor in floors.values():
        if hasattr(floor, "close"):
            await floor.close()
    for store in stores.values():
        if isinstance(store, SQLiteStore):
            store.close()
        elif store is not None and hasattr(store, "aclose"):
            await store.aclose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--blocks", type=int, default=7)
    parser.add_argument("--redis-url")
    parser.add_argument("--postgres-url")
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE as JSON")
    parser.add_argument(
        "--queue", type=int, default=0, help="also page an approval queue of this many calls"
    )
    options = parser.parse_args()
    with (
        redis_server(options.redis_url) as url,
        postgres_server(options.postgres_url) as pg_url,
        tempfile.TemporaryDirectory() as tmp,
    ):
        anyio.run(
            main,
            options.turns,
            options.blocks,
            url,
            pg_url,
            Path(tmp),
            options.json,
            options.queue,
        )
