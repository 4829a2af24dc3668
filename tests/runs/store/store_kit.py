"""What the store tests share: tools that count their runs, a call's record to write, and a
port nothing listens on. Imported by the test modules beside it (pytest puts this folder on the
import path), so every store's tests build records and tools alike."""

from __future__ import annotations

import socket
from collections import Counter
from typing import Any

from toolwire import ToolSet, tool
from toolwire.store import CallRecord

RUNS: Counter[str] = Counter()
"""How often each tool below ran (cleared before each test by this folder's conftest)."""


@tool
def add(a: int, b: int) -> int:
    """Adds."""
    RUNS["add"] += 1
    return a + b


@tool(idempotent=True)
def lookup(key: str) -> str:
    """Reads a value."""
    RUNS["lookup"] += 1
    return key.upper()


@tool
def transfer(amount: int) -> str:
    """Moves money."""
    RUNS["transfer"] += 1
    return f"moved {amount}"


TOOLS = ToolSet([add, lookup, transfer])


def record(call_id: str = "c1", **changes: Any) -> CallRecord:
    """A pending record of an ``add`` call, with ``changes``."""
    base = CallRecord(call_id=call_id, tool="add", fingerprint="f" * 16, state="pending")
    return base.with_(**changes)


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
