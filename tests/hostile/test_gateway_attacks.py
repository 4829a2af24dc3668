"""Attacks on the MCP gateway (`toolwire serve`, `toolwire.mcp.serve`, `Gateway`): reaching it
from the network, and reaching tools its policy denies through its listing. A failing test
here names the invariant it breaks in its comment."""

from __future__ import annotations

import ipaddress
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("mcp")
pytest.importorskip("uvicorn")

import httpx
import mcp
import mcp_types as types

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp_gateway"))

from auth_support import served

import toolwire
import toolwire.mcp
from toolwire import ConfigurationError, Policy, Rule, ToolSet, tainted_by
from toolwire._net import is_loopback
from toolwire.mcp import Gateway

BOUND = 30  # seconds a test may take: a hang fails, never blocks the suite
GATEWAY_TOOLS = Path(__file__).resolve().parents[1] / "mcp_gateway" / "gateway_tools.py"

ran: list[str] = []


@toolwire.tool(annotations={"readOnlyHint": True})
def search(q: str) -> str:
    """Search the documents."""
    ran.append("search")
    return f"found {q}"


@toolwire.tool
def refund(order: str) -> str:
    """Refund an order."""
    ran.append("refund")
    return f"refunded {order}"


@toolwire.tool
def delete_all(path: str) -> str:
    """Delete everything under a path."""
    ran.append("delete_all")
    return f"deleted {path}"


@toolwire.tool
def ping() -> str:
    """Answer pong."""
    ran.append("ping")
    return "pong"


TOOLS = ToolSet([search, refund, delete_all, ping])


def _text(result: types.CallToolResult) -> str:
    return "\n".join(part.text for part in result.content if isinstance(part, types.TextContent))


# -- the network: no authentication, so loopback only (docs/security.md, known limits) ----------

NOT_LOOPBACK = [
    "0.0.0.0",  # every IPv4 interface
    "::",  # every interface
    "[::]",
    "",  # bind's "every interface" too
    "10.0.0.1",
    "169.254.1.1",
    "fe80::1",
    "::ffff:10.0.0.1",
    "example.com",
    "localhost.example.com",  # a name that may resolve anywhere, even to 127.0.0.1
    "127.0.0.1.nip.io",
]


@pytest.mark.anyio
@pytest.mark.parametrize("host", NOT_LOOPBACK)
async def test_the_gateway_refuses_to_listen_beyond_loopback_as_it_has_no_authentication(
    host: str,
) -> None:
    # Breaks "every call is governed": anyone reaching the port would call the tools as the
    # gateway's principal. The refusal comes before anything is served (or even loaded: the
    # SOURCE does not exist).
    listened: list[str] = []
    with anyio.fail_after(BOUND), anyio.CancelScope() as serving:

        def on_listening(url: str) -> None:
            listened.append(url)
            serving.cancel()

        with pytest.raises(ConfigurationError, match="no authentication") as refused:
            await toolwire.mcp.serve(
                "no_such_source.py", transport="http", host=host, port=0, on_listening=on_listening
            )
    assert listened == []
    assert "loopback only" in str(refused.value)


@pytest.mark.anyio
@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"])
async def test_the_gateway_listens_on_any_loopback_address(host: str) -> None:
    listened: list[str] = []
    with anyio.fail_after(BOUND), anyio.CancelScope() as serving:

        def on_listening(url: str) -> None:
            listened.append(url)
            serving.cancel()

        try:
            await toolwire.mcp.serve(
                [search], transport="http", host=host, port=0, on_listening=on_listening
            )
        except ConfigurationError as exc:  # no IPv6, or only 127.0.0.1 (macOS), here
            if "cannot listen" in str(exc) and host not in ("127.0.0.1", "localhost"):
                pytest.skip(f"no such loopback address here: {exc}")
            raise
    (url,) = listened
    assert url.endswith("/mcp")


def _serve_cli(*argv: str) -> tuple[int, str]:
    """`toolwire serve` in a process of its own: its exit status and stderr, or a failed test
    as soon as it says it serves (it never exits by itself then)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "toolwire.cli", "serve", *argv],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    lines = []
    for line in process.stderr:
        lines.append(line)
        if "serving MCP at" in line:
            process.kill()
            process.wait(timeout=BOUND)
            pytest.fail(f"the gateway serves the network: {line.strip()}")
    return process.wait(timeout=BOUND), "".join(lines)


@pytest.mark.parametrize("address", ["0.0.0.0:0", "[::]:0", ":::0"])
def test_toolwire_serve_on_a_network_address_is_refused_in_one_line(address: str) -> None:
    status, stderr = _serve_cli(str(GATEWAY_TOOLS), "--http", address)
    assert status == 2
    (line,) = stderr.splitlines()
    assert line.startswith("toolwire: error: the MCP gateway has no authentication configured")


def test_the_console_and_the_gateway_share_one_loopback_rule() -> None:
    from toolwire.inbox import _serve as console

    assert console.is_loopback is is_loopback


@settings(max_examples=300, deadline=None)
@given(st.ip_addresses())
def test_an_address_is_loopback_exactly_when_it_is_in_a_loopback_network(
    address: ipaddress.IPv4Address | ipaddress.IPv6Address,
) -> None:
    expected = address in ipaddress.ip_network("127.0.0.0/8") or address == ipaddress.ip_address(
        "::1"
    )
    assert is_loopback(str(address)) is expected
    if address.version == 6:
        assert is_loopback(f"[{address}]") is expected


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_no_name_but_localhost_is_taken_for_loopback(name: str) -> None:
    # A name is never looked up (a resolver could answer anything), so only the literal
    # addresses and `localhost` count.
    try:
        ipaddress.ip_address(name.removeprefix("[").removesuffix("]"))
    except ValueError:
        assert is_loopback(name) is (name.isascii() and name.lower() == "localhost")


@pytest.mark.anyio
async def test_a_request_naming_another_host_is_refused_on_every_loopback_address() -> None:
    # DNS rebinding: a web page whose name its attacker resolves to 127.0.0.2 must not reach
    # the tools from the victim's browser (the SDK's own protection covers only 127.0.0.1,
    # localhost and ::1).
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "page", "version": "1"},
        },
    }
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.2", 0))
        except OSError:
            pytest.skip("only 127.0.0.1 is a loopback address here")
    with anyio.fail_after(BOUND):
        async with served([search], host="127.0.0.2") as url:
            port = url.rsplit(":", 1)[1].split("/")[0]
            async with httpx.AsyncClient() as http:
                rebound = await http.post(
                    url, json=initialize, headers={**headers, "host": f"evil.example:{port}"}
                )
                honest = await http.post(url, json=initialize, headers=headers)
    assert rebound.status_code in (403, 421)
    assert honest.status_code == 200


# -- the listing: what the policy lets the principal call, as toolwire.tools lists it ---------


def _policy() -> Policy:
    return Policy(
        Rule("deny", "delete_all", reason="deleting is not for agents"),
        Rule("deny", "refund", when=lambda c: c.principal != "admin"),
        Rule("deny", "search", when=lambda c: c.arguments.get("q") == "secrets"),
        Rule("ask", "ping"),
    )


def _declared(policy: Policy | None, principal: Any) -> list[str]:
    listing = toolwire.tools(TOOLS, "anthropic", principal=principal, policy=policy)
    return list(listing.declaration.entries)


NAME_VARIANTS = [
    "delete_all", "Delete_All", "DELETE_ALL", "delete_all ", "\u200bdelete_all",
    "delete\u2060_all", "default_api.delete_all", "tools/delete_all", "delete-all",
]  # fmt: skip


@pytest.mark.anyio
@pytest.mark.parametrize("principal", ["guest", "admin"])
async def test_the_gateway_lists_only_what_its_policy_lets_its_principal_call(
    principal: str,
) -> None:
    # Breaks "what the policy denies is never offered": tools/list named tools the policy
    # denies the principal outright, which toolwire.tools(policy=) leaves out.
    gateway = Gateway(TOOLS, policy=_policy(), principal=principal)
    ran.clear()
    with anyio.fail_after(BOUND):
        async with mcp.Client(gateway.server()) as client:
            listed = [tool.name for tool in (await client.list_tools()).tools]
            hidden = [await client.call_tool(name, {"path": "/"}) for name in NAME_VARIANTS]
            refunded = await client.call_tool("refund", {"order": "o1"})
    assert listed == _declared(_policy(), principal)
    expected = ["search", "refund", "ping"] if principal == "admin" else ["search", "ping"]
    assert listed == expected
    # A call to a hidden tool is answered as an unknown tool, by any name, and never runs.
    for name, result in zip(NAME_VARIANTS, hidden, strict=True):
        assert (result.is_error, _text(result)) == (True, f"Unknown tool {name!r}.")
    if principal == "admin":
        assert (refunded.is_error, _text(refunded)) == (False, "refunded o1")
    else:
        assert (refunded.is_error, _text(refunded)) == (True, "Unknown tool 'refund'.")
    assert "delete_all" not in ran
    assert ("refund" in ran) is (principal == "admin")


@pytest.mark.anyio
async def test_a_tool_denied_only_for_some_calls_is_listed_and_those_calls_get_the_reason() -> None:
    gateway = Gateway(TOOLS, policy=_policy(), principal="guest")
    ran.clear()
    with anyio.fail_after(BOUND):
        async with mcp.Client(gateway.server()) as client:
            denied = await client.call_tool("search", {"q": "secrets"})
            found = await client.call_tool("search", {"q": "docs"})
    assert denied.is_error is True
    assert "denied by policy rule 'search'" in _text(denied)
    assert (found.is_error, _text(found)) == (False, "found docs")
    assert ran == ["search"]


_WHEN: dict[str, Any] = {
    "always": None,
    "for guest": lambda c: c.principal == "guest",
    "not for admin": lambda c: c.principal != "admin",
    "reads the arguments": lambda c: bool(c.arguments.get("q")),
    "reads the taint": tainted_by("web"),
    "raises": lambda c: 1 / 0,
}
_RULES = st.builds(
    lambda effect, pattern, when: Rule(effect, pattern, when=_WHEN[when]),
    st.sampled_from(["allow", "ask", "deny"]),
    st.sampled_from(["search", "refund", "delete_all", "ping", "*", "re*", "*_all", "other"]),
    st.sampled_from(list(_WHEN)),
)
_POLICIES = st.builds(
    lambda rules, default, destructive: Policy(*rules, default=default, destructive=destructive),
    st.lists(_RULES, max_size=5),
    st.sampled_from(["allow", "ask", "deny"]),
    st.sampled_from(["ask", "ignore"]),
)


# A generated rule may name no tool ("other"): that it warns is not what this property is about.
@pytest.mark.filterwarnings("ignore:policy rule:toolwire.errors.ToolwireWarning")
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_POLICIES, st.sampled_from([None, "guest", "admin", {"id": 7}]))
def test_the_gateway_lists_exactly_what_toolwire_tools_declares(
    policy: Policy, principal: Any
) -> None:
    # The same rule, by the same function: whatever the policy and the principal.
    gateway = Gateway(TOOLS, policy=policy, principal=principal)
    assert [tool.name for tool in gateway.list_tools()] == _declared(policy, principal)
    for name in TOOLS.exposed_names:
        listed = gateway.toolset.get(name) is not None
        outright = policy.denies_outright(TOOLS[name], principal=principal, exposed_name=name)
        assert listed is (outright is None)
