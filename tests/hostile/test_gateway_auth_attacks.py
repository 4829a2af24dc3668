"""Attacks on the authenticating MCP gateway (`toolwire.mcp.serve(auth=)`), from outside, over
real HTTP on 127.0.0.1: forged, expired, misdirected and oversized tokens, tokens in the URL,
a JWKS that redirects, hangs or floods, and keys named by the token itself. Every refusal is a
401, 403, 400 or 503 with the right header; nothing runs; the token is never echoed nor
logged. A failing test here names the invariant it breaks in its comment."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("mcp")
pytest.importorskip("uvicorn")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp_gateway"))

import httpx
import mcp_types as types
from auth_support import (
    AUDIENCE,
    BOUND,
    INITIALIZE,
    MCP_HEADERS,
    Issuer,
    JwksServer,
    client,
    ec_key,
    issuer,
    public_jwk,
    rsa_key,
    served,
    served_in_thread,
)
from cryptography.hazmat.primitives import serialization

import toolwire
from toolwire import ConfigurationError, Policy, Rule
from toolwire.errors import InvalidToken, KeysUnavailable
from toolwire.mcp import Authentication, JwtVerifier

ran: list[str] = []


@toolwire.tool
def transfer(amount: int) -> str:
    """Transfer an amount."""
    ran.append("transfer")
    return f"transferred {amount}"


REFUSED = 'Bearer error="invalid_token", error_description="The access token is not valid."'
TOOLS_CALL = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "transfer", "arguments": {"amount": 100}},
}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unsigned(idp: Issuer, header: dict[str, Any], signature: bytes = b"") -> str:
    """A token with any header, signed with ``signature`` (none by default)."""
    head = _b64(json.dumps(header).encode())
    body = _b64(json.dumps(idp.claims()).encode())
    return f"{head}.{body}.{_b64(signature)}"


def _hmac_with_public_key(idp: Issuer) -> str:
    # The classic confusion: HS256 keyed with the issuer's public key, which anyone has.
    pem = (
        rsa_key()
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    head = _b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": "rsa-1"}).encode())
    body = _b64(json.dumps(idp.claims()).encode())
    signature = hmac.new(pem, f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{_b64(signature)}"


def _flipped(token: str) -> str:
    head, body, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    claims["sub"] = "admin"
    return f"{head}.{_b64(json.dumps(claims).encode())}.{signature}"


def _weak(idp: Issuer) -> str:
    with warnings.catch_warnings():  # PyJWT warns about signing with it: the point here
        warnings.simplefilter("ignore")
        return idp.token(kid="weak")


NOW = int(time.time())
FORGED: dict[str, Callable[[Issuer], str]] = {
    "not a JWT": lambda idp: "not-a-jwt",
    "alg none": lambda idp: _unsigned(idp, {"alg": "none", "typ": "JWT", "kid": "rsa-1"}),
    "alg None": lambda idp: _unsigned(idp, {"alg": "None", "kid": "rsa-1"}),
    "HS256 keyed with the public key": _hmac_with_public_key,
    "another key under the issuer's kid": lambda idp: idp.token(key=rsa_key(2048, 1)),
    "a claim changed after signing": lambda idp: _flipped(idp.token("mallory")),
    "signature cut off": lambda idp: idp.token().rsplit(".", 1)[0] + ".",
    "expired": lambda idp: idp.token(exp=NOW - 3600),
    "not valid yet": lambda idp: idp.token(nbf=NOW + 3600),
    "issued in the future": lambda idp: idp.token(iat=NOW + 3600),
    "another audience": lambda idp: idp.token(aud="https://other.example.com/mcp"),
    "another issuer": lambda idp: idp.token(iss="https://evil.example.com"),
    "no expiry": lambda idp: idp.token(exp=None),
    "no audience": lambda idp: idp.token(aud=None),
    "no issuer": lambda idp: idp.token(iss=None),
    "an expiry that is not a number": lambda idp: idp.token(exp="never"),
    "no subject": lambda idp: idp.token(None),
    "an empty subject": lambda idp: idp.token(""),
    "an unknown kid": lambda idp: idp.token(kid="rotated-away", key=rsa_key(2048, 1)),
    "no kid, another key": lambda idp: idp.token(kid=None, key=rsa_key(2048, 1)),
    "a key named by the token (jku)": lambda idp: idp.token(
        kid="attacker", key=rsa_key(2048, 1), headers={"jku": "http://127.0.0.1:9/jwks.json"}
    ),
    "a key carried by the token (jwk)": lambda idp: idp.token(
        kid="attacker", key=rsa_key(2048, 1), headers={"jwk": public_jwk(rsa_key(2048, 1), None)}
    ),
    "a crit header": lambda idp: idp.token(headers={"crit": ["exp"]}),
    "RS256 under an EC key's kid": lambda idp: idp.token(
        kid="ec-1", key=rsa_key(), algorithm="RS256"
    ),
    "a 1024-bit RSA key, published": lambda idp: _weak(idp),
    "too long": lambda idp: "a" * 9000,
    "not token characters": lambda idp: 'ab"c',
    "a JWE": lambda idp: "eyJhbGciOiJSU0EtT0FFUCJ9.a.b.c.d",
}


@pytest.fixture(scope="module")
def idp() -> Iterator[Issuer]:
    with issuer() as made:
        made.publish("ec-1", ec_key(), "ES256")
        made.publish("weak", rsa_key(1024), "RS256")
        yield made


@pytest.fixture(scope="module")
def gateway(idp: Issuer) -> Iterator[str]:
    auth = Authentication(idp.verifier(), scopes=["tools"])
    with served_in_thread([transfer], auth=auth, store=toolwire.MemoryStore()) as url:
        yield url


def _metadata(url: str) -> str:
    origin = url.removesuffix("/mcp")
    return f'resource_metadata="{origin}/.well-known/oauth-protected-resource/mcp"'


def _bearer(token: str) -> dict[str, str]:
    return {**MCP_HEADERS, "authorization": f"Bearer {token}"}


def _session(url: str, http: httpx.Client, token: str) -> dict[str, str]:
    """The headers of a session a good token opened."""
    opened = http.post(url, json=INITIALIZE, headers=_bearer(token))
    assert opened.status_code == 200
    return {
        "mcp-session-id": opened.headers["mcp-session-id"],
        "mcp-protocol-version": "2025-06-18",
    }


@pytest.mark.parametrize("forgery", list(FORGED))
def test_a_bad_token_is_refused_401_with_the_challenge_and_runs_nothing(
    idp: Issuer, gateway: str, forgery: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Breaks "every call is authenticated": a forged or stale token must never reach a tool,
    # even on a session a good token opened; nor be echoed in the answer, nor logged.
    token = FORGED[forgery](idp)
    ran.clear()
    caplog.set_level(logging.DEBUG)
    with httpx.Client(timeout=BOUND) as http:
        session = _session(gateway, http, idp.token())
        refused = http.post(gateway, json=TOOLS_CALL, headers={**_bearer(token), **session})
        opening = http.post(gateway, json=INITIALIZE, headers=_bearer(token))
    for answer in (refused, opening):
        assert answer.status_code == 401
        assert (
            answer.headers["www-authenticate"] == f'{REFUSED}, {_metadata(gateway)}, scope="tools"'
        )
        assert answer.json() == {
            "error": "invalid_token",
            "error_description": "The access token is not valid.",
        }
    assert ran == []
    assert token not in caplog.text


def test_a_good_token_with_a_lowercase_scheme_is_let_in(idp: Issuer, gateway: str) -> None:
    ran.clear()
    with httpx.Client(timeout=BOUND) as http:
        headers = {**MCP_HEADERS, "authorization": f"bearer {idp.token()}"}
        opened = http.post(gateway, json=INITIALIZE, headers=headers)
    assert opened.status_code == 200


def test_a_token_without_a_needed_scope_is_refused_403_insufficient_scope(
    idp: Issuer, gateway: str
) -> None:
    ran.clear()
    with httpx.Client(timeout=BOUND) as http:
        session = _session(gateway, http, idp.token())
        narrow = idp.token(scope="read")
        refused = http.post(gateway, json=TOOLS_CALL, headers={**_bearer(narrow), **session})
    assert refused.status_code == 403
    assert refused.headers["www-authenticate"] == (
        'Bearer error="insufficient_scope", error_description="The token lacks a scope this '
        f'server needs.", {_metadata(gateway)}, scope="tools"'
    )
    assert narrow not in refused.text
    assert ran == []


@pytest.mark.parametrize("with_header", [False, True])
def test_a_token_in_the_url_is_refused_even_a_good_one(
    idp: Issuer, gateway: str, with_header: bool
) -> None:
    # Breaks "tokens never travel in URLs" (MCP authorization spec): URLs end up in logs and
    # histories. A good token in the query is refused, with or without a header.
    token = idp.token()
    ran.clear()
    with httpx.Client(timeout=BOUND) as http:
        session = _session(gateway, http, idp.token())
        headers = {**(_bearer(token) if with_header else MCP_HEADERS), **session}
        refused = http.post(f"{gateway}?access_token={token}", json=TOOLS_CALL, headers=headers)
    assert refused.status_code == 400
    assert refused.json()["error"] == "invalid_request"
    assert token not in refused.text
    assert "www-authenticate" not in refused.headers
    assert ran == []


def test_two_authorization_headers_are_refused(idp: Issuer, gateway: str) -> None:
    ran.clear()
    headers = [
        *MCP_HEADERS.items(),
        ("authorization", f"Bearer {idp.token()}"),
        ("authorization", "Bearer x"),
    ]
    with httpx.Client(timeout=BOUND) as http:
        refused = http.post(gateway, json=INITIALIZE, headers=headers)
    assert refused.status_code == 400
    assert refused.json()["error"] == "invalid_request"


@pytest.mark.parametrize("value", ["", "Bearer", "Basic YWxpY2U6c2VjcmV0", "Token abc"])
def test_no_bearer_token_is_a_401_without_an_error_code(gateway: str, value: str) -> None:
    with httpx.Client(timeout=BOUND) as http:
        refused = http.post(
            gateway, json=INITIALIZE, headers={**MCP_HEADERS, "authorization": value}
        )
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"] == f'Bearer {_metadata(gateway)}, scope="tools"'


def test_a_huge_token_is_refused_before_it_is_read(gateway: str) -> None:
    # A megabyte of header: the HTTP server or the gateway refuses it; it never runs nor echoes.
    token = "A" * 1_000_000
    with httpx.Client(timeout=BOUND) as http:
        try:
            refused = http.post(gateway, json=INITIALIZE, headers=_bearer(token))
        except httpx.TransportError:  # the server closed the connection: refused too
            return
    assert refused.status_code in (400, 401, 413, 431)
    assert token[:1000] not in refused.text


_HEADER_TEXT = st.text(  # what an HTTP header may hold
    alphabet=st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"),
    max_size=200,
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(scheme=st.sampled_from(["Bearer ", "bearer ", "", "Basic "]), value=_HEADER_TEXT)
def test_no_authorization_header_an_outsider_can_write_lets_in_or_is_echoed(
    gateway: str, scheme: str, value: str
) -> None:
    ran.clear()
    with httpx.Client(timeout=BOUND) as http:
        answer = http.post(
            gateway,
            json=TOOLS_CALL,
            headers={**MCP_HEADERS, "authorization": (scheme + value).strip().encode("latin-1")},
        )
    assert answer.status_code in (400, 401)
    assert answer.json()["error_description"] in (
        "The access token is not valid.",
        "A bearer token is required.",
    )
    assert ran == []


# -- the issuer's keys: fetched from the configured JWKS only, bounded ----------------------


@pytest.fixture
def idp_each() -> Iterator[Issuer]:
    with issuer() as made:
        yield made


@pytest.mark.anyio
async def test_the_keys_a_token_points_at_are_never_fetched(idp_each: Issuer) -> None:
    # Breaks "keys come from the configured issuer only": a token naming its own JWKS (jku,
    # x5u) would let anyone sign tokens the gateway accepts.
    attacker = JwksServer()
    try:
        attacker.keys.append(public_jwk(rsa_key(2048, 1), "attacker"))
        token = idp_each.token(
            kid="attacker",
            key=rsa_key(2048, 1),
            headers={"jku": attacker.url, "x5u": attacker.url},
        )
        with anyio.fail_after(BOUND), pytest.raises(InvalidToken):
            await idp_each.verifier().verify(token)
        assert attacker.fetches == 0
    finally:
        attacker.close()


@pytest.mark.anyio
async def test_a_jwks_redirecting_elsewhere_is_not_followed(idp_each: Issuer) -> None:
    elsewhere = JwksServer()
    try:
        elsewhere.keys.append(public_jwk(rsa_key(2048, 1), "rsa-1"))
        idp_each.jwks.answer = lambda: (302, {"location": elsewhere.url}, b"")
        with anyio.fail_after(BOUND), pytest.raises(KeysUnavailable, match="answered HTTP 302"):
            await idp_each.verifier().verify(idp_each.token(key=rsa_key(2048, 1)))
        assert elsewhere.fetches == 0
    finally:
        elsewhere.close()


BAD_JWKS: dict[str, tuple[Callable[[], tuple[int, dict[str, str], bytes]], str]] = {
    "an error": (lambda: (500, {}, b"{}"), "answered HTTP 500"),
    "oversized": (lambda: (200, {}, b'{"keys": [' + b" " * 300_000 + b"]}"), "larger than"),
    "not JSON": (lambda: (200, {}, b"<html>"), "not JSON"),
    "a repeated key": (lambda: (200, {}, b'{"keys": [], "keys": []}'), "not JSON"),
    "not a set": (lambda: (200, {}, b'{"key": []}'), "not a JWK set"),
    "too many keys": (
        lambda: (200, {}, json.dumps({"keys": [{"kty": "RSA"}] * 65}).encode()),
        "65 keys, more than 64",
    ),
    "nested deep": (lambda: (200, {}, b"[" * 100_000 + b"]" * 100_000), "not"),
}


@pytest.mark.anyio
@pytest.mark.parametrize("kind", list(BAD_JWKS))
async def test_a_bad_jwks_is_a_clear_error_and_no_token_passes(idp_each: Issuer, kind: str) -> None:
    answer, says = BAD_JWKS[kind]
    idp_each.jwks.answer = answer
    with anyio.fail_after(BOUND), pytest.raises(KeysUnavailable, match=says):
        await idp_each.verifier(max_jwks_bytes=256 * 1024).verify(idp_each.token())


@pytest.mark.anyio
async def test_a_hanging_jwks_is_given_up_on_within_the_timeout(idp_each: Issuer) -> None:
    idp_each.jwks.hang = True
    with anyio.fail_after(BOUND), pytest.raises(KeysUnavailable, match="did not answer within"):
        await idp_each.verifier(timeout=0.5).verify(idp_each.token())


@pytest.mark.anyio
async def test_tokens_with_unknown_kids_do_not_make_the_gateway_fetch_the_jwks_each_time(
    idp_each: Issuer,
) -> None:
    # Breaks "the JWKS fetch is bounded": each made-up kid would otherwise be a request to the
    # issuer, made by anyone.
    verifier = idp_each.verifier()
    await verifier.verify(idp_each.token())
    for index in range(50):
        with pytest.raises(InvalidToken, match="does not publish"):
            await verifier.verify(idp_each.token(kid=f"made-up-{index}", key=rsa_key(2048, 1)))
    assert idp_each.jwks.fetches == 1


@pytest.mark.anyio
async def test_when_the_jwks_cannot_be_had_the_client_gets_503_and_nothing_runs(
    idp_each: Issuer, caplog: pytest.LogCaptureFixture
) -> None:
    idp_each.jwks.answer = lambda: (503, {}, b"down")
    token = idp_each.token()
    ran.clear()
    caplog.set_level(logging.DEBUG)
    auth = Authentication(idp_each.verifier())
    with anyio.fail_after(BOUND):
        async with served([transfer], auth=auth) as url, httpx.AsyncClient() as http:
            answer = await http.post(url, json=INITIALIZE, headers=_bearer(token))
    assert answer.status_code == 503
    assert answer.json()["error"] == "temporarily_unavailable"
    assert token not in answer.text
    assert token not in caplog.text
    assert "the JWKS at" in caplog.text  # the operator is told why
    assert ran == []


@pytest.mark.parametrize("algorithm", ["none", "HS256", "HS512", "ES256K", ""])
def test_a_verifier_accepting_an_algorithm_without_a_public_key_is_refused(
    algorithm: str,
) -> None:
    with pytest.raises(ConfigurationError, match="only asymmetric"):
        JwtVerifier(
            "https://idp.example.com/jwks", issuer="x", audience=AUDIENCE, algorithms=[algorithm]
        )


@pytest.mark.parametrize(
    "url",
    [
        "http://idp.example.com/jwks",  # cleartext keys, beyond loopback
        "ftp://idp.example.com/jwks",
        "https://user:secret@idp.example.com/jwks",
        "https://idp.example.com/jwks#frag",
        "not a url",
        "https://",
    ],
)
def test_a_jwks_url_that_could_be_tampered_with_is_refused(url: str) -> None:
    with pytest.raises(ConfigurationError, match="jwks_url"):
        JwtVerifier(url, issuer="x", audience=AUDIENCE)


def test_policy_per_principal_is_not_bypassed_by_a_principal_claim_of_another_type(
    idp: Issuer,
) -> None:
    # A token whose subject is "admin" gets admin's calls; one whose principal claim is an
    # object or a list holding "admin" is not admin.
    policy = Policy(Rule("deny", "transfer", when=lambda c: c.principal != "admin"))
    auth = Authentication(idp.verifier(), principal="who")
    with served_in_thread([transfer], auth=auth, policy=policy) as url, httpx.Client() as http:
        listed = {}
        for name, who in {"admin": "admin", "list": ["admin"], "object": {"sub": "admin"}}.items():
            session = _session(url, http, idp.token(who=who))
            listing = http.post(
                url,
                json={"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
                headers={**_bearer(idp.token(who=who)), **session},
            )
            listed[name] = "transfer" in listing.text
    assert listed == {"admin": True, "list": False, "object": False}


@toolwire.tool
def pay(amount: int) -> str:
    """Pay an amount."""
    ran.append("pay")
    return f"paid {amount}"


@pytest.mark.anyio
async def test_a_client_cannot_answer_the_approval_form_another_client_was_asked(
    idp_each: Issuer,
) -> None:
    # Breaks "runs are bound to their principal": bob, given alice's form (its sealed
    # requestState), answers it for her, or runs his identical call on her approval.
    store = toolwire.MemoryStore()
    auth = Authentication(idp_each.verifier())
    modern: dict[str, Any] = {"mode": "2026-07-28", "elicitation_callback": _never_asked}
    approve = {"toolwire_approval": types.ElicitResult(action="accept", content={"approve": True})}
    ran.clear()
    with anyio.fail_after(BOUND):
        async with served(
            [pay], policy=Policy(Rule("ask", "pay")), store=store, auth=auth, approve_by="client"
        ) as url:
            async with client(url, idp_each.token("alice"), **modern) as alice:
                asked = await alice.session.call_tool(
                    "pay", {"amount": 9}, allow_input_required=True
                )
            assert isinstance(asked, types.InputRequiredResult)
            async with client(url, idp_each.token("bob"), **modern) as bob:
                with pytest.raises(Exception) as refused:  # noqa: PT011  the SDK's error
                    await bob.session.call_tool(
                        "pay",
                        {"amount": 9},
                        allow_input_required=True,
                        input_responses=approve,
                        request_state=asked.request_state,
                    )
            waiting = await toolwire.pending(store=store)
            async with client(url, idp_each.token("alice"), **modern) as alice:
                answered = await alice.session.call_tool(
                    "pay",
                    {"amount": 9},
                    allow_input_required=True,
                    input_responses=approve,
                    request_state=asked.request_state,
                )
    assert "requestState" in str(refused.value)
    assert [(request.principal, request.exposed_name) for request in waiting] == [("alice", "pay")]
    assert isinstance(answered, types.CallToolResult)
    assert (answered.is_error, answered.content[0].text) == (False, "paid 9")  # type: ignore[union-attr]
    assert ran == ["pay"]


async def _never_asked(context: Any, params: Any) -> types.ElicitResult:
    raise AssertionError("a 2026-07-28 client is asked in the result, not by a request")
