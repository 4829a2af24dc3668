"""Tool sources (``toolwire.sources``): the protocol the facade reads a changing source through,
and SOURCE strings loaded by the library itself, for the command line and the gateway alike."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

import toolwire
from toolwire import Policy, Rule, Tool, ToolSet
from toolwire.sources import (
    OpenedSource,
    SourceError,
    ToolSource,
    is_tool_source,
    load_source,
    open_source,
    opened_source,
)

pytestmark = pytest.mark.anyio


@toolwire.tool
def ping() -> str:
    """Answer pong."""
    return "pong"


class Shelf:
    """A tool source of one's own: tools that come and go."""

    def __init__(self) -> None:
        self.toolset = ToolSet([ping])
        self.gone: dict[str, tuple[Tool, str]] = {}

    def as_toolset(self) -> ToolSet:
        return self.toolset

    def unavailable_tools(self) -> dict[str, tuple[Tool, str]]:
        return dict(self.gone)


def test_a_class_with_the_protocols_methods_is_a_tool_source_and_tools_are_not() -> None:
    assert isinstance(Shelf(), ToolSource)
    assert is_tool_source(Shelf())
    listing = toolwire.tools([ping], "gemini")
    for tools in (ToolSet([ping]), [ping], ping, listing, None):
        assert not is_tool_source(tools)
        assert not isinstance(tools, ToolSource)


def test_a_hub_is_a_tool_source() -> None:
    pytest.importorskip("mcp")
    from toolwire.mcp import Hub, StdioServer

    hub = Hub({"files": StdioServer(command="mcp-files")})
    assert isinstance(hub, ToolSource)
    assert is_tool_source(hub)


async def test_the_facade_reads_a_tool_source_anew_at_each_turn() -> None:
    shelf = Shelf()
    listing = toolwire.tools(shelf, "gemini")
    assert listing.source is shelf
    assert listing.declaration.unavailable == {}
    shelf.gone = {"lookup": (Tool(name="lookup"), "its server is down")}
    assert toolwire.tools(shelf, "gemini").declaration.unavailable == {
        "lookup": "its server is down"
    }
    parts = [{"functionCall": {"name": name, "args": {}}} for name in ("lookup", "ping")]
    response = {"candidates": [{"content": {"role": "model", "parts": parts}}]}
    with anyio.fail_after(10):
        outcome = await toolwire.execute_tool_calls(shelf, "gemini", response)
    assert [result.error_kind for result in (c.result for c in outcome.calls)] == [
        "unavailable",
        None,
    ]
    # A tool the policy denies its principal outright is unknown to them, up or down.
    listed = toolwire.tools(shelf, "gemini", policy=Policy(Rule("deny", "lookup")))
    assert listed.declaration.unavailable == {}


MODULE = """
import toolwire

@toolwire.tool
def echo(text: str) -> str:
    '''Echo.'''
    return text

POLICY = toolwire.Policy(toolwire.Rule("deny", "echo"))
"""


async def test_a_python_source_comes_with_its_modules_own_policy(tmp_path: Path) -> None:
    source = tmp_path / "with_policy.py"
    source.write_text(MODULE, encoding="utf-8")
    async with opened_source(str(source)) as opened:
        assert isinstance(opened, OpenedSource)
        assert opened.toolset.exposed_names == ("echo",)
        assert isinstance(opened.policy, Policy)
        assert opened.policy.rules[0].pattern == "echo"
        assert (opened.hub, dict(opened.left_out)) == (None, {})
    assert load_source(str(source)).exposed_names == ("echo",)
    async with open_source(str(source)) as toolset:
        assert toolset.exposed_names == ("echo",)


async def test_a_file_of_definitions_has_no_policy(tmp_path: Path) -> None:
    source = tmp_path / "tools.json"
    source.write_text('[{"name": "echo", "inputSchema": {"type": "object"}}]', encoding="utf-8")
    async with opened_source(str(source)) as opened:
        assert opened.toolset.exposed_names == ("echo",)
        assert opened.policy is None


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("stdio:", "stdio: needs a command"),
        ("nowhere.py", "no such file: nowhere.py"),
        (":attribute", "not a SOURCE"),
    ],
)
async def test_a_source_that_cannot_be_loaded_is_a_source_error(source: str, problem: str) -> None:
    with pytest.raises(SourceError, match=problem):
        async with opened_source(source):
            pass


async def test_an_mcp_source_comes_with_its_open_hub() -> None:
    pytest.importorskip("mcp")
    from toolwire.mcp import Hub

    with anyio.fail_after(30):
        async with opened_source(f"stdio:{sys.executable} -m toolwire.demo.server") as opened:
            hub: Any = opened.hub
            assert isinstance(hub, Hub)
            assert opened.toolset is hub.as_toolset()
            assert opened.toolset.exposed_names == ("server__find_notes", "server__delete_note")
            assert hub.status == {"server": None}
            assert opened.policy is None
