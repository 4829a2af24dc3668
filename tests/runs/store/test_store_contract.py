"""The store contract, the same for the in-memory, SQLite and Redis stores, and the executor's
use of it: resuming, claims, interrupted calls, expiry and unreachable stores."""

from __future__ import annotations

import datetime
import logging
import sqlite3
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolwire
from toolwire import (
    ApprovalPending,
    AudioContent,
    DeferredApproval,
    EmbeddedResource,
    Executor,
    ImageContent,
    MemoryStore,
    Policy,
    ResourceLink,
    Rule,
    RunStore,
    SQLiteStore,
    StoreUnavailable,
    TextContent,
    ToolResult,
    ToolSet,
    ToolwireError,
    allow,
    deny,
    make_call,
    tool,
)
from toolwire.runs.store._base import decode_record, encode_record
from toolwire.store import CallRecord

pytestmark = pytest.mark.anyio

RUNS: Counter[str] = Counter()


@tool
def add(a: int, b: int) -> int:
    """Adds."""
    RUNS["add"] += 1
    return a + b


@tool(idempotent=True)
def lookup(key: str) -> str:
    """Reads a value."""
    RUNS["lookup"] += 1
    return key.upper()


@tool
def transfer(amount: int) -> str:
    """Moves money."""
    RUNS["transfer"] += 1
    return f"moved {amount}"


TOOLS = ToolSet([add, lookup, transfer])


@pytest.fixture(autouse=True)
def _count() -> None:
    RUNS.clear()


def record(call_id: str = "c1", **changes: Any) -> CallRecord:
    base = CallRecord(call_id=call_id, tool="add", fingerprint="f" * 16, state="pending")
    return base.with_(**changes)


# -- the contract --------------------------------------------------------------------------------


async def test_swap_creates_then_compares_versions(store: RunStore) -> None:
    assert await store.get("r", "c1") is None
    first = await store.swap("r", None, record())
    assert first is not None
    assert first.version == 1
    assert await store.get("r", "c1") == first
    assert await store.swap("r", None, record(state="approved")) is None  # not new any more
    second = await store.swap("r", first, first.with_(state="approved", decision=allow()))
    assert second is not None
    assert second.version == 2
    assert await store.swap("r", first, first.with_(state="denied")) is None  # stale
    assert await store.get("r", "c1") == second
    assert await store.get("other", "c1") is None
    assert await store.get("r", "c2") is None


async def test_get_many_reads_several_calls_in_order(store: RunStore) -> None:
    first = await store.swap("r", None, record("c1"))
    third = await store.swap("r", None, record("c3", state="completed"))
    assert await store.get_many("r", ["c3", "c2", "c1"]) == [third, None, first]
    assert await store.get_many("r", []) == []
    assert await store.get_many("nothing", ["c1", "c2"]) == [None, None]


async def test_only_one_of_many_concurrent_claims_wins(store: RunStore) -> None:
    pending = await store.swap("r", None, record())
    wins: list[str] = []

    async def claim(worker: int) -> None:
        claimed = pending.with_(state="running", owner=f"w{worker}")  # type: ignore[union-attr]
        if await store.swap("r", pending, claimed) is not None:
            wins.append(f"w{worker}")

    async with anyio.create_task_group() as tasks:
        for worker in range(20):
            tasks.start_soon(claim, worker)
    assert len(wins) == 1
    stored = await store.get("r", "c1")
    assert stored is not None
    assert (stored.state, stored.owner) == ("running", wins[0])


async def test_records_keep_every_kind_of_content(store: RunStore) -> None:
    result = ToolResult(
        content=(
            TextContent("héllo"),
            ImageContent(b"\x89PNG\x00", "image/png"),
            AudioContent(b"RIFF", "audio/wav"),
            ResourceLink(uri="file:///a", name="a", mime_type="text/plain", description="d"),
            EmbeddedResource(uri="mem://t", mime_type="text/plain", text="inline"),
            EmbeddedResource(uri="mem://b", blob=b"\x00\x01"),
        ),
        structured_content={"n": 1, "nested": {"list": [1, "two", None]}},
    )
    stored = await store.swap(
        "r", None, record(state="completed", decision=deny("why"), result=result)
    )
    assert await store.get("r", "c1") == stored
    assert stored is not None
    assert stored.result == result


async def test_structured_content_that_json_cannot_write_is_kept_as_text() -> None:
    when = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    result = ToolResult(structured_content={"when": when, "odd": object.__new__(object)})
    decoded = decode_record(encode_record(record(state="completed", result=result)), 3)
    assert decoded.version == 3
    assert decoded.result is not None
    assert decoded.result.structured_content is not None
    assert decoded.result.structured_content["when"] == "2026-01-02T03:04:05Z"
    assert decoded.result.structured_content["odd"].startswith("<object object")


@settings(max_examples=60, deadline=None)
@given(
    text=st.text(),
    data=st.binary(max_size=64),
    structured=st.dictionaries(
        st.text(max_size=8),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=8),
            lambda inner: st.lists(inner, max_size=3),
            max_leaves=6,
        ),
        max_size=4,
    ),
    kind=st.sampled_from([None, "failed", "timeout", "approval_denied"]),
)
def test_any_result_survives_the_json_form(
    text: str, data: bytes, structured: dict[str, Any], kind: Any
) -> None:
    result = ToolResult(
        content=(TextContent(text), ImageContent(data, "image/png")),
        structured_content=structured,
        is_error=kind is not None,
        error_kind=kind,
    )
    original = record(state="failed" if kind else "completed", result=result, owner=None)
    assert decode_record(encode_record(original), 0) == original


# -- expiry ---------------------------------------------------------------------------------------


async def _gone(store: RunStore, run_id: str) -> bool:
    with anyio.fail_after(10):  # bounded: expiry is a few hundred ms away
        while await store.get(run_id, "c1") is not None:
            await anyio.sleep(0.02)
    return True


async def test_memory_runs_expire(monkeypatch: pytest.MonkeyPatch) -> None:
    store = MemoryStore(ttl=60)
    await store.swap("r", None, record())
    now = time.monotonic()
    monkeypatch.setattr(time, "monotonic", lambda: now + 61)
    assert await store.get("r", "c1") is None
    assert await store.swap("r", None, record()) is not None  # a fresh run under the old name


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


async def test_redis_runs_expire(redis_url: str) -> None:
    from toolwire.store.redis import RedisStore

    async with RedisStore(redis_url, ttl=0.2, prefix="expiry:") as store:
        first = await store.swap("r", None, record())
        assert first is not None
        assert await store.get("r", "c1") == first
        assert await _gone(store, "r")


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


# -- unreachable stores ---------------------------------------------------------------------------


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


async def test_an_unreachable_redis_is_a_clear_error_and_nothing_runs() -> None:
    from toolwire.store.redis import RedisStore

    store = RedisStore(f"redis://127.0.0.1:{closed_port()}/0", timeout=2)
    with pytest.raises(StoreUnavailable, match="cannot be reached") as raised:
        await Executor(TOOLS, store=store).run(
            [make_call(TOOLS, "add", {"a": 1, "b": 2}, call_id="c1")], run_id="r"
        )
    await store.aclose()
    assert isinstance(raised.value, ConnectionError)
    assert RUNS["add"] == 0


async def test_an_unreachable_postgres_is_one_attempt_one_line_and_no_pool_noise(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from toolwire.store.postgres import PostgresStore

    url = f"postgresql://someone:hunter2@127.0.0.1:{closed_port()}/runs"
    store = PostgresStore(url, timeout=2)
    with caplog.at_level(logging.DEBUG, logger="psycopg"):
        with pytest.raises(StoreUnavailable, match="cannot be used") as raised:
            await Executor(TOOLS, store=store).run(
                [make_call(TOOLS, "add", {"a": 1, "b": 2}, call_id="c1")], run_id="r"
            )
        await store.aclose()
    assert isinstance(raised.value, ConnectionError)
    message = str(raised.value)
    assert "\n" not in message
    assert "Connection refused" in message
    assert "hunter2" not in message
    # The pool never started: no retries, and none of its "error connecting" lines.
    assert [r.getMessage() for r in caplog.records if r.name.startswith("psycopg.pool")] == []
    assert RUNS["add"] == 0


async def test_a_postgres_database_that_is_not_there_is_one_error_at_once(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    from toolwire.store.postgres import PostgresStore

    store = PostgresStore(postgres_url.rsplit("/", 1)[0] + "/no_such_database", timeout=2)
    with caplog.at_level(logging.DEBUG, logger="psycopg"):
        with pytest.raises(StoreUnavailable, match='"no_such_database" does not exist'):
            await store.pending()
        await store.aclose()
    assert [r.getMessage() for r in caplog.records if r.name.startswith("psycopg.pool")] == []


async def test_an_unreachable_redis_names_it_without_its_password() -> None:
    from toolwire.store.redis import RedisStore

    store = RedisStore(f"redis://someone:hunter2@127.0.0.1:{closed_port()}/0", timeout=2)
    with pytest.raises(StoreUnavailable, match="cannot be reached") as raised:
        await store.pending()
    await store.aclose()
    assert "hunter2" not in str(raised.value)
    assert "\n" not in str(raised.value)
    assert "someone:***@127.0.0.1" in str(raised.value)


# -- opening only a store that is there (create=False) --------------------------------------------


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


def closed_port() -> int:
    """A loopback port nothing listens on."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class FailingAfter:
    """A store that stops answering after ``writes`` successful writes."""

    def __init__(self, writes: int) -> None:
        self.inner = MemoryStore()
        self.writes = writes

    async def get(self, run_id: str, call_id: str) -> CallRecord | None:
        return await self.inner.get(run_id, call_id)

    async def get_many(self, run_id: str, call_ids: Sequence[str]) -> list[CallRecord | None]:
        return await self.inner.get_many(run_id, call_ids)

    async def load(
        self, run_id: str, call_ids: Sequence[str]
    ) -> tuple[str | None, list[CallRecord | None]]:
        return await self.inner.load(run_id, call_ids)

    async def records(self, run_id: str) -> list[CallRecord]:
        return await self.inner.records(run_id)

    async def pending(self, **options: Any) -> list[tuple[str, CallRecord]]:
        return await self.inner.pending(**options)

    async def swap(
        self,
        run_id: str,
        expected: CallRecord | None,
        record: CallRecord,
        *,
        binding: str | None = None,
    ) -> CallRecord | None:
        if self.writes <= 0:
            raise StoreUnavailable("the store went away")
        self.writes -= 1
        return await self.inner.swap(run_id, expected, record, binding=binding)


async def test_a_store_failing_mid_turn_raises_with_every_answer() -> None:
    """The first call is claimed and run, its answer cannot be stored; the second cannot be
    claimed, so it does not run. Both are answered in ``outcomes``."""
    store = FailingAfter(writes=1)
    calls = [
        make_call(TOOLS, "transfer", {"amount": 5}, call_id="c1"),
        make_call(TOOLS, "transfer", {"amount": 6}, call_id="c2"),
    ]
    # a short lease: the resume below waits for it to lapse before it answers c1
    with pytest.raises(StoreUnavailable, match="went away") as raised:
        await Executor(TOOLS, store=store, max_concurrency=1, lease=0.2).run(calls, run_id="r")
    outcomes = raised.value.outcomes
    assert outcomes is not None
    assert outcomes[0].result.text == "moved 5"
    assert outcomes[1].result.error_kind == "unavailable"
    assert RUNS["transfer"] == 1
    # the run remembers c1 as running: a resume answers it interrupted, never runs it again
    store.writes = 10
    resumed = await Executor(TOOLS, store=store).run(calls, run_id="r")
    assert [o.result.error_kind for o in resumed] == ["interrupted", None]
    assert RUNS["transfer"] == 2


# -- the executor on each store -------------------------------------------------------------------


async def test_a_resumed_run_answers_from_the_store_and_runs_nothing_twice(
    store: RunStore,
) -> None:
    calls = [
        make_call(TOOLS, "add", {"a": 1, "b": 2}, call_id="c1"),
        make_call(TOOLS, "transfer", {"amount": 9}, call_id="c2"),
        make_call(TOOLS, "add", {"a": "x", "b": 2}, call_id="c3"),
    ]
    policy = Policy(Rule("ask", "transfer"))
    first = Executor(TOOLS, store=store, policy=policy, approver=DeferredApproval())
    with pytest.raises(ApprovalPending) as pending:
        await first.run(calls, run_id="r")
    assert [p.call_id for p in pending.value.pending] == ["c2"]
    stored = await store.get("r", "c2")
    assert stored is not None
    assert (stored.state, stored.tool) == ("pending", "transfer")
    assert (await store.get("r", "c3")).state == "failed"  # type: ignore[union-attr]

    # another executor (another worker) records the decision and another completes the turn
    await Executor(TOOLS, store=store).decide("r", "c2", allow())
    second = Executor(TOOLS, store=store, policy=policy, approver=DeferredApproval())
    outcomes = await second.run(calls, run_id="r")
    assert [o.result.text.split(":")[0] for o in outcomes] == [
        "3",
        "moved 9",
        "Invalid arguments for 'add'",
    ]
    assert [o.from_store for o in outcomes] == [True, False, True]
    assert RUNS == {"add": 1, "transfer": 1}
    assert [(await store.get("r", c)).state for c in ("c1", "c2", "c3")] == [  # type: ignore[union-attr]
        "completed",
        "completed",
        "failed",
    ]
    again = await second.run(calls, run_id="r")
    assert all(o.from_store for o in again)
    assert RUNS == {"add": 1, "transfer": 1}
    with pytest.raises(ToolwireError, match="no call 'c2' waiting"):
        await second.decide("r", "c2", deny())


async def test_a_denied_call_is_stored_as_denied(store: RunStore) -> None:
    calls = [make_call(TOOLS, "transfer", {"amount": 9}, call_id="c1")]
    executor = Executor(
        TOOLS, store=store, policy=Policy(Rule("ask", "*")), approver=DeferredApproval()
    )
    with pytest.raises(ApprovalPending):
        await executor.run(calls, run_id="r")
    await executor.decide("r", "c1", deny("too much"))
    [outcome] = await executor.run(calls, run_id="r")
    assert outcome.result.text == "Denied: too much."
    stored = await store.get("r", "c1")
    assert stored is not None
    assert (stored.state, stored.decision) == ("denied", deny("too much"))
    assert RUNS["transfer"] == 0


async def test_running_calls_are_interrupted_or_rerun_only_if_idempotent(
    store: RunStore,
) -> None:
    calls = [
        make_call(TOOLS, "transfer", {"amount": 1}, call_id="c1"),
        make_call(TOOLS, "lookup", {"key": "k"}, call_id="c2"),
    ]
    from toolwire.ledger import fingerprint as _fingerprint

    for run_id in ("r1", "r2"):
        for call in calls:  # a worker claimed both and died
            claim = CallRecord(
                call_id=call.local_id,
                tool=call.exposed_name,
                fingerprint=_fingerprint(call),
                state="running",
                owner="dead-worker",
                started_at=time.time(),
            )
            assert await store.swap(run_id, None, claim) is not None

    plain = await Executor(TOOLS, store=store).run(calls, run_id="r1")
    assert [o.result.error_kind for o in plain] == ["interrupted", "interrupted"]
    assert not RUNS
    # The run keeps the verdict: whoever resumes it next gives the same answers.
    again = await Executor(TOOLS, store=store, on_interrupted="rerun_idempotent").run(
        calls, run_id="r1"
    )
    assert [o.result for o in again] == [o.result for o in plain]
    assert not RUNS

    rerun = await Executor(TOOLS, store=store, on_interrupted="rerun_idempotent").run(
        calls, run_id="r2"
    )
    assert [o.result.error_kind for o in rerun] == ["interrupted", None]
    assert rerun[1].result.text == "K"
    assert RUNS == {"lookup": 1}
    stored = await store.get("r2", "c2")
    assert stored is not None
    assert stored.state == "completed"
    interrupted = await store.get("r2", "c1")
    assert interrupted is not None
    assert interrupted.state == "failed"
    assert interrupted.result is not None
    assert interrupted.result.error_kind == "interrupted"


async def test_a_worker_waits_for_a_call_another_is_running(store: RunStore) -> None:
    gate = anyio.Event()
    started = anyio.Event()

    @tool
    async def slow() -> str:
        """Takes its time."""
        started.set()
        await gate.wait()
        RUNS["slow"] += 1
        return "done"

    tools = ToolSet([slow])
    call = make_call(tools, "slow", {}, call_id="c1")
    results: dict[str, ToolResult] = {}

    async def first() -> None:
        [outcome] = await Executor(tools, store=store).run([call], run_id="r")
        results["first"] = outcome.result

    async def second() -> None:
        await started.wait()
        waiting = Executor(tools, store=store, wait_for_running=30)
        gate.set()  # the first worker finishes while the second waits
        [outcome] = await waiting.run([call], run_id="r")
        results["second"] = outcome.result
        assert outcome.from_store

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(first)
        tasks.start_soon(second)
    assert results["first"] == results["second"]
    assert RUNS["slow"] == 1


async def test_a_run_id_reused_for_other_arguments_is_refused(store: RunStore) -> None:
    executor = Executor(TOOLS, store=store)
    await executor.run([make_call(TOOLS, "add", {"a": 1, "b": 2}, call_id="c1")], run_id="r")
    with pytest.raises(ToolwireError, match="another model response"):
        await executor.run([make_call(TOOLS, "add", {"a": 5, "b": 2}, call_id="c1")], run_id="r")


async def test_bad_options_are_refused() -> None:
    with pytest.raises(ToolwireError, match="on_interrupted"):
        Executor(TOOLS, on_interrupted="always")  # type: ignore[arg-type]
    with pytest.raises(ToolwireError, match="wait_for_running"):
        Executor(TOOLS, wait_for_running=-1)
    with pytest.raises(ValueError, match="ttl"):
        MemoryStore(ttl=0)
    with pytest.raises(ValueError, match="synchronous"):
        SQLiteStore(":memory:", synchronous="OFF")  # type: ignore[arg-type]


def _claim_in_child(store: SQLiteStore, results: Any) -> None:
    async def claim() -> None:
        stored = await store.get("r", "c1")
        won = await store.swap("r", stored, record(state="running", owner="child"))
        results.put(won is not None)

    anyio.run(claim)


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


def test_the_redis_store_without_its_extra_names_the_extra() -> None:
    import subprocess
    import sys

    program = (
        "import sys\n"
        "sys.modules['redis'] = None\n"
        "import toolwire.store\n"
        "try:\n"
        "    toolwire.store.RedisStore\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == (
        "MissingDependency redis is not installed; install it with: pip install 'toolwire[redis]' "
        "(from a checkout: pip install -e '.[redis]')"
    )


async def test_a_damaged_record_is_a_clear_error_and_nothing_runs(
    tmp_path: Path, redis_url: str
) -> None:
    from toolwire.store.redis import RedisStore

    sqlite_store = SQLiteStore(tmp_path / "runs.db")
    await sqlite_store.swap("r", None, record("c1"))
    db = sqlite3.connect(tmp_path / "runs.db")
    db.execute('UPDATE toolwire_calls SET record = \'{"not": "a record"\'')
    db.commit()
    db.close()
    async with RedisStore(redis_url, prefix="damaged:") as redis_store:
        await redis_store.swap("r", None, record("c1"))
        client = redis_store._connection()
        await client.hset("damaged:r", "c1", "1:[1, 2, 3]")
        await client.hset("damaged:other", "c1", "no version here")
        with pytest.raises(StoreUnavailable, match="cannot be read"):
            await redis_store.get("other", "c1")
        for store in (sqlite_store, redis_store):
            with pytest.raises(StoreUnavailable, match="cannot be read"):
                await Executor(TOOLS, store=store).run(
                    [make_call(TOOLS, "add", {"a": 1, "b": 2}, call_id="c1")], run_id="r"
                )
    sqlite_store.close()
    assert RUNS["add"] == 0


@settings(max_examples=40, deadline=None)
@given(
    workers=st.integers(min_value=2, max_value=5),
    delays=st.lists(st.integers(min_value=0, max_value=3), min_size=4, max_size=4),
    starts=st.lists(st.integers(min_value=0, max_value=3), min_size=5, max_size=5),
)
def test_workers_racing_in_one_process_run_each_call_once(
    workers: int, delays: list[int], starts: list[int]
) -> None:
    """Tasks resuming the same run at once, with random start and tool delays (in event-loop
    turns, so the interleaving is the drawn one): each call runs once, every worker answers
    every call, and all answers agree."""
    executions: Counter[str] = Counter()

    @tool
    async def step(n: int) -> str:
        """One step."""
        for _ in range(delays[n]):
            await anyio.lowlevel.checkpoint()
        executions[f"step{n}"] += 1
        return f"step {n} done"

    tools = ToolSet([step])
    calls = [make_call(tools, "step", {"n": n}, call_id=f"c{n}") for n in range(4)]
    store = MemoryStore()
    answers: list[list[str]] = []

    async def worker(index: int) -> None:
        for _ in range(starts[index]):
            await anyio.lowlevel.checkpoint()
        executor = Executor(tools, store=store, wait_for_running=30)
        outcomes = await executor.run(calls, run_id="r")
        answers.append([o.result.text for o in outcomes])

    async def main() -> None:
        async with anyio.create_task_group() as tasks:
            for index in range(workers):
                tasks.start_soon(worker, index)

    anyio.run(main)
    assert executions == {f"step{n}": 1 for n in range(4)}
    assert len(answers) == workers
    assert all(a == [f"step {n} done" for n in range(4)] for a in answers)


async def test_execute_tool_calls_takes_the_resume_options() -> None:
    from toolwire import execute_tool_calls
    from toolwire.ledger import fingerprint as _fingerprint

    store = MemoryStore()
    response = {"parts": [{"functionCall": {"name": "lookup", "args": {"key": "k"}, "id": "c1"}}]}
    [call] = [make_call(TOOLS, "lookup", {"key": "k"}, call_id="c1")]
    claim = CallRecord(
        call_id="c1", tool="lookup", fingerprint=_fingerprint(call), state="running", owner="x"
    )
    await store.swap("r", None, claim)
    await store.swap("r2", None, claim)
    plain = await execute_tool_calls(TOOLS, "gemini", response, run_id="r", store=store)
    assert plain.calls[0].result.error_kind == "interrupted"
    rerun = await execute_tool_calls(
        TOOLS, "gemini", response, run_id="r2", store=store, on_interrupted="rerun_idempotent"
    )
    assert rerun.results == [
        {"functionResponse": {"name": "lookup", "id": "c1", "response": {"output": "K"}}}
    ]
    assert RUNS["lookup"] == 1


async def test_operations_cut_off_by_cancellation_leave_the_store_usable(store: RunStore) -> None:
    # Deadlines land anywhere in an operation, mid-query included (a connection the store
    # keeps for one-at-a-time use must then be handed back, not reused half-read).
    for n in range(50):
        with anyio.move_on_after(0.0001 * (n % 7)):
            await store.swap(f"cut-{n}", None, record())
    stored = await store.swap("after", None, record())
    assert stored is not None
    assert await store.get("after", "c1") == stored


async def test_a_redis_pending_index_with_members_it_did_not_write_still_lists(
    redis_url: str,
) -> None:
    import redis.asyncio as aioredis

    from toolwire.store.redis import RedisStore

    async with RedisStore(redis_url, prefix="garbage:") as store:
        executor = Executor(
            TOOLS, store=store, policy=Policy(Rule("ask", "*")), approver=DeferredApproval()
        )
        with pytest.raises(ApprovalPending):
            await executor.run(
                [make_call(TOOLS, "add", {"a": 1, "b": 2}, call_id="c1")], run_id="r"
            )
        client = aioredis.Redis.from_url(redis_url)
        await client.zadd("garbage:\x00pending", {"not json": 0, "[1, 2]": 0, '"x"': 0})
        await client.aclose()
        [request] = await toolwire.pending(store=store)
        assert (request.run_id, request.call_id) == ("r", "c1")
