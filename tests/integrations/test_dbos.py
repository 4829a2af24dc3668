"""Governed tool calls inside DBOS workflows, on SQLite and PostgreSQL, in real processes.

Each test starts the application of ``dbos_app.py`` in processes of its own (DBOS is one
instance per process): the workflow's process is killed with SIGKILL mid-call and another
recovers it; a decision taken in this process (which runs no DBOS) wakes the workflow through
DBOS's client; worker processes (three; eight in the deep run) take calls from a DBOS queue.
The tools append a line per execution to a ledger file, so every execution is counted,
whichever process ran it.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("dbos")

import toolwire
from toolwire.integrations import dbos as toolwire_dbos
from toolwire.store import from_url

APP = Path(__file__).parent / "dbos_app.py"
DEADLINE = 90.0
"""Seconds a step of a test may take before it fails (a hang)."""
INTERRUPTED = "it is not run again, so whether it took effect is unknown."

_databases = itertools.count()


@pytest.fixture(params=["sqlite", "postgres"])
def app_env(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    """Where the application keeps its state: DBOS's system database and toolwire's run
    store, both on SQLite files or both on one PostgreSQL server (databases of their own)."""
    if request.param == "sqlite":
        system_db = f"sqlite:///{tmp_path / 'dbos.sqlite'}"
        store = f"sqlite:///{tmp_path / 'runs.db'}"
    else:
        import psycopg

        server: str = request.getfixturevalue("postgres_url")
        n = next(_databases)
        with psycopg.connect(server, autocommit=True) as connection:
            connection.execute(f"CREATE DATABASE dbos_{n}")
            connection.execute(f"CREATE DATABASE runs_{n}")
        base = server.rsplit("/", 1)[0]
        system_db, store = f"{base}/dbos_{n}", f"{base}/runs_{n}"
    return {"TW_DIR": str(tmp_path), "TW_SYSTEM_DB": system_db, "TW_STORE": store}


_processes: list[subprocess.Popen[str]] = []


@pytest.fixture(autouse=True)
def _no_process_left() -> Iterator[None]:
    """Every process a test started is gone after it, whatever the test asserted."""
    yield
    while _processes:
        process = _processes.pop()
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=DEADLINE)


def _start(env: dict[str, str], executor: str, *args: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, str(APP), *args],
        env={**os.environ, **env, "TW_EXECUTOR": executor},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _processes.append(process)
    return process


def _result(process: subprocess.Popen[str]) -> Any:
    try:
        out, err = process.communicate(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        pytest.fail(f"the workflow's process hung:\n{err[-3000:]}")
    assert process.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def _ledger(env: dict[str, str]) -> list[list[str]]:
    path = Path(env["TW_DIR"]) / "ledger"
    return [line.split() for line in path.read_text().splitlines()] if path.exists() else []


def _started(env: dict[str, str]) -> Counter[str]:
    return Counter(tag for kind, tag, *_ in _ledger(env) if kind == "start")


def _wait_for(condition: Any, what: str) -> Any:
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")


async def _waiting(env: dict[str, str]) -> list[toolwire.ApprovalRequest]:
    async with from_url(env["TW_STORE"]) as store:
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            found = await toolwire.pending(store=store)
            if found:
                return found
            await anyio.sleep(0.05)
    pytest.fail("no call came to wait for approval")


async def _decide(env: dict[str, str], request: toolwire.ApprovalRequest, decision: Any) -> None:
    """Decide from this process, which runs no DBOS: the ledger is written, and the waiting
    workflow is woken through DBOS's client."""
    toolwire_dbos.use_system_database(env["TW_SYSTEM_DB"])
    try:
        async with from_url(env["TW_STORE"]) as store:
            await toolwire.decide(
                request.run_id, request.call_id, decision, store=store, by="tester"
            )
    finally:
        toolwire_dbos.use_system_database(None)


@pytest.mark.anyio
@pytest.mark.parametrize(
    "app_env",
    ["sqlite", pytest.param("postgres", marks=pytest.mark.deep)],  # the README's run: one
    indirect=True,
)
async def test_a_workflow_killed_mid_call_is_recovered_and_no_tool_runs_twice(
    app_env: dict[str, str],
) -> None:
    hang = Path(app_env["TW_DIR"]) / "hang"
    hang.touch()
    first = _start(app_env, "executor-1", "start", "agent-1")
    # ``a`` has finished (its step is checkpointed), ``b`` hangs mid-call: kill the process.
    _wait_for(
        lambda: {("end", "a"), ("start", "b")} <= {(k, t) for k, t, *_ in _ledger(app_env)},
        "a to finish and b to start",
    )
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=DEADLINE)
    hang.unlink()

    # The same executor starts again: DBOS recovers the workflow and replays it.
    second = _start(app_env, "executor-1", "recover", "agent-1")
    [request] = await _waiting(app_env)  # turn 2: ``c`` ran, ``wipe`` waits for a human
    assert (request.exposed_name, request.arguments) == ("wipe", {"path": "/data"})
    await _decide(app_env, request, toolwire.allow(arguments={"path": "/data/tmp"}))
    texts = _result(second)

    assert texts[0] == "counted a"  # answered from the checkpoint, not run again
    assert texts[1].endswith(INTERRUPTED)  # cut off mid-run: never run a second time
    assert texts[2:] == ["counted c", "wiped /data/tmp"]  # the edited arguments ran
    assert _started(app_env) == {"a": 1, "b": 1, "c": 1, "wipe:/data/tmp": 1}


@pytest.mark.anyio
async def test_a_denied_call_never_runs_and_the_deny_wakes_the_workflow(
    app_env: dict[str, str],
) -> None:
    process = _start(app_env, "executor-1", "start", "agent-2")
    [request] = await _waiting(app_env)
    await _decide(app_env, request, toolwire.deny("not this one"))
    texts = _result(process)
    assert texts[:3] == ["counted a", "slow b", "counted c"]
    assert texts[3] == "Denied: not this one."
    assert _started(app_env) == {"a": 1, "b": 1, "c": 1}


@pytest.mark.anyio
@pytest.mark.parametrize(
    "app_env", ["sqlite", pytest.param("postgres", marks=pytest.mark.deep)], indirect=True
)
async def test_a_call_copying_an_injected_value_is_denied_inside_the_workflow(
    app_env: dict[str, str],
) -> None:
    texts = _result(_start(app_env, "executor-1", "injected", "injected-1"))
    assert texts[0].startswith("Meeting moved.")
    assert texts[1].startswith("Denied: argument 'path' came from the output of read_note")
    assert texts[2] == "wiped /data"
    assert _started(app_env) == {"read:monday": 1, "wipe:/data": 1}


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("app_env", "processes"),
    [  # the README's run: three workers on SQLite; the deep run: three and eight on each
        pytest.param("sqlite", 3, id="sqlite-3"),
        pytest.param("postgres", 3, marks=pytest.mark.deep, id="postgres-3"),
        pytest.param("sqlite", 8, marks=pytest.mark.deep, id="sqlite-8"),
        pytest.param("postgres", 8, marks=pytest.mark.deep, id="postgres-8"),
    ],
    indirect=["app_env"],
)
async def test_workers_share_a_queue_and_each_call_runs_once(
    app_env: dict[str, str], processes: int
) -> None:
    calls = 4 * processes
    workers = [_start(app_env, f"worker-{i}", "worker") for i in range(processes)]
    try:
        for worker in workers:
            assert worker.stdout is not None
            assert worker.stdout.readline().strip() == "ready"
        texts = _result(_start(app_env, "parent", "fanout", "fanout-1", str(calls)))
    finally:
        for worker in workers:
            worker.communicate(timeout=DEADLINE)  # stdin closed: it stops
    assert texts == [f"counted q{i}" for i in range(calls)]
    started = _started(app_env)
    assert started == {f"q{i}": 1 for i in range(calls)}  # every call ran, and only once
    pids = {pid for kind, _, pid, _ in _ledger(app_env) if kind == "start"}
    assert len(pids) > 1  # spread over the worker processes
    if app_env["TW_SYSTEM_DB"].startswith("postgresql"):
        # The queue's global limit (4) holds across processes on PostgreSQL; on SQLite,
        # DBOS cannot lock the queue's rows and says so (a warning), so it is not asserted.
        assert _most_at_once(_ledger(app_env)) <= 4


def _most_at_once(ledger: list[list[str]]) -> int:
    """The most calls running at one time, by the tools' own start and end times."""
    events = sorted((float(at), 1 if kind == "start" else -1) for kind, _, _, at in ledger)
    running = most = 0
    for _, step in events:
        running += step
        most = max(most, running)
    return most


@pytest.mark.anyio
@pytest.mark.parametrize("app_env", ["sqlite"], indirect=True)
async def test_a_run_forgotten_while_a_call_waits_ends_the_workflow_and_nothing_reruns(
    app_env: dict[str, str],
) -> None:
    process = _start(app_env, "executor-1", "forgetful", "forgetful-1")
    [request] = await _waiting(app_env)  # ``wipe`` waits, and the run is read again
    _wait_for(lambda: ("end", "c") in {(k, t) for k, t, *_ in _ledger(app_env)}, "c to run")
    # The store forgets the run (its ttl passed): nothing says any more that ``c`` ran.
    with sqlite3.connect(Path(app_env["TW_DIR"]) / "runs.db") as db:
        db.execute("UPDATE toolwire_runs SET expires_at = 1 WHERE run_id = ?", (request.run_id,))
    [said] = _result(process)
    assert said.startswith(f"RunNotFound: run {request.run_id!r} is not in its store")
    assert _started(app_env) == {"c": 1}  # never run again
