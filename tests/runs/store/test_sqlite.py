"""``SQLiteStore``: a file shared by one machine's processes.

Under write contention, an operation that meets another process's write lock waits it out,
trying again after growing pauses up to ``busy_retries``, instead of failing after one wait;
past that it fails with ``StoreUnavailable``. A call that ran but whose answer cannot be stored
is still answered (the turn's outcomes), logged, and never run again. Its runs expire and are
purged, a file that cannot be opened is one clear error, ``create=False`` opens only a run store
that is there, and a store made before a fork works in the child. (The contract every store
keeps is ``test_store_contract``.)"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from store_kit import RUNS, TOOLS, record

import toolwire
from toolwire import Executor, SQLiteStore, StoreUnavailable, make_call
from toolwire.runs.store._base import CallRecord

pytestmark = pytest.mark.anyio


def hold_the_write_lock(path: Path, seconds: float) -> threading.Thread:
    """Another connection (as another process would) holding the write lock for ``seconds``."""
    taken = threading.Event()

    def hold() -> None:
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        db.execute("BEGIN IMMEDIATE")
        taken.set()
        time.sleep(seconds)
        db.execute("COMMIT")
        db.close()

    thread = threading.Thread(target=hold)
    thread.start()
    taken.wait()
    return thread


def claimed(call_id: str) -> CallRecord:
    return CallRecord(call_id=call_id, tool="t", fingerprint="f", state="running")


async def test_a_write_that_meets_a_lock_waits_it_out_with_retries(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    store = SQLiteStore(path, busy_timeout=0.05, busy_retries=8)
    holder = hold_the_write_lock(path, 0.6)  # far longer than one attempt waits
    written = await store.swap("run", None, claimed("c1"))
    holder.join()
    assert written is not None
    assert written.version == 1
    assert (await store.get("run", "c1")) is not None
    store.close()


async def test_past_its_retries_an_operation_fails_saying_how_often_it_tried(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.db"
    store = SQLiteStore(path, busy_timeout=0.05, busy_retries=2)
    holder = hold_the_write_lock(path, 1.5)
    with pytest.raises(StoreUnavailable, match="after 3 attempts"):
        await store.swap("run", None, claimed("c1"))
    holder.join()
    assert (await store.swap("run", None, claimed("c1"))) is not None  # the lock is free again
    once = SQLiteStore(path, busy_timeout=0.05, busy_retries=0)
    holder = hold_the_write_lock(path, 0.5)
    with pytest.raises(StoreUnavailable, match="after 1 attempt\\)"):
        await once.swap("run", None, claimed("c2"))
    holder.join()
    for bad in (-1, 1.5, "3"):
        with pytest.raises(ValueError, match="busy_retries"):
            SQLiteStore(path, busy_retries=bad)  # type: ignore[arg-type]
    store.close()
    once.close()


async def test_an_answer_that_cannot_be_stored_is_given_logged_and_never_run_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "runs.db"
    runs: list[str] = []
    holders: list[threading.Thread] = []

    @toolwire.tool
    def transfer(amount: int) -> str:
        """Move money."""
        runs.append("ran")
        # another process takes the write lock while the call runs, and keeps it past every
        # attempt to store the answer
        holders.append(hold_the_write_lock(path, 1.5))
        return f"moved {amount}"

    store = SQLiteStore(path, busy_timeout=0.05, busy_retries=1)
    executor = Executor([transfer], store=store, lease=0.5)
    call = make_call(executor.toolset, "transfer", {"amount": 5}, call_id="c1")
    with (
        caplog.at_level(logging.ERROR, logger="toolwire"),
        pytest.raises(StoreUnavailable) as raised,
    ):
        await executor.run([call], run_id="run_1")
    (outcome,) = raised.value.outcomes
    assert outcome.result.text == "moved 5"  # given, though the run could not keep it
    assert "ran, but its answer could not be stored" in caplog.text
    for holder in holders:
        holder.join()

    # a later turn of the same run (another worker: it waits out the claim's short lease)
    # never runs it again
    later = Executor([transfer], store=SQLiteStore(path), lease=0.5)
    (again,) = await later.run([call], run_id="run_1")
    assert runs == ["ran"]
    assert again.result.error_kind == "interrupted"
    store.close()


# -- expiry, opening, locks and forks (moved from the store contract's file) --------


async def test_sqlite_runs_expire_and_are_purged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SQLiteStore(tmp_path / "runs.db", ttl=60)
    await store.swap("old", None, record())
    now = time.time()
    monkeypatch.setattr(time, "time", lambda: now + 61)
    await store.swap("new", None, record())
    assert await store.get("old", "c1") is None
    assert await store.get("new", "c1") is not None
    assert await store.purge() == 1
    assert await store.swap("old", None, record()) is not None  # the name is free again
    store.close()


async def test_sqlite_writes_during_a_long_run_keep_it_alive(tmp_path: Path) -> None:
    """Expiry counts from a run's last write, whichever call it was."""
    store = SQLiteStore(tmp_path / "runs.db", ttl=60)
    await store.swap("r", None, record("c1"))
    db = sqlite3.connect(tmp_path / "runs.db")
    [(first,)] = db.execute("SELECT expires_at FROM toolwire_runs").fetchall()
    await store.swap("r", None, record("c2"))
    [(second,)] = db.execute("SELECT expires_at FROM toolwire_runs").fetchall()
    db.close()
    store.close()
    assert second >= first


async def test_a_sqlite_file_that_cannot_be_opened_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StoreUnavailable, match="cannot be opened"):
        SQLiteStore(tmp_path / "missing-dir" / "runs.db")
    not_a_database = tmp_path / "notes.txt"
    not_a_database.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreUnavailable, match="not a database"):
        SQLiteStore(not_a_database)


async def test_a_locked_sqlite_store_is_unavailable_and_nothing_runs(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    store = SQLiteStore(path, busy_timeout=0.05)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StoreUnavailable, match="locked"):
            await Executor(TOOLS, store=store).run(
                [make_call(TOOLS, "add", {"a": 1, "b": 2}, call_id="c1")], run_id="r"
            )
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
        store.close()
    assert RUNS["add"] == 0


async def test_a_sqlite_store_not_to_create_refuses_a_missing_file_and_makes_none(
    tmp_path: Path,
) -> None:
    path = tmp_path / "typo.db"
    with pytest.raises(StoreUnavailable, match="no such database file") as raised:
        SQLiteStore(path, create=False)
    assert isinstance(raised.value, ConnectionError)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "content",
    [b"", None],
    ids=["an empty file", "another application's database"],
)
async def test_a_sqlite_store_not_to_create_refuses_a_file_without_runs_and_adds_none(
    tmp_path: Path, content: bytes | None
) -> None:
    path = tmp_path / "other.db"
    if content is not None:
        path.write_bytes(content)
    else:
        other = sqlite3.connect(path)
        other.execute("CREATE TABLE notes (text TEXT)")
        other.commit()
        other.close()
    before = path.read_bytes()
    with pytest.raises(StoreUnavailable, match="holds no run store"):
        SQLiteStore(path, create=False)
    assert path.read_bytes() == before


async def test_a_sqlite_store_not_to_create_opens_an_existing_one(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    async with SQLiteStore(path) as made:
        await made.swap("r", None, record("c1"))
    store = SQLiteStore(path, create=False)
    try:
        assert [r.call_id for r in await store.records("r")] == ["c1"]
        await store.swap("r", None, record("c2"))  # it still writes: it only makes nothing
        assert len(await store.records("r")) == 2
    finally:
        store.close()


@pytest.mark.parametrize(
    "name", ["with space.db", "what?.db", "hash#tag.db", "per%41cent.db", "ünï.db", "x?mode"]
)
async def test_a_sqlite_store_not_to_create_opens_a_file_of_any_name(
    tmp_path: Path, name: str
) -> None:
    path = tmp_path / name
    async with SQLiteStore(path) as made:
        await made.swap("r", None, record("c1"))
    async with SQLiteStore(path, create=False) as store:
        assert [r.call_id for r in await store.records("r")] == ["c1"]
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(("-wal", "-shm"))) == [
        name
    ]
    # and a missing one of the same spelling is still refused, never made
    path.unlink()
    with pytest.raises(StoreUnavailable):
        SQLiteStore(path, create=False)
    assert not path.exists()


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_a_sqlite_store_made_before_a_fork_works_in_the_child(tmp_path: Path) -> None:
    import multiprocessing

    store = SQLiteStore(tmp_path / "runs.db")
    anyio.run(store.swap, "r", None, record())
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    child = context.Process(target=_claim_in_child, args=(store, results))
    child.start()
    child.join(timeout=60)
    assert child.exitcode == 0
    assert results.get(timeout=10) is True
    stored = anyio.run(store.get, "r", "c1")
    assert stored is not None
    assert (stored.state, stored.owner, stored.version) == ("running", "child", 2)
    store.close()


def _claim_in_child(store: SQLiteStore, results: Any) -> None:
    async def claim() -> None:
        stored = await store.get("r", "c1")
        won = await store.swap("r", stored, record(state="running", owner="child"))
        results.put(won is not None)

    anyio.run(claim)
