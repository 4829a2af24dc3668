"""The approval console over every store, through httpx's ASGI transport: listing, deciding
(API and forms), the security checks (401, 403, 409, escaping, headers) and the turn resumed
after the decisions."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import pytest
from inbox_tools import (
    API,
    RAN,
    TOOLS,
    client,
    console_for,
    delete,
    executor,
    pause,
    transfer,
)
from starlette.applications import Starlette
from starlette.routing import Mount

import toolwire
from toolwire import ConfigurationError, MemoryStore, RunStore, make_call
from toolwire.inbox import app

pytestmark = pytest.mark.anyio


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    assert found is not None, page
    return found.group(1)


def version_of(page: str) -> str:
    found = re.search(r'name="version" value="(\d+)"', page)
    assert found is not None, page
    return found.group(1)


async def post_form(http: Any, url: str, **fields: str) -> Any:
    page = await http.get(url)
    form = {"csrf": csrf_of(page.text), "version": version_of(page.text), **fields}
    return await http.post(url, data=form)


# -- listing -------------------------------------------------------------------------------------


async def test_pending_lists_newest_first_with_filters_and_pages(store: RunStore) -> None:
    await pause(store, "r1", [delete(1)], principal="alice")
    await pause(store, "r2", [transfer(5)], principal={"team": "ops"})
    await pause(store, "r3", [delete(3), transfer(7, call_id="c2")], principal="alice")
    async with client(console_for(store)) as http:
        everything = (await http.get("/api/pending")).json()
        assert [(item["run_id"], item["call_id"]) for item in everything["items"]][-2:] == [
            ("r2", "c1"),
            ("r1", "c1"),
        ]
        assert {item["run_id"] for item in everything["items"][:2]} == {"r3"}
        assert len(everything["items"]) == 4
        assert everything["next"] is None
        [first] = [item for item in everything["items"] if item["run_id"] == "r1"]
        assert first["arguments"] == {"customer": 1}
        assert first["principal"] == "alice"
        assert first["reason"] == "money and deletions need a human"
        assert first["tool_name"] == "delete_customer"
        assert first["age"] >= 0

        alice = (await http.get("/api/pending", params={"principal": "alice"})).json()
        assert {item["run_id"] for item in alice["items"]} == {"r1", "r3"}
        ops = (await http.get("/api/pending", params={"principal": '{"team": "ops"}'})).json()
        assert [item["run_id"] for item in ops["items"]] == ["r2"]
        transfers = (await http.get("/api/pending", params={"tool": "transfer"})).json()
        assert [item["run_id"] for item in transfers["items"]] == ["r3", "r2"]

        page_one = (await http.get("/api/pending", params={"limit": 3})).json()
        assert len(page_one["items"]) == 3
        assert page_one["next"] is not None
        following = {"limit": 3, "after": page_one["next"]}
        page_two = (await http.get("/api/pending", params=following)).json()
        assert [item["run_id"] for item in page_two["items"]] == ["r1"]
        assert page_two["next"] is None
        for forged in ("nonsense", "W10=", "WzEsMiwzXQ=="):  # not a token, [], [1,2,3]
            refused = await http.get("/api/pending", params={"after": forged})
            assert refused.status_code == 400

        bad = await http.get("/api/pending", params={"limit": 0})
        assert bad.status_code == 400
        assert bad.json()["error"]["code"] == "bad_query"

        listed = await http.get("/", params={"tool": "delete_customer"})
        assert listed.status_code == 200
        assert listed.text.count('class="request"') == 2
        assert 'data-poll="/fragments/pending?tool=delete_customer"' in listed.text
        fragment = await http.get("/fragments/pending", params={"tool": "delete_customer"})
        assert fragment.text.count('class="request"') == 2


async def test_a_run_lists_its_calls_trails(store: RunStore) -> None:
    await pause(store, "r", [delete(1), delete(2, call_id="c2")])
    async with client(console_for(store)) as http:
        run = (await http.get("/api/runs/r")).json()
        assert [call["call_id"] for call in run["calls"]] == ["c1", "c2"]
        assert run["calls"][0]["requested"]["reason"] == "money and deletions need a human"
        assert run["calls"][0]["decided"] is None
        paged = (await http.get("/api/runs/r", params={"limit": 1, "offset": 1})).json()
        assert [call["call_id"] for call in paged["calls"]] == ["c2"]
        assert paged["total"] == 2
        missing = await http.get("/api/runs/nothing")
        assert missing.status_code == 404
        assert missing.json()["error"]["code"] == "no_run"
        assert (await http.get("/runs/nothing")).status_code == 404


# -- deciding, then resuming the turn ----------------------------------------------------------


async def test_an_edit_is_refused_with_field_errors_then_accepted_and_runs_once(
    store: RunStore,
) -> None:
    await pause(store, "r", [transfer(900)])
    url = "/api/runs/r/calls/c1/decision"
    async with client(console_for(store, "carol"), **API) as http:
        refused = await http.post(
            url, json={"decision": "allow", "arguments": {"amount": 5000, "currency": "GBP"}}
        )
        assert refused.status_code == 422
        error = refused.json()["error"]
        assert error["code"] == "invalid_arguments"
        assert {field["path"] for field in error["fields"]} == {"$.amount", "$.currency"}
        assert len((await http.get("/api/pending")).json()["items"]) == 1  # nothing recorded

        accepted = await http.post(
            url, json={"decision": "allow", "arguments": {"amount": 90, "currency": "EUR"}}
        )
        assert accepted.status_code == 200, accepted.text
        assert accepted.json()["by"] == "carol"
        assert accepted.json()["state"] == "approved"
        assert len((await http.get("/api/pending")).json()["items"]) == 0

    [outcome] = await executor(store).run([transfer(900)], run_id="r", principal="alice")
    assert outcome.result.text == "moved 90 EUR"
    assert RAN == {"transfer 90 EUR": 1}
    [again] = await executor(store).run([transfer(900)], run_id="r", principal="alice")
    assert again.from_store
    assert RAN == {"transfer 90 EUR": 1}
    [trail] = await toolwire.history("r", store=store)
    assert trail.decided is not None
    assert (trail.decided["by"], trail.decided["edited"]) == ("carol", True)
    assert trail.finished is not None


async def test_forms_approve_deny_and_edit_and_the_turn_resumes(store: RunStore) -> None:
    response = {
        "parts": [
            {"functionCall": {"name": "transfer", "args": {"amount": 10, "currency": "EUR"}}},
            {"functionCall": {"name": "delete_customer", "args": {"customer": 4}}},
            {"functionCall": {"name": "transfer", "args": {"amount": 20, "currency": "USD"}}},
        ]
    }
    turn = {"store": store, "policy": executor(store).policy, "run_id": "r", "principal": "al"}
    approver = toolwire.DeferredApproval()
    with pytest.raises(toolwire.ApprovalPending) as waiting:
        await toolwire.execute_tool_calls(TOOLS, "gemini", response, approver=approver, **turn)
    ten, four, twenty = waiting.value.pending
    async with client(console_for(store, {"user": "dana"})) as http:

        def url(call_id: str) -> str:
            return f"/runs/r/calls/{call_id}"

        approved = await post_form(http, url(ten.call_id), action="allow")
        assert approved.status_code == 303
        assert approved.headers["location"] == "/runs/r"
        denied = await post_form(http, url(four.call_id), action="deny", reason="keep them")
        assert denied.status_code == 303
        invalid = await post_form(
            http, url(twenty.call_id), action="edit", arguments='{"amount": -1, "currency": "USD"}'
        )
        assert invalid.status_code == 422
        assert "$.amount" in invalid.text
        assert "-1 is less than the minimum of 1" in invalid.text
        assert "&quot;amount&quot;: -1" in invalid.text  # the edit is kept for fixing
        not_json = await post_form(http, url(twenty.call_id), action="edit", arguments="{amount")
        assert not_json.status_code == 422
        for not_an_edit in ("null", "[1]"):  # never taken for a plain approve
            refused = await post_form(
                http, url(twenty.call_id), action="edit", arguments=not_an_edit
            )
            assert refused.status_code == 422
        edited = await post_form(
            http, url(twenty.call_id), action="edit", arguments='{"amount": 2, "currency": "USD"}'
        )
        assert edited.status_code == 303
        history = (await http.get("/runs/r")).text
        assert history.count("by {&quot;user&quot;: &quot;dana&quot;}") == 3
        assert "deny by" in history
        assert "keep them" in history
        assert "allow (edited) by" in history

    outcome = await toolwire.execute_tool_calls(TOOLS, "gemini", response, **turn)
    texts = [call.result.text for call in outcome.calls]
    assert texts == ["moved 10 EUR", "Denied: keep them.", "moved 2 USD"]
    assert RAN == {"transfer 10 EUR": 1, "transfer 2 USD": 1}  # the denied one never ran


async def test_halt_halts_the_run_and_every_call_still_waiting(store: RunStore) -> None:
    await pause(store, "r", [delete(1), delete(2, call_id="c2")])
    async with client(console_for(store)) as http:
        halted = await post_form(http, "/runs/r/calls/c1", action="halt", reason="stop")
        assert halted.status_code == 303
        assert len((await http.get("/api/pending")).json()["items"]) == 0
    outcomes = await executor(store).run(
        [delete(1), delete(2, call_id="c2")], run_id="r", principal="alice"
    )
    assert any(outcome.halted for outcome in outcomes)
    assert [outcome.result.error_kind for outcome in outcomes] == ["approval_denied"] * 2
    assert not RAN


# -- the ledger's state decides: 409 ------------------------------------------------------------


async def test_deciding_twice_is_a_409_and_the_first_decision_holds(store: RunStore) -> None:
    await pause(store, "r", [delete(1)])
    url = "/api/runs/r/calls/c1/decision"
    async with client(console_for(store), **API) as http:
        assert (await http.post(url, json={"decision": "deny", "reason": "no"})).status_code == 200
        for again in ({"decision": "deny", "reason": "no"}, {"decision": "allow"}):
            twice = await http.post(url, json=again)
            assert twice.status_code == 409
            assert twice.json()["error"]["code"] == "already_decided"
        page = await http.get("/runs/r/calls/c1")
        assert "no longer waiting" in page.text
        assert 'name="csrf"' not in page.text  # no forms for a decided call
    [outcome] = await executor(store).run([delete(1)], run_id="r", principal="alice")
    assert outcome.result.error_kind == "approval_denied"
    assert not RAN


async def test_a_call_that_ran_or_does_not_exist_is_not_decided(store: RunStore) -> None:
    await pause(store, "r", [delete(1)])
    await toolwire.decide("r", "c1", toolwire.allow(), store=store)
    await executor(store).run([delete(1)], run_id="r", principal="alice")
    url = "/api/runs/r/calls/c1/decision"
    async with client(console_for(store), **API) as http:
        ran = await http.post(url, json={"decision": "deny"})
        assert ran.status_code == 409
        unknown = await http.post("/api/runs/r/calls/nope/decision", json={"decision": "deny"})
        assert unknown.status_code == 404
        assert unknown.json()["error"]["code"] == "no_call"
    assert RAN == {"delete 1": 1}


async def test_a_decision_for_a_version_not_current_is_a_409(store: RunStore) -> None:
    await pause(store, "r", [delete(1)])
    record = await store.get("r", "c1")
    assert record is not None
    async with client(console_for(store), **API) as http:
        stale = await http.post(
            "/api/runs/r/calls/c1/decision",
            json={"decision": "allow", "version": record.version + 1},
        )
        assert stale.status_code == 409
        assert stale.json()["error"]["code"] == "changed"
        current = await http.post(
            "/api/runs/r/calls/c1/decision", json={"decision": "allow", "version": record.version}
        )
        assert current.status_code == 200


async def test_bad_decisions_are_400s(store: RunStore) -> None:
    await pause(store, "r", [delete(1)])
    url = "/api/runs/r/calls/c1/decision"
    async with client(console_for(store), **API) as http:
        for body, code in (
            ({"decision": "maybe"}, "bad_decision"),
            ({"decision": "deny", "arguments": {"customer": 2}}, "bad_decision"),
            ({"decision": "deny", "reason": 5}, "bad_decision"),
            ([1], "bad_decision"),
        ):
            answer = await http.post(url, json=body)
            assert (answer.status_code, answer.json()["error"]["code"]) == (400, code)
        not_json = await http.post(url, content=b"{", headers={"content-type": "text/plain"})
        assert not_json.status_code == 400
        array = await http.post(url, json={"decision": "allow", "arguments": [1]})
        assert array.status_code == 422
        assert len((await http.get("/api/pending")).json()["items"]) == 1


# -- who may decide: 401 and 403 ----------------------------------------------------------------


async def test_every_route_refuses_nobody_with_a_401() -> None:
    store = MemoryStore()
    await pause(store, "r", [delete(1)])
    async with client(console_for(store, None), **API) as http:
        for path in ("/", "/fragments/pending", "/runs/r", "/runs/r/calls/c1", "/api/pending"):
            assert (await http.get(path)).status_code == 401, path
        assert (await http.get("/api/runs/r")).json()["error"]["code"] == "unauthorized"
        answer = await http.post("/api/runs/r/calls/c1/decision", json={"decision": "allow"})
        assert answer.status_code == 401
        form = await http.post("/runs/r/calls/c1", data={"action": "allow"})
        assert form.status_code == 401
    assert len(await toolwire.pending(store=store)) == 1


async def test_an_async_authorize_is_awaited() -> None:
    store = MemoryStore()
    await pause(store, "r", [delete(1)])

    async def authorize(request: Any) -> str | None:
        return "erin" if request.headers.get("authorization") == "Bearer good" else None

    console = app(store, authorize=authorize)
    async with client(console, authorization="Bearer good", **API) as http:
        answer = await http.post("/api/runs/r/calls/c1/decision", json={"decision": "allow"})
        assert answer.json()["by"] == "erin"
    async with client(console, authorization="Bearer bad") as http:
        assert (await http.get("/api/pending")).status_code == 401


async def test_a_form_without_its_csrf_token_or_from_another_site_is_a_403() -> None:
    store = MemoryStore()
    await pause(store, "r", [delete(1)])
    url = "/runs/r/calls/c1"
    async with client(console_for(store, "bob")) as http:
        assert (await http.post(url, data={"action": "allow"})).status_code == 403
        bobs = csrf_of((await http.get(url)).text)
        other_site = await http.post(
            url, data={"action": "allow", "csrf": bobs}, headers={"origin": "https://evil.test"}
        )
        assert other_site.status_code == 403
    async with client(console_for(store, "mallory")) as http:
        assert (await http.post(url, data={"action": "allow", "csrf": bobs})).status_code == 403
    assert len(await toolwire.pending(store=store)) == 1


async def test_an_api_decision_without_the_header_is_a_403() -> None:
    store = MemoryStore()
    await pause(store, "r", [delete(1)])
    async with client(console_for(store)) as http:
        answer = await http.post("/api/runs/r/calls/c1/decision", json={"decision": "allow"})
        assert answer.status_code == 403
        assert answer.json()["error"]["code"] == "csrf"
    assert len(await toolwire.pending(store=store)) == 1


def test_authorize_is_required() -> None:
    with pytest.raises(TypeError):
        app(MemoryStore())  # type: ignore[call-arg]
    with pytest.raises(ConfigurationError):
        app(MemoryStore(), authorize=None)
    with pytest.raises(ConfigurationError):
        app(MemoryStore(), authorize=lambda request: "x", page_size=0)


# -- what the pages show ---------------------------------------------------------------------------


HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


async def test_a_hostile_argument_is_text_in_every_page() -> None:
    store = MemoryStore()
    call = make_call(
        TOOLS, "transfer", {"amount": 1, "currency": "EUR", "note": HOSTILE}, call_id="<b>c</b>"
    )
    await pause(store, "<i>run</i>", [call], principal=HOSTILE)
    async with client(console_for(store, HOSTILE)) as http:
        pages = [
            await http.get("/"),
            await http.get("/fragments/pending"),
            await http.get("/runs/%3Ci%3Erun%3C%2Fi%3E"),
            await http.get("/runs/%3Ci%3Erun%3C%2Fi%3E/calls/%3Cb%3Ec%3C%2Fb%3E"),
        ]
    for page in pages:
        assert page.status_code == 200, page.text
        assert "<script>alert" not in page.text
        assert "<img src=x" not in page.text
        assert "<i>run" not in page.text
        assert "&lt;script&gt;" in page.text or "&lt;i&gt;run" in page.text


async def test_every_response_carries_a_strict_content_security_policy() -> None:
    async with client(console_for(MemoryStore())) as http:
        for path in ("/", "/api/pending", "/static/inbox.js", "/runs/none"):
            headers = (await http.get(path)).headers
            policy = headers["content-security-policy"]
            assert "default-src 'none'" in policy
            assert "script-src 'self'" in policy
            assert "unsafe-inline" not in policy
            assert headers["x-content-type-options"] == "nosniff"
            assert headers["referrer-policy"] == "no-referrer"
        script = await http.get("/static/inbox.js")
        assert script.headers["content-type"].startswith("text/javascript")
        css = await http.get("/static/inbox.css")
        assert css.headers["content-type"].startswith("text/css")


async def test_mounted_under_a_path_its_links_stay_under_it() -> None:
    store = MemoryStore()
    await pause(store, "r", [delete(1)])
    host = Starlette(routes=[Mount("/approvals", app=console_for(store))])
    async with client(host) as http:
        listed = await http.get("/approvals/")
        assert listed.status_code == 200
        assert 'href="/approvals/runs/r/calls/c1"' in listed.text
        assert 'src="/approvals/static/inbox.js"' in listed.text
        decided = await post_form(http, "/approvals/runs/r/calls/c1", action="allow")
        assert decided.headers["location"] == "/approvals/runs/r"
        assert len((await http.get("/approvals/api/pending")).json()["items"]) == 0


BLOCK_STARLETTE = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"starlette", "uvicorn"}:
            raise ImportError(f"blocked {name}", name=name)
        return None
sys.meta_path.insert(0, Block())
import toolwire
import toolwire.inbox
import toolwire.cli
from toolwire import MemoryStore, MissingDependency
try:
    toolwire.inbox.app(MemoryStore(), authorize=lambda request: None)
except MissingDependency as exc:
    print(exc)
"""


def test_without_the_extra_the_console_names_it() -> None:
    result = subprocess.run(
        [sys.executable, "-c", BLOCK_STARLETTE], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "starlette is not installed; install it with: pip install 'toolwire[inbox]' "
        "(from a checkout: pip install -e '.[inbox]')"
    )
