"""`toolwire serve` (and `toolwire.mcp.serve`) applies the SOURCE module's own policy (a
`Policy` it names `policy` or `POLICY`), with `--policy FILE` when both are given, as
`toolwire call` does: a deny of either denies, an ask of either asks."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import mcp_types as types
import pytest
from gateway_procs import POLICY
from mcp import Client, StdioServerParameters

import toolwire.mcp
from toolwire import ConfigurationError

pytestmark = pytest.mark.anyio

BOUND = 60

MODULE = """
import toolwire


@toolwire.tool(annotations={"readOnlyHint": True})
def echo(text: str) -> str:
    '''Echo the text.'''
    return text


@toolwire.tool(annotations={"destructiveHint": True})
def wipe(path: str) -> str:
    '''Wipe a path (pretends to).'''
    return f"wiped {path}"


@toolwire.tool(annotations={"readOnlyHint": True})
def format_disk(device: str) -> str:
    '''Format a disk (pretends to).'''
    return f"formatted {device}"


tools = [echo, wipe, format_disk]
POLICY = toolwire.Policy(toolwire.Rule("{effect}", "wipe"))
"""


def write_module(tmp_path: Path, effect: str) -> Path:
    path = tmp_path / f"own_policy_{effect}.py"
    path.write_text(MODULE.replace("{effect}", effect), encoding="utf-8")
    return path


def _text(result: types.CallToolResult) -> str:
    return "\n".join(part.text for part in result.content if isinstance(part, types.TextContent))


async def _listed_and_called(*argv: str) -> tuple[list[str], types.CallToolResult]:
    command = [sys.executable, "-m", "toolwire.cli", "serve", *argv]
    # This environment, not the SDK's short default: the gateway imports the tests' toolwire.
    server = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    with anyio.fail_after(BOUND):
        async with Client(server) as client:
            listed = [tool.name for tool in (await client.list_tools()).tools]
            called = await client.call_tool("wipe", {"path": "/srv"})
    return listed, called


async def test_serve_applies_the_source_modules_own_policy(tmp_path: Path) -> None:
    listed, called = await _listed_and_called(str(write_module(tmp_path, "deny")))
    assert listed == ["echo", "format_disk"]
    assert called.is_error
    assert "wiped" not in _text(called)


async def test_serve_applies_the_modules_policy_and_the_policy_file_together(
    tmp_path: Path,
) -> None:
    # The module denies wipe; the file denies format_*: neither is served.
    module = write_module(tmp_path, "deny")
    listed, called = await _listed_and_called(str(module), "--policy", str(POLICY))
    assert listed == ["echo"]
    assert called.is_error


@pytest.fixture
def own_module(tmp_path: Path) -> Iterator[ModuleType]:
    path = write_module(tmp_path, "ask")
    spec = importlib.util.spec_from_file_location("own_policy_ask_tools", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


@pytest.mark.parametrize("given", ["a module", "a SOURCE string"])
async def test_serve_from_python_applies_the_modules_own_policy(
    given: str, own_module: ModuleType
) -> None:
    # The module asks about wipe; with no store, approved by the ledger, nothing could approve
    # it: a policy that asks is known before anything is served.
    source: Any = own_module if given == "a module" else own_module.__file__
    with anyio.fail_after(BOUND), pytest.raises(ConfigurationError, match="calls of wipe"):
        with anyio.CancelScope() as serving:
            await toolwire.mcp.serve(
                source,
                approve_by="ledger",
                transport="http",
                port=0,
                on_listening=lambda url: serving.cancel(),
            )
