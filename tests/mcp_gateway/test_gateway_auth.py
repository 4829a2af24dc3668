"""The gateway as an OAuth resource server (`toolwire.mcp.serve(auth=)`): served over real
HTTP on 127.0.0.1, with a JWKS served by a small local server, keys generated and tokens
minted in the test, and the `mcp` SDK's client calling it as two principals."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")
pytest.importorskip("uvicorn")

import httpx
import mcp_types as types
from auth_support import (
    AUDIENCE,
    BOUND,
    INITIALIZE,
    MCP_HEADERS,
    Issuer,
    client,
    issuer,
    served,
    served_app,
)
from gateway_procs import HttpGateway
from mcp.server.mcpserver import MCPServer

import toolwire
import toolwire.mcp
from toolwire import CallContext, ConfigurationError, MemoryStore, Policy, Rule, SQLiteStore
from toolwire.calls import canonical_json
from toolwire.errors import InvalidToken
from toolwire.mcp import Authentication, HttpServer, Hub, Identity, StaticTokens
from toolwire.mcp.server import _auth

pytestmark = pytest.mark.anyio

ran: list[tuple[Any, str]] = []


@toolwire.tool
def whoami(ctx: CallContext) -> str:
    """Say who the call runs for."""
    return canonical_json(ctx.principal)


@toolwire.tool
def refund(order: str, ctx: CallContext) -> str:
    """Refund an order."""
    ran.append((ctx.principal, "refund"))
    return f"refunded {order}"


@toolwire.tool
def pay(amount: int, ctx: CallContext) -> str:
    """Pay an amount."""
    ran.append((ctx.principal, "pay"))
    return f"paid {amount}"


TOOLS = [whoami, refund, pay]
POLICY = Policy(
    Rule("deny", "refund", when=lambda c: c.principal != "alice", reason="alice refunds"),
    Rule("ask", "pay"),
)


@pytest.fixture
def idp() -> Iterator[Issuer]:
    with issuer() as made:
        yield made


@pytest.fixture(autouse=True)
def _forget() -> None:
    ran.clear()


def _text(result: types.CallToolResult) -> str:
    return "\n".join(part.text for part in result.content if isinstance(part, types.TextContent))


def _run_id(result: types.CallToolResult) -> str:
    found = re.search(r"Run id: (mcp-[0-9a-f.]+);", _text(result))
    assert found is not None, _text(result)
    return found.group(1)


async def test_each_client_is_listed_what_its_policy_lets_it_call_and_its_calls_run_for_it(
    idp: Issuer,
) -> None:
    auth = Authentication(idp.verifier())
    with anyio.fail_after(BOUND):
        async with served(TOOLS, policy=POLICY, auth=auth, store=MemoryStore()) as url:
            async with client(url, idp.token("alice")) as alice:
                alice_lists = [tool.name for tool in (await alice.list_tools()).tools]
                alice_is = _text(await alice.call_tool("whoami", {}))
                refunded = await alice.call_tool("refund", {"order": "o1"})
            async with client(url, idp.token("bob")) as bob:
                bob_lists = [tool.name for tool in (await bob.list_tools()).tools]
                bob_is = _text(await bob.call_tool("whoami", {}))
                hidden = await bob.call_tool("refund", {"order": "o2"})
    assert alice_lists == ["whoami", "refund", "pay"]
    assert bob_lists == ["whoami", "pay"]
    assert (alice_is, bob_is) == ('"alice"', '"bob"')
    assert (refunded.is_error, _text(refunded)) == (False, "refunded o1")
    assert (hidden.is_error, _text(hidden)) == (True, "Unknown tool 'refund'.")
    assert ran == [("alice", "refund")]


async def test_an_approved_call_completes_only_for_the_client_it_was_approved_for(
    idp: Issuer, tmp_path: Path
) -> None:
    # Two clients make the identical call; alice's is approved in the store. Bob's call is
    # his own run, still waiting: alice's approval never runs it.
    database = tmp_path / "runs.db"
    auth = Authentication(idp.verifier())
    with anyio.fail_after(BOUND):
        async with served(TOOLS, policy=POLICY, auth=auth, store=f"sqlite:///{database}") as url:
            async with client(url, idp.token("alice")) as alice:
                alice_waits = await alice.call_tool("pay", {"amount": 5})
            async with client(url, idp.token("bob")) as bob:
                bob_waits = await bob.call_tool("pay", {"amount": 5})
            store = SQLiteStore(database)
            await toolwire.decide(_run_id(alice_waits), "call", toolwire.allow(), store=store)
            async with client(url, idp.token("bob")) as bob:
                bob_again = await bob.call_tool("pay", {"amount": 5})
            async with client(url, idp.token("alice")) as alice:
                alice_again = await alice.call_tool("pay", {"amount": 5})
            store.close()
    assert alice_waits.is_error
    assert bob_waits.is_error
    assert _run_id(alice_waits) != _run_id(bob_waits)
    assert bob_again.is_error is True
    assert "waits for approval" in _text(bob_again)
    assert _run_id(bob_again) == _run_id(bob_waits)
    assert (alice_again.is_error, _text(alice_again)) == (False, "paid 5")
    assert ran == [("alice", "pay")]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize(("approve", "kind"), [(True, "allow"), (False, "deny")])
async def test_a_decision_made_in_the_clients_approval_form_is_recorded_as_its_principal(
    idp: Issuer, mode: str, approve: bool, kind: str
) -> None:
    """``auto`` negotiates 2026-07-28 (the form rides an InputRequiredResult); ``legacy`` gets
    a pushed ``elicitation/create``."""

    async def form(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"approve": approve})

    store = MemoryStore()
    auth = Authentication(idp.verifier())
    with anyio.fail_after(BOUND):
        async with (
            served(TOOLS, policy=POLICY, auth=auth, store=store, approve_by="client") as url,
            client(url, idp.token("alice"), mode=mode, elicitation_callback=form) as alice,
        ):
            paid = await alice.call_tool("pay", {"amount": 5})
    assert paid.is_error is not approve
    run_id = toolwire.mcp.server._gateway.run_base("pay", {"amount": 5}, principal="alice")
    (trail,) = await toolwire.history(run_id, store=store)
    decided = trail.to_dict()["decided"]
    assert (decided["by"], decided["kind"]) == ("alice", kind)
    assert ran == ([("alice", "pay")] if approve else [])


async def test_the_principal_can_come_from_another_claim_or_a_function(idp: Issuer) -> None:
    by_claim = Authentication(idp.verifier(), principal="email")
    by_function = Authentication(
        idp.verifier(),
        principal=lambda identity: {"user": identity.subject, "team": identity.claims["team"]},
    )
    token = idp.token("u-17", email="ada@example.com", team="ops")
    with anyio.fail_after(BOUND):
        async with served(TOOLS, auth=by_claim) as url, client(url, token) as connected:
            from_claim = _text(await connected.call_tool("whoami", {}))
        async with served(TOOLS, auth=by_function) as url, client(url, token) as connected:
            from_function = _text(await connected.call_tool("whoami", {}))
    assert from_claim == '"ada@example.com"'
    assert from_function == '{"team":"ops","user":"u-17"}'


async def test_static_tokens_name_their_principals(tmp_path: Path) -> None:
    alice_token, bob_token = "a" * 43, "b" * 43
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(
        "[[tokens]]\n"
        f'sha256 = "{StaticTokens.digest(alice_token)}"\n'
        'subject = "alice"\n'
        "[[tokens]]\n"
        f'sha256 = "{StaticTokens.digest(bob_token)}"\n'
        'subject = "bob"\n',
        encoding="utf-8",
    )
    auth = Authentication(StaticTokens.from_file(tokens))
    with anyio.fail_after(BOUND):
        async with served(TOOLS, policy=POLICY, auth=auth, store=MemoryStore()) as url:
            async with client(url, alice_token) as alice:
                alice_lists = [tool.name for tool in (await alice.list_tools()).tools]
            async with client(url, bob_token) as bob:
                bob_lists = [tool.name for tool in (await bob.list_tools()).tools]
                bob_is = _text(await bob.call_tool("whoami", {}))
            async with httpx.AsyncClient() as http:
                unknown = await http.post(
                    url,
                    json=INITIALIZE,
                    headers={**MCP_HEADERS, "authorization": "Bearer " + "c" * 43},
                )
    assert alice_lists == ["whoami", "refund", "pay"]
    assert (bob_lists, bob_is) == (["whoami", "pay"], '"bob"')
    assert unknown.status_code == 401
    # No authorization server hands these out: no metadata to point at.
    assert unknown.headers["www-authenticate"] == (
        'Bearer error="invalid_token", error_description="The access token is not valid."'
    )


async def test_the_protected_resource_metadata_is_served_and_named_in_every_challenge(
    idp: Issuer,
) -> None:
    auth = Authentication(idp.verifier(), scopes=["tools", "tools:write"])
    with anyio.fail_after(BOUND):
        async with served(TOOLS, auth=auth) as url, httpx.AsyncClient() as http:
            origin = url.removesuffix("/mcp")
            metadata = await http.get(f"{origin}/.well-known/oauth-protected-resource/mcp")
            anonymous = await http.post(url, json=INITIALIZE, headers=MCP_HEADERS)
            narrow = await http.post(
                url,
                json=INITIALIZE,
                headers={**MCP_HEADERS, "authorization": f"Bearer {idp.token()}"},
            )
    assert metadata.status_code == 200
    assert metadata.json() == {
        "resource": url,
        "authorization_servers": [idp.url],  # the issuer as it spells itself
        "scopes_supported": ["tools", "tools:write"],
        "bearer_methods_supported": ["header"],
        "resource_name": "toolwire",
    }
    where = f'resource_metadata="{origin}/.well-known/oauth-protected-resource/mcp"'
    assert anonymous.status_code == 401
    assert anonymous.headers["www-authenticate"] == f'Bearer {where}, scope="tools tools:write"'
    assert narrow.status_code == 403
    assert narrow.headers["www-authenticate"] == (
        'Bearer error="insufficient_scope", error_description="The token lacks a scope this '
        f'server needs.", {where}, scope="tools tools:write"'
    )


async def test_a_public_resource_url_is_what_the_metadata_names(idp: Issuer) -> None:
    auth = Authentication(idp.verifier(), resource=AUDIENCE)
    with anyio.fail_after(BOUND):
        async with served(TOOLS, auth=auth) as url, httpx.AsyncClient() as http:
            origin = url.removesuffix("/mcp")
            metadata = await http.get(f"{origin}/.well-known/oauth-protected-resource/mcp")
            anonymous = await http.post(url, json=INITIALIZE, headers=MCP_HEADERS)
    assert metadata.json()["resource"] == AUDIENCE
    assert anonymous.headers["www-authenticate"] == (
        'Bearer resource_metadata="https://tools.example.com/.well-known/oauth-protected-'
        'resource/mcp"'
    )


@pytest.fixture
def upstream() -> Iterator[tuple[str, list[dict[bytes, bytes]]]]:
    """An MCP server over streamable HTTP on 127.0.0.1 (uvicorn in a thread), recording the
    headers of every request it gets."""
    server = MCPServer("upstream")

    @server.tool(description="Add two integers.")
    def add(a: int, b: int) -> int:
        return a + b

    app = server.streamable_http_app()
    seen: list[dict[bytes, bytes]] = []

    async def recording(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            seen.append(dict(scope["headers"]))
        await app(scope, receive, send)

    with served_app(recording) as url:
        yield url, seen


async def test_the_upstream_server_never_sees_the_clients_token(
    idp: Issuer, upstream: tuple[str, list[dict[bytes, bytes]]]
) -> None:
    url, seen = upstream
    token = idp.token("alice")
    hub = Hub({"up": HttpServer(url=url)})
    with anyio.fail_after(BOUND):
        async with (
            served(hub, auth=Authentication(idp.verifier())) as gateway,
            client(gateway, token) as alice,
        ):
            added = await alice.call_tool("up__add", {"a": 2, "b": 3})
    assert (added.is_error, _text(added)) == (False, "5")
    assert seen  # the hub's own requests: its session, the listing, the call
    assert all(b"authorization" not in headers for headers in seen)
    assert not any(token.encode() in b"".join(headers.values()) for headers in seen)


async def test_on_loopback_a_request_naming_another_host_is_refused_even_with_a_good_token(
    idp: Issuer,
) -> None:
    # DNS rebinding: the Host and Origin checks stay on when the gateway authenticates.
    headers = {**MCP_HEADERS, "authorization": f"Bearer {idp.token()}"}
    with anyio.fail_after(BOUND):
        async with served(TOOLS, auth=Authentication(idp.verifier())) as url:
            port = url.rsplit(":", 1)[1].split("/")[0]
            async with httpx.AsyncClient() as http:
                rebound = await http.post(
                    url, json=INITIALIZE, headers={**headers, "host": f"evil.example:{port}"}
                )
                foreign = await http.post(
                    url, json=INITIALIZE, headers={**headers, "origin": "http://evil.example"}
                )
                honest = await http.post(url, json=INITIALIZE, headers=headers)
    assert rebound.status_code in (403, 421)
    assert foreign.status_code == 403
    assert honest.status_code == 200


async def test_with_authentication_the_gateway_serves_beyond_loopback(tmp_path: Path) -> None:
    # Bound to every interface, reached here on 127.0.0.1 only.
    token = "t" * 43
    tokens = tmp_path / "tokens.json"
    tokens.write_text(
        f'{{"tokens": [{{"sha256": "{StaticTokens.digest(token)}", "subject": "ci"}}]}}',
        encoding="utf-8",
    )
    auth = Authentication(StaticTokens.from_file(tokens))
    with anyio.fail_after(BOUND):
        async with served(TOOLS, auth=auth, host="0.0.0.0") as url:
            local = url.replace("0.0.0.0", "127.0.0.1")
            async with client(local, token) as connected:
                who = _text(await connected.call_tool("whoami", {}))
            async with httpx.AsyncClient() as http:
                anonymous = await http.post(local, json=INITIALIZE, headers=MCP_HEADERS)
    assert who == '"ci"'
    assert anonymous.status_code == 401


async def test_a_session_opened_by_one_client_is_not_anothers(idp: Issuer) -> None:
    with anyio.fail_after(BOUND):
        async with (
            served(TOOLS, auth=Authentication(idp.verifier())) as url,
            httpx.AsyncClient() as http,
        ):
            alice = {**MCP_HEADERS, "authorization": f"Bearer {idp.token('alice')}"}
            bob = {**MCP_HEADERS, "authorization": f"Bearer {idp.token('bob')}"}
            opened = await http.post(url, json=INITIALIZE, headers=alice)
            session = opened.headers["mcp-session-id"]
            listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
            version = {"mcp-protocol-version": "2025-06-18", "mcp-session-id": session}
            taken = await http.post(url, json=listing, headers={**bob, **version})
            kept = await http.post(url, json=listing, headers={**alice, **version})
    assert opened.status_code == 200
    assert taken.status_code == 404
    assert kept.status_code == 200


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"transport": "stdio"}, "auth is for HTTP"),
        ({"principal": "admin"}, "principal and auth cannot both be given"),
        ({"host": "0.0.0.0"}, "names its public URL"),
    ],
)
async def test_options_that_do_not_go_with_authentication_are_refused_before_serving(
    idp: Issuer, options: dict[str, Any], says: str
) -> None:
    arguments: dict[str, Any] = {"transport": "http", "port": 0, **options}
    with anyio.fail_after(BOUND), pytest.raises(ConfigurationError, match=says):
        await toolwire.mcp.serve(
            "no_such_source.py", auth=Authentication(idp.verifier()), **arguments
        )


def test_a_gateway_given_a_principal_and_authentication_is_refused(idp: Issuer) -> None:
    with pytest.raises(ConfigurationError, match="principal and auth"):
        toolwire.mcp.Gateway(
            toolwire.ToolSet(TOOLS), principal="admin", auth=Authentication(idp.verifier())
        )


async def test_a_gateway_reached_around_its_authentication_serves_nothing(idp: Issuer) -> None:
    # Its MCP server connected to in process: no request carries a principal, so nothing is
    # listed and nothing runs (never the gateway's principal by default).
    import mcp

    gateway = toolwire.mcp.Gateway(toolwire.ToolSet(TOOLS), auth=Authentication(idp.verifier()))
    with anyio.fail_after(BOUND):
        async with mcp.Client(gateway.server()) as connected:
            listed = (await connected.list_tools()).tools
            refused = await connected.call_tool("refund", {"order": "o1"})
    assert listed == []
    assert refused.is_error is True
    assert "not authenticated" in _text(refused)
    assert ran == []


def test_an_identity_is_read_only() -> None:
    identity = Identity("alice", scopes={"a"}, claims={"sub": "alice"})
    assert identity.scopes == frozenset({"a"})
    with pytest.raises(TypeError):
        identity.claims["sub"] = "bob"  # type: ignore[index]


WHOAMI = '''
from toolwire import CallContext, tool


@tool
def whoami(ctx: CallContext) -> str:
    """Say who the call runs for."""
    return str(ctx.principal)


@tool
def erase(disk: str) -> str:
    """Erase a disk."""
    return f"erased {disk}"
'''


def _cli_gateway(tmp_path: Path, *flags: str, address: str = "127.0.0.1:0") -> HttpGateway:
    tools = tmp_path / "whoami_tools.py"
    tools.write_text(WHOAMI, encoding="utf-8")
    policy = tmp_path / "policy.toml"
    policy.write_text(
        '[[rules]]\ntool = "erase"\naction = "deny"\nprincipals = ["bob"]\n', encoding="utf-8"
    )
    argv = [sys.executable, "-m", "toolwire.cli", "serve", str(tools), "--policy", str(policy)]
    return HttpGateway([*argv, *flags], address=address)


async def test_toolwire_serve_with_static_tokens_serves_beyond_loopback(tmp_path: Path) -> None:
    token = "s" * 43
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(
        f'[[tokens]]\nsha256 = "{StaticTokens.digest(token)}"\nsubject = "bob"\n',
        encoding="utf-8",
    )
    gateway = _cli_gateway(tmp_path, "--auth-tokens", str(tokens), address="0.0.0.0:0")
    try:
        url = gateway.url.replace("0.0.0.0", "127.0.0.1")  # reached on loopback only
        with anyio.fail_after(BOUND):
            async with client(url, token) as bob:
                listed = [tool.name for tool in (await bob.list_tools()).tools]
                who = _text(await bob.call_tool("whoami", {}))
            async with httpx.AsyncClient() as http:
                anonymous = await http.post(url, json=INITIALIZE, headers=MCP_HEADERS)
    finally:
        gateway.close()
    assert gateway.url.startswith("http://0.0.0.0:")
    assert (listed, who) == (["whoami"], "bob")
    assert anonymous.status_code == 401


async def test_toolwire_serve_checks_jwts_against_the_issuers_keys(
    idp: Issuer, tmp_path: Path
) -> None:
    gateway = _cli_gateway(
        tmp_path,
        *("--auth-jwks", idp.jwks.url, "--auth-issuer", idp.url, "--auth-audience", AUDIENCE),
        *("--auth-scope", "tools", "--principal-claim", "email"),
    )
    try:
        with anyio.fail_after(BOUND):
            async with client(gateway.url, idp.token("u-1", email="alice@example.com")) as alice:
                listed = [tool.name for tool in (await alice.list_tools()).tools]
                who = _text(await alice.call_tool("whoami", {}))
            async with client(gateway.url, idp.token("u-2", email="bob")) as bob:
                bob_listed = [tool.name for tool in (await bob.list_tools()).tools]
            async with httpx.AsyncClient() as http:
                narrow = await http.post(
                    gateway.url,
                    json=INITIALIZE,
                    headers={**MCP_HEADERS, "authorization": f"Bearer {idp.token(scope='x')}"},
                )
    finally:
        gateway.close()
    assert (listed, who) == (["whoami", "erase"], "alice@example.com")
    assert bob_listed == ["whoami"]
    assert narrow.status_code == 403
    assert 'error="insufficient_scope"' in narrow.headers["www-authenticate"]


class CountingVerifier:
    """A verifier of one token, for ``alice``, valid ``lifetime`` seconds from each check;
    counts its checks."""

    def __init__(self, token: str, lifetime: float = 300.0) -> None:
        self.token = token
        self.lifetime = lifetime
        self.checks = 0

    async def verify(self, token: str) -> Identity:
        self.checks += 1
        if token != self.token:
            raise InvalidToken("unknown")
        return Identity("alice", expires_at=time.time() + self.lifetime)


@pytest.mark.parametrize(("remember", "checks"), [(60.0, 1), (0.0, 4)])
async def test_an_accepted_token_is_remembered_for_a_while(remember: float, checks: int) -> None:
    verifier = CountingVerifier("k" * 40)
    auth = Authentication(verifier, remember_seconds=remember)
    headers = {**MCP_HEADERS, "authorization": f"Bearer {verifier.token}"}
    with anyio.fail_after(BOUND):
        async with served(TOOLS, auth=auth) as url, httpx.AsyncClient() as http:
            answers = [await http.post(url, json=INITIALIZE, headers=headers) for _ in range(4)]
    assert [answer.status_code for answer in answers] == [200] * 4
    assert verifier.checks == checks


async def test_a_remembered_token_is_refused_once_it_has_expired(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    verifier = CountingVerifier("k" * 40, lifetime=100.0)
    headers = {**MCP_HEADERS, "authorization": f"Bearer {verifier.token}"}
    with anyio.fail_after(BOUND):
        auth = Authentication(verifier, remember_seconds=3600)  # its expiry comes first
        async with served(TOOLS, auth=auth) as url, httpx.AsyncClient() as http:
            accepted = await http.post(url, json=INITIALIZE, headers=headers)
            verifier.lifetime = -1.0  # checked again now, it has expired
            later = time.time() + 101
            monkeypatch.setattr(_auth.time, "time", lambda: later)
            refused = await http.post(url, json=INITIALIZE, headers=headers)
    assert (accepted.status_code, refused.status_code) == (200, 401)
    assert verifier.checks == 2
