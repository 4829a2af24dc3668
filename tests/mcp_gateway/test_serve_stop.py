"""Stopping the HTTP gateway: `toolwire.mcp.serve` cancelled (as docs/gateway.md shows), or
`toolwire serve --http` sent a signal, stops quietly, whatever its clients are doing: nothing
on stderr, and a call in progress is answered that the gateway stopped."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp
import mcp_types as types
import pytest

pytestmark = pytest.mark.anyio

BOUND = 60
HERE = Path(__file__).parent
STOPPED = "The gateway stopped before the call wait finished: it may or may not have taken effect."


class _Gateway:
    """A gateway process: stoppable_gateway.py (``toolwire.mcp.serve`` in a task, cancelled
    at a line on stdin), or ``toolwire serve stop_tools.py --http`` (stopped by a signal)."""

    def __init__(self, *, cli: bool = False) -> None:
        if cli:
            argv = ["-m", "toolwire.cli", "serve", str(HERE / "stop_tools.py")]
            argv += ["--http", "127.0.0.1:0"]
        else:
            argv = [str(HERE / "stoppable_gateway.py")]
        self.process = subprocess.Popen(
            [sys.executable, *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        said = self.process.stderr if cli else self.process.stdout
        assert said is not None
        line = said.readline()
        self.shown = line if cli else ""  # the CLI says where it serves on stderr
        self.url = line.rsplit(" ", 1)[-1].strip()
        if not self.url.startswith("http://127.0.0.1:"):
            self.process.kill()
            raise AssertionError(line + self.process.communicate(timeout=BOUND)[1])

    async def line(self) -> str:
        """The next line the gateway's tools (or the script) print on stdout."""
        assert self.process.stdout is not None
        return await anyio.to_thread.run_sync(self.process.stdout.readline)

    async def stop(self, signum: int | None = None) -> tuple[str, str]:
        """Cancel the serve (or send ``signum``); what was printed after, and stderr."""
        assert self.process.stdin is not None
        if signum is None:
            self.process.stdin.write("stop\n")
            self.process.stdin.flush()
        else:
            self.process.send_signal(signum)
        out, err = await anyio.to_thread.run_sync(lambda: self.process.communicate(timeout=BOUND))
        return out, self.shown + err

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate(timeout=BOUND)


@asynccontextmanager
async def _client(url: str, mode: str) -> AsyncIterator[mcp.Client]:
    """A client that may be cut off by the gateway stopping (its own errors are its own)."""
    try:
        async with mcp.Client(url, mode=mode, read_timeout_seconds=BOUND) as client:
            yield client
    except Exception:  # the server going away under the client
        pass


def _text(result: types.CallToolResult) -> str:
    return "\n".join(part.text for part in result.content if isinstance(part, types.TextContent))


async def test_a_cancelled_serve_stops_quietly() -> None:
    gateway = _Gateway()
    try:
        with anyio.fail_after(BOUND):
            async with mcp.Client(gateway.url) as client:
                added = await client.call_tool("add", {"a": 2, "b": 3})
            out, err = await gateway.stop()
    finally:
        gateway.close()
    assert _text(added) == "5"
    assert (gateway.process.returncode, out) == (0, "stopped\n")
    assert err == ""  # no CancelledError traceback from the server's lifespan


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_cancelled_serve_stops_quietly_with_a_client_connected(mode: str) -> None:
    gateway = _Gateway()
    try:
        with anyio.fail_after(BOUND):
            async with anyio.create_task_group() as tasks:
                connected = anyio.Event()

                async def stay() -> None:
                    async with _client(gateway.url, mode) as client:
                        await client.call_tool("add", {"a": 1, "b": 1})
                        connected.set()
                        await anyio.sleep_forever()

                tasks.start_soon(stay)
                await connected.wait()
                out, err = await gateway.stop()
                tasks.cancel_scope.cancel()
    finally:
        gateway.close()
    assert (gateway.process.returncode, out) == (0, "stopped\n")
    assert err == ""


async def _call_in_progress(gateway: _Gateway, mode: str, signum: int | None) -> tuple[Any, str]:
    """Stop ``gateway`` while a client's call of ``wait`` runs: its answer, and stderr."""
    answers: list[Any] = []
    async with anyio.create_task_group() as tasks:

        async def call() -> None:
            async with _client(gateway.url, mode) as client:
                answers.append(await client.call_tool("wait", {}))

        tasks.start_soon(call)
        assert await gateway.line() == "waiting\n"
        out, err = await gateway.stop(signum)
    assert out == ("" if signum is not None else "stopped\n")
    (answer,) = answers
    return answer, err


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_call_in_progress_when_serve_is_cancelled_is_answered_that_it_stopped(
    mode: str,
) -> None:
    gateway = _Gateway()
    try:
        with anyio.fail_after(BOUND):
            answer, err = await _call_in_progress(gateway, mode, None)
    finally:
        gateway.close()
    assert (answer.is_error, _text(answer)) == (True, STOPPED)
    assert gateway.process.returncode == 0
    assert err == ""


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
async def test_toolwire_serve_stopped_by_a_signal_answers_the_call_in_progress_quietly(
    signum: int, mode: str
) -> None:
    gateway = _Gateway(cli=True)
    try:
        with anyio.fail_after(BOUND):
            answer, err = await _call_in_progress(gateway, mode, signum)
    finally:
        gateway.close()
    assert (answer.is_error, _text(answer)) == (True, STOPPED)
    assert err == f"toolwire: serving MCP at {gateway.url}\n"  # and nothing after it
