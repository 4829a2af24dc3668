"""MCP hub overhead in instructions, counted by valgrind's callgrind: far steadier than
wall-clock time on a busy machine (runs still differ by about 1% of a call, as the server's
worker threads are scheduled differently).

Each path (a bare ``mcp.Client`` call, the hub's own tool handler, the whole governed pipeline
through ``execute_tool_calls`` on a Gemini response and on an Anthropic one) runs in its own
process under callgrind twice, with ``--few`` and ``--many`` calls to an in-process server (or,
with ``--stdio``, to a server subprocess whose own work is not counted); the difference divided
by the extra calls is the cost of one call, start-up and connection excluded.

    python benchmarks/mcp_instructions.py [--few 100] [--many 500] [--stdio] [--json FILE]

With ``--json FILE`` the figures are also written to FILE as JSON.

Needs ``valgrind`` (Debian's package); each run takes one to two minutes.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

PATHS = ("bare", "tool", "pipeline", "anthropic")


def run_path(path: str, calls: int, transport: str) -> None:
    """The calls of one path, in this process (what callgrind counts)."""
    import anyio
    import mcp

    import toolwire
    from toolwire.mcp import Hub, InProcessServer, StdioServer

    servers = Path(__file__).parent.parent / "tests" / "mcp_hub"
    sys.path.insert(0, str(servers))
    from mcp_servers import catalogue

    command = [sys.executable, str(servers / "mcp_servers.py"), "catalogue"]
    target: Any = catalogue()
    spec: Any = InProcessServer(server=catalogue())
    if transport == "stdio":  # the server's own process is not counted: the client's side only
        target = mcp.StdioServerParameters(command=command[0], args=command[1:])
        spec = StdioServer(command=command[0], args=command[1:])

    # Gemini sends calls without ids (toolwire derives one from the arguments); Anthropic's
    # calls carry theirs.
    responses: dict[str, tuple[str, Any]] = {
        "pipeline": (
            "gemini",
            {
                "candidates": [
                    {
                        "content": {
                            "parts": [
                                {"functionCall": {"name": "s__add", "args": {"a": 1, "b": 2}}}
                            ]
                        }
                    }
                ]
            },
        ),
        "anthropic": (
            "anthropic",
            {
                "content": [
                    {"type": "tool_use", "id": "t1", "name": "s__add", "input": {"a": 1, "b": 2}}
                ]
            },
        ),
    }

    async def main() -> None:
        async with (
            mcp.Client(target, mode="legacy", cache=None) as client,
            Hub({"s": spec}) as hub,
        ):
            executor = toolwire.Executor(hub.as_toolset())
            tool = hub.as_toolset()["s__add"]
            assert tool.handler is not None
            for i in range(calls):
                if path == "bare":
                    await client.call_tool("add", {"a": i, "b": 1})
                elif path == "tool":
                    await tool.handler(a=i, b=1)
                else:
                    provider, response = responses[path]
                    await toolwire.execute_tool_calls(hub, provider, response, executor=executor)

    anyio.run(main)


def count(path: str, calls: int, transport: str) -> int:
    done = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            __file__,
            "--run",
            path,
            str(calls),
            transport,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise RuntimeError(f"callgrind printed no count:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--few", type=int, default=100)
    parser.add_argument("--many", type=int, default=500)
    parser.add_argument(
        "--stdio", action="store_true", help="the server in a subprocess (client side counted)"
    )
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE as JSON")
    parser.add_argument("--run", nargs=3, help=argparse.SUPPRESS)  # PATH CALLS TRANSPORT
    options = parser.parse_args()
    if options.run:
        run_path(options.run[0], int(options.run[1]), options.run[2])
        return
    transport = "stdio" if options.stdio else "in-process"
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (Debian: apt-get install valgrind)")
    jobs = [(path, n) for path in PATHS for n in (options.few, options.many)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        counts = dict(zip(jobs, pool.map(lambda job: count(*job, transport), jobs), strict=True))
    per_call = {
        path: (counts[path, options.many] - counts[path, options.few])
        / (options.many - options.few)
        for path in PATHS
    }
    bare = per_call["bare"]
    print(f"instructions per call ({transport}, {options.few} vs {options.many} calls)\n")
    labels = {
        "bare": "bare mcp.Client",
        "tool": "hub tool",
        "pipeline": "hub + pipeline (Gemini)",
        "anthropic": "hub + pipeline (Anthropic)",
    }
    for path in PATHS:
        added = per_call[path] - bare
        print(
            f"  {labels[path]:27} {per_call[path] / 1e6:7.3f} M"
            + (f"   {added / 1e3:+7.1f} k ({added / bare:+.1%})" if path != "bare" else "")
        )
    if options.json is not None:
        figures = {
            "transport": transport,
            "few": options.few,
            "many": options.many,
            "instructions_per_call": {labels[path]: per_call[path] for path in PATHS},
        }
        with open(options.json, "w", encoding="utf-8") as f:
            json.dump(figures, f, indent=2)


if __name__ == "__main__":
    main()
