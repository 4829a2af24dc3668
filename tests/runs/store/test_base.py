"""``toolwire.runs.store._base``: the queue query every store pages by. The approval queue
paged by place (keyset pagination), on every store: oldest or newest first, one principal's or
one run's, each page after the last place of the page before, so paging through gives every
waiting call once, in order, however deep the page; a damaged record keeps its place;
``toolwire.pending`` and ``ledger.waiting`` page the same way."""

from __future__ import annotations

from typing import Any

import pytest

import toolwire
from toolwire import RunStore, ledger
from toolwire.runs.store._base import place_of
from toolwire.store import CallRecord, DamagedRecord, QueuePlace

pytestmark = pytest.mark.anyio


def waiting_record(call_id: str, at: float, principal: str) -> CallRecord:
    request = {
        "exposed_name": "add",
        "tool_name": "add",
        "arguments": {"a": 1},
        "principal": principal,
        "principal_key": ledger.principal_key(principal),
        "requested_at": at,
        "reason": "asked",
    }
    return CallRecord(
        call_id=call_id, tool="add", fingerprint="f" * 16, state="pending", request=request
    )


async def fill(store: RunStore) -> list[QueuePlace]:
    """25 waiting calls over 5 runs, three put up at the same time; their places, in order."""
    places = []
    for n in range(25):
        run, call_id = f"run_{n % 5}", f"call_{n:02d}"
        at = 1_000.0 + (0 if n in (7, 8, 9) else n)  # a tie of three
        principal = "alice" if n % 2 else "bob"
        assert await store.swap(run, None, waiting_record(call_id, at, principal)) is not None
        places.append(QueuePlace(at, run, call_id))
    return places


async def pages(store: RunStore, limit: int, **options: Any) -> list[list[QueuePlace]]:
    found, after = [], None
    while True:
        page = await store.pending(limit=limit, after=after, **options)
        places = [place_of(run, item) for run, item in page]
        assert None not in places
        found.append([p for p in places if p is not None])
        if len(page) < limit:
            return found
        after = found[-1][-1]


def in_store_order(found: list[QueuePlace], expected: list[QueuePlace]) -> None:
    """Every place once; by time first (ties are ordered by each store's own index)."""
    assert sorted(found) == sorted(expected)
    assert [p.since for p in found] == sorted(p.since for p in expected)


async def test_paging_oldest_first_gives_every_call_once_in_order(store: RunStore) -> None:
    expected = await fill(store)
    found = await pages(store, 4)
    flat = [place for page in found for place in page]
    in_store_order(flat, expected)
    assert all(len(page) == 4 for page in found[:-1])
    # the same page twice is the same page: a place names where the next one starts
    again = await store.pending(limit=4, after=found[2][-1])
    assert [place_of(run, item) for run, item in again] == found[3]


async def test_paging_newest_first_is_the_same_queue_reversed(store: RunStore) -> None:
    expected = await fill(store)
    oldest = [p for page in await pages(store, 6) for p in page]
    newest = [p for page in await pages(store, 6, newest_first=True) for p in page]
    assert newest == oldest[::-1]
    assert sorted(newest) == sorted(expected)


async def test_one_principals_and_one_runs_queue_page_too(store: RunStore) -> None:
    expected = await fill(store)
    alices = [
        p
        for page in await pages(store, 3, principal_key=ledger.principal_key("alice"))
        for p in page
    ]
    in_store_order(alices, [p for n, p in enumerate(expected) if n % 2])
    run_2 = [p for page in await pages(store, 2, run_id="run_2", newest_first=True) for p in page]
    assert sorted(run_2) == sorted(p for p in expected if p.run_id == "run_2")
    assert [p.since for p in run_2] == sorted((p.since for p in run_2), reverse=True)


async def test_a_decided_call_leaves_the_queue_without_moving_the_others(store: RunStore) -> None:
    expected = await fill(store)
    first = await store.pending(limit=5)
    run, decided = first[2]
    assert isinstance(decided, CallRecord)
    assert await store.swap(run, decided, decided.with_(state="approved")) is not None
    rest = await store.pending(limit=50, after=place_of(*first[-1]))
    assert len(first) + len(rest) == len(expected)  # nothing skipped, nothing twice


async def test_ledger_and_toolwire_pending_page_by_place(store: RunStore) -> None:
    await fill(store)
    page = await ledger.waiting(store, limit=10, newest_first=True)
    assert len(page.requests) == 10
    assert page.next is not None
    following = await ledger.waiting(store, limit=10, newest_first=True, after=page.next)
    last = await ledger.waiting(store, limit=10, newest_first=True, after=following.next)
    assert last.next is None  # 5 left: the last page
    assert len(last.requests) == 5
    listed = page.requests + following.requests + last.requests
    assert len({(r.run_id, r.call_id) for r in listed}) == 25
    requests = await toolwire.pending(store=store, limit=7)
    more = await toolwire.pending(store=store, limit=7, after=QueuePlace.of(requests[-1]))
    assert not {(r.run_id, r.call_id) for r in requests} & {(r.run_id, r.call_id) for r in more}
    with pytest.raises(toolwire.ConfigurationError, match="QueuePlace"):
        await ledger.waiting(store, after=("1", "r", "c"))  # type: ignore[arg-type]


def test_a_damaged_records_place_comes_from_the_index() -> None:
    damaged = DamagedRecord("run", "c1", "cannot be read", 12.5)
    assert place_of("run", damaged) == QueuePlace(12.5, "run", "c1")
    assert place_of("run", DamagedRecord("run", "c1", "cannot be read")) is None
