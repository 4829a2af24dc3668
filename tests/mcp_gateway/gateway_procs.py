"""The gateway as a separate process: `python -m toolwire.cli serve ...` over stdio or
streamable HTTP on 127.0.0.1 (imported by the tests and their conftest)."""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
TOOLS = HERE / "gateway_tools.py"
POLICY = HERE / "policy.toml"
STARTUP_SECONDS = 30.0
"""Most seconds an HTTP gateway may take to say where it listens (a bound, never a wait)."""

Connect = Callable[..., AbstractAsyncContextManager[Any]]


def serve_argv(store_url: str | None = None, *extra: str) -> list[str]:
    argv = [sys.executable, "-m", "toolwire.cli", "serve", str(TOOLS), "--policy", str(POLICY)]
    if store_url is not None:
        argv += ["--store", store_url]
    return argv + list(extra)


class HttpGateway:
    """One `toolwire serve --http 127.0.0.1:0` process (or another ``address``); `url` is
    where it listens."""

    def __init__(self, argv: list[str], address: str = "127.0.0.1:0") -> None:
        self.process = subprocess.Popen(
            [*argv, "--http", address],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        lines: queue.Queue[str | None] = queue.Queue()
        self.stderr: list[str] = []
        # stderr is drained for the process's whole life, so it never blocks on a full pipe.
        threading.Thread(target=self._drain, args=(lines,), daemon=True).start()
        self.url = self._wait_for_url(lines)

    def _drain(self, lines: queue.Queue[str | None]) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.stderr.append(line)
            lines.put(line)
        lines.put(None)

    def _wait_for_url(self, lines: queue.Queue[str | None]) -> str:
        marker = "serving MCP at "
        while True:
            try:
                line = lines.get(timeout=STARTUP_SECONDS)
            except queue.Empty:
                self.close()
                raise RuntimeError("the gateway did not start in time") from None
            if line is None:
                raise RuntimeError("the gateway exited: " + "".join(self.stderr))
            if marker in line:
                return line.split(marker, 1)[1].strip()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
