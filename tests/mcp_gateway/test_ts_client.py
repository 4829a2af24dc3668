"""The gateway driven by the official TypeScript SDK client (`@modelcontextprotocol/sdk` from
npm, pinned, installed once into the cache the suite keeps between runs), over stdio and
streamable HTTP. Skipped without node and npm, or when the install fails (no network)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gateway_procs import HttpGateway, serve_argv

from shared_files import npm_package

HERE = Path(__file__).parent
TS_SDK = "@modelcontextprotocol/sdk@1.32.2"
"""Pinned, so that one install serves every run after it."""
RUN_SECONDS = 120


@pytest.fixture(scope="session")
def ts_sdk() -> Path:
    return npm_package(TS_SDK)


@pytest.fixture
def http_gateway() -> Iterator[HttpGateway]:
    gateway = HttpGateway(serve_argv(None, "--approve-by", "client"))
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
    # format_disk, which the policy denies outright, is not listed, and is unknown.
    assert [tool["name"] for tool in seen["tools"]] == ["add", "weather", "delete_file"]
    assert seen["tools"][0]["annotations"] == {"readOnlyHint": True}
    assert seen["tools"][0]["inputSchema"]["required"] == ["a", "b"]
    assert seen["add"] == {"isError": False, "text": "5", "structured": None}
    assert seen["weather"]["structured"] == {"city": "Oslo", "celsius": 21}
    assert seen["bad"]["isError"] is True
    assert "$.b: Field required" in seen["bad"]["text"]
    assert seen["denied"] == {
        "isError": True,
        "text": "Unknown tool 'format_disk'.",
        "structured": None,
    }
    assert seen["approved"] == {"isError": False, "text": "deleted t.txt", "structured": None}
    assert len(seen["elicited"]) == 1


def test_the_typescript_client_lists_calls_and_approves_over_stdio(ts_sdk: Path) -> None:
    _check(_run(ts_sdk, "stdio", *serve_argv(None, "--approve-by", "client")))


def test_the_typescript_client_lists_calls_and_approves_over_http(
    ts_sdk: Path, http_gateway: HttpGateway
) -> None:
    _check(_run(ts_sdk, "http", http_gateway.url))


UPSTREAM_POLICY = """\
default = "allow"

[[rules]]
tool = "upstream_server/guarded"
action = "ask"
"""


def test_the_typescript_client_gets_progress_cancels_upstream_and_completes_a_deferred_call(
    ts_sdk: Path, tmp_path: Path
) -> None:
    import re
    import shlex
    import sys

    import anyio

    import toolwire

    node = shutil.which("node")
    assert node is not None
    policy = tmp_path / "policy.toml"
    policy.write_text(UPSTREAM_POLICY)
    store_path = tmp_path / "runs.sqlite"
    marker = tmp_path / "cancelled"
    upstream = shlex.join([sys.executable, str(HERE / "upstream_server.py"), str(marker)])
    gateway = [
        sys.executable,
        "-m",
        "toolwire.cli",
        "serve",
        f"stdio:{upstream}",
        "--policy",
        str(policy),
        "--store",
        f"sqlite:///{store_path}",
        "--approve-by",
        "ledger",
    ]
    process = subprocess.Popen(
        [node, str(HERE / "ts_client_upstream.mjs"), str(ts_sdk), *gateway],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert process.stdin is not None
        seen: dict[str, Any] = {}
        for _ in range(3):  # progress, cancelled, waiting; then it waits for us
            line = process.stdout.readline()
            assert line, process.stderr.read() if process.stderr else ""
            step = json.loads(line)
            seen[step.pop("step")] = step
        waiting = seen["waiting"]
        assert waiting["isError"] is True
        found = re.search(r"Run id: (\S+); call id: (\S+)\.", waiting["text"])
        assert found is not None, waiting["text"]
        run_id, call_id = found.groups()
        store = toolwire.SQLiteStore(store_path)
        anyio.run(lambda: toolwire.decide(run_id, call_id, toolwire.allow(), store=store, by="ops"))
        process.stdin.write("decided\n")
        process.stdin.flush()
        approved = json.loads(process.stdout.readline())
        process.wait(timeout=RUN_SECONDS)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
    assert seen["progress"]["text"] == "done after 3 steps"
    # Every report reached the client before the answer, under the progress token its call
    # asked with (the SDK's onprogress may run after the answer for the last ones, or, on a
    # loaded machine, for all of them, and then drops them: what it ran is a prefix).
    assert seen["progress"]["wire"][-4:] == [1, 2, 3, "answer"]
    assert seen["progress"]["asked"] is not None
    assert seen["progress"]["tokens"][-3:] == [seen["progress"]["asked"]] * 3
    reports = [[1, 3, "step 1"], [2, 3, "step 2"], [3, 3, "step 3"]]
    assert seen["progress"]["progress"] == reports[: len(seen["progress"]["progress"])]
    assert "the user stopped it" in seen["cancelled"]["aborted"]
    assert approved == {"step": "approved", "isError": False, "text": "guarded box"}
    assert process.returncode == 0
    # The call the client aborted was cancelled on the upstream server, through the gateway.
    for _ in range(100):
        if marker.exists():
            break
        anyio.run(anyio.sleep, 0.1)
    assert marker.read_text() == "cancelled"
