"""``login`` and ``toolwire mcp login``: the browser flow once, through a listener on
127.0.0.1, against the authorization server of ``oauth_servers``; the test plays the browser."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from toolwire import AuthorizationError, ConfigurationError, ToolwireWarning
from toolwire.sources import SourceError

pytest.importorskip("mcp")
import anyio.abc
import mcp
import mcp_types as types
from mcp.client.streamable_http import streamable_http_client
from oauth_servers import AuthServer, oauth_pair

from command_line import console_script, run_cli
from toolwire._scrub import server_key
from toolwire.mcp import (
    FileTokenStore,
    HttpServer,
    Hub,
    MemoryTokenStore,
    OAuth,
    login,
    logout,
    serve,
    token_store_for,
)

pytestmark = pytest.mark.anyio


class Browser:
    """Takes the lines ``login`` shows; the URL among them is what a person would open."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.shown = anyio.Event()
        self.url = ""

    def __call__(self, line: str) -> None:
        self.lines.append(line)
        if line.startswith("  http"):
            self.url = line.strip()
            self.shown.set()

    async def approve(self) -> httpx2.Response:
        """Open the URL, approve (the server does at once), follow it back to the listener."""
        await self.shown.wait()
        async with httpx2.AsyncClient() as client:
            answer = await client.get(self.url)
            assert answer.status_code == 302
            return await client.get(answer.headers["location"])


async def logging_in(spec: HttpServer, browser: Browser, **options: Any) -> bool:
    asked: list[bool] = []
    async with anyio.create_task_group() as tasks:

        async def run() -> None:
            asked.append(await login(spec, announce=browser, open_browser=False, **options))

        tasks.start_soon(run)
        back = await browser.approve()
        assert back.status_code == 200
        assert "toolwire got the answer" in back.text
    return asked[0]


async def test_login_takes_the_answer_on_loopback_and_keeps_the_tokens_for_hubs() -> None:
    store = MemoryTokenStore()
    browser = Browser()
    with oauth_pair() as (auth, protected):
        spec = HttpServer(url=protected.url, auth=OAuth(store=store))
        with anyio.fail_after(30):
            assert await logging_in(spec, browser) is True
            async with Hub({"g": spec}) as hub:  # no person now: the kept tokens
                assert hub.status == {"g": None}
        assert browser.url.startswith(f"{auth.url}/authorize?")
        [asked] = auth.authorize_requests
        assert asked["redirect_uri"].startswith("http://127.0.0.1:")
        assert [r["grant_type"] for r in auth.token_requests] == ["authorization_code"]
    entry = await store.read(server_key(protected.url))
    assert entry is not None
    assert "tokens" in entry


async def test_a_forged_or_stray_request_to_the_listener_is_turned_away() -> None:
    browser = Browser()
    with oauth_pair() as (auth, protected):
        spec = HttpServer(url=protected.url, auth=OAuth(store=MemoryTokenStore()))
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(lambda: login(spec, announce=browser, open_browser=False))
                await browser.shown.wait()
                listener = auth.clients[next(iter(auth.clients))]["redirect_uris"][0]
                async with httpx2.AsyncClient() as client:
                    forged = await client.get(f"{listener}?code=forged-code&state=not-the-one")
                    stray = await client.get(listener.replace("/callback", "/favicon.ico"))
                    posted = await client.post(f"{listener}?code=x&state=y")
                assert (forged.status_code, stray.status_code, posted.status_code) == (
                    400,
                    404,
                    400,
                )
                assert (await browser.approve()).status_code == 200
        # Only the real code was exchanged.
        assert len(auth.token_requests) == 1


async def test_a_second_login_keeps_the_client_registration() -> None:
    store = MemoryTokenStore()
    with oauth_pair() as (auth, protected):
        spec = HttpServer(url=protected.url, auth=OAuth(store=store))
        with anyio.fail_after(30):
            await logging_in(spec, Browser())
            await logging_in(spec, Browser())
        assert auth.registrations == 1  # the same redirect URI listened on again
        assert [r["grant_type"] for r in auth.token_requests] == ["authorization_code"] * 2


async def test_a_login_nobody_answers_stops_at_its_timeout() -> None:
    with oauth_pair() as (_, protected):
        spec = HttpServer(url=protected.url, auth=OAuth(store=MemoryTokenStore()))
        with anyio.fail_after(30), pytest.raises(AuthorizationError) as raised:
            await login(spec, announce=lambda line: None, open_browser=False, timeout=1)
    assert raised.value.reason == "timeout"
    assert "within 1 s" in str(raised.value)


async def test_a_server_that_does_not_ask_needs_no_login() -> None:
    from oauth_servers import ProtectedServer, serving

    open_server = ProtectedServer(AuthServer())
    with serving(open_server.inner) as base:
        spec = HttpServer(url=f"{base}/mcp", auth=OAuth(store=MemoryTokenStore()))
        with anyio.fail_after(30):
            assert await login(spec, announce=lambda line: None, open_browser=False) is False


async def test_logout_forgets_the_kept_tokens() -> None:
    store = MemoryTokenStore()
    with oauth_pair() as (_, protected):
        spec = HttpServer(url=protected.url, auth=OAuth(store=store))
        with anyio.fail_after(30):
            await logging_in(spec, Browser())
    await logout(spec)
    assert await store.read(server_key(protected.url)) is None


async def test_a_redirect_uri_off_loopback_cannot_be_listened_on() -> None:
    spec = HttpServer(
        url="https://mcp.example.com/mcp",
        auth=OAuth(redirect_uri="https://app.example.com/callback", store=MemoryTokenStore()),
    )
    with pytest.raises(ConfigurationError, match="loopback"):
        await login(spec, announce=lambda line: None, open_browser=False)


# -- the command ------------------------------------------------------------------------------


async def test_the_login_command_for_a_config_entry(tmp_path: Path) -> None:
    environment = {
        **os.environ,
        "TOOLWIRE_CONFIG_DIR": str(tmp_path / "config"),
        "CI": "1",  # never a browser
    }
    environment.pop("TOOLWIRE_TOKEN_KEY", None)
    with oauth_pair() as (auth, protected):
        config = tmp_path / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"guarded": {"url": protected.url}}}))
        with anyio.fail_after(60):
            process = await anyio.open_process(
                [*console_script(), "mcp", "login", "guarded", "--config", str(config)],
                env=environment,
            )
            async with process:
                assert process.stderr is not None
                shown = b""
                while b"\n  http" not in shown or not shown.endswith(b"\n"):
                    shown += await process.stderr.receive()
                url = next(
                    line.strip() for line in shown.decode().splitlines() if line.startswith("  ")
                )
                async with httpx2.AsyncClient() as client:
                    answer = await client.get(url)
                    await client.get(answer.headers["location"])
                await process.wait()
                async for chunk in process.stderr:
                    shown += chunk
            assert process.returncode == 0, shown.decode()
        assert "logged in to guarded" in shown.decode()
        assert [secret for secret in auth.issued if secret in shown.decode()] == []
        directory = tmp_path / "config" / "oauth"
        [kept] = list(directory.iterdir())
        if os.name == "posix":
            assert stat.S_IMODE(kept.stat().st_mode) == 0o600
            assert stat.S_IMODE(directory.stat().st_mode) == 0o700
        entry = await FileTokenStore(directory).read(server_key(protected.url))
        assert entry is not None
        assert entry["tokens"]["access_token"] in auth.access

        # `toolwire check` reaches the server with the kept tokens.
        checked = await anyio.run_process(
            [*console_script(), "check", str(config), "--json"], env=environment, check=False
        )
        assert checked.returncode == 0, checked.stderr.decode()
        assert "guarded__add" in checked.stdout.decode()

        forgot = await anyio.run_process(
            [*console_script(), "mcp", "logout", "guarded", "--config", str(config)],
            env=environment,
            check=False,
        )
        assert forgot.returncode == 0, forgot.stderr.decode()
        assert list(directory.iterdir()) == []


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["mcp", "login", "guarded"], "or the name of a server of --config"),
        (["mcp", "login", "nothere", "--config", "{config}"], "has no server 'nothere'"),
        (["mcp", "login", "local", "--config", "{config}"], "not a remote server"),
        (["mcp", "login", "static", "--config", "{config}"], "does not use OAuth"),
        (["mcp", "login", "https://h/mcp", "--store", "memory://"], "a memory store ends"),
        (["mcp", "login", "https://h/mcp", "--config", "{config}"], "not both"),
    ],
)
def test_the_login_command_refuses_what_it_cannot_log_in_to(
    tmp_path: Path, arguments: list[str], message: str
) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "local": {"command": "true"},
                    "static": {
                        "url": "https://mcp.example.com/mcp",
                        "headers": {"Authorization": "Bearer static-token"},
                    },
                }
            }
        )
    )
    result = run_cli(
        *(a.format(config=config) for a in arguments),
        env={"TOOLWIRE_CONFIG_DIR": str(tmp_path / "config")},
    )
    error = result.stderr
    assert result.returncode == 2, error
    assert error.startswith("toolwire: error:")
    assert len(error.strip().splitlines()) == 1
    assert message in error
    assert "static-token" not in error


def test_tokens_kept_in_a_run_stores_database_need_the_sealing_key(tmp_path: Path) -> None:
    environment: dict[str, str | None] = {
        "TOOLWIRE_CONFIG_DIR": str(tmp_path / "config"),
        "TOOLWIRE_TOKEN_KEY": None,
    }
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    refused = run_cli("mcp", "logout", "https://h/mcp", "--store", store, env=environment)
    assert refused.returncode == 2
    assert "set TOOLWIRE_TOKEN_KEY" in refused.stderr
    environment["TOOLWIRE_TOKEN_KEY"] = "mgoZsOdMBuT4PKLzzPmyVCwJ3W7cNH4bK6ZoM3kHm5E="
    forgot = run_cli("mcp", "logout", "https://h/mcp", "--store", store, env=environment)
    assert forgot.returncode == 0, forgot.stderr


# -- a gateway on a run store ------------------------------------------------------------------

TOKEN_KEY = "mgoZsOdMBuT4PKLzzPmyVCwJ3W7cNH4bK6ZoM3kHm5E="


async def test_a_gateway_on_a_run_store_uses_the_tokens_logged_in_to_its_database(
    tmp_path: Path,
) -> None:
    environment = {
        **os.environ,
        "TOOLWIRE_CONFIG_DIR": str(tmp_path / "config"),  # no tokens in the default file store
        "TOOLWIRE_TOKEN_KEY": TOKEN_KEY,
    }
    store_url = f"sqlite:///{tmp_path / 'runs.db'}"
    with oauth_pair() as (auth, protected):
        # What `toolwire mcp login URL --store STORE` does: the tokens go to the database.
        kept = token_store_for(store_url, key=TOKEN_KEY)
        with anyio.fail_after(30):
            spec = HttpServer(url=protected.url, auth=OAuth())
            assert await logging_in(spec, Browser(), token_store=kept) is True
        logged_in = auth.token_requests[:]

        with anyio.fail_after(60):
            process = await anyio.open_process(
                [
                    *console_script(),
                    "serve",
                    protected.url,
                    "--store",
                    store_url,
                    "--http",
                    "127.0.0.1:0",
                ],
                env=environment,
            )
            async with process:
                try:
                    url = await _served_url(process)
                    async with mcp.Client(streamable_http_client(url)) as client:
                        added = await client.call_tool("mcp__add", {"a": 2, "b": 3})
                finally:
                    process.terminate()
        assert added.is_error is False
        assert [part.text for part in added.content if isinstance(part, types.TextContent)] == ["5"]
        # The gateway's hub sent the kept token: no authorization of its own.
        assert auth.token_requests == logged_in
        assert protected.seen[-1] is not None
        assert protected.seen[-1][7:] in auth.access
    assert not (tmp_path / "config" / "oauth").exists()


async def test_a_gateway_without_the_sealing_key_says_its_stores_tokens_stay_sealed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLWIRE_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.delenv("TOOLWIRE_TOKEN_KEY", raising=False)
    store_url = f"sqlite:///{tmp_path / 'runs.db'}"
    with oauth_pair() as (_, protected):
        with anyio.fail_after(30):
            spec = HttpServer(url=protected.url, auth=OAuth())
            kept = token_store_for(store_url, key=TOKEN_KEY)
            assert await logging_in(spec, Browser(), token_store=kept) is True
            with (
                pytest.warns(ToolwireWarning, match="TOOLWIRE_TOKEN_KEY is not set"),
                pytest.raises(SourceError, match="run `toolwire mcp login`"),
            ):
                await serve(protected.url, store=store_url, transport="http", port=0)


async def test_a_gateway_with_a_key_that_is_no_fernet_key_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLWIRE_TOKEN_KEY", "not a key")
    with pytest.raises(ConfigurationError, match="not a Fernet key"):
        await serve("https://mcp.example.com/mcp", store=f"sqlite:///{tmp_path / 'runs.db'}")


async def _served_url(process: anyio.abc.Process) -> str:
    """Where ``toolwire serve --http`` says it listens (read from its stderr)."""
    assert process.stderr is not None
    shown = b""
    marker = b"serving MCP at "
    while marker not in shown or not shown.split(marker, 1)[1].count(b"\n"):
        chunk = await process.stderr.receive()
        shown += chunk
    return shown.split(marker, 1)[1].split(b"\n", 1)[0].decode().strip()
