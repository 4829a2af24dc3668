"""``toolwire inbox``: the console served alone, on loopback, behind a random token."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from inbox_tools import API, client, delete, pause, served_inbox

from command_line import run_cli
from toolwire import MemoryStore, SQLiteStore
from toolwire.inbox._serve import COOKIE, TokenGate, is_loopback

pytestmark = pytest.mark.anyio


def inbox(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("inbox", *args)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.10", "::", "example.test"])
def test_a_host_not_loopback_needs_an_explicit_authorize(host: str, tmp_path: Path) -> None:
    result = inbox("--store", f"sqlite:///{tmp_path / 'runs.db'}", "--host", host)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"toolwire: error: the inbox serves {host!r} (not loopback) only with --authorize "
        "module:function"
    ]


def test_a_bad_authorize_is_a_one_line_error(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    result = inbox("--store", store, "--authorize", "no_such_module_here:who")
    assert result.returncode == 2
    assert result.stderr.startswith("toolwire: error: cannot import 'no_such_module_here'")
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("store", ["memory://", "memory://?max_runs=5", "sqlite:///:memory:"])
def test_a_store_no_other_process_can_fill_is_refused_saying_why(store: str) -> None:
    result = inbox("--store", store, "--port", "0")
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("toolwire: error: --store: a store in the console's own memory")
    assert "holds no run of any other process" in line
    assert result.stdout == ""  # no console was announced


@pytest.fixture
def refusing_port() -> Iterator[int]:
    """A loopback port bound by no listener: a connection to it is refused at once."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]


@pytest.mark.parametrize(
    "url",
    [
        "redis://ops:hunter2@127.0.0.1:{port}/0",
        "postgresql://ops:hunter2@127.0.0.1:{port}/runs?sslmode=disable",
    ],
)
def test_a_store_that_cannot_be_reached_is_a_one_line_refusal_to_start(
    refusing_port: int, url: str
) -> None:
    result = inbox("--store", url.format(port=refusing_port), "--port", "0")
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("toolwire: error: the inbox does not start: its run store: ")
    assert f"127.0.0.1:{refusing_port}" in line
    assert "hunter2" not in line
    assert result.stdout == ""


def test_loopback_hosts() -> None:
    assert [is_loopback(h) for h in ("127.0.0.1", "127.8.0.1", "::1", "localhost")] == [True] * 4
    assert [is_loopback(h) for h in ("0.0.0.0", "::", "10.0.0.1", "host.test")] == [False] * 4


async def test_the_token_signs_in_once_then_the_cookie_does() -> None:
    from toolwire.inbox import app

    store = MemoryStore()
    await pause(store, "r", [delete(1)])
    gate = TokenGate("s3cret-token", "ops")
    gate.inner = app(store, authorize=gate.authorize)
    async with client(gate) as http:
        assert (await http.get("/")).status_code == 401
        assert (await http.get("/", params={"token": "wrong"})).status_code == 401
        signed_in = await http.get("/runs/r", params={"token": "s3cret-token", "tool": "x"})
        assert signed_in.status_code == 303
        assert signed_in.headers["location"] == "/runs/r?tool=x"  # the token leaves the URL
        cookie = signed_in.headers["set-cookie"]
        assert cookie.startswith(f"{COOKIE}=s3cret-token;")
        assert "HttpOnly" in cookie
        assert "SameSite=Strict" in cookie
        assert (await http.get("/runs/r")).status_code == 200  # the cookie is kept
        answer = await http.post(
            "/api/runs/r/calls/c1/decision", json={"decision": "allow"}, headers=API
        )
        assert answer.json()["by"] == "ops"
    async with client(gate, authorization="Bearer s3cret-token") as http:
        assert (await http.get("/api/pending")).status_code == 200


def test_toolwire_inbox_serves_the_console_of_a_store(tmp_path: Path) -> None:
    import anyio

    database = tmp_path / "runs.db"
    store = SQLiteStore(database)
    try:
        anyio.run(pause, store, "r", [delete(5)])
    finally:
        store.close()
    with served_inbox(f"sqlite:///{database}") as url, httpx.Client(timeout=30) as http:
        assert "?token=" in url
        bare = url.partition("?")[0]
        assert http.get(bare).status_code == 401
        listed = http.get(url, follow_redirects=True)
        assert listed.status_code == 200
        assert "delete_customer" in listed.text
        api: Any = http.get(bare + "api/pending").json()
        assert [item["arguments"] for item in api["items"]] == [{"customer": 5}]
