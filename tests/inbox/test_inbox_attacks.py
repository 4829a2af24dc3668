"""An outside review of the approval console, as attacks: who gets in (authorize, the CLI's
token gate), CSRF, HTML injection through every field a run controls, odd ids, racing
approvers, edited arguments and hostile query parameters.

Each test is an invariant the console holds: no way in without an identity, no decision
without its CSRF proof, every value shown as text, one decision per call, a 4xx (never a 500)
for a hostile request."""

from __future__ import annotations

import base64
import json
import re
import time
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from inbox_tools import API, TOOLS, delete, pause, transfer
from inbox_tools import console_for as console
from starlette.applications import Starlette
from starlette.routing import Mount

import toolwire
from toolwire import MemoryStore, RunStore, make_call
from toolwire._text import visible
from toolwire.inbox import app
from toolwire.inbox._serve import COOKIE, TokenGate

pytestmark = pytest.mark.anyio


def client(asgi: Any, **headers: str) -> httpx.AsyncClient:
    """A client that sees a crash as the 500 a browser would get."""
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=asgi, raise_app_exceptions=False),
        base_url="http://inbox.test",
        headers=headers,
    )


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    assert found is not None, page
    return found.group(1)


async def still_pending(store: RunStore) -> set[tuple[str, str]]:
    return {(item.run_id, item.call_id) for item in await toolwire.pending(store=store)}


async def edit_request(store: RunStore, run_id: str, call_id: str, **fields: Any) -> None:
    record = await store.get(run_id, call_id)
    assert record is not None
    assert record.request is not None
    changed = record.with_(request={**record.request, **fields})
    assert await store.swap(run_id, record, changed) is not None


# -- who gets in ----------------------------------------------------------------------------------


async def test_an_authorize_that_raises_lets_nobody_in_and_decides_nothing() -> None:
    store = MemoryStore()
    await pause(store, "r", [delete(1)])

    def authorize(request: Any) -> Any:
        raise RuntimeError("identity provider down")

    async with client(app(store, authorize=authorize), **API) as http:
        assert (await http.get("/api/pending")).status_code == 500
        answer = await http.post("/api/runs/r/calls/c1/decision", json={"decision": "allow"})
        assert answer.status_code == 500
        assert "c1" not in answer.text
    assert await still_pending(store) == {("r", "c1")}


async def test_an_identity_that_cannot_be_kept_decides_nothing() -> None:
    store = MemoryStore()
    await pause(store, "r", [delete(1)])
    async with client(console(store, float("nan")), **API) as http:
        answer = await http.post("/api/runs/r/calls/c1/decision", json={"decision": "allow"})
        assert answer.status_code >= 400
    assert await still_pending(store) == {("r", "c1")}


async def test_an_authorize_returning_false_is_refused() -> None:
    store = MemoryStore()
    await pause(store, "r", [delete(1)])
    async with client(console(store, False), **API) as http:
        assert (await http.get("/api/pending")).status_code == 401
        answer = await http.post("/api/runs/r/calls/c1/decision", json={"decision": "allow"})
        assert answer.status_code == 401
    assert await still_pending(store) == {("r", "c1")}


def gated(store: RunStore, token: str = "s3cret-token") -> TokenGate:
    gate = TokenGate(token, "local-user")
    gate.inner = app(store, authorize=gate.authorize)
    return gate


async def test_the_token_gate_signs_in_once_and_drops_the_token_from_the_url() -> None:
    store = MemoryStore()
    await pause(store, "r", [delete(1)])
    async with client(gated(store)) as http:
        assert (await http.get("/api/pending")).status_code == 401
        assert (await http.get("/api/pending", params={"token": "wrong"})).status_code == 401
        assert (await http.get("/api/pending", params={"token": ""})).status_code == 401
        signed = await http.get("/runs/r", params={"token": "s3cret-token", "x": "1"})
        assert signed.status_code == 303
        assert signed.headers["location"] == "/runs/r?x=1"
        assert "s3cret" not in signed.headers["location"]
        assert signed.headers["referrer-policy"] == "no-referrer"
        cookie = signed.headers["set-cookie"]
        assert "HttpOnly" in cookie
        assert "SameSite=Strict" in cookie
        assert "Path=/" in cookie
        # a token in a POST's query only signs in: it decides nothing
        posted = await http.post(
            "/api/runs/r/calls/c1/decision?token=s3cret-token",
            json={"decision": "allow"},
            headers=API,
        )
        assert posted.status_code == 303
    assert await still_pending(store) == {("r", "c1")}
    async with client(gated(store), cookie=f"{COOKIE}=s3cret-token") as http:
        assert len((await http.get("/api/pending")).json()["items"]) == 1
    async with client(gated(store), cookie=f"{COOKIE}=s3cret-tokeX") as http:
        assert (await http.get("/api/pending")).status_code == 401
    async with client(gated(store), authorization="Bearer s3cret-token") as http:
        assert (await http.get("/api/pending")).status_code == 200
    async with client(gated(store), authorization="Bearer s3cret-toke") as http:
        assert (await http.get("/api/pending")).status_code == 401


async def test_the_sign_in_redirect_never_leaves_the_host() -> None:
    async with client(gated(MemoryStore())) as http:
        for path in ("//evil.test/x", "/\\evil.test", "/%2F%2Fevil.test"):
            signed = await http.get(path, params={"token": "s3cret-token"})
            assert signed.status_code == 303
            where = signed.headers["location"]
            assert where.startswith("/"), where
            assert not where.startswith("//"), where
            assert "\\" not in where


# -- CSRF ---------------------------------------------------------------------------------------


async def test_forms_refuse_every_forged_token() -> None:
    store = MemoryStore()
    await pause(store, "r", [delete(1)])
    url = "/runs/r/calls/c1"
    secret = b"k" * 32
    async with client(console(store, "bob", secret=secret)) as http:
        bobs = csrf_of((await http.get(url)).text)
        # a text/plain cross-site form body without the token
        plain = await http.post(
            url, content=b"action=allow", headers={"content-type": "text/plain"}
        )
        assert plain.status_code == 403
        for forged in ("", "0" * 64, bobs.upper(), bobs[:-1], bobs + "0"):
            answer = await http.post(url, data={"action": "allow", "csrf": forged})
            assert answer.status_code == 403, forged
        # the right token, from another site, even with a form content type
        for origin in ("https://evil.test", "http://inbox.test.evil.test", "http://evil.test"):
            answer = await http.post(
                url, data={"action": "allow", "csrf": bobs}, headers={"origin": origin}
            )
            assert answer.status_code == 403, origin
    # bob's token for mallory, and a token of another secret for bob
    async with client(console(store, "mallory", secret=secret)) as http:
        assert (await http.post(url, data={"action": "allow", "csrf": bobs})).status_code == 403
    async with client(console(store, "bob", secret=b"x" * 32)) as http:
        assert (await http.post(url, data={"action": "allow", "csrf": bobs})).status_code == 403
    assert await still_pending(store) == {("r", "c1")}


async def test_the_json_api_needs_its_header_and_grants_no_cors_or_method_override() -> None:
    store = MemoryStore()
    await pause(store, "r", [delete(1)])
    url = "/api/runs/r/calls/c1/decision"
    async with client(console(store)) as http:
        for content_type in (
            "application/x-www-form-urlencoded",
            "text/plain",
            "multipart/form-data; boundary=x",
        ):
            answer = await http.post(
                url,
                content=b'{"decision": "allow"}',
                headers={"content-type": content_type, "origin": "https://evil.test"},
            )
            assert answer.status_code == 403, content_type
        preflight = await http.request(
            "OPTIONS",
            url,
            headers={
                "origin": "https://evil.test",
                "access-control-request-method": "POST",
                "access-control-request-headers": "x-toolwire-inbox",
            },
        )
        assert preflight.status_code in (404, 405)
        assert "access-control-allow-origin" not in preflight.headers
        assert (await http.get(url)).status_code == 405
        overridden = await http.get(
            url, params={"_method": "POST"}, headers={"x-http-method-override": "POST", **API}
        )
        assert overridden.status_code == 405
        listed = await http.get("/api/pending", headers={"origin": "https://evil.test"})
        assert "access-control-allow-origin" not in listed.headers
    assert await still_pending(store) == {("r", "c1")}


# -- HTML injection ------------------------------------------------------------------------------

HOSTILE = [
    '"><script>alert(1)</script>',
    "'><img src=x onerror=alert(1)>",
    "javascript:alert(1)",
    "</textarea><svg onload=alert(1)>",
    "\u202e<b>\u2028x</b>",
    "<" * 3000,
]


def assert_inert(text: str, value: str) -> None:
    for piece in ("<script>alert", "<img src=x", "<svg onload", "<b>", "</textarea><svg"):
        if piece in value:
            assert piece not in text, piece
    assert 'href="javascript:' not in text
    assert "<" * 10 not in text


@pytest.mark.parametrize("value", HOSTILE)
async def test_every_field_a_run_controls_is_text_in_every_page(value: str) -> None:
    store = MemoryStore()
    call = make_call(
        TOOLS, "transfer", {"amount": 1, "currency": "EUR", "note": value}, call_id=value
    )
    await pause(store, value, [call], principal={"name": value})
    await edit_request(
        store, value, value, exposed_name=value, tool_name=value, server=value, reason=value
    )
    async with client(console(store, value), **API) as http:
        run_url = "/runs/" + quote(value)
        request_url = f"{run_url}/calls/{quote(value)}"
        pages = [
            await http.get("/"),
            await http.get("/fragments/pending"),
            await http.get(run_url),
            await http.get(request_url),
            await http.get("/", params={"principal": value, "tool": value}),
            await http.get("/fragments/pending", params={"tool": value}),
        ]
        for page in pages:
            assert page.status_code == 200, page.text[:300]
            assert_inert(page.text, value)
        denied = await http.post(
            f"/api/{request_url.removeprefix('/')}/decision",
            json={"decision": "deny", "reason": value},
        )
        assert denied.status_code == 200, denied.text[:300]
        for page in (await http.get(run_url), await http.get(request_url)):
            assert page.status_code == 200
            assert_inert(page.text, value)
        again = await http.post(
            f"/api/{request_url.removeprefix('/')}/decision", json={"decision": "allow"}
        )
        assert again.status_code == 409
        assert again.headers["content-type"] == "application/json"


def quote(value: str) -> str:
    from urllib.parse import quote as url_quote

    return url_quote(value, safe="")


ID_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    min_size=1,
    max_size=40,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(run_id=ID_TEXT, call_id=ID_TEXT, note=st.text(max_size=60))
def test_any_ids_round_trip_through_links_and_stay_escaped(
    run_id: str, call_id: str, note: str
) -> None:
    async def check() -> None:
        store = MemoryStore()
        call = make_call(
            TOOLS, "transfer", {"amount": 1, "currency": "EUR", "note": note}, call_id=call_id
        )
        await pause(store, run_id, [call])
        async with client(console(store), **API) as http:
            listed = await http.get("/")
            assert listed.status_code == 200
            hrefs = re.findall(r'class="open" href="([^"]*)"', listed.text)
            assert len(hrefs) == 1
            import html

            href = html.unescape(hrefs[0])
            assert href.startswith("/runs/")
            assert "<" not in href
            assert '"' not in href
            page = await http.get(href)
            assert page.status_code == 200, (href, page.text[:300])
            # the id as shown to people: hidden characters as escapes, backslashes doubled
            assert f"({html.escape(visible(call_id))})" in page.text
            decided = await http.post(f"/api{href}/decision", json={"decision": "deny"})
            assert decided.status_code == 200, decided.text[:300]
            assert (decided.json()["run_id"], decided.json()["call_id"]) == (run_id, call_id)

    anyio.run(check)


# -- odd ids -------------------------------------------------------------------------------------


async def test_dot_segments_and_encoded_slashes_name_exactly_one_call() -> None:
    store = MemoryStore()
    await pause(store, "..", [delete(1, call_id="..")])
    await pause(store, "a/b", [delete(2)])
    await pause(store, "a", [delete(3, call_id="b")])
    async with client(console(store), **API) as http:
        dots = await http.get("/api/runs/%2E%2E")
        assert dots.status_code == 200
        assert dots.json()["run_id"] == ".."
        slashed = (await http.get("/api/runs/a%2Fb")).json()
        assert [call["call_id"] for call in slashed["calls"]] == ["c1"]
        # /runs/a/b is the history route of run "a" only if it existed: it is not a call
        assert (await http.get("/api/runs/a/b")).status_code == 404
        decided = await http.post("/api/runs/a%2Fb/calls/c1/decision", json={"decision": "deny"})
        assert decided.json()["run_id"] == "a/b"
    assert await still_pending(store) == {("..", ".."), ("a", "b")}


async def test_mounted_an_encoded_slash_still_stays_in_its_segment() -> None:
    store = MemoryStore()
    await pause(store, "a/b", [delete(1)])
    host = Starlette(routes=[Mount("/approvals", app=console(store))])
    async with client(host, **API) as http:
        listed = await http.get("/approvals/")
        assert 'href="/approvals/runs/a%2Fb/calls/c1"' in listed.text
        assert (await http.get("/approvals/runs/a%2Fb/calls/c1")).status_code == 200
        run = await http.get("/approvals/api/runs/a%2Fb")
        assert run.json()["run_id"] == "a/b"


async def test_an_id_with_nul_is_a_400_not_another_run() -> None:
    store = MemoryStore()
    await pause(store, "a/b", [delete(1)])
    async with client(console(store), **API) as http:
        assert (await http.get("/api/runs/a%00b")).status_code == 400
        decided = await http.post("/api/runs/a%00b/calls/c1/decision", json={"decision": "deny"})
        assert decided.status_code == 400
    assert await still_pending(store) == {("a/b", "c1")}


# -- deciding: once, by whom, while it still waits -------------------------------------------------


async def test_two_approvers_racing_one_wins_the_other_gets_a_409(local_store: RunStore) -> None:
    await pause(local_store, "r", [delete(1)])
    answers: dict[str, httpx.Response] = {}

    async def approve(who: str, kind: str) -> None:
        async with client(console(local_store, who), **API) as http:
            answers[who] = await http.post(
                "/api/runs/r/calls/c1/decision", json={"decision": kind, "version": 1}
            )

    async with anyio.create_task_group() as group:
        group.start_soon(approve, "alice", "allow")
        group.start_soon(approve, "mallory", "deny")
    codes = sorted(answer.status_code for answer in answers.values())
    assert codes == [200, 409], {who: a.text for who, a in answers.items()}
    [winner] = [who for who, answer in answers.items() if answer.status_code == 200]
    record = await local_store.get("r", "c1")
    assert record is not None
    assert record.decided_by == winner
    assert record.state == ("approved" if winner == "alice" else "denied")


async def test_a_decided_expired_or_finished_call_is_never_decided_again(
    local_store: RunStore,
) -> None:
    await pause(local_store, "r", [delete(1), delete(2, call_id="c2"), delete(3, call_id="c3")])
    await edit_request(local_store, "r", "c2", expires_at=time.time() - 1)
    async with client(console(local_store, {"sub": "alice"}), **API) as http:
        first = await http.post("/api/runs/r/calls/c1/decision", json={"decision": "deny"})
        assert first.json()["by"] == {"sub": "alice"}
        again = await http.post("/api/runs/r/calls/c1/decision", json={"decision": "allow"})
        assert (again.status_code, again.json()["error"]["code"]) == (409, "already_decided")
        expired = await http.post("/api/runs/r/calls/c2/decision", json={"decision": "allow"})
        assert (expired.status_code, expired.json()["error"]["code"]) == (409, "expired")
        stale = await http.post(
            "/api/runs/r/calls/c3/decision", json={"decision": "allow", "version": 0}
        )
        assert stale.status_code == 409
        missing = await http.post("/api/runs/r/calls/nope/decision", json={"decision": "allow"})
        assert missing.status_code == 404
    record = await local_store.get("r", "c1")
    assert record is not None
    assert record.state == "denied"
    assert record.decided_by == {"sub": "alice"}


async def test_halting_a_run_touches_only_that_run_and_records_who(local_store: RunStore) -> None:
    await pause(local_store, "mine", [delete(1), delete(2, call_id="c2")], principal="alice")
    await pause(local_store, "theirs", [delete(3)], principal="dave")
    async with client(console(local_store, "carol"), **API) as http:
        halted = await http.post(
            "/api/runs/mine/calls/c1/decision",
            json={"decision": "halt", "reason": "stop", "whole_run": True},
        )
        assert halted.status_code == 200
    for call_id in ("c1", "c2"):
        record = await local_store.get("mine", call_id)
        assert record is not None
        assert record.decision is not None
        assert (record.decision.kind, record.decided_by) == ("halt", "carol")
    assert await still_pending(local_store) == {("theirs", "c1")}


# -- edited arguments -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "arguments",
    [
        {"amount": "5", "currency": "EUR"},
        {"amount": True, "currency": "EUR"},
        {"amount": 5000, "currency": "EUR"},
        {"amount": 5, "currency": "GBP"},
        {"amount": 5, "currency": "EUR", "to": "attacker"},
        {"amount": 5},
        {"amount": 5, "currency": "EUR", "note": {"nested": [1, 2]}},
        {"amount": 5, "currency": "EUR", "note": "x" * 10},  # valid: the control
        [{"amount": 5, "currency": "EUR"}],
        "amount=5",
    ],
)
async def test_edited_arguments_must_fit_the_original_schema(arguments: Any) -> None:
    store = MemoryStore()
    await pause(store, "r", [transfer(5)])
    valid = isinstance(arguments, dict) and arguments.get("note") == "x" * 10
    async with client(console(store), **API) as http:
        answer = await http.post(
            "/api/runs/r/calls/c1/decision", json={"decision": "allow", "arguments": arguments}
        )
        assert answer.status_code == (200 if valid else 422), answer.text
        # and through the form
        page = await http.get("/runs/r/calls/c1")
        if not valid:
            form = await http.post(
                "/runs/r/calls/c1",
                data={
                    "csrf": csrf_of(page.text),
                    "action": "edit",
                    "arguments": json.dumps(arguments),
                },
            )
            assert form.status_code == 422
    assert (await still_pending(store) == set()) is valid


async def test_a_huge_body_is_a_413_and_records_nothing() -> None:
    store = MemoryStore()
    await pause(store, "r", [transfer(5)])
    huge = {"decision": "allow", "arguments": {"amount": 5, "currency": "EUR", "note": "x" * 2**21}}
    async with client(console(store), **API) as http:
        answer = await http.post("/api/runs/r/calls/c1/decision", json=huge)
        assert answer.status_code == 413
        page = await http.get("/runs/r/calls/c1")
        form = await http.post(
            "/runs/r/calls/c1",
            data={"csrf": csrf_of(page.text), "action": "edit", "arguments": "x" * 2**21},
        )
        assert form.status_code == 413
    assert await still_pending(store) == {("r", "c1")}


DEEP = "[" * 50_000 + "]" * 50_000


async def test_deeply_nested_json_is_a_client_error_not_a_crash() -> None:
    store = MemoryStore()
    await pause(store, "r", [transfer(5)])
    async with client(console(store), **API) as http:
        body = '{"decision": "allow", "arguments": {"note": ' + DEEP + "}}"
        answer = await http.post("/api/runs/r/calls/c1/decision", content=body.encode())
        assert answer.status_code in (400, 422), answer.status_code
        page = await http.get("/runs/r/calls/c1")
        form = await http.post(
            "/runs/r/calls/c1",
            data={"csrf": csrf_of(page.text), "action": "edit", "arguments": DEEP},
        )
        assert form.status_code in (400, 422), form.status_code
    assert await still_pending(store) == {("r", "c1")}


async def test_a_reason_that_is_not_unicode_is_refused_and_the_run_stays_readable(
    local_store: RunStore,
) -> None:
    await pause(local_store, "r", [delete(1)])
    async with client(console(local_store), **API) as http:
        answer = await http.post(
            "/api/runs/r/calls/c1/decision",
            content=b'{"decision": "deny", "reason": "\\udc00 gotcha"}',
        )
        statuses = {"decision": answer.status_code}
        for path in ("/runs/r", "/runs/r/calls/c1", "/api/runs/r"):
            statuses[path] = (await http.get(path)).status_code
    assert statuses == {
        "decision": 400,
        "/runs/r": 200,
        "/runs/r/calls/c1": 200,
        "/api/runs/r": 200,
    }
    assert await still_pending(local_store) == {("r", "c1")}


async def test_edited_arguments_that_are_not_unicode_are_refused(local_store: RunStore) -> None:
    await pause(local_store, "r", [transfer(5)])
    async with client(console(local_store), **API) as http:
        answer = await http.post(
            "/api/runs/r/calls/c1/decision",
            content=b'{"decision": "allow", "arguments": '
            b'{"amount": 5, "currency": "EUR", "note": "\\udc00"}}',
        )
        assert answer.status_code == 422
        assert (await http.get("/runs/r")).status_code == 200
    assert await still_pending(local_store) == {("r", "c1")}


# -- query parameters ---------------------------------------------------------------------------


async def test_paging_parameters_are_bounded() -> None:
    store = MemoryStore()
    await pause(store, "r", [delete(1)])
    async with client(console(store), **API) as http:
        for params in (
            {"limit": str(10**9)},
            {"limit": "-1"},
            {"limit": "+5"},
            {"limit": "1e3"},
            {"limit": " 5"},
            {"after": "-1"},
            {"after": "x" * 5000},
            {"after": "WyJhIiwiYiIsImMiXQ=="},  # ["a","b","c"]: a place needs a time
            {"limit": "0x10"},
        ):
            for path in ("/api/pending", "/", "/fragments/pending"):
                answer = await http.get(path, params=params)
                assert answer.status_code == 400, (path, params)
            run = await http.get("/api/runs/r", params=params)
            assert run.status_code in (200, 400), params
            if run.status_code == 200:
                assert len(run.json()["calls"]) <= 200
        big = await http.get("/api/runs/r", params={"limit": "200", "offset": "1000000"})
        assert (big.status_code, big.json()["calls"]) == (200, [])
        assert (await http.get("/api/pending", params={"run_id": "a\x00"})).status_code == 400


def forged(text: str | bytes) -> str:
    """An ``after`` token made by hand (the console's are base64 of a JSON list)."""
    raw = text.encode() if isinstance(text, str) else text
    return base64.urlsafe_b64encode(raw).decode("ascii")


@pytest.mark.parametrize(
    "token",
    [
        forged("[" * 3_000 + "]" * 3_000),  # nested past Python's stack
        forged('[{"a": ' * 1_500 + "1" + "}]" * 1_500),
        forged(f'[{"9" * 400}, "r", "c1"]'),  # a time past a float's range
        forged(f'[{"9" * 5_000}, "r", "c1"]'),  # past Python's digits limit
        forged('[1e999, "r", "c1"]'),
        forged('[NaN, "r", "c1"]'),
        forged('[1.5, "r", "c1", "more"]'),
        forged('{"since": 1.5, "run_id": "r", "call_id": "c1"}'),
        forged(b"\xff\xfe[1.5]"),
    ],
    ids=[
        "nested",
        "nested-objects",
        "huge-int",
        "too-many-digits",
        "inf",
        "nan",
        "four",
        "object",
        "not-utf8",
    ],
)
async def test_a_forged_page_token_is_a_400_naming_after_on_every_page(token: str) -> None:
    store = MemoryStore()
    await pause(store, "r", [delete(1)])
    async with client(console(store), **API) as http:
        for path in ("/api/pending", "/", "/fragments/pending"):
            answer = await http.get(path, params={"after": token})
            assert answer.status_code == 400, (path, answer.status_code)
            assert "after" in answer.text, path
        error = (await http.get("/api/pending", params={"after": token})).json()["error"]
        assert error == {"code": "bad_query", "message": "after is a token the console gave"}


@pytest.mark.parametrize("text", ["\u00b2", "0" * 5000, "1" * 5000])
async def test_odd_digits_in_paging_parameters_are_a_400(text: str) -> None:
    store = MemoryStore()
    await pause(store, "r", [delete(1)])
    async with client(console(store), **API) as http:
        assert (await http.get("/api/pending", params={"limit": text})).status_code == 400
        assert (await http.get("/api/runs/r", params={"offset": text})).status_code == 400


async def test_an_odd_version_in_a_form_is_not_a_crash() -> None:
    store = MemoryStore()
    await pause(store, "r", [delete(1)])
    async with client(console(store)) as http:
        page = await http.get("/runs/r/calls/c1")
        form = await http.post(
            "/runs/r/calls/c1",
            data={"csrf": csrf_of(page.text), "action": "deny", "version": "\u00b2"},
        )
        assert form.status_code < 500


@pytest.mark.parametrize("principal", ["[" * 5000, "NaN", "1e999", "-Infinity"])
async def test_a_hostile_principal_filter_is_a_400_or_no_match(principal: str) -> None:
    store = MemoryStore()
    await pause(store, "r", [delete(1)])
    async with client(console(store), **API) as http:
        for path in ("/api/pending", "/", "/fragments/pending"):
            answer = await http.get(path, params={"principal": principal})
            assert answer.status_code in (200, 400), (path, answer.status_code)


async def test_the_list_reads_a_bounded_number_of_requests() -> None:
    store = MemoryStore()
    calls = [delete(n, call_id=f"c{n}") for n in range(1, 301)]
    await pause(store, "r", calls)
    async with client(console(store), **API) as http:
        everything = (await http.get("/api/pending", params={"limit": "200"})).json()
        assert len(everything["items"]) == 200
        rest = {"limit": "200", "after": everything["next"]}
        older = (await http.get("/api/pending", params=rest)).json()
        assert (len(older["items"]), older["next"]) == (100, None)
        page = await http.get("/")
        assert page.text.count('class="request"') == 50


@pytest.mark.parametrize("odd", [".", ".."])
async def test_a_call_id_of_dots_alone_is_linked_so_a_client_does_not_resolve_it_away(
    odd: str,
) -> None:
    store = MemoryStore()
    await pause(store, odd, [delete(1, call_id=odd)])
    async with client(console(store), **API) as http:
        listed = await http.get("/")
        (href,) = re.findall(r'class="open" href="([^"]*)"', listed.text)
        assert href == "/runs/" + "%2E" * len(odd) + "/calls/" + "%2E" * len(odd)
        page = await http.get(href)
        assert page.status_code == 200, page.text[:300]
        (history,) = re.findall(r'href="([^"]*)">The run', page.text)
        assert (await http.get(history)).status_code == 200
        decided = await http.post(f"/api{href}/decision", json={"decision": "deny"})
        assert (decided.json()["run_id"], decided.json()["call_id"]) == (odd, odd)
