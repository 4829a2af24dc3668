"""The console in a real browser (Debian's chromium, driven by Playwright; no browser download):
a paused turn's calls approved, denied with a reason, and edited after an invalid edit was
refused, then the turn resumed; a hostile argument shown as text; the list updating itself."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import pytest
from inbox_tools import RAN, delete, executor, pause, served_inbox, transfer

from browser import chromium
from toolwire import SQLiteStore

HOSTILE = '<script>window.pwned = 1</script><img src=x onerror="alert(1)">'


@pytest.fixture
def browser_page() -> Iterator[Any]:
    executable = chromium()
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(20_000)
            yield page
        finally:
            browser.close()


def on_store(database: Path, work: Callable[[SQLiteStore], Awaitable[Any]]) -> Any:
    """Run ``work`` against the database in a thread of its own (Playwright's sync API holds
    this thread's event loop)."""

    async def opened() -> Any:
        store = SQLiteStore(database)
        try:
            return await work(store)
        finally:
            store.close()

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(anyio.run, opened).result(timeout=120)


TURN = [transfer(10, call_id="c1"), delete(4, call_id="c2"), transfer(900, call_id="c3")]


def test_approve_deny_and_edit_in_the_browser_then_the_turn_resumes(
    browser_page: Any, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    page = browser_page
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    database = tmp_path / "runs.db"
    on_store(database, lambda store: pause(store, "turn-1", TURN, principal="alice"))
    hostile = transfer(1, call_id="h1", note=HOSTILE)
    on_store(database, lambda store: pause(store, "turn-2", [hostile], principal="mallory"))

    with served_inbox(f"sqlite:///{database}") as url:
        page.goto(url)  # the token is traded for a cookie, and leaves the address bar
        assert "token=" not in page.url
        rows = page.locator("tr.request")
        expect(rows).to_have_count(4)
        hostile_row = rows.filter(has_text="mallory")
        expect(hostile_row.locator("code.arguments")).to_contain_text("<script>window.pwned")
        page.screenshot(path=str(tmp_path / "list.png"), full_page=True)

        # The list updates itself when a new request comes in.
        on_store(database, lambda store: pause(store, "turn-3", [delete(9)], principal="bob"))
        expect(rows).to_have_count(5)

        # Approve.
        rows.filter(has_text='"amount": 10,').locator("a.open").click()
        expect(page.locator("h1")).to_contain_text("transfer (c1)")
        page.screenshot(path=str(tmp_path / "request.png"), full_page=True)
        page.locator("form.allow button").click()
        expect(page.locator("tr.call", has_text="c1")).to_contain_text("allow by")

        # Deny, with a reason.
        page.goto(url.partition("?")[0])
        rows.filter(has_text='"customer": 4').locator("a.open").click()
        page.locator("form.deny input[name=reason]").fill("customer 4 is protected")
        page.locator("form.deny button").click()
        expect(page.locator("tr.call", has_text="c2")).to_contain_text("customer 4 is protected")

        # Edit: an invalid edit is refused with its fields, then a valid one is accepted.
        page.goto(url.partition("?")[0])
        rows.filter(has_text='"amount": 900').locator("a.open").click()
        edited = page.locator("textarea[name=arguments]")
        edited.fill(json.dumps({"amount": 5000, "currency": "GBP"}))
        page.locator("form.edit button").click()
        problem = page.locator(".problem")
        expect(problem).to_contain_text("$.amount")
        expect(problem).to_contain_text("$.currency")
        expect(edited).to_have_value(json.dumps({"amount": 5000, "currency": "GBP"}))
        page.screenshot(path=str(tmp_path / "refused-edit.png"), full_page=True)
        edited.fill(json.dumps({"amount": 90, "currency": "EUR"}))
        page.locator("form.edit button").click()
        expect(page.locator("tr.call", has_text="c3")).to_contain_text("allow (edited) by")

        # The hostile argument is text on its own page too, and nothing of it ran.
        page.goto(url.partition("?")[0])
        rows.filter(has_text="mallory").locator("a.open").click()
        expect(page.locator("#arguments")).to_contain_text(json.dumps(HOSTILE))
        page.screenshot(path=str(tmp_path / "hostile.png"), full_page=True)
        assert page.evaluate("window.pwned") is None
        assert dialogs == []

    outcomes = on_store(
        database, lambda store: executor(store).run(TURN, run_id="turn-1", principal="alice")
    )
    assert [outcome.result.text for outcome in outcomes] == [
        "moved 10 EUR",
        "Denied: customer 4 is protected.",
        "moved 90 EUR",
    ]
    assert RAN == {"transfer 10 EUR": 1, "transfer 90 EUR": 1}
    for name in ("list", "request", "refused-edit", "hostile"):
        assert (tmp_path / f"{name}.png").stat().st_size > 0
