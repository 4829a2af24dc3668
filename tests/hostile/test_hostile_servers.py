"""One hostile MCP server never breaks the hub: its bad tools are left out with their reasons,
its odd answers are answered, and a well-behaved server beside it keeps working."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolwire
from toolwire import ToolResult, ToolwireWarning

pytest.importorskip("mcp")
from hostile_mcp_servers import PNG, stdio_args
from hostile_mcp_servers import good as good_server
from provider_turns import DECLARATIONS, PROVIDERS, answered_id, response_for

from command_line import run_cli
from toolwire.mcp import HttpServer, Hub, InProcessServer, StdioServer, result_from_mcp
from toolwire.providers import get_provider

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[2]


def hostile(scenario: str, **options: Any) -> StdioServer:
    return StdioServer(command=sys.executable, args=stdio_args("hostile", scenario), **options)


def good() -> InProcessServer:
    """The well-behaved server, in this process: what the tests watch is that a hostile one
    beside it, a process of its own, leaves it working (a process for it too costs a second of
    CPU a test, and shows nothing more)."""
    return InProcessServer(server=good_server())


@asynccontextmanager
async def beside_good(scenario: str, **options: Any) -> AsyncIterator[Hub]:
    """A hub of the hostile server ``evil`` (``scenario``) and the well-behaved ``good``."""
    with anyio.fail_after(60):
        async with Hub({"evil": hostile(scenario, **options), "good": good()}) as hub:
            assert hub.status == {"evil": None, "good": None}
            yield hub


async def assert_good_server_works(hub: Hub) -> None:
    """The good server's tools are declared for every provider and answer through the
    governed pipeline, each answer for its own call."""
    for provider in PROVIDERS:
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            listing = toolwire.tools(hub, provider)
        limit = get_provider(provider).PROFILE.max_tools
        over = limit is not None and len(listing.declaration.entries) > limit
        # A listing above the provider's limit says so, once; any other never warns.
        assert [issubclass(w.category, ToolwireWarning) for w in said] == ([True] if over else [])
        assert {"good__add", "good__echo"} <= set(listing.toolset.exposed_names)
        calls = [("good__add", {"a": 2, "b": 3}, "c1"), ("good__echo", {"text": "hi"}, "c2")]
        with anyio.fail_after(30):
            outcome = await toolwire.execute_tool_calls(
                hub, provider, response_for(provider, calls), toolset=listing.toolset
            )
        assert [c.result.error_kind for c in outcome.calls] == [None, None]
        assert [c.result.structured_content for c in outcome.calls] == [
            {"result": 5},
            {"result": "hi"},
        ]
        assert [answered_id(a) for a in outcome.results] == ["c1", "c2"]


# -- the reproduction: a tool named "" and one with a dangling $ref ----------------------------


async def test_an_empty_name_and_a_dangling_ref_are_left_out_and_the_rest_is_declared() -> None:
    from mcp.server.lowlevel import Server
    from mcp.types import CallToolResult, ListToolsResult, TextContent, Tool

    dangling = {"type": "object", "properties": {"x": {"$ref": "#/nope"}}}
    tools = [
        Tool(name="", input_schema={"type": "object"}),
        Tool(name="a", input_schema=dangling),
        Tool(name="fine", input_schema={"type": "object"}),
    ]

    async def list_tools(ctx: Any, params: Any) -> ListToolsResult:
        return ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: Any) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=params.name)])

    server = Server("bad", on_list_tools=list_tools, on_call_tool=call_tool)
    with anyio.fail_after(60):
        async with Hub({"bad": InProcessServer(server=server), "good": good()}) as hub:
            for provider in PROVIDERS:
                names = toolwire.tools(hub, provider).toolset.exposed_names
                assert [n for n in names if n.startswith("bad__")] == ["bad__fine"]
            left_out = hub.left_out
            assert set(left_out["bad"]) == {"", "a"}
            assert left_out["bad"][""] == "its name is empty or blank"
            assert left_out["bad"]["a"].startswith("gemini cannot declare it: ")
            assert "'#/nope'" in left_out["bad"]["a"]
            assert left_out["good"] == {}
            await assert_good_server_works(hub)


# -- names ---------------------------------------------------------------------------------------


async def test_bad_names_are_left_out_with_their_reasons() -> None:
    async with beside_good("names") as hub:
        left_out = hub.left_out["evil"]
        exposed = [n for n in hub.as_toolset().exposed_names if n.startswith("evil__")]
        await assert_good_server_works(hub)
    assert left_out == {
        "": "its name is empty or blank",
        "   ": "its name is empty or blank",
        "\u200b\u2060": "its name is empty or blank",
        "5": "its definition is malformed: name: Input should be a valid string",
        "<tool #4 without a name>": "its definition is malformed: name: Field required",
        "twin": "the server lists it 2 times with different definitions",
        "a_b": "its exposed name 'evil__a_b' is already that of 'a.b'",
        "x" * 256 + "...": "its name is longer than 256 characters",
        "delete.file": (
            "its exposed name 'evil__delete_file' is already that of 'delete\\u200bfile'"
        ),
    }
    # The same definition listed twice is one tool; odd but usable names are made portable.
    assert exposed == ["evil__same", "evil__a_b", "evil__delete_file", "evil__ok"]


async def test_a_listing_the_sdk_would_refuse_keeps_its_sound_tools_callable() -> None:
    async with beside_good("names") as hub:
        for provider in PROVIDERS:
            call = [("evil__ok", {"text": "still here"}, "only")]
            with anyio.fail_after(30):
                outcome = await toolwire.execute_tool_calls(
                    hub, provider, response_for(provider, call)
                )
            assert outcome.calls[0].result.text == "ok: still here"


# -- schemas -------------------------------------------------------------------------------------


async def test_schemas_that_cannot_be_used_are_left_out_and_the_others_still_work() -> None:
    async with beside_good("schemas") as hub:
        left_out = hub.left_out["evil"]
        names = hub.as_toolset().exposed_names
        await assert_good_server_works(hub)
        outcome = await toolwire.execute_tool_calls(
            hub, "anthropic", response_for("anthropic", [("evil__ok", {"text": "x"}, "t1")])
        )
    assert [n for n in names if n.startswith("evil__")] == ["evil__ok"]
    assert left_out["dangling"].startswith("gemini cannot declare it: ")
    assert left_out["listed"] == (
        "its definition is malformed: inputSchema: "
        "Input should be a valid dictionary or instance of InputSchema"
    )
    assert left_out["stringy"].startswith("its definition is malformed: inputSchema: ")
    assert (
        left_out["scalar"]
        == "its definition is malformed: inputSchema.type: Input should be 'object'"
    )
    assert left_out["typeless"] == "its definition is malformed: inputSchema.type: Field required"
    assert left_out["described"] == (
        "its definition is malformed: description: Input should be a valid string"
    )
    assert left_out["lookaround"].startswith(
        "tool 'evil/lookaround': its input schema cannot validate arguments: "
    )
    assert outcome.calls[0].result.text == "ok: x"


# -- huge listings -------------------------------------------------------------------------------


async def test_five_thousand_tools_and_a_megabyte_description_are_bounded() -> None:
    async with beside_good("big") as hub:
        toolset = hub.as_toolset()
        left_out = hub.left_out["evil"]
        huge = toolset["evil__t0"].description or ""
        await assert_good_server_works(hub)
    evil = [n for n in toolset.exposed_names if n.startswith("evil__")]
    assert len(evil) == 1000  # the first thousand tools of the server
    assert evil[:2] == ["evil__ok", "evil__t0"]
    assert len(left_out) == 4001  # ok and t0 ... t4999 were listed
    assert set(left_out.values()) == {"the server lists more than 1000 tools"}
    assert len(huge.encode()) <= 4096
    assert huge.startswith("Huge. xxx")  # invisible and bidi characters removed
    assert huge.endswith(" [truncated]")


# -- odd answers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_every_odd_answer_is_that_calls_own_answer_and_the_server_stays_up(
    provider: str,
) -> None:
    async with beside_good("contents") as hub:
        names = [
            "unknown_kind",
            "bad_base64",
            "empty_image",
            "good_image",
            "bad_blob",
            "listed_structure",
            "content_not_list",
            "garbage_blocks",
            "number_mime",
            "error_perhaps",
        ]
        calls = [(f"evil__{name}", {}, f"id_{name}") for name in names]
        calls.append(("good__add", {"a": 1, "b": 1}, "id_good"))
        with anyio.fail_after(60):
            outcome = await toolwire.execute_tool_calls(
                hub, provider, response_for(provider, calls)
            )
        results = {name: c.result for name, c in zip([*names, "good"], outcome.calls, strict=True)}
        assert [answered_id(a) for a in outcome.results] == [i for _, _, i in calls]
        assert hub.status["good"] is None
        await assert_good_server_works(hub)
    assert results["good"].structured_content == {"result": 2}
    assert results["good_image"].content == (toolwire.ImageContent(PNG, "image/png"),)
    # Mapped by toolwire: never an empty or half-decoded payload passed on as the server's.
    assert results["bad_base64"].text == "[image with invalid base64 data]"
    assert results["empty_image"].text == "[image without data]"
    assert results["bad_blob"].text == "[resource with invalid base64 data]"
    assert results["listed_structure"].structured_content is None
    # Refused by the SDK as not a CallToolResult: that call's failure, naming where.
    for name, where in [
        ("unknown_kind", "content.0"),
        ("content_not_list", "content"),
        ("garbage_blocks", "content.0"),
        ("number_mime", "content.0"),
        ("error_perhaps", "isError"),
    ]:
        assert results[name].error_kind == "failed", name
        assert results[name].text.startswith(
            f"Tool {'evil__' + name!r} answered with a malformed result: {where}"
        ), results[name].text


async def test_an_answer_the_sdk_cannot_read_times_out_and_the_server_stays_up() -> None:
    # A JSON-RPC result that is not an object never reaches the SDK's caller: the call waits
    # for its timeout, and the probe that follows finds the server answering.
    async with beside_good("contents", timeout=1.0) as hub:
        calls = [("evil__not_an_object", {}, "a"), ("good__add", {"a": 1, "b": 2}, "b")]
        with anyio.fail_after(30):
            outcome = await toolwire.execute_tool_calls(
                hub, "anthropic", response_for("anthropic", calls)
            )
            assert await hub.check("evil")
        assert [c.result.error_kind for c in outcome.calls] == ["timeout", None]
        assert hub.status == {"evil": None, "good": None}


# -- result_from_mcp is total --------------------------------------------------------------------

_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=6,
)
_kinds = st.sampled_from(["text", "image", "audio", "resource", "resource_link", "video", 5])
_fields = st.sampled_from(
    ["type", "text", "data", "mimeType", "uri", "name", "resource", "blob", "description"]
)
_blocks = st.dictionaries(_fields, _scalars | _kinds | st.just("aGk=") | _json, max_size=5).map(
    lambda block: {**block, "type": block.get("type", "text")}
)
_results = st.fixed_dictionaries(
    {},
    optional={
        "content": st.lists(_blocks | _scalars, max_size=4) | _scalars,
        "structuredContent": _json,
        "isError": _scalars,
    },
)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_results | _json)
def test_result_from_mcp_never_raises_on_any_wire_value(value: Any) -> None:
    result = result_from_mcp(value)
    assert isinstance(result, ToolResult)
    assert result.structured_content is None or all(
        isinstance(k, str) for k in result.structured_content
    )


def test_a_result_that_is_not_a_tool_result_is_a_failure() -> None:
    assert result_from_mcp(["a"]).error_kind == "failed"
    assert result_from_mcp({"content": "text"}).error_kind == "failed"
    assert result_from_mcp({"content": [{"type": "image", "data": "aGk="}]}).content == (
        toolwire.ImageContent(b"hi", "image/png"),
    )
    assert result_from_mcp({"content": [{"type": "video"}]}).text == "[unsupported content: video]"


# -- the hub's own surface raises only toolwire errors ------------------------------------------

_config_keys = st.sampled_from(["mcpServers", "command", "url", "args", "env", "headers", "cwd"])
_entries = st.dictionaries(_config_keys, _json | _config_keys | st.lists(_scalars, max_size=2))
_configs = st.dictionaries(st.text(max_size=3), _entries | _json, max_size=3) | _json


# Keys a config gives that toolwire does not read are warned about: expected here.
@pytest.mark.filterwarnings("ignore::toolwire.errors.ToolwireWarning")
@settings(max_examples=300, deadline=None)
@given(_configs)
def test_from_config_raises_only_configuration_errors(config: Any) -> None:
    for whole in ({"mcpServers": config}, config):
        try:
            hub = Hub.from_config(whole)
        except toolwire.ConfigurationError:
            continue
        assert set(hub.status) == set(whole["mcpServers"])


@pytest.mark.parametrize(
    "servers",
    [{}, {"": good()}, {"a/b": good()}, {"ok": {"command": "x"}}, [("ok", good())], None],
)
def test_bad_hub_setups_are_configuration_errors(servers: Any) -> None:
    with pytest.raises(toolwire.ConfigurationError):
        Hub(servers)


def test_an_unreadable_config_file_is_a_configuration_error(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_bytes(b'{"mcpServers": {"\xff": {}}}')
    with pytest.raises(toolwire.ConfigurationError, match="cannot read MCP config"):
        Hub.from_config(path)


async def test_closing_a_hub_that_is_not_open_does_nothing_and_opening_twice_is_refused() -> None:
    hub = Hub({"good": good()})
    await hub.__aexit__(None, None, None)
    with anyio.fail_after(60):
        async with hub:
            with pytest.raises(toolwire.ConfigurationError, match="already open"):
                await hub.__aenter__()


# -- toolwire check / declare on a hostile MCP source --------------------------------------------


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    python_path = os.pathsep.join(p for p in [str(ROOT / "src"), os.environ.get("PYTHONPATH")] if p)
    return run_cli(*args, env={"NO_COLOR": "1", "PYTHONPATH": python_path})


def mcp_json(tmp_path: Path, **scenarios: str) -> str:
    """An mcp.json of the hostile servers ``name=scenario`` and the good server ``good``."""
    servers = {
        name: {"command": sys.executable, "args": stdio_args("hostile", scenario)}
        for name, scenario in scenarios.items()
    }
    servers["good"] = {"command": sys.executable, "args": stdio_args("good")}
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    return str(config)


def statuses(row: dict[str, Any]) -> set[str]:
    return {verdict["status"] for verdict in row["verdicts"].values()}


def test_check_reports_left_out_tools_as_rejected_with_the_reason(tmp_path: Path) -> None:
    result = cli("check", mcp_json(tmp_path, evil="names"), "--json")
    assert result.returncode == 1, result.stderr
    rows = {row["exposed_name"]: row for row in json.loads(result.stdout)}
    for name in ("good__add", "good__echo", "evil__ok", "evil__same"):
        assert "rejected" not in statuses(rows[name]), name
    twin = rows["evil/twin"]
    assert twin["name"] == "twin"
    assert statuses(twin) == {"rejected"}
    assert twin["verdicts"]["anthropic"]["notes"] == [
        "left out by the hub: the server lists it 2 times with different definitions"
    ]
    assert rows["evil/"]["verdicts"]["gemini"]["notes"] == [
        "left out by the hub: its name is empty or blank"
    ]


def test_check_prints_hostile_names_escaped_in_its_table(tmp_path: Path) -> None:
    result = cli("check", mcp_json(tmp_path, evil="names"), "--provider", "gemini")
    assert result.returncode == 1, result.stderr
    assert "\u200b" not in result.stdout
    assert "\u2060" not in result.stdout
    assert "evil/'\\u200b\\u2060' (left out)" in result.stdout
    assert "evil/'' (left out)" in result.stdout
    assert "evil/'   ' (left out)" in result.stdout
    assert "    gemini: left out by the hub: its name is empty or blank" in result.stdout


@pytest.fixture
def names_over_http() -> Iterator[str]:
    """The URL of the hostile "names" server over streamable HTTP on 127.0.0.1."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, *stdio_args("hostile-http", "names", str(port))],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the HTTP server did not start"
                time.sleep(0.02)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


async def test_over_http_a_listing_the_sdk_would_refuse_keeps_its_sound_tools(
    names_over_http: str,
) -> None:
    with anyio.fail_after(60):
        async with Hub({"evil": HttpServer(url=names_over_http), "good": good()}) as hub:
            assert hub.status == {"evil": None, "good": None}
            assert "5" in hub.left_out["evil"]
            assert "evil__ok" in toolwire.tools(hub, "gemini").toolset
            await assert_good_server_works(hub)


def test_check_of_a_url_reports_left_out_tools(names_over_http: str) -> None:
    result = cli("check", names_over_http, "--json")
    assert result.returncode == 1, result.stderr
    rows = {row["exposed_name"]: row for row in json.loads(result.stdout)}
    assert "rejected" not in statuses(rows["mcp__ok"])
    assert rows["mcp/5"]["verdicts"]["openai-chat"]["notes"] == [
        "left out by the hub: its definition is malformed: name: Input should be a valid string"
    ]


def test_declare_of_a_stdio_source_warns_of_left_out_tools_and_declares_the_rest() -> None:
    command = " ".join([sys.executable, *stdio_args("hostile", "schemas")])
    result = cli("declare", f"stdio:{command}", "--provider", "anthropic")
    assert result.returncode == 0, result.stderr
    [declared] = json.loads(result.stdout)
    assert declared["name"].endswith("__ok")
    warnings = result.stderr.splitlines()
    assert len(warnings) == 7
    assert all(line.startswith("toolwire: warning: left out ") for line in warnings)
    left_out = sorted(line.split("/", 1)[1].split(":", 1)[0] for line in warnings)
    assert left_out == [
        "dangling",
        "described",
        "listed",
        "lookaround",
        "scalar",
        "stringy",
        "typeless",
    ]


# -- output schemas: checked by jsonschema-rs, never by Python re on the event loop ------------


async def test_output_schemas_are_checked_in_linear_time_and_each_call_answered() -> None:
    async with beside_good("output_schemas") as hub:
        calls = [
            ("evil__redos", {}, "c1"),
            ("evil__matches", {}, "c2"),
            ("evil__missing", {}, "c3"),
            ("evil__lookaround", {}, "c4"),
        ]
        # Python re needs about 2**40 steps to say "^(a+)+$" does not match "a" * 40 + "!".
        with anyio.fail_after(20):
            outcome = await toolwire.execute_tool_calls(
                hub, "anthropic", response_for("anthropic", calls)
            )
        redos, matches, missing, lookaround = outcome.calls
        assert redos.result.error_kind == "failed"
        assert "does not match its output schema" in redos.result.text
        assert matches.result.error_kind is None
        assert matches.result.structured_content == {"n": 3}
        assert missing.result.error_kind == "failed"
        assert "no structured content" in missing.result.text
        assert lookaround.result.error_kind == "failed"
        assert "cannot check results" in lookaround.result.text
        tools = {tool.name: tool for tool in hub.as_toolset()}
        assert tools["redos"].output_schema == {
            "type": "object",
            "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}},
        }
        await assert_good_server_works(hub)


async def test_every_declaration_option_of_every_provider_survives_a_servers_tool() -> None:
    async with beside_good("variants") as hub:
        for provider, options in DECLARATIONS:
            listing = toolwire.tools(hub, provider, **options)  # never raises for the hub
            assert {"good__add", "good__echo", "evil__ok"} <= set(listing.toolset.exposed_names)
        await assert_good_server_works(hub)
