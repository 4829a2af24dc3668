"""Attacks on the places that read JSON from outside through the one hardened reader
(``toolwire._json.load_json``): the console's ``after`` page token and ``principal`` filter,
and the arguments of a hosted tool's approval requests. Whatever is sent, the console answers
200 or 400 (never a 500), and every request of a hosted response is answered or waits (never a
foreign exception). A failing test here names the invariant it breaks in its comment."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolwire
from toolwire import MemoryStore, Policy, Rule
from toolwire._json import NotJson, load_json
from toolwire.hosted import answer_hosted_approvals

pytestmark = pytest.mark.anyio

PAGES = ("/api/pending", "/", "/fragments/pending")

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=20,
)


def nested(depth: int, inner: str = "1") -> str:
    return "[" * depth + inner + "]" * depth


# -- the reader itself ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (nested(100_000), "nested too deeply"),
        ("9" * 5_000, "an integer has too many digits"),
        ("NaN", "NaN is not a JSON number"),
        ("[1, -Infinity]", "-Infinity is not a JSON number"),
        (b"\xff[1]", "not UTF-8 text"),
        ('{"a": 1} {"b": 2}', "several JSON objects were concatenated"),
        ('{"a": ', "the JSON ends early (truncated?)"),
    ],
)
def test_the_reader_says_why_and_never_raises(text: str | bytes, why: str) -> None:
    assert load_json(text) == NotJson(why)


@given(st.binary(max_size=200) | st.text(max_size=200))
def test_the_reader_never_raises_on_anything(text: str | bytes) -> None:
    load_json(text)


# -- the console ------------------------------------------------------------------------------


def console(store: MemoryStore) -> Any:
    pytest.importorskip("starlette")
    from toolwire.inbox import app

    return app(store, authorize=lambda request: "ops")


async def answers(store: MemoryStore, params: dict[str, str]) -> list[int]:
    import httpx

    transport = httpx.ASGITransport(app=console(store), raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://inbox") as http:
        return [(await http.get(path, params=params)).status_code for path in PAGES]


def token(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode("ascii")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values)
def test_any_json_in_a_page_token_is_a_400_or_a_page(value: Any) -> None:
    # Breaks "a hostile request is a 4xx, never a 500": a page token holding JSON the
    # console never made (a time past a float, a NaN, any shape) crashed the page.
    import anyio

    raw = json.dumps(value, allow_nan=True).encode()
    statuses = anyio.run(answers, MemoryStore(), {"after": token(raw)})
    assert set(statuses) <= {200, 400}, (value, statuses)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=300))
def test_any_text_as_a_page_token_or_principal_is_a_400_or_a_page(text: str) -> None:
    import anyio

    for name in ("after", "principal"):
        statuses = anyio.run(answers, MemoryStore(), {name: text})
        assert set(statuses) <= {200, 400}, (name, text, statuses)


@pytest.mark.parametrize("depth", [400, 900, 990, 3_000])
async def test_a_principal_filter_nested_near_the_stack_is_no_crash(depth: int) -> None:
    # Nesting the decoder takes may still be too deep to key as a principal: no match, no 500.
    statuses = await answers(MemoryStore(), {"principal": nested(depth)})
    assert set(statuses) <= {200, 400}, statuses


@pytest.mark.parametrize(
    "raw",
    [
        json.dumps([10**400, "r", "c"]).encode(),
        json.dumps([-(10**400), "r", "c"]).encode(),
        b"[1e308, " + b'"r", "c"]',
        nested(2_000, '1.0, "r", "c"').encode(),
        b'[1.0, "r", "c\\u0000"]',
        b'[1.0, "\\ud800", "c"]',
        b'[true, "r", "c"]',
    ],
)
async def test_forged_page_tokens_name_after(raw: bytes) -> None:
    import httpx

    transport = httpx.ASGITransport(app=console(MemoryStore()), raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://inbox") as http:
        answer = await http.get("/api/pending", params={"after": token(raw)})
    if answer.status_code == 200:  # a place no request comes after: an empty page
        assert answer.json()["items"] == []
    else:
        assert answer.status_code == 400
        assert answer.json()["error"]["message"] == "after is a token the console gave"


# -- hosted approvals -------------------------------------------------------------------------


def approval_request(request_id: str, arguments: Any) -> dict[str, Any]:
    return {
        "type": "mcp_approval_request",
        "id": request_id,
        "server_label": "files",
        "name": "read",
        "arguments": arguments,
    }


def deep_object(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ('{"a": ' + nested(50_000) + "}", "nested too deeply"),
        ('{"n": ' + "9" * 5_000 + "}", "an integer has too many digits"),
        ('{"n": NaN}', "NaN is not a JSON number"),
        ('{"s": "\\ud800"}', "cannot be carried"),
        (deep_object(10_000), "cannot be carried (nested deeper than"),
        ('["a"]', "not a JSON object"),
        ("", None),
    ],
)
async def test_each_hosted_request_is_answered_whatever_its_arguments(
    arguments: Any, says: str | None
) -> None:
    # Breaks "every call is answered exactly once": one request's arguments raised a foreign
    # exception, and no request of the response was answered.
    response = {
        "output": [
            approval_request("bad", arguments),
            approval_request("good", '{"path": "/tmp/x"}'),
        ]
    }
    answered = await answer_hosted_approvals(
        response, policy=Policy(Rule("allow", "files/*"), default="deny")
    )
    by_id = {a["approval_request_id"]: a for a in answered.answers}
    assert by_id["good"]["approve"] is True
    if says is None:  # no arguments: an empty object, as before
        assert by_id["bad"]["approve"] is True
    else:
        assert by_id["bad"]["approve"] is False
        assert says in by_id["bad"]["reason"]


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=200) | json_values.map(lambda v: json.dumps(v, allow_nan=True)))
def test_hosted_arguments_of_any_text_are_answered(arguments: str) -> None:
    import anyio

    response = {"output": [approval_request("x", arguments), approval_request("y", "{}")]}
    answered = anyio.run(answer_hosted_approvals, response)
    assert [a["approval_request_id"] for a in answered.answers] == ["x", "y"]
    assert answered.pending == []


async def test_a_hosted_request_waiting_keeps_its_arguments_checked() -> None:
    store = MemoryStore()
    response = {"output": [approval_request("w", '{"path": "/etc/passwd"}')]}
    policy = Policy(Rule("ask", "files/read"))
    answered = await answer_hosted_approvals(response, policy=policy, store=store)
    (request,) = answered.pending
    assert request.arguments == {"path": "/etc/passwd"}
    assert await toolwire.pending(store=store) != []
