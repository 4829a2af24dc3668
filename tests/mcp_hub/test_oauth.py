"""OAuth for the hub's remote servers, against an authorization server and an MCP server that
requires its tokens, both on 127.0.0.1 (see ``oauth_servers``)."""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

import toolwire
from toolwire import AuthorizationError, AuthorizationRequired, ConfigurationError

pytest.importorskip("mcp")
from oauth_servers import (
    AuthServer,
    ProtectedServer,
    another_protected,
    follow_authorization,
    oauth_pair,
)

from toolwire._scrub import server_key
from toolwire.mcp import (
    ClientCredentials,
    FileTokenStore,
    HttpServer,
    Hub,
    MemoryTokenStore,
    OAuth,
    SQLiteTokenStore,
    SseServer,
    token_store_for,
)

pytestmark = pytest.mark.anyio

KEY = "mgoZsOdMBuT4PKLzzPmyVCwJ3W7cNH4bK6ZoM3kHm5E="
"""A Fernet key made for these tests."""


def add_call(server: str = "g", a: int = 2, b: int = 3) -> list[dict[str, Any]]:
    return [{"functionCall": {"name": f"{server}__add", "args": {"a": a, "b": b}, "id": "c1"}}]


def leaks(text: str, auth: AuthServer) -> list[str]:
    """The credentials the authorization server handed out that ``text`` shows."""
    return [secret for secret in auth.issued if secret in text]


async def test_the_first_connection_runs_the_flow_then_the_hub_lists_and_calls_tools(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    store = MemoryTokenStore()
    with oauth_pair() as (auth, protected):
        spec = HttpServer(
            url=protected.url, auth=OAuth(authorize=follow_authorization, store=store)
        )
        with anyio.fail_after(30):
            async with Hub({"g": spec}) as hub:
                assert hub.status == {"g": None}
                outcome = await toolwire.execute_tool_calls(hub, "gemini", add_call())
        assert outcome.calls[0].result.structured_content == {"result": 5}
        # Discovery, dynamic registration, the authorization with PKCE, the code exchanged.
        assert auth.registrations == 1
        [asked] = auth.authorize_requests
        assert asked["code_challenge_method"] == "S256"
        assert asked["resource"] == protected.url
        assert asked["scope"].split()[0] == "tools"  # from the server's WWW-Authenticate
        assert [r["grant_type"] for r in auth.token_requests] == ["authorization_code"]
        entry = await store.read(server_key(protected.url))
        assert entry is not None
        assert entry["tokens"]["access_token"] in auth.access
        assert all(seen is None or seen.startswith("Bearer at-") for seen in protected.seen)
    assert leaks(caplog.text, auth) == []


async def test_calls_to_an_authorized_server_run_side_by_side() -> None:
    # The SDK's OAuth flow holds a lock across each whole exchange: a quick call waited for a
    # slow one to end (a server answering in JSON sends its headers with the answer). With a
    # valid token, requests go outside it. The slow call waits for an add made while it runs.
    auth = AuthServer()
    with oauth_pair(auth, ProtectedServer(auth, json_response=True)) as (_, protected):
        spec = HttpServer(
            url=protected.url, auth=OAuth(authorize=follow_authorization, store=MemoryTokenStore())
        )
        answers: dict[str, str] = {}
        with anyio.fail_after(30):
            async with Hub({"g": spec}) as hub:
                await toolwire.execute_tool_calls(hub, "gemini", add_call())  # authorized

                async def call(name: str, args: dict[str, Any]) -> None:
                    response = [{"functionCall": {"name": f"g__{name}", "args": args}}]
                    outcome = await toolwire.execute_tool_calls(hub, "gemini", response)
                    answers[name] = outcome.calls[0].result.text

                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(call, "wait_for_an_add", {"seconds": 10.0})
                    # the slow call is in flight before the quick one starts
                    started = protected.waiting_for_an_add.wait
                    assert await anyio.to_thread.run_sync(started, 20)
                    tasks.start_soon(call, "add", {"a": 1, "b": 2})
        assert answers == {"add": "3", "wait_for_an_add": "an add came while this call ran"}


async def test_a_hub_that_cannot_take_a_person_through_asks_for_a_login() -> None:
    with oauth_pair() as (auth, protected):
        spec = HttpServer(url=protected.url, auth=OAuth(store=MemoryTokenStore()))
        with anyio.fail_after(30):
            async with Hub({"g": spec}) as hub:
                [error] = hub.authorization_errors.values()
                status = hub.status["g"]
    assert isinstance(error, AuthorizationRequired)
    assert (error.reason, error.scope) == ("login_required", "tools")
    assert status is not None
    assert "toolwire mcp login" in status
    # Nothing was registered, discovered or asked for: the login does that.
    assert (auth.registrations, auth.metadata_requests, auth.token_requests) == (0, 0, [])


async def test_stored_tokens_are_used_by_a_new_hub_and_refreshed_when_the_server_refuses() -> None:
    store = MemoryTokenStore()
    with oauth_pair() as (auth, protected):
        first = HttpServer(
            url=protected.url, auth=OAuth(authorize=follow_authorization, store=store)
        )
        with anyio.fail_after(30):
            async with Hub({"g": first}):
                pass
            later = HttpServer(url=protected.url, auth=OAuth(store=store))  # no person now
            async with Hub({"g": later}) as hub:
                assert hub.status == {"g": None}
                auth.expire_access()  # the server refuses the token it took a moment ago
                outcome = await toolwire.execute_tool_calls(hub, "gemini", add_call(a=4))
        assert outcome.calls[0].result.structured_content == {"result": 7}
        assert [r["grant_type"] for r in auth.token_requests] == [
            "authorization_code",
            "refresh_token",
        ]
        entry = await store.read(server_key(protected.url))
        assert entry is not None
        assert entry["tokens"]["refresh_token"] in auth.refresh


async def test_a_token_stored_as_expired_is_refreshed_before_it_is_sent() -> None:
    store = MemoryTokenStore()
    with oauth_pair() as (auth, protected):
        first = HttpServer(
            url=protected.url, auth=OAuth(authorize=follow_authorization, store=store)
        )
        with anyio.fail_after(30):
            async with Hub({"g": first}):
                pass
            key = server_key(protected.url)
            entry = await store.read(key)
            assert entry is not None
            old = entry["tokens"]["access_token"]
            entry["expires_at"] = time.time() - 1
            await store.write(key, entry)
            sent_before = len(protected.seen)
            # A restarted hub: the refresh goes to the token endpoint kept with the tokens
            # (the authorization server is on another port than the MCP server).
            async with Hub({"g": HttpServer(url=protected.url, auth=OAuth(store=store))}) as hub:
                assert hub.status == {"g": None}
        assert f"Bearer {old}" not in protected.seen[sent_before:]
        assert [r["grant_type"] for r in auth.token_requests][-1] == "refresh_token"


async def test_a_revoked_authorization_asks_for_a_login_and_shows_no_token(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    store = MemoryTokenStore()
    with oauth_pair() as (auth, protected):
        first = HttpServer(
            url=protected.url, auth=OAuth(authorize=follow_authorization, store=store)
        )
        with anyio.fail_after(30):
            async with Hub({"g": first}):
                pass
            auth.revoke_all()  # the access token and the refresh token
            later = HttpServer(url=protected.url, auth=OAuth(store=store))
            async with Hub({"g": later}) as hub:
                [error] = hub.authorization_errors.values()
                status = hub.status["g"] or ""
        assert isinstance(error, AuthorizationRequired)
        entry = await store.read(server_key(protected.url))
        # The dead tokens are forgotten; the client's registration is kept.
        assert entry is not None
        assert "tokens" not in entry
        assert "client" in entry
    assert leaks(status + str(error) + repr(error) + caplog.text, auth) == []


async def test_a_call_made_when_the_grant_was_revoked_is_answered_and_the_server_goes_down() -> (
    None
):
    store = MemoryTokenStore()
    with oauth_pair() as (auth, protected):
        spec = HttpServer(
            url=protected.url, auth=OAuth(authorize=follow_authorization, store=store)
        )
        with anyio.fail_after(30):
            async with Hub({"g": HttpServer(url=protected.url, auth=OAuth(store=store))}) as hub:
                assert hub.status["g"] is not None  # nothing stored yet
            async with Hub({"g": spec}):
                pass
            async with Hub({"g": HttpServer(url=protected.url, auth=OAuth(store=store))}) as hub:
                auth.revoke_all()
                outcome = await toolwire.execute_tool_calls(hub, "gemini", add_call())
        result = outcome.calls[0].result
        assert result.error_kind == "unavailable"
        assert "toolwire mcp login" in result.text
        assert leaks(result.text, auth) == []


async def test_client_credentials_for_a_service_need_no_person() -> None:
    with oauth_pair() as (auth, protected):
        auth.register("svc", "svc-secret-0123456789", [])
        spec = HttpServer(
            url=protected.url,
            auth=ClientCredentials(
                client_id="svc",
                client_secret="svc-secret-0123456789",
                issuer=auth.url,
                store=MemoryTokenStore(),
            ),
        )
        with anyio.fail_after(30):
            async with Hub({"g": spec}) as hub:
                outcome = await toolwire.execute_tool_calls(hub, "gemini", add_call())
        assert outcome.calls[0].result.structured_content == {"result": 5}
        [request] = auth.token_requests
        assert (request["grant_type"], request["auth"], request["client_id"]) == (
            "client_credentials",
            "basic",
            "svc",
        )
        assert "tools" in (request["scope"] or "").split()


async def test_client_credentials_with_a_signed_assertion_instead_of_a_secret() -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    with oauth_pair() as (auth, protected):
        auth.register_key("workload", public)
        spec = HttpServer(
            url=protected.url,
            auth=ClientCredentials(
                client_id="workload",
                private_key=private,
                signing_algorithm="ES256",
                issuer=auth.url,
                store=MemoryTokenStore(),
            ),
        )
        with anyio.fail_after(30):
            async with Hub({"g": spec}) as hub:
                outcome = await toolwire.execute_tool_calls(hub, "gemini", add_call())
        assert outcome.calls[0].result.structured_content == {"result": 5}
        assert [(r["auth"], r["client_id"]) for r in auth.token_requests] == [
            ("private_key_jwt", "workload")
        ]
    assert "BEGIN PRIVATE KEY" not in repr(spec)


async def test_client_credentials_with_a_secret_in_the_form_when_configured_so() -> None:
    with oauth_pair() as (auth, protected):
        auth.register("svc", "svc-secret-0123456789", [])
        spec = HttpServer(
            url=protected.url,
            auth=ClientCredentials(
                client_id="svc",
                client_secret="svc-secret-0123456789",
                token_endpoint_auth_method="client_secret_post",
                issuer=auth.url,
                store=MemoryTokenStore(),
            ),
        )
        with anyio.fail_after(30):
            async with Hub({"g": spec}) as hub:
                assert hub.status == {"g": None}
        assert [r["auth"] for r in auth.token_requests] == ["post"]


async def test_client_credentials_without_an_issuer_are_warned_about() -> None:
    spec = HttpServer(
        url="https://mcp.example.com/mcp",
        auth=ClientCredentials(client_id="svc", client_secret="svc-secret-0123456789"),
    )
    with pytest.warns(toolwire.ToolwireWarning, match="issuer"):
        Hub({"g": spec})


async def test_a_pre_registered_client_sends_its_secret_as_the_server_takes_it() -> None:
    with oauth_pair() as (auth, protected):
        redirect = "http://127.0.0.1:9/callback"
        auth.register("pre", "pre-secret-0123456789", [redirect])
        auth.dcr = False
        auth.metadata_overrides["token_endpoint_auth_methods_supported"] = ["client_secret_post"]
        spec = HttpServer(
            url=protected.url,
            auth=OAuth(
                client_id="pre",
                client_secret="pre-secret-0123456789",
                redirect_uri=redirect,
                issuer=auth.url,
                authorize=follow_authorization,
                store=MemoryTokenStore(),
            ),
        )
        with anyio.fail_after(30):
            async with Hub({"g": spec}) as hub:
                assert hub.status == {"g": None}
        assert auth.registrations == 0
        assert [(r["auth"], r["client_id"]) for r in auth.token_requests] == [("post", "pre")]


async def test_a_client_metadata_document_is_the_client_id_where_the_server_takes_them() -> None:
    document = "https://client.example.com/toolwire.json"
    with oauth_pair() as (auth, protected):
        auth.cimd = True
        spec = HttpServer(
            url=protected.url,
            auth=OAuth(
                client_metadata_url=document,
                authorize=follow_authorization,
                store=MemoryTokenStore(),
            ),
        )
        with anyio.fail_after(30):
            async with Hub({"g": spec}) as hub:
                assert hub.status == {"g": None}
        assert auth.registrations == 0
        assert [r["client_id"] for r in auth.authorize_requests] == [document]
        assert [r["auth"] for r in auth.token_requests] == ["none"]


async def test_scopes_asked_for_besides_the_servers() -> None:
    with oauth_pair() as (auth, protected):
        auth.scopes.append("files")
        spec = HttpServer(
            url=protected.url,
            auth=OAuth(scope="files", authorize=follow_authorization, store=MemoryTokenStore()),
        )
        with anyio.fail_after(30):
            async with Hub({"g": spec}) as hub:
                assert hub.status == {"g": None}
        [asked] = auth.authorize_requests
        assert {"tools", "files"} <= set(asked["scope"].split())


async def test_an_sse_server_authorizes_the_same_way() -> None:
    from oauth_servers import serving

    auth = AuthServer()
    protected = ProtectedServer(auth)
    protected.inner = protected.mcp.sse_app()
    import socket

    sockets = [socket.socket(), socket.socket()]
    for each in sockets:
        each.bind(("127.0.0.1", 0))
        each.listen()
    auth.url = f"http://127.0.0.1:{sockets[0].getsockname()[1]}"
    protected.url = f"http://127.0.0.1:{sockets[1].getsockname()[1]}/sse"
    store = MemoryTokenStore()
    with serving(auth, bound=sockets[0]), serving(protected, bound=sockets[1]):
        spec = SseServer(url=protected.url, auth=OAuth(authorize=follow_authorization, store=store))
        with anyio.fail_after(30):
            async with Hub({"g": spec}) as hub:
                outcome = await toolwire.execute_tool_calls(hub, "gemini", add_call())
    assert outcome.calls[0].result.structured_content == {"result": 5}


async def test_the_hubs_token_store_is_used_for_servers_naming_none(tmp_path: Path) -> None:
    store = SQLiteTokenStore(tmp_path / "runs.db", key=KEY)
    with oauth_pair() as (auth, protected):
        spec = HttpServer(url=protected.url, auth=OAuth(authorize=follow_authorization))
        with anyio.fail_after(30):
            async with Hub({"g": spec}, token_store=store) as hub:
                assert hub.status == {"g": None}
        entry = await store.read(server_key(protected.url))
        assert entry is not None
        assert entry["tokens"]["access_token"] in auth.access
    raw = (tmp_path / "runs.db").read_bytes()
    assert [secret for secret in auth.issued if secret.encode() in raw] == []  # sealed


async def test_workers_sharing_a_token_store_take_each_others_refreshed_tokens(
    tmp_path: Path,
) -> None:
    store = SQLiteTokenStore(tmp_path / "runs.db", key=KEY)
    with oauth_pair() as (auth, protected):
        first = HttpServer(url=protected.url, auth=OAuth(authorize=follow_authorization))
        with anyio.fail_after(30):
            async with Hub({"g": first}, token_store=store):
                pass
            one = Hub({"g": HttpServer(url=protected.url, auth=OAuth())}, token_store=store)
            two = Hub({"g": HttpServer(url=protected.url, auth=OAuth())}, token_store=store)
            async with one, two:
                auth.expire_access()
                # The first worker refreshes (the refresh token rotates); the second, refused
                # too, takes the tokens the first kept instead of refreshing with a dead one.
                a = await toolwire.execute_tool_calls(one, "gemini", add_call(a=1))
                b = await toolwire.execute_tool_calls(two, "gemini", add_call(a=2))
        assert a.calls[0].result.structured_content == {"result": 4}
        assert b.calls[0].result.structured_content == {"result": 5}
        assert [r["grant_type"] for r in auth.token_requests] == [
            "authorization_code",
            "refresh_token",
        ]


def copy_row(path: Path, source: str, target: str) -> None:
    """The sealed entry kept for ``source`` copied, as it is, under ``target`` (what anyone
    who can write the database but holds no key can do)."""
    with sqlite3.connect(path) as db:
        db.execute(
            "INSERT OR REPLACE INTO toolwire_oauth (server, entry, updated_at) "
            "SELECT ?, entry, updated_at FROM toolwire_oauth WHERE server = ?",
            (target, source),
        )
    db.close()


async def test_a_token_kept_for_one_server_is_never_sent_to_another_it_was_copied_to(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Both servers take the authorization server's tokens: what stops A's from reaching B is
    # only that the hub never sends it there.
    caplog.set_level(logging.INFO)
    store = SQLiteTokenStore(tmp_path / "runs.db", key=KEY)
    with oauth_pair() as (auth, a), another_protected(auth) as b:
        first = HttpServer(url=a.url, auth=OAuth(authorize=follow_authorization, store=store))
        with anyio.fail_after(30):
            async with Hub({"a": first}):
                pass
            copy_row(tmp_path / "runs.db", server_key(a.url), server_key(b.url))
            async with Hub({"b": HttpServer(url=b.url, auth=OAuth(store=store))}) as hub:
                errors = list(hub.authorization_errors.values())
    assert [seen for seen in b.seen if seen is not None] == []  # no token at all reached B
    [error] = errors
    assert isinstance(error, AuthorizationRequired)
    assert [r["grant_type"] for r in auth.token_requests] == ["authorization_code"]
    said = [r.getMessage() for r in caplog.records if "was kept for" in r.getMessage()]
    assert said  # each time the entry is read, it is ignored saying why, naming both servers
    assert all(server_key(a.url) in line and server_key(b.url) in line for line in said)
    assert leaks(caplog.text, auth) == []


# -- the token stores ---------------------------------------------------------------------------


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
async def test_the_file_store_is_private_and_written_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLWIRE_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.delenv("TOOLWIRE_TOKEN_KEY", raising=False)
    store = FileTokenStore()
    os.umask(0o022)
    await store.write("https://x.example/mcp", {"tokens": {"access_token": "at-1"}})
    await store.write("https://x.example/mcp", {"tokens": {"access_token": "at-2"}})
    directory = tmp_path / "config" / "oauth"
    [file] = list(directory.iterdir())  # no temporary file left behind
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    assert await store.read("https://x.example/mcp") == {"tokens": {"access_token": "at-2"}}
    assert await store.read("https://other.example/mcp") is None
    await store.delete("https://x.example/mcp")
    assert await store.read("https://x.example/mcp") is None


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
async def test_a_token_file_others_can_read_is_made_private_with_a_warning(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path)
    await store.write("https://x.example/mcp", {"tokens": {}})
    [file] = list(tmp_path.iterdir())
    file.chmod(0o644)
    with pytest.warns(toolwire.ToolwireWarning, match="0600"):
        assert await store.read("https://x.example/mcp") == {"tokens": {}}
    assert stat.S_IMODE(file.stat().st_mode) == 0o600


async def test_the_config_directory_follows_xdg_and_its_override(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from toolwire.mcp import config_dir

    monkeypatch.setenv("TOOLWIRE_CONFIG_DIR", str(tmp_path / "here"))
    assert config_dir() == tmp_path / "here"
    monkeypatch.delenv("TOOLWIRE_CONFIG_DIR")
    if sys.platform.startswith("linux"):
        monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
        assert config_dir() == tmp_path / "xdg" / "toolwire"
        monkeypatch.setenv("XDG_CONFIG_HOME", "relative/is/ignored")
        assert config_dir() == Path.home() / ".config" / "toolwire"


async def test_a_sealed_file_store_holds_no_token_in_clear(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path, key=KEY)
    await store.write("https://x.example/mcp", {"tokens": {"access_token": "at-secret-1"}})
    [file] = list(tmp_path.iterdir())
    assert b"at-secret-1" not in file.read_bytes()
    assert await store.read("https://x.example/mcp") == {"tokens": {"access_token": "at-secret-1"}}
    other = FileTokenStore(tmp_path, key="Jr3bJWr3aN0s9DMxy0fmkQJgWZDUO5hyTYmGg7VnLtA=")
    with pytest.warns(toolwire.ToolwireWarning, match="cannot be read"):
        assert await other.read("https://x.example/mcp") is None


async def test_a_database_store_needs_a_key_and_takes_a_rotated_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOOLWIRE_TOKEN_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="TOOLWIRE_TOKEN_KEY"):
        SQLiteTokenStore(tmp_path / "runs.db")
    with pytest.raises(ConfigurationError, match="Fernet"):
        SQLiteTokenStore(tmp_path / "runs.db", key="not a key")
    old = SQLiteTokenStore(tmp_path / "runs.db", key=KEY)
    await old.write("https://x.example/mcp", {"tokens": {"access_token": "at-1"}})
    new_key = "Jr3bJWr3aN0s9DMxy0fmkQJgWZDUO5hyTYmGg7VnLtA="
    rotated = SQLiteTokenStore(tmp_path / "runs.db", key=f"{new_key},{KEY}")
    assert await rotated.read("https://x.example/mcp") == {"tokens": {"access_token": "at-1"}}


async def test_a_token_store_beside_a_run_stores_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLWIRE_TOKEN_KEY", KEY)
    runs = toolwire.SQLiteStore(tmp_path / "runs.db")
    tokens = token_store_for(runs)
    assert isinstance(tokens, SQLiteTokenStore)
    assert tokens.path == runs.path
    assert isinstance(token_store_for(toolwire.MemoryStore()), MemoryTokenStore)
    assert isinstance(token_store_for(f"sqlite:///{tmp_path / 'other.db'}"), SQLiteTokenStore)
    with pytest.raises(ConfigurationError, match="SQLite only"):
        token_store_for("redis://127.0.0.1:6379/0")


# -- what the specs show ------------------------------------------------------------------------


def test_reprs_show_no_secret() -> None:
    spec = HttpServer(
        url="https://mcp.example.com/mcp?key=query-secret",
        headers={"Authorization": "Bearer header-secret"},
        auth=OAuth(client_id="c", client_secret="client-secret"),
    )
    service = ClientCredentials(client_id="c", client_secret="cc-secret", private_key="pem-key")
    shown = repr(spec) + str(spec) + repr(service) + repr(FileTokenStore("/nowhere"))
    for secret in ("query-secret", "header-secret", "client-secret", "cc-secret", "pem-key"):
        assert secret not in shown
    assert "'Authorization': '***'" in shown


def test_a_token_in_a_servers_url_is_refused_without_being_repeated() -> None:
    spec = HttpServer(url="https://mcp.example.com/mcp?access_token=url-secret-123")
    with pytest.raises(ConfigurationError, match="access_token") as raised:
        Hub({"g": spec})
    assert "url-secret-123" not in str(raised.value)


def test_auth_of_another_kind_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="auth is an OAuth"):
        Hub({"g": HttpServer(url="https://mcp.example.com/mcp", auth="Bearer x")})  # type: ignore[arg-type]


def test_errors_pickle_with_their_fields() -> None:
    import pickle

    error = AuthorizationRequired("g", "login_required", "OAuth for g: log in", scope="tools")
    again = pickle.loads(pickle.dumps(error))
    assert (type(again), again.server, again.reason, again.scope, str(again)) == (
        AuthorizationRequired,
        "g",
        "login_required",
        "tools",
        "OAuth for g: log in",
    )
    assert isinstance(again, AuthorizationError)
