"""A kept OAuth entry crossing servers, attacked from the store's side: someone who can write
the token store but holds no sealing key copies server A's sealed row (or file) under server
B's key. Whatever the row holds (an access token, a refresh token, a client's registration),
nothing of it is used for B: no token reaches B, no refresh goes out with A's refresh token,
no authorization runs as A's client. URLs that differ only by a trailing slash, the path's
case, the port, the scheme or the host are other servers; the host's case and the query are
not (the key has neither), and the tokens are shared there as before."""

from __future__ import annotations

import logging
import shutil
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pydantic
import pytest

from toolwire import AuthorizationRequired

pytest.importorskip("mcp")
sys.path.insert(0, str(Path(__file__).parent.parent / "mcp_hub"))
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from oauth_servers import another_protected, follow_authorization, oauth_pair
from test_oauth_login import Browser, logging_in

from toolwire._scrub import server_key
from toolwire.mcp import FileTokenStore, HttpServer, Hub, OAuth, SQLiteTokenStore, TokenStore
from toolwire.mcp.client._login import _kept_redirect
from toolwire.mcp.client._oauth import http_auth

pytestmark = pytest.mark.anyio

KEY = "mgoZsOdMBuT4PKLzzPmyVCwJ3W7cNH4bK6ZoM3kHm5E="
A = "http://127.0.0.1:8123/mcp"


def copy_row(path: Path, source: str, target: str) -> None:
    """A sealed row copied as it is under another key (no key needed to do it)."""
    with sqlite3.connect(path) as db:
        db.execute(
            "INSERT OR REPLACE INTO toolwire_oauth (server, entry, updated_at) "
            "SELECT ?, entry, updated_at FROM toolwire_oauth WHERE server = ?",
            (target, source),
        )
    db.close()


def storage(store: TokenStore, url: str) -> Any:
    provider, _ = http_auth(OAuth(store=store), url, label=url)
    return provider.storage


async def keep_for(store: TokenStore, url: str, access: str = "at-kept-for-a-0123") -> None:
    """What a login for ``url`` keeps: a client's registration, then its tokens."""
    kept = storage(store, url)
    await kept.set_client_info(
        OAuthClientInformationFull(
            client_id="client-of-a",
            client_secret="secret-of-a-0123",
            redirect_uris=[pydantic.AnyUrl("http://127.0.0.1:8999/callback")],
        )
    )
    await kept.set_tokens(
        OAuthToken(access_token=access, refresh_token="rt-kept-for-a-0123", expires_in=3600)
    )


async def test_a_copied_refresh_token_is_not_refreshed_for_another_server(
    tmp_path: Path,
) -> None:
    # The copied access token has expired: the hub would refresh it first, at A's authorization
    # server (its metadata is kept with the tokens), and send the new token to B.
    store = SQLiteTokenStore(tmp_path / "runs.db", key=KEY)
    with oauth_pair() as (auth, a), another_protected(auth) as b:
        first = HttpServer(url=a.url, auth=OAuth(authorize=follow_authorization, store=store))
        with anyio.fail_after(30):
            async with Hub({"a": first}):
                pass
            entry = await store.read(server_key(a.url))
            assert entry is not None
            entry["expires_at"] = time.time() - 60
            await store.write(server_key(a.url), entry)
            copy_row(tmp_path / "runs.db", server_key(a.url), server_key(b.url))
            async with Hub({"b": HttpServer(url=b.url, auth=OAuth(store=store))}) as hub:
                [error] = hub.authorization_errors.values()
    assert isinstance(error, AuthorizationRequired)
    assert [r["grant_type"] for r in auth.token_requests] == ["authorization_code"]
    assert [seen for seen in b.seen if seen is not None] == []


async def test_a_copied_client_registration_is_not_used_to_authorize_another_server(
    tmp_path: Path,
) -> None:
    store = SQLiteTokenStore(tmp_path / "runs.db", key=KEY)
    with oauth_pair() as (auth, a), another_protected(auth) as b:
        with anyio.fail_after(30):
            async with Hub(
                {
                    "a": HttpServer(
                        url=a.url, auth=OAuth(authorize=follow_authorization, store=store)
                    )
                }
            ):
                pass
            kept_a = await store.read(server_key(a.url))
            assert kept_a is not None
            copy_row(tmp_path / "runs.db", server_key(a.url), server_key(b.url))
            spec = HttpServer(url=b.url, auth=OAuth(authorize=follow_authorization, store=store))
            async with Hub({"b": spec}) as hub:
                assert hub.status == {"b": None}
        kept_b = await store.read(server_key(b.url))
    assert auth.registrations == 2  # B's own client, registered for it
    assert auth.authorize_requests[-1]["client_id"] != kept_a["client"]["client_id"]
    assert kept_b is not None
    assert kept_b["server"] == server_key(b.url)  # the copied row was replaced by B's own
    assert kept_b["client"]["client_id"] != kept_a["client"]["client_id"]
    assert await store.read(server_key(a.url)) == kept_a  # A's is untouched


async def test_a_login_for_another_server_does_not_take_the_copied_clients_redirect(
    tmp_path: Path,
) -> None:
    store = SQLiteTokenStore(tmp_path / "runs.db", key=KEY)
    with oauth_pair() as (auth, a), another_protected(auth) as b:
        with anyio.fail_after(30):
            await logging_in(HttpServer(url=a.url, auth=OAuth()), Browser(), token_store=store)
            kept_a = await store.read(server_key(a.url))
            assert kept_a is not None
            copy_row(tmp_path / "runs.db", server_key(a.url), server_key(b.url))
            assert await _kept_redirect(store, b.url) is None
            await logging_in(HttpServer(url=b.url, auth=OAuth()), Browser(), token_store=store)
    assert auth.registrations == 2
    assert auth.authorize_requests[-1]["client_id"] != kept_a["client"]["client_id"]


@pytest.mark.parametrize(
    "other",
    [
        "http://127.0.0.1:8123/mcp/",  # a trailing slash
        "http://127.0.0.1:8123/MCP",  # the path's case
        "http://127.0.0.1:8124/mcp",  # the port
        "http://127.0.0.1/mcp",  # no port
        "https://127.0.0.1:8123/mcp",  # the scheme
        "http://localhost:8123/mcp",  # another name for the same host is another server
        "http://127.0.0.1:8123/mcp/tools",  # a path below it
    ],
)
async def test_a_row_copied_under_a_url_that_differs_is_not_used(
    other: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = SQLiteTokenStore(tmp_path / "runs.db", key=KEY)
    await keep_for(store, A)
    copy_row(tmp_path / "runs.db", server_key(A), server_key(other))
    kept = storage(store, other)
    assert await kept.get_tokens() is None
    assert await kept.get_client_info() is None
    assert await kept.newer_tokens(None) is None
    assert (await storage(store, A).get_tokens()).access_token == "at-kept-for-a-0123"
    assert "at-kept-for-a-0123" not in caplog.text
    assert "kept for http://127.0.0.1:8123/mcp" in caplog.text


@pytest.mark.parametrize(
    "same",
    [
        "http://127.0.0.1:8123/mcp?tenant=b",  # the query is not part of the key
        "HTTP://127.0.0.1:8123/mcp",  # nor the scheme's case
        "http://127.0.0.1:8123/mcp#part",  # nor a fragment
    ],
)
async def test_a_url_with_the_same_key_is_the_same_server(same: str, tmp_path: Path) -> None:
    store = SQLiteTokenStore(tmp_path / "runs.db", key=KEY)
    await keep_for(store, A)
    assert server_key(same) == server_key(A)
    tokens = await storage(store, same).get_tokens()
    assert tokens is not None
    assert tokens.access_token == "at-kept-for-a-0123"


async def test_a_file_copied_under_another_servers_name_is_not_used(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path, key=KEY)
    await keep_for(store, A)
    other = "http://127.0.0.1:8124/mcp"
    shutil.copy(store._path(server_key(A)), store._path(server_key(other)))
    assert await storage(store, other).get_tokens() is None
    assert await storage(store, other).get_client_info() is None


@pytest.mark.parametrize("server", [None, "", 42, ["http://127.0.0.1:8123/mcp"], "http://x/"])
async def test_an_entry_without_its_own_server_is_not_used(
    server: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    store = SQLiteTokenStore(tmp_path / "runs.db", key=KEY)
    await keep_for(store, A)
    entry = await store.read(server_key(A))
    assert entry is not None
    if server is None:
        del entry["server"]  # sealed with no server field
    else:
        entry["server"] = server
    await store.write(server_key(A), entry)
    kept = storage(store, A)
    assert await kept.get_tokens() is None
    assert await kept.get_client_info() is None
    [said] = [r.getMessage() for r in caplog.records if "was kept for" in r.getMessage()]
    assert server_key(A) in said
    assert "at-kept-for-a-0123" not in said
