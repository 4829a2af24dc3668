"""Leases and approval deadlines on the store's clock (issue: a worker on a host whose clock is
minutes ahead must not take over a live worker's call). Redis and PostgreSQL tell their own
time (``TIME``, ``clock_timestamp()``); a SQLite file and memory are one host's, so theirs is
the host's. The skewed worker here is this process with ``time.time`` moved five minutes
ahead, talking to the store through an object of its own (a worker's own clock reading)."""

from __future__ import annotations

import itertools
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import pytest

import toolwire
from toolwire import Executor, RunStore, StoreUnavailable, ledger, make_call
from toolwire.runs.store._clock import REFRESH, StoreClock

pytestmark = pytest.mark.anyio
SKEW = 300.0
_prefixes = itertools.count()


@pytest.fixture(params=["redis", "postgres"])
async def store_pair(
    request: pytest.FixtureRequest,
) -> AsyncIterator[tuple[RunStore, RunStore]]:
    """Two handles on one store: one worker's and the other's."""
    if request.param == "redis":
        from toolwire.store.redis import RedisStore

        url = request.getfixturevalue("redis_url")
        prefix = f"clock:{next(_prefixes)}:"
        async with RedisStore(url, prefix=prefix) as one, RedisStore(url, prefix=prefix) as two:
            yield one, two
    else:
        from toolwire.store.postgres import PostgresStore

        url = request.getfixturevalue("postgres_url")
        prefix = f"clock{next(_prefixes)}_"
        async with (
            PostgresStore(url, prefix=prefix) as one,
            PostgresStore(url, prefix=prefix) as two,
        ):
            yield one, two


def skewed(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    real: Callable[[], float] = time.time
    monkeypatch.setattr(time, "time", lambda: real() + seconds)


async def test_the_store_tells_its_own_time(store_pair: tuple[RunStore, RunStore]) -> None:
    one, _ = store_pair
    told = await one.now()  # type: ignore[attr-defined]
    assert abs(told - time.time()) < 5  # the test's servers run on this host


async def test_a_worker_whose_clock_is_minutes_ahead_takes_over_no_live_call(
    store_pair: tuple[RunStore, RunStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    one, two = store_pair
    runs: list[int] = []
    started, release = anyio.Event(), anyio.Event()

    @toolwire.tool(idempotent=True)
    async def charge(amount: int) -> str:
        """Charge a card (may run again after its worker stopped: idempotent)."""
        runs.append(amount)
        started.set()
        await release.wait()
        return f"charged {amount}"

    def worker(store: RunStore) -> Executor:
        return Executor(
            [charge],
            store=store,
            lease=1.5,
            on_interrupted="rerun_idempotent",
            wait_for_running=0,
        )

    call = make_call(worker(one).toolset, "charge", {"amount": 7}, call_id="c1")
    outcomes: list[Any] = []

    async def live_worker() -> None:
        outcomes.extend(await worker(one).run([call], run_id="run_skew"))

    async with anyio.create_task_group() as group:
        group.start_soon(live_worker)
        await started.wait()
        skewed(monkeypatch, SKEW)  # from here on, this host's clock is five minutes ahead
        await anyio.sleep(1.0)  # the live worker renews its lease meanwhile
        record = await ledger.record(two, "run_skew", "c1")
        assert record is not None
        # judged by the skewed host clock, the live lease would look run out minutes ago...
        assert not ledger.held(record, time.time())
        # ...judged by the store's, it is held
        assert ledger.held(record, await ledger.store_time(two))
        (seen,) = await worker(two).run([call], run_id="run_skew")
        assert "still running" in seen.result.text
        assert runs == [7]
        release.set()
    assert outcomes[0].result.text == "charged 7"
    (replayed,) = await worker(two).run([call], run_id="run_skew")
    assert replayed.result.text == "charged 7"
    assert runs == [7]


async def test_an_approval_deadline_is_judged_by_the_store_not_the_deciders_clock(
    store_pair: tuple[RunStore, RunStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    one, two = store_pair

    @toolwire.tool
    def wire_money(amount: int) -> str:
        """Send money."""
        return f"sent {amount}"

    asking = Executor(
        [wire_money],
        store=one,
        policy=toolwire.Policy(toolwire.Rule("ask", "wire_money")),
        approver=toolwire.DeferredApproval(),
        approval_ttl=120,
    )
    call = make_call(asking.toolset, "wire_money", {"amount": 3}, call_id="c1")
    with pytest.raises(toolwire.ApprovalPending):
        await asking.run([call], run_id="run_ttl")
    skewed(monkeypatch, SKEW)  # the approver's host is five minutes ahead: past the ttl by it
    await toolwire.decide("run_ttl", "c1", toolwire.allow(), store=two)
    (outcome,) = await Executor([wire_money], store=two).run([call], run_id="run_ttl")
    assert outcome.result.text == "sent 3"


async def test_a_calls_trail_is_in_the_stores_time_whatever_the_deciders_clock_says(
    store_pair: tuple[RunStore, RunStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Requested, decided, claimed and finished are all read on the store's clock, so the
    trail keeps its order (and a duration is never negative) even when the decider's host
    clock is minutes behind the store's (the same holds, by less, for the error of a first
    reading of the store's clock)."""
    one, two = store_pair

    @toolwire.tool
    def wire_money(amount: int) -> str:
        """Send money."""
        return f"sent {amount}"

    policy = toolwire.Policy(toolwire.Rule("ask", "wire_money"))
    asking = Executor([wire_money], store=one, policy=policy, approver=toolwire.DeferredApproval())
    call = make_call(asking.toolset, "wire_money", {"amount": 3}, call_id="c1")
    with pytest.raises(toolwire.ApprovalPending):
        await asking.run([call], run_id="run_trail")
    skewed(monkeypatch, -SKEW)  # every host from here on is five minutes behind the store
    await toolwire.decide("run_trail", "c1", toolwire.allow(), store=two)
    (outcome,) = await Executor([wire_money], store=two, policy=policy).run(
        [call], run_id="run_trail"
    )
    assert outcome.result.text == "sent 3"
    [trail] = await toolwire.history("run_trail", store=two)
    assert trail.requested is not None
    assert trail.decided is not None
    assert trail.claimed is not None
    assert trail.finished is not None
    assert trail.requested["at"] <= trail.decided["at"] <= trail.claimed["at"]
    assert trail.claimed["at"] <= trail.finished["at"]
    assert trail.finished["duration"] >= 0


async def test_the_clock_reads_the_store_once_per_refresh_and_carries_it_forward(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reads: list[float] = []

    class Told:
        async def now(self) -> float:
            reads.append(time.monotonic())
            return 1_000_000.0 + time.monotonic()  # a store far behind this host

    store = Told()  # the clock holds its store weakly: the test keeps it
    clock = StoreClock(store)
    first = await clock.now()
    assert abs(first - (1_000_000.0 + time.monotonic())) < 1
    skewed(monkeypatch, SKEW)
    assert abs(await clock.now() - first) < 1  # the host's wall clock moves nothing
    assert len(reads) == 1
    real = time.monotonic
    monkeypatch.setattr(time, "monotonic", lambda: real() + REFRESH)
    await clock.now()
    assert len(reads) == 2

    class Broken:
        def __init__(self, told: Any) -> None:
            self.told = told

        async def now(self) -> Any:
            if isinstance(self.told, Exception):
                raise self.told
            return self.told

    # never read: the store is unavailable, never judged by this host's clock instead
    for told in (ConnectionError("down"), float("nan"), float("inf"), True, "1e12", None):
        broken = Broken(told)
        with pytest.raises(StoreUnavailable, match="clock cannot be read") as raised:
            await StoreClock(broken).now()
        assert "the store is gone" not in str(raised.value)
    # read once: a failed reading carries the last one on
    flaky = Broken(1_000_000.0)
    carried = StoreClock(flaky)
    await carried.now()
    flaky.told = ConnectionError("down")
    monkeypatch.setattr(time, "monotonic", lambda: real() + 2 * REFRESH)
    # read at monotonic + REFRESH (patched above), so REFRESH later by the monotonic clock
    assert abs(await carried.now() - (1_000_000.0 + REFRESH)) < 1
    assert abs(StoreClock(object()).current() - time.time()) < 1  # a store without a clock
