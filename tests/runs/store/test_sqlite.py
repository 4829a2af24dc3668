"""SQLite under write contention: an operation that meets another process's write lock waits it
out, trying again after growing pauses up to ``busy_retries``, instead of failing after one
wait; past that it fails with ``StoreUnavailable``. A call that ran but whose answer cannot be
stored is still answered (the turn's outcomes), logged, and never run again."""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from pathlib import Path

import pytest

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


def record(call_id: str) -> CallRecord:
    return CallRecord(call_id=call_id, tool="t", fingerprint="f", state="running")


async def test_a_write_that_meets_a_lock_waits_it_out_with_retries(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    store = SQLiteStore(path, busy_timeout=0.05, busy_retries=8)
    holder = hold_the_write_lock(path, 0.6)  # far longer than one attempt waits
    written = await store.swap("run", None, record("c1"))
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
        await store.swap("run", None, record("c1"))
    holder.join()
    assert (await store.swap("run", None, record("c1"))) is not None  # the lock is free again
    once = SQLiteStore(path, busy_timeout=0.05, busy_retries=0)
    holder = hold_the_write_lock(path, 0.5)
    with pytest.raises(StoreUnavailable, match="after 1 attempt\\)"):
        await once.swap("run", None, record("c2"))
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
