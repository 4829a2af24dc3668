"""What a gateway says at start about a setup that is probably not what was meant: a policy
rule that matches none of its tools (an allow naming an upstream tool by its bare name says
which identity was meant, and still allows nothing), and, with no policy at all, tools whose
names say they delete, send or pay. Each is one line from `toolwire serve`."""

from __future__ import annotations

import json
import shlex
import socket
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import anyio
import pytest
from auth_support import client, served, served_app
from gateway_procs import TOOLS

from command_line import run_cli

pytest.importorskip("mcp")

import mcp_types as types
from mcp import Client
from mcp.server.mcpserver import MCPServer

import toolwire.mcp
from toolwire import Policy, Rule, ToolwireWarning
from toolwire.mcp import Gateway, Hub, InProcessServer

pytestmark = pytest.mark.anyio

BOUND = 60
UPSTREAM = Path(__file__).parent / "upstream_server.py"


def notes_server() -> MCPServer:
    server = MCPServer("notes")

    @server.tool(description="Read a note.")
    def read_note(title: str) -> str:
        return f"the note {title}"

    @server.tool(description="Delete a note.")
    def delete_note(title: str) -> str:
        return f"deleted {title}"

    @server.tool(description="Send a note by email.")
    def sendNote(title: str, to: str) -> str:
        return f"sent {title} to {to}"

    @server.tool(
        description="Drop the notes' cache (nothing of the user's).",
        annotations=types.ToolAnnotations(destructive_hint=False),
    )
    def drop_cache() -> str:
        return "dropped"

    return server


def _toolwire_notes(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, ToolwireWarning)]


async def _serve_until_listening(source: Any, **options: Any) -> list[str]:
    """Serve ``source`` over HTTP until it listens, then stop; the toolwire warnings said."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        async with served(source, **options):
            pass
    return _toolwire_notes(caught)


def _serve_cli(*argv: str) -> subprocess.CompletedProcess[str]:
    """`toolwire serve ARGV` over stdio with no client (its input closed): it starts, says what
    it says, and ends."""
    return run_cli("serve", *argv)


# -- rules that match no tool ------------------------------------------------------------------


async def test_an_allow_naming_an_upstream_tool_by_its_bare_name_warns_and_allows_nothing() -> None:
    policy = Policy(Rule("allow", "read_note"), default="deny")
    hub = Hub({"notes": InProcessServer(server=notes_server())})
    with anyio.fail_after(BOUND):
        async with hub:
            with pytest.warns(ToolwireWarning) as caught:
                gateway = Gateway(hub.as_toolset(), hub=hub, policy=policy)
            async with Client(gateway.server()) as client:
                listed = (await client.list_tools()).tools
                answer = await client.call_tool("notes__read_note", {"title": "a"})
    [note] = [str(w.message) for w in caught]
    assert note.startswith("policy rule allow 'read_note' matches no tool of the gateway")
    assert "did you mean 'notes/read_note'?" in note
    # never widened: the default denies every tool, so none is served
    assert listed == []
    assert answer.is_error is True


async def test_rules_written_for_the_served_tools_say_nothing() -> None:
    policy = Policy(
        Rule("allow", "notes/read_*"), Rule("deny", "delete_note"), Rule("ask", "*/sendNote")
    )
    hub = Hub({"notes": InProcessServer(server=notes_server())})
    notes = await _serve_until_listening(hub, policy=policy, store=toolwire.MemoryStore())
    assert notes == []


def test_toolwire_serve_says_once_which_identity_an_allow_rule_meant(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('default = "deny"\n\n[[rules]]\ntool = "steps"\naction = "allow"\n')
    upstream = shlex.join([sys.executable, str(UPSTREAM)])
    done = _serve_cli(f"stdio:{upstream}", "--policy", str(policy))
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if line.startswith("toolwire: warning:")]
    assert len(said) == 1, done.stderr
    assert said[0].startswith(
        "toolwire: warning: policy rule allow 'steps' matches no tool of the gateway"
    )
    assert said[0].endswith("did you mean 'upstream_server/steps'?")


# -- no policy, and tools whose names say they destroy or send --------------------------------


async def test_serving_without_a_policy_names_the_tools_whose_names_say_they_destroy() -> None:
    hub = Hub({"notes": InProcessServer(server=notes_server())})
    [note] = await _serve_until_listening(hub)
    assert note.startswith(
        "no policy: every call of notes__delete_note, notes__sendNote runs as the client makes it"
    )
    assert "read_note" not in note  # nothing in its name says so
    assert "drop_cache" not in note  # its annotations promise it destroys nothing


@pytest.mark.parametrize(
    "policy",
    [Policy(), Policy(Rule("deny", "notes/delete_note"), Rule("ask", "notes/*"))],
    ids=["a policy allowing everything", "rules"],
)
async def test_any_policy_given_is_the_operators_word_and_nothing_is_said(policy: Policy) -> None:
    hub = Hub({"notes": InProcessServer(server=notes_server())})
    notes = await _serve_until_listening(hub, policy=policy, store=toolwire.MemoryStore())
    assert notes == []


def test_toolwire_serve_without_a_policy_names_them_in_one_line() -> None:
    done = _serve_cli(str(TOOLS))
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if line.startswith("toolwire: warning:")]
    assert said == [
        "toolwire: warning: no policy: every call of delete_file runs as the client makes it, "
        "though their names say they may delete, send or pay and their annotations do not say "
        "otherwise; give a policy (--policy FILE) that asks about them or denies them "
        '(destructive = "ask" asks about every tool not declared harmless)'
    ]


async def test_a_gateway_whose_upstreams_are_all_down_serves_and_picks_them_up(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Containers start in any order: the gateway serves, says which server is down, and
    serves its tools once it is up."""
    listener = socket.socket()  # bound, not listening: the upstream's port refuses for now
    listener.bind(("127.0.0.1", 0))
    upstream = f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
    with anyio.fail_after(BOUND):
        async with served(upstream) as url, client(url, None) as connected:
            before = [tool.name for tool in (await connected.list_tools()).tools]
            with served_app(notes_server().streamable_http_app(), listener=listener):
                after: list[str] = []
                while not after:  # the hub reconnects, backing off
                    await anyio.sleep(0.1)
                    after = [tool.name for tool in (await connected.list_tools()).tools]
    warned = capsys.readouterr().err
    assert before == []
    assert "mcp__read_note" in after
    assert "MCP server 'mcp' is down" in warned
    assert "reconnecting" in warned


async def refusing(scope: Any, receive: Any, send: Any) -> None:
    """An HTTP server refusing every request: 401 under ``/k401``, 403 elsewhere."""
    if scope["type"] != "http":
        return
    status = 401 if scope["path"].startswith("/k401") else 403
    headers = [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b'{"error": "invalid_token"}'})


@pytest.mark.parametrize("status", [401, 403])
async def test_an_upstream_refusing_its_token_is_reported_as_such_without_the_token(
    status: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with served_app(refusing) as url:
        config = tmp_path / "mcp.json"
        upstream = {
            "url": url.replace("/mcp", f"/k{status}/mcp"),
            "headers": {"Authorization": "Bearer SECRET-9f3a"},
        }
        config.write_text(json.dumps({"mcpServers": {"billing": upstream}}))
        with anyio.fail_after(BOUND):
            async with served(str(config)) as gateway_url, client(gateway_url, None) as connected:
                listed = (await connected.list_tools()).tools
    warned = capsys.readouterr().err
    assert listed == []
    refused = f"Server 'billing' refused the hub's credentials (HTTP {status}"
    assert f"MCP server 'billing' is down: {refused}" in warned
    assert "SECRET-9f3a" not in warned
