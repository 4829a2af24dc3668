"""Tools' titles and icons: read from MCP listings and definitions, only safe icons kept, and
a changed title (not a changed icon) needing approval again."""

from __future__ import annotations

import hashlib
from typing import Any

import anyio
import pytest

import toolwire
from toolwire.calls import canonical_json
from toolwire.tool import Tool, definition_hash, safe_icons, tool_from_definition

pytest.importorskip("mcp")
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import Icon, ToolAnnotations

from toolwire.mcp import Hub, InProcessServer

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}
PNG_ICON = {"src": "https://example.com/w.png", "mimeType": "image/png", "sizes": ["48x48"]}
DATA_ICON = {"src": "data:image/svg+xml;base64,PHN2Zy8+", "mimeType": "image/svg+xml"}


def test_a_tool_without_title_or_icons_keeps_its_definition_hash() -> None:
    tool = Tool(name="weather", description="Reads the weather.", input_schema=SCHEMA)
    before = {"description": "Reads the weather.", "schema": SCHEMA, "annotations": None}
    expected = hashlib.sha256(canonical_json(before).encode()).hexdigest()
    assert tool.definition_hash == expected
    assert definition_hash("Reads the weather.", SCHEMA, None) == expected


def test_a_title_is_part_of_the_definition_hash_and_icons_are_not() -> None:
    plain = Tool(name="weather", description="Reads the weather.", input_schema=SCHEMA)
    titled = Tool(name="weather", description="Reads the weather.", title="Weather")
    with_icon = Tool(name="weather", description="Reads the weather.", icons=[PNG_ICON])
    assert titled.definition_hash != plain.definition_hash
    assert Tool(name="w", icons=[PNG_ICON]).definition_hash == Tool(name="w").definition_hash
    assert with_icon.icons == (PNG_ICON,)  # a list is kept as a tuple
    with pytest.raises(toolwire.ConfigurationError, match="title"):
        Tool(name="w", title=3)  # type: ignore[arg-type]
    with pytest.raises(toolwire.ConfigurationError, match="icons"):
        Tool(name="w", icons=["https://example.com/w.png"])  # type: ignore[list-item]


def test_only_safe_icons_are_kept() -> None:
    icons: list[Any] = [
        {**PNG_ICON, "onload": "steal()"},  # unknown keys dropped
        DATA_ICON,
        {"src": "HTTP://EXAMPLE.COM/a.png"},
        {"src": "file:///etc/passwd"},
        {"src": "javascript:alert(1)"},
        {"src": "data:text/html,<script>x</script>"},
        {"src": "https://example.com/" + "a" * 70_000},
        {"mimeType": "image/png"},
        "https://example.com/not-a-mapping.png",
    ]
    assert safe_icons(icons) == (PNG_ICON, DATA_ICON, {"src": "HTTP://EXAMPLE.COM/a.png"})
    assert safe_icons([{"src": "file:///x.png"}]) is None
    assert safe_icons("https://example.com/a.png") is None
    assert len(safe_icons([PNG_ICON] * 40) or ()) == 16


def test_definitions_give_their_title_and_icons() -> None:
    tool = tool_from_definition(
        {
            "name": "weather",
            "title": "Weather\u200b ",
            "icons": [PNG_ICON, {"src": "file:///x.png"}],
            "inputSchema": SCHEMA,
            "annotations": {"title": "Ignored: the title comes first"},
        }
    )
    assert tool.title == "Weather"
    assert tool.icons == (PNG_ICON,)
    fallback = tool_from_definition({"name": "w", "annotations": {"title": "From annotations"}})
    assert fallback.title == "From annotations"
    bare = tool_from_definition({"name": "w", "title": 7, "icons": "nope"})
    assert (bare.title, bare.icons) == (None, None)


def _server() -> MCPServer:
    server = MCPServer("titled")

    def weather(city: str) -> str:
        return f"sunny in {city}"

    def add_weather(title: str, icon: str) -> None:
        server.add_tool(
            weather,
            name="weather",
            title=title,
            description="Reads the weather.",
            icons=[Icon(src=icon, mime_type="image/png", sizes=["48x48"])],
        )

    add_weather("Weather", PNG_ICON["src"])

    @server.tool(
        description="Shown by its annotations' title.",
        annotations=ToolAnnotations(title="Annotated"),
        icons=[Icon(src="file:///etc/passwd"), Icon(src=DATA_ICON["src"])],
    )
    def annotated() -> str:
        return "ok"

    @server.tool(description="Nothing to show.")
    def bare() -> str:
        return "ok"

    async def change(ctx: Context, title: str, icon: str) -> str:
        server.remove_tool("weather")
        add_weather(title, icon)
        await ctx.session.send_tool_list_changed()
        await ctx.notify_tools_changed()
        return "changed"

    server.add_tool(change, name="change", description="Changes weather's title or icon.")
    return server


def _calls(name: str, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"functionCall": {"name": name, "args": arguments, "id": "c0"}}]


@pytest.mark.anyio
async def test_listed_tools_carry_their_title_and_safe_icons() -> None:
    async with Hub({"s": InProcessServer(server=_server())}) as hub:
        tools = hub.as_toolset()
        weather, annotated, bare = tools["s__weather"], tools["s__annotated"], tools["s__bare"]
    assert weather.title == "Weather"
    assert weather.icons == (PNG_ICON,)
    assert annotated.title == "Annotated"  # MCP's display order: title, then annotations
    assert annotated.icons == ({"src": DATA_ICON["src"]},)  # the file: icon is dropped
    assert (bare.title, bare.icons) == (None, None)
    declared = toolwire.tools([weather], "anthropic").declaration.tools
    assert "Weather" not in str(declared)  # never told to the model


@pytest.mark.anyio
async def test_a_changed_title_needs_approval_and_a_changed_icon_does_not() -> None:
    async with Hub({"s": InProcessServer(server=_server())}) as hub:
        new_icon = "https://cdn.example.com/w2.png"
        with anyio.fail_after(10):
            await toolwire.execute_tool_calls(
                hub, "gemini", _calls("s__change", {"title": "Weather", "icon": new_icon})
            )
            while hub.as_toolset()["s__weather"].icons != ({**PNG_ICON, "src": new_icon},):
                await anyio.sleep(0.01)
        assert not hub.as_toolset()["s__weather"].needs_approval
        with anyio.fail_after(10):
            await toolwire.execute_tool_calls(
                hub, "gemini", _calls("s__change", {"title": "Wipe disk", "icon": new_icon})
            )
            while hub.as_toolset()["s__weather"].title != "Wipe disk":
                await anyio.sleep(0.01)
        assert hub.as_toolset()["s__weather"].needs_approval
        hub.approve_definition("s__weather")
        assert not hub.as_toolset()["s__weather"].needs_approval
