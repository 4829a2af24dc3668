"""MCP config files as clients write them, read by ``Hub.from_config`` (``mcp.client._config``).

The published snippets are in tests/data/mcp_configs (see the README there for their sources).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import socket
import sys
import tempfile
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolwire
from toolwire import ConfigurationError, ToolwireWarning

pytest.importorskip("mcp")
from mcp_servers import catalogue

from toolwire.mcp import ClientCredentials, HttpServer, Hub, OAuth, SseServer, StdioServer
from toolwire.mcp.client._config import is_mcp_config, read_config

pytestmark = pytest.mark.anyio
CONFIGS = Path(__file__).parents[1] / "data" / "mcp_configs"
SERVERS = Path(__file__).parent


def read(config: Any) -> tuple[dict[str, Any], list[str]]:
    """The specs of ``config`` and the warnings reading it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        specs = read_config(config)
    assert all(issubclass(w.category, ToolwireWarning) for w in caught)
    return specs, [str(w.message) for w in caught]


def refused(config: Any) -> str:
    """The message of the ConfigurationError reading ``config`` raises."""
    with pytest.raises(ConfigurationError) as caught:
        read_config(config)
    return str(caught.value)


def one(entry: Any) -> Any:
    """The spec of a config holding only ``entry``, as server "s"."""
    specs, _ = read({"mcpServers": {"s": entry}})
    return specs["s"]


def gemini_calls(*calls: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"functionCall": {"name": n, "args": a, "id": f"c{i}"}} for i, (n, a) in enumerate(calls)
    ]


# -- published configs ---------------------------------------------------------------------------


def test_claude_desktop_filesystem_server() -> None:
    specs, notes = read(CONFIGS / "claude_desktop_filesystem.json")
    assert specs == {
        "filesystem": StdioServer(
            command="npx",
            args=(
                "-y",
                "@modelcontextprotocol/server-filesystem",
                "/Users/username/Desktop",
                "/path/to/other/allowed/dir",
            ),
        )
    }
    assert notes == []


def test_an_arg_reads_the_servers_own_env_first() -> None:
    # mcp-remote expands ${GITHUB_PERSONAL_ACCESS_TOKEN} itself, from the env it is given.
    specs, _ = read(CONFIGS / "claude_desktop_mcp_remote.json")
    assert specs["github"] == StdioServer(
        command="npx",
        args=(
            "mcp-remote",
            "https://api.githubcopilot.com/mcp",
            "--header",
            "Authorization: Bearer YOUR_GITHUB_PAT",
        ),
        env={"GITHUB_PERSONAL_ACCESS_TOKEN": "YOUR_GITHUB_PAT"},
    )


def test_claude_code_expansion_with_a_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("API_KEY", "k-123")
    monkeypatch.delenv("API_BASE_URL", raising=False)
    specs, _ = read(CONFIGS / "claude_code_env_expansion.json")
    assert specs["api-server"] == SseServer(
        url="https://api.example.com/mcp", headers={"Authorization": "Bearer k-123"}
    )
    monkeypatch.setenv("API_BASE_URL", "http://127.0.0.1:8080")
    specs, _ = read(CONFIGS / "claude_code_env_expansion.json")
    assert specs["api-server"].url == "http://127.0.0.1:8080/mcp"


def test_claude_code_expansion_of_an_unset_variable_names_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("API_KEY", raising=False)
    message = refused(CONFIGS / "claude_code_env_expansion.json")
    assert "'api-server'" in message
    assert "headers.Authorization" in message
    assert "API_KEY is not set" in message


@pytest.mark.parametrize(
    ("file", "key"),
    [("cursor_github_remote.json", "url"), ("windsurf_github_remote.json", "serverUrl")],
)
def test_cursor_and_windsurf_remote_servers(file: str, key: str) -> None:
    specs, notes = read(CONFIGS / file)
    assert specs == {
        "github": HttpServer(
            url="https://api.githubcopilot.com/mcp/",
            headers={"Authorization": "Bearer YOUR_GITHUB_PAT"},
        )
    }
    assert notes == []


def test_cline_settings() -> None:
    specs, notes = read(CONFIGS / "cline_stdio.json")
    assert specs == {
        "server1": StdioServer(
            command="python", args=("/path/to/server.py",), env={"API_KEY": "your_api_key"}
        )
    }
    assert notes == [
        "server 'server1': ignoring alwaysAllow: not read by toolwire "
        "(approval is up to toolwire's policies)"
    ]
    specs, _ = read(CONFIGS / "cline_streamable_http.json")
    assert specs == {
        "streamable-server": HttpServer(
            url="https://your-server-url.com/mcp",
            headers={"Authorization": "Bearer your-token"},
            timeout=60.0,
        )
    }
    # Cline reads a url without a type as SSE; toolwire as streamable HTTP (its path is /mcp).
    specs, _ = read(CONFIGS / "cline_untyped_url.json")
    assert isinstance(specs["remote-server"], HttpServer)


def test_gemini_cli_settings_with_comments() -> None:
    specs, notes = read(CONFIGS / "gemini_cli_github_remote.json")
    assert specs == {
        "github": HttpServer(
            url="https://api.githubcopilot.com/mcp/", headers={"Authorization": "$GITHUB_PAT"}
        )
    }
    assert any("headers.Authorization holds a $NAME reference" in n for n in notes)
    assert any("ignoring trust" in n for n in notes)

    specs, notes = read(CONFIGS / "gemini_cli_tool_filtering.json")
    assert specs == {
        "filteredServer": StdioServer(
            command="python",
            args=("-m", "my_mcp_server"),
            include=("safe_tool", "file_reader", "data_processor"),
            timeout=30000.0,
            max_total_timeout=30000.0,
        )
    }
    assert len(notes) == 1
    assert "timeout 30000 is read as seconds" in notes[0]
    assert "Gemini CLI" in notes[0]


def test_vscode_workspace_folder_is_the_folder_holding_dot_vscode(tmp_path: Path) -> None:
    (tmp_path / ".vscode").mkdir()
    config = tmp_path / ".vscode" / "mcp.json"
    shutil.copy(CONFIGS / "vscode_filesystem_workspace.json", config)
    specs, _ = read(config)
    assert specs["filesystem"].args[-1] == str(tmp_path)
    assert read(str(config))[0] == specs  # a path given as a string


@pytest.mark.parametrize(
    ("file", "server", "key", "input_id"),
    [
        ("vscode_github_remote_inputs.json", "github", "headers.Authorization", "github_mcp_pat"),
        (
            "vscode_settings_github_inputs.json",  # under settings.json's "mcp" key
            "github",
            "env.GITHUB_PERSONAL_ACCESS_TOKEN",
            "github_token",
        ),
        ("vscode_weather_sse.json", "weather-sse", "headers.x-api-key", "weather-api-key"),
    ],
)
def test_a_vscode_input_prompt_is_an_error_naming_it(
    file: str, server: str, key: str, input_id: str
) -> None:
    message = refused(CONFIGS / file)
    assert f"server {server!r}: {key}" in message
    assert f"${{input:{input_id}}}" in message


def test_vscode_sse_server_with_its_secret_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = json.loads((CONFIGS / "vscode_weather_sse.json").read_text())
    config["servers"]["weather-sse"]["headers"]["x-api-key"] = "${env:WEATHER_API_KEY}"
    monkeypatch.setenv("WEATHER_API_KEY", "w-1")
    specs, notes = read(config)
    assert specs == {
        "weather-sse": SseServer(
            url="http://localhost:8000/sse", headers={"x-api-key": "w-1"}, auth=OAuth()
        )
    }
    assert notes == []  # inputs are VS Code's own: not warned about


# -- shapes --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "config",
    [
        {"mcpServers": {"s": {"command": "srv"}}},
        {"servers": {"s": {"command": "srv"}}},
        {"mcp": {"servers": {"s": {"command": "srv"}}, "inputs": []}},
        {"servers": {"s": {"command": "srv"}}, "inputs": [], "globalShortcut": "Ctrl+Space"},
    ],
)
def test_the_servers_object_of_each_client(config: dict[str, Any]) -> None:
    specs, notes = read(config)
    assert specs == {"s": StdioServer(command="srv")}
    assert notes == []  # other top-level keys belong to the client's own settings


@pytest.mark.parametrize(
    ("config", "says"),
    [
        ({"tools": []}, "needs an mcpServers object"),
        ([{"command": "srv"}], "needs an mcpServers object"),
        ({"mcpServers": [{"command": "srv"}]}, "mcpServers must be an object"),
        ({"servers": {}, "mcpServers": {}}, "both mcpServers and servers"),
        ({"mcpServers": {}}, "lists no servers"),
        ({"servers": {"a": {"disabled": True}}}, "every server of the MCP config is disabled"),
    ],
)
def test_a_config_without_servers_is_an_error(config: Any, says: str) -> None:
    assert says in refused(config)


def test_a_disabled_server_is_left_out_even_when_unfinished() -> None:
    specs, notes = read(
        {
            "mcpServers": {
                "on": {"command": "srv", "disabled": False},
                "off": {"args": ["${TOOLWIRE_TEST_UNSET}"], "disabled": True, "odd": 1},
            }
        }
    )
    assert list(specs) == ["on"]
    assert notes == []


@pytest.mark.parametrize(
    ("entry", "kind"),
    [
        ({"type": "stdio", "command": "srv"}, StdioServer),
        ({"command": "srv"}, StdioServer),
        ({"transportType": "stdio", "command": "srv"}, StdioServer),  # Cline's older key
        ({"type": "http", "url": "http://h/mcp"}, HttpServer),
        ({"type": "streamable-http", "url": "http://h/mcp"}, HttpServer),
        ({"type": "streamableHttp", "url": "http://h/mcp"}, HttpServer),
        ({"transportType": "http", "url": "http://h/mcp"}, HttpServer),
        ({"url": "http://h/mcp"}, HttpServer),
        ({"serverUrl": "http://h/mcp"}, HttpServer),
        ({"httpUrl": "http://h/sse"}, HttpServer),  # Gemini CLI: httpUrl is streamable HTTP
        ({"type": "sse", "url": "http://h/events"}, SseServer),
        ({"url": "http://h/sse"}, SseServer),
        ({"url": "http://h/sse/?session=1"}, SseServer),
        ({"serverUrl": "http://h/sse"}, SseServer),
    ],
)
def test_the_transport_from_type_or_keys(entry: dict[str, Any], kind: type) -> None:
    assert type(one(entry)) is kind


def test_keys_of_another_transport_are_warned_about() -> None:
    specs, notes = read({"mcpServers": {"s": {"type": "sse", "url": "http://h/sse", "args": []}}})
    assert isinstance(specs["s"], SseServer)
    assert notes == ["server 's': ignoring args: not read by toolwire"]


# -- expansion -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "expanded"),
    [
        ("${TW_A}", "alpha"),
        ("${env:TW_A}", "alpha"),
        ("x-${TW_A}-${TW_A}", "x-alpha-alpha"),
        ("${TW_UNSET:-fallback}", "fallback"),
        ("${env:TW_UNSET:-fallback}", "fallback"),
        ("${TW_EMPTY:-fallback}", "fallback"),  # as the shell: empty takes the default too
        ("${TW_A:-fallback}", "alpha"),
        ("${TW_EMPTY}", ""),
        ("$${TW_A}", "${TW_A}"),  # the escape
        ("$TW_A", "$TW_A"),  # a bare $NAME is not expanded
        ("cost: $5 {x}", "cost: $5 {x}"),
        ("${pathSeparator}${/}", os.sep * 2),
    ],
)
def test_references_are_expanded(
    template: str, expanded: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TW_A", "alpha")
    monkeypatch.setenv("TW_EMPTY", "")
    monkeypatch.delenv("TW_UNSET", raising=False)
    spec = one({"command": "srv", "args": [template], "env": {"V": template}})
    assert spec.args == (expanded,)
    assert spec.env == {"V": expanded}
    assert one({"url": "http://h/mcp", "headers": {"H": template}}).headers == {"H": expanded}


def test_user_home_and_every_field_that_is_expanded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TW_A", "alpha")
    spec = one(
        {
            "command": "${TW_A}-srv",
            "args": ["${userHome}"],
            "env": {"E": "${TW_A}"},
            "cwd": "${workspaceFolder}/${TW_A}",
        }
    )
    assert spec == StdioServer(
        command="alpha-srv",
        args=(str(Path.home()),),
        env={"E": "alpha"},
        cwd=f"{Path.cwd()}/alpha",  # a dict config's workspace is the current directory
    )
    assert one({"url": "http://h/${TW_A}"}).url == "http://h/alpha"


def test_the_servers_own_env_is_read_for_its_process_not_for_its_env(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TW_A", "outer")
    spec = one(
        {"command": "${TW_A}", "args": ["${TW_A}"], "cwd": "${TW_A}", "env": {"TW_A": "${TW_A}!"}}
    )
    assert spec.env == {"TW_A": "outer!"}  # env values read the process environment only
    assert (spec.command, spec.args, spec.cwd) == ("outer!", ("outer!",), "outer!")
    spec = one({"url": "http://h/${TW_A}", "headers": {"H": "${TW_A}"}})
    assert (spec.url, spec.headers) == ("http://h/outer", {"H": "outer"})


@pytest.mark.parametrize(
    ("entry", "key", "says"),
    [
        ({"command": "srv", "args": ["${TW_UNSET}"]}, "args[0]", "TW_UNSET is not set"),
        ({"command": "srv", "env": {"K": "${env:TW_UNSET}"}}, "env.K", "TW_UNSET is not set"),
        ({"command": "${TW_UNSET}"}, "command", "TW_UNSET is not set"),
        ({"command": "srv", "cwd": "${TW_UNSET}"}, "cwd", "TW_UNSET is not set"),
        ({"url": "http://${TW_UNSET}/mcp"}, "url", "TW_UNSET is not set"),
        ({"url": "http://h/mcp", "headers": {"A": "${TW_UNSET}"}}, "headers.A", "not set"),
        ({"command": "srv", "env": {"K": "${input:key}"}}, "env.K", "${input:key}"),
        ({"command": "srv", "args": ["${file:/etc/x}"]}, "args[0]", "does not expand"),
        ({"command": "srv", "args": ["${command:pick}"]}, "args[0]", "does not expand"),
        ({"command": "srv", "args": ["${}"]}, "args[0]", "does not expand"),
        ({"command": "srv", "args": ["${TW_A"]}, "args[0]", "not closed"),
        ({"command": "srv", "args": ["${TW_A:-${TW_B}}"]}, "args[0]", "not closed"),
    ],
)
def test_a_reference_that_cannot_be_expanded_names_the_server_and_the_key(
    entry: dict[str, Any], key: str, says: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TW_UNSET", raising=False)
    message = refused({"mcpServers": {"files": entry}})
    assert message.startswith(f"MCP config, server 'files': {key} ")
    assert says in message


def test_a_bare_reference_in_env_is_warned_about_without_its_value() -> None:
    _, notes = read({"mcpServers": {"s": {"command": "srv", "env": {"TOKEN": "pa$Secret"}}}})
    assert notes == [
        "server 's': env.TOKEN holds a $NAME reference, passed as written "
        "(toolwire expands ${NAME} and ${env:NAME})"
    ]
    assert "Secret" not in notes[0]


# -- values --------------------------------------------------------------------------------------


def test_numbers_and_booleans_are_written_out_and_a_null_env_value_left_out() -> None:
    spec = one(
        {"command": "srv", "args": [8080, 1.5, True], "env": {"N": 3, "F": False, "X": None}}
    )
    assert spec.args == ("8080", "1.5", "true")
    assert spec.env == {"N": "3", "F": "false"}


@pytest.mark.parametrize(
    ("timeout", "expected"), [(60, 60.0), (0.5, 0.5), (None, 60.0), (1200, 1200.0)]
)
def test_timeout_is_in_seconds(timeout: Any, expected: float) -> None:
    spec = one({"command": "srv", "timeout": timeout})
    assert spec.timeout == expected
    # a longer timeout than the hub's cap on a whole call raises the cap
    assert spec.max_total_timeout == max(StdioServer(command="srv").max_total_timeout, expected)
    Hub({"s": spec})  # a spec the hub takes


@pytest.mark.parametrize(
    ("entry", "key"),
    [
        ("srv", None),
        ({"disabled": "yes", "command": "srv"}, "disabled"),
        ({"type": "ws", "url": "ws://h"}, "type"),
        ({"type": 3, "command": "srv"}, "type"),
        ({"args": ["x"]}, None),
        ({"command": ["srv"]}, "command"),
        ({"command": "${TW_EMPTY}"}, "command"),
        ({"command": "srv", "args": "--flag"}, "args"),
        ({"command": "srv", "args": [None]}, "args[0]"),
        ({"command": "srv", "args": [{"a": 1}]}, "args[0]"),
        ({"command": "srv", "env": ["A=1"]}, "env"),
        ({"command": "srv", "env": {"A": [1]}}, "env.A"),
        ({"command": "srv", "cwd": 1}, "cwd"),
        ({"command": "srv", "timeout": "60"}, "timeout"),
        ({"command": "srv", "timeout": True}, "timeout"),
        ({"command": "srv", "timeout": 0}, "timeout"),
        ({"command": "srv", "timeout": -5}, "timeout"),
        ({"command": "srv", "timeout": math.nan}, "timeout"),
        ({"command": "srv", "timeout": math.inf}, "timeout"),
        ({"command": "srv", "timeout": 10**400}, "timeout"),
        ({"command": "srv", "include": "read_*"}, "include"),
        ({"command": "srv", "exclude": [1]}, "exclude"),
        ({"command": "srv", "include": [], "includeTools": []}, "includeTools"),
        ({"url": 5}, "url"),
        ({"url": "ftp://h/mcp"}, "url"),
        ({"url": "h/mcp", "type": "http"}, "url"),
        ({"type": "http"}, "url"),
        ({"url": "http://h/mcp", "serverUrl": "http://h/mcp"}, "serverUrl"),
        ({"type": "sse", "httpUrl": "http://h/mcp"}, "httpUrl"),
        ({"url": "http://h/mcp", "headers": ["A: 1"]}, "headers"),
        ({"url": "http://h/mcp", "headers": {"A": None}}, "headers.A"),
    ],
)
def test_a_malformed_entry_names_the_server_and_the_key(
    entry: Any, key: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TW_EMPTY", "")
    message = refused({"mcpServers": {"files": entry}})
    assert message.startswith(f"MCP config, server 'files':{f' {key} ' if key else ' '}")


def test_filters_and_gemini_cli_aliases() -> None:
    spec = one({"command": "srv", "include": ["read_*"], "exclude": ["read_secret"]})
    assert (spec.include, spec.exclude) == (("read_*",), ("read_secret",))
    spec = one({"command": "srv", "includeTools": ["a"], "excludeTools": ["b"]})
    assert (spec.include, spec.exclude) == (("a",), ("b",))


def test_unknown_keys_are_warned_about_by_name() -> None:
    _, notes = read(
        {
            "mcpServers": {
                "s": {"command": "srv", "autoApprove": ["t"], "envFile": ".env", "sandbox": {}}
            }
        }
    )
    assert notes == [
        "server 's': ignoring autoApprove, envFile, sandbox: not read by toolwire "
        "(approval is up to toolwire's policies; env files are not loaded; set the variables "
        "in the environment)"
    ]


# -- files ---------------------------------------------------------------------------------------


def test_comments_trailing_commas_and_a_byte_order_mark(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(
        '\ufeff{\n  // VS Code takes comments\n  "servers": {\n    "web": {\n'
        '      "url": "http://h/mcp", /* and block comments */\n'
        '      "headers": {"X-Note": "// not a comment, /* nor this */",},\n    },\n  },\n}\n',
        encoding="utf-8",
    )
    specs, _ = read(config)
    assert specs == {
        "web": HttpServer(
            url="http://h/mcp",
            headers={"X-Note": "// not a comment, /* nor this */"},
            auth=OAuth(),
        )
    }
    assert is_mcp_config(config)


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b'{"mcpServers": {', "cannot read MCP config"),
        (b'{"mcpServers": {"s": {"command": "a" "b"}}}', "Expecting ','"),
        (b"\xff\xfe{}", "cannot read MCP config"),
        (b"[" * 100_000 + b"]" * 100_000, "cannot read MCP config"),
    ],
)
def test_a_file_that_is_not_json_is_an_error(tmp_path: Path, content: bytes, says: str) -> None:
    config = tmp_path / "mcp.json"
    config.write_bytes(content)
    assert says in refused(config)
    assert not is_mcp_config(config)


def test_a_missing_file_is_an_error(tmp_path: Path) -> None:
    assert "cannot read MCP config" in refused(tmp_path / "missing.json")


def test_is_mcp_config_knows_each_shape(tmp_path: Path) -> None:
    for name, data, expected in [
        ("claude.json", {"mcpServers": {}}, True),
        ("vscode.json", {"servers": {}}, True),
        ("settings.json", {"mcp": {"servers": {}}}, True),
        ("broken.json", {"servers": [], "mcpServers": 1}, True),  # an MCP config, malformed
        ("tools.json", [{"name": "t", "inputSchema": {"type": "object"}}], False),
    ]:
        path = tmp_path / name
        path.write_text(json.dumps(data))
        assert is_mcp_config(path) is expected, name


# -- random configs ------------------------------------------------------------------------------

_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=20)
    | st.sampled_from(["${TW_A}", "${TW_UNSET}", "$${x}", "${input:i}", "${", "http://h/sse"]),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
_KEYS = [
    "type", "transportType", "command", "args", "env", "cwd", "url", "serverUrl", "httpUrl",
    "headers", "disabled", "timeout", "include", "exclude", "includeTools", "excludeTools",
]  # fmt: skip
_entries = st.dictionaries(st.sampled_from(_KEYS) | st.text(max_size=8), _json, max_size=6)
_configs = st.dictionaries(
    st.sampled_from(["mcpServers", "servers", "mcp", "inputs"]),
    st.dictionaries(st.text(max_size=8), _entries | _json, max_size=3) | _json,
    max_size=2,
)


@settings(max_examples=300, deadline=None)
@given(config=_configs | _json.filter(lambda value: not isinstance(value, str)))  # str: a path
def test_random_configs_give_a_hub_or_a_configuration_error(config: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ToolwireWarning)
        with contextlib.suppress(ConfigurationError):
            Hub.from_config(config)


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=200) | _configs.map(json.dumps))
def test_random_files_give_a_hub_or_a_configuration_error(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "mcp.json"
        path.write_text(text, encoding="utf-8")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ToolwireWarning)
            with contextlib.suppress(ConfigurationError):
                Hub.from_config(path)
        is_mcp_config(path)


# -- real servers --------------------------------------------------------------------------------


async def test_a_stdio_server_through_a_config_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLWIRE_TEST_PYTHON", sys.executable)
    monkeypatch.setenv("TOOLWIRE_TEST_SERVERS", str(SERVERS))
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "shop": {
                        "type": "stdio",
                        "command": "${TOOLWIRE_TEST_PYTHON}",
                        # -m finds the module only through the PYTHONPATH given in env, and
                        # its name only in the server's own env: both were expanded.
                        "args": ["-m", "${SERVER_MODULE}", "catalogue"],
                        "env": {
                            "PYTHONPATH": "${env:TOOLWIRE_TEST_SERVERS}",
                            "SERVER_MODULE": "mcp_servers",
                        },
                        "cwd": "${workspaceFolder}",
                        "include": ["add", "vic*", "pic*"],
                        "exclude": ["victim"],
                        "timeout": 20,
                    },
                    "off": {"command": "${TOOLWIRE_TEST_UNSET}", "disabled": True},
                }
            }
        )
    )
    with anyio.fail_after(60):
        async with Hub.from_config(config) as hub:
            assert hub.status == {"shop": None}
            names = toolwire.tools(hub, "gemini").toolset.exposed_names
            outcome = await toolwire.execute_tool_calls(
                hub, "gemini", gemini_calls(("shop__add", {"a": 2, "b": 3}))
            )
    assert sorted(names) == ["shop__add", "shop__picture"]
    assert outcome.calls[0].result.structured_content == {"result": 5}


@pytest.fixture
def sse_server() -> Iterator[tuple[str, list[dict[bytes, bytes]]]]:
    """The catalogue served over the SDK's own SSE transport on 127.0.0.1, by uvicorn in a
    thread; yields its SSE URL and the headers of each request it got."""
    import uvicorn

    app = catalogue().sse_app()
    seen: list[dict[bytes, bytes]] = []

    async def recording(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            seen.append(dict(scope["headers"]))
        await app(scope, receive, send)

    # Listening before uvicorn starts: a client that connects early waits in the backlog.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(recording, log_level="warning", timeout_graceful_shutdown=5)
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}/sse", seen
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        listener.close()


async def test_an_sse_server_through_a_config(
    sse_server: tuple[str, list[dict[bytes, bytes]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, seen = sse_server
    monkeypatch.setenv("TOOLWIRE_TEST_KEY", "k-42")
    config = {
        "servers": {
            "weather": {
                "type": "sse",
                "url": url,
                "headers": {"X-Api-Key": "${env:TOOLWIRE_TEST_KEY}"},
                "include": ["add"],
            }
        },
        "inputs": [],
    }
    with anyio.fail_after(60):
        async with Hub.from_config(config) as hub:
            assert hub.status == {"weather": None}
            assert list(toolwire.tools(hub, "gemini").toolset.exposed_names) == ["weather__add"]
            outcome = await toolwire.execute_tool_calls(
                hub, "gemini", gemini_calls(("weather__add", {"a": 40, "b": 2}))
            )
    assert outcome.calls[0].result.structured_content == {"result": 42}
    assert seen  # the GET of the event stream and the POSTs of the messages
    assert all(headers.get(b"x-api-key") == b"k-42" for headers in seen)


def test_the_cli_reads_a_vscode_servers_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from toolwire.cli import main

    (tmp_path / ".vscode").mkdir()
    config = tmp_path / ".vscode" / "mcp.json"
    config.write_text(
        "{\n  // the workspace's servers\n"
        + json.dumps(
            {
                "servers": {
                    "shop": {
                        "type": "stdio",
                        "command": sys.executable,
                        "args": [str(SERVERS / "mcp_servers.py"), "catalogue"],
                        "include": ["add"],
                    }
                },
                "inputs": [],
            }
        )[1:]
    )
    assert main(["declare", str(config), "--provider", "anthropic"]) == 0
    assert [tool["name"] for tool in json.loads(capsys.readouterr().out)] == ["shop__add"]


# -- OAuth --------------------------------------------------------------------------------------


def test_a_remote_server_authorizes_with_oauth_unless_it_sends_an_authorization() -> None:
    assert one({"url": "https://h/mcp"}).auth == OAuth()
    assert one({"url": "https://h/sse", "type": "sse"}).auth == OAuth()
    assert one({"url": "https://h/mcp", "oauth": False}).auth is None
    assert one({"url": "https://h/mcp", "oauth": {"enabled": False}}).auth is None
    sent = one({"url": "https://h/mcp", "headers": {"authorization": "Bearer t"}})
    assert sent.auth is None


def test_a_bearer_token_from_the_environment_in_the_authorization_header(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TOOLWIRE_TEST_TOKEN", "env-token-123")
    spec = one(
        {"url": "https://h/mcp", "headers": {"Authorization": "Bearer ${TOOLWIRE_TEST_TOKEN}"}}
    )
    assert spec.headers == {"Authorization": "Bearer env-token-123"}
    assert spec.auth is None
    assert "env-token-123" not in repr(spec)


def test_an_oauth_object_in_claude_codes_and_gemini_clis_keys(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TOOLWIRE_TEST_SECRET", "from-env-secret")
    spec = one(
        {
            "url": "https://h/mcp",
            "oauth": {
                "clientId": "my-app",
                "clientSecret": "${TOOLWIRE_TEST_SECRET}",
                "callbackPort": 8765,
                "scopes": ["read", "write"],
                "issuer": "https://login.example.com",
                "timeout": 10,
            },
        }
    )
    assert spec.auth == OAuth(
        client_id="my-app",
        client_secret="from-env-secret",
        redirect_uri="http://127.0.0.1:8765/callback",
        scope="read write",
        issuer="https://login.example.com",
        timeout=10.0,
    )
    cimd = one({"url": "https://h/mcp", "oauth": {"clientMetadataUrl": "https://a.example/c.json"}})
    assert cimd.auth == OAuth(client_metadata_url="https://a.example/c.json")


def test_client_credentials_in_a_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLWIRE_TEST_SECRET", "svc-secret")
    spec = one(
        {
            "url": "https://h/mcp",
            "oauth": {
                "grantType": "client_credentials",
                "clientId": "svc",
                "clientSecret": "${TOOLWIRE_TEST_SECRET}",
                "tokenEndpointAuthMethod": "client_secret_post",
                "issuer": "https://login.example.com",
                "scope": "tools",
            },
        }
    )
    assert spec.auth == ClientCredentials(
        client_id="svc",
        client_secret="svc-secret",
        token_endpoint_auth_method="client_secret_post",
        issuer="https://login.example.com",
        scope="tools",
    )
    key = tmp_path / "key.pem"
    key.write_text("-----BEGIN PRIVATE KEY-----\nsecret-key\n")
    keyed = one(
        {
            "url": "https://h/mcp",
            "oauth": {
                "grantType": "client_credentials",
                "clientId": "svc",
                "privateKeyFile": str(key),
                "signingAlgorithm": "ES256",
            },
        }
    )
    assert keyed.auth.private_key == key.read_text()
    assert keyed.auth.signing_algorithm == "ES256"


@pytest.mark.parametrize(
    ("oauth", "message"),
    [
        ("yes", "oauth must be true, false or an object"),
        ({"enabled": "no"}, "oauth.enabled must be true or false"),
        ({"clientId": 5}, "oauth.clientId must be a string"),
        ({"scopes": "read"}, "oauth.scopes must be a list of strings"),
        ({"scopes": ["a"], "scope": "b"}, "oauth.scopes and oauth.scope are the same"),
        ({"callbackPort": 70000}, "oauth.callbackPort must be a port number"),
        ({"callbackPort": 1, "redirectUri": "http://127.0.0.1:1/c"}, "give one"),
        ({"grantType": "password"}, "oauth.grantType must be authorization_code or"),
        ({"grantType": "client_credentials"}, "oauth.clientId is needed"),
        (
            {"grantType": "client_credentials", "clientId": "c"},
            "needs clientSecret or privateKeyFile",
        ),
        (
            {"grantType": "client_credentials", "clientId": "c", "privateKeyFile": "/no/such"},
            "oauth.privateKeyFile cannot be read",
        ),
        ({"timeout": 0}, "oauth.timeout must be a positive number"),
        ({"clientSecret": "${TOOLWIRE_UNSET_SECRET_VAR}"}, "TOOLWIRE_UNSET_SECRET_VAR is not set"),
    ],
)
def test_a_malformed_oauth_entry_is_an_error_naming_the_key(oauth: Any, message: str) -> None:
    assert message in refused({"mcpServers": {"s": {"url": "https://h/mcp", "oauth": oauth}}})


def test_oauth_and_an_authorization_header_together_are_refused() -> None:
    entry = {
        "url": "https://h/mcp",
        "headers": {"Authorization": "Bearer header-secret"},
        "oauth": {"clientId": "c"},
    }
    message = refused({"mcpServers": {"s": entry}})
    assert "both authorize" in message
    assert "header-secret" not in message


def test_unknown_oauth_keys_are_warned_about() -> None:
    _, notes = read(
        {"mcpServers": {"s": {"url": "https://h/mcp", "oauth": {"clientId": "c", "audiences": []}}}}
    )
    assert notes == ["server 's': oauth: ignoring audiences"]
