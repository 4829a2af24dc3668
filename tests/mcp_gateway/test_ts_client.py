"""The gateway driven by the official TypeScript SDK client (`@modelcontextprotocol/sdk` from
npm), over stdio and streamable HTTP. Skipped without node and npm, or when the install fails
(no network)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gateway_procs import HttpGateway, serve_argv

HERE = Path(__file__).parent
INSTALL_SECONDS = 300
RUN_SECONDS = 120


@pytest.fixture(scope="session")
def ts_sdk(tmp_path_factory: pytest.TempPathFactory) -> Path:
    npm, node = shutil.which("npm"), shutil.which("node")
    if npm is None or node is None:
        pytest.skip("node and npm are needed for the TypeScript client")
    prefix = tmp_path_factory.mktemp("ts-sdk")
    try:
        subprocess.run(
            [
                npm,
                "install",
                "--prefix",
                str(prefix),
                "--no-audit",
                "--no-fund",
                "@modelcontextprotocol/sdk@^1",
            ],
            check=True,
            capture_output=True,
            timeout=INSTALL_SECONDS,
        )
    except (subprocess.SubprocessError, OSError) as exc:
        pytest.skip(f"cannot install @modelcontextprotocol/sdk: {exc}")
    return prefix / "node_modules" / "@modelcontextprotocol" / "sdk"


@pytest.fixture
def http_gateway() -> Iterator[HttpGateway]:
    gateway = HttpGateway(serve_argv())
    yield gateway
    gateway.close()


def _run(ts_sdk: Path, *target: str) -> dict[str, Any]:
    node = shutil.which("node")
    assert node is not None
    done = subprocess.run(
        [node, str(HERE / "ts_client.mjs"), str(ts_sdk), *target],
        capture_output=True,
        text=True,
        timeout=RUN_SECONDS,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _check(seen: dict[str, Any]) -> None:
    assert [tool["name"] for tool in seen["tools"]] == [
        "add",
        "weather",
        "delete_file",
        "format_disk",
    ]
    assert seen["tools"][0]["annotations"] == {"readOnlyHint": True}
    assert seen["tools"][0]["inputSchema"]["required"] == ["a", "b"]
    assert seen["add"] == {"isError": False, "text": "5", "structured": None}
    assert seen["weather"]["structured"] == {"city": "Oslo", "celsius": 21}
    assert seen["bad"]["isError"] is True
    assert "$.b: Field required" in seen["bad"]["text"]
    assert seen["denied"] == {
        "isError": True,
        "text": "Denied: formatting disks is not for agents.",
        "structured": None,
    }
    assert seen["approved"] == {"isError": False, "text": "deleted t.txt", "structured": None}
    assert len(seen["elicited"]) == 1


def test_the_typescript_client_lists_calls_and_approves_over_stdio(ts_sdk: Path) -> None:
    _check(_run(ts_sdk, "stdio", *serve_argv()))


def test_the_typescript_client_lists_calls_and_approves_over_http(
    ts_sdk: Path, http_gateway: HttpGateway
) -> None:
    _check(_run(ts_sdk, "http", http_gateway.url))
