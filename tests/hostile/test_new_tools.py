"""New tools are not trusted: a tool that appears after a server's first listing needs approval
like a changed definition, until it is approved or the hub is told to trust new tools."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

import toolwire

pytest.importorskip("mcp")
from hostile_mcp_servers import good, stdio_args
from provider_turns import PROVIDERS, response_for

from toolwire.mcp import Hub, InProcessServer, StdioServer

pytestmark = pytest.mark.anyio


def servers(scenario: str) -> dict[str, StdioServer | InProcessServer]:
    """The hostile server ``scenario``, a process of its own, and the well-behaved one, in this
    process."""
    return {
        "evil": StdioServer(command=sys.executable, args=stdio_args("hostile", scenario)),
        "good": InProcessServer(server=good()),
    }


class Asked:
    """An approver that allows every call and remembers which tools it was asked about."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.reasons: list[str | None] = []

    def __call__(self, request: toolwire.ApprovalRequest) -> toolwire.Decision:
        self.names.append(request.exposed_name)
        self.reasons.append(request.reason)
        return toolwire.allow()


async def run(hub: Hub, provider: str, *calls: tuple[str, dict[str, Any]], **options: Any) -> Any:
    numbered = [(name, arguments, f"c{i}") for i, (name, arguments) in enumerate(calls)]
    with anyio.fail_after(30):
        return await toolwire.execute_tool_calls(
            hub, provider, response_for(provider, numbered), **options
        )


async def appears(hub: Hub, exposed_name: str) -> None:
    with anyio.fail_after(30):
        while exposed_name not in hub.as_toolset():
            await anyio.sleep(0.01)


# -- the reproduction: search replaced by search_v2 after the first listing ---------------------


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_tool_that_replaces_another_after_the_first_listing_needs_approval(
    provider: str,
) -> None:
    asked = Asked()
    async with Hub(servers("rotating")) as hub:
        first = await run(hub, provider, ("evil__search", {"text": "a"}), approver=asked)
        assert first.calls[0].result.error_kind is None
        assert asked.names == []  # the first listing is trusted as it is
        await run(hub, provider, ("evil__rotate", {}))
        await appears(hub, "evil__search_v2")
        toolset = hub.as_toolset()
        assert "evil__search" not in toolset
        assert toolset["evil__search_v2"].needs_approval
        assert not toolset["evil__ok"].needs_approval
        assert not toolset["good__add"].needs_approval
        # Declared like any tool, but every call is asked about.
        listed = toolwire.tools(hub, provider).toolset.exposed_names
        assert "evil__search_v2" in listed
        outcome = await run(
            hub,
            provider,
            ("evil__search_v2", {"text": "b"}),
            ("good__add", {"a": 1, "b": 2}),
            approver=asked,
        )
        assert [c.result.error_kind for c in outcome.calls] == [None, None]
        assert asked.names == ["evil__search_v2"]
        assert asked.reasons == ["the tool is new or its definition changed since it was approved"]
        hub.approve_definition("evil__search_v2")
        await run(hub, provider, ("evil__search_v2", {"text": "c"}), approver=asked)
    assert asked.names == ["evil__search_v2"]  # approved: no more asking


async def test_an_unapproved_new_tool_waits_for_a_decision_and_stays_new_across_listings() -> None:
    async with Hub(servers("rotating")) as hub:
        await run(hub, "gemini", ("evil__rotate", {}))
        await appears(hub, "evil__search_v2")
        with pytest.raises(toolwire.ApprovalPending) as pending:
            await run(
                hub,
                "gemini",
                ("evil__search_v2", {"text": "b"}),
                approver=toolwire.DeferredApproval(),
                run_id="new-tool",
            )
        assert [request.exposed_name for request in pending.value.pending] == ["evil__search_v2"]
        # Another listing (the server says its tools changed again) is not a first listing.
        before = hub.as_toolset()
        await run(hub, "gemini", ("evil__rotate", {}))
        with anyio.fail_after(30):
            while hub.as_toolset() is before:  # rebuilt once the new listing is in
                await anyio.sleep(0.01)
        assert hub.as_toolset()["evil__search_v2"].needs_approval


async def test_a_tool_left_out_of_the_first_listing_is_new_when_it_is_fixed() -> None:
    asked = Asked()
    async with Hub(servers("healing")) as hub:
        assert "broken" in hub.left_out["evil"]
        await run(hub, "anthropic", ("evil__heal", {}))
        await appears(hub, "evil__broken")
        assert hub.left_out["evil"] == {}
        await run(hub, "anthropic", ("evil__broken", {"text": "x"}), approver=asked)
    assert asked.names == ["evil__broken"]


# -- trusting new tools --------------------------------------------------------------------------


async def test_a_hub_told_to_trust_new_tools_trusts_them_as_first_seen() -> None:
    asked = Asked()
    async with Hub(servers("rotating"), trust_new_tools=True) as hub:
        await run(hub, "openai-chat", ("evil__rotate", {}))
        await appears(hub, "evil__search_v2")
        assert not hub.as_toolset()["evil__search_v2"].needs_approval
        outcome = await run(hub, "openai-chat", ("evil__search_v2", {"text": "x"}), approver=asked)
    assert outcome.calls[0].result.text == "search_v2: x"
    assert asked.names == []


async def test_trust_new_tools_in_a_config(tmp_path: Path) -> None:
    entries = {
        name: {"command": sys.executable, "args": stdio_args(*scenario)}
        for name, scenario in {"evil": ("hostile", "healing"), "good": ("good",)}.items()
    }
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": entries}))
    for trust, expected in [(False, True), (True, False)]:
        async with Hub.from_config(config, trust_new_tools=trust) as hub:
            await run(hub, "gemini", ("evil__heal", {}))
            await appears(hub, "evil__broken")
            assert hub.as_toolset()["evil__broken"].needs_approval is expected
