"""Dispatch overhead: parse → validate → policy → run → answer, per call.

Compares, in one run, for the same calls of a trivial tool:

- the function called directly (the floor);
- ``toolwire.execute_tool_calls`` on a Gemini response holding the calls;
- pydantic-ai running the same tool through an ``Agent`` whose ``FunctionModel`` returns the
  same calls in one response (then a final text), if pydantic-ai is installed.

Then concurrency: 100 calls of a tool that sleeps 100 ms, parallel-safe and not.

    python benchmarks/dispatch.py [--calls 200] [--repeat 7] [--json FILE]

With ``--json FILE`` the figures are also written to FILE as JSON.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from toolwire import Executor, MemoryStore, ToolSet, execute_tool_calls, tool


async def add_impl(a: int, b: int) -> int:
    return a + b


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def add_sync(a: int, b: int) -> int:
    """Add two integers (a sync tool: runs in a worker thread)."""
    return a + b


def gemini_response(name: str, n: int) -> dict[str, Any]:
    parts = [
        {"functionCall": {"name": name, "args": {"a": i, "b": 1}, "id": f"c{i}"}} for i in range(n)
    ]
    return {"candidates": [{"content": {"role": "model", "parts": parts}}]}


async def best_of(repeat: int, body: Callable[[], Awaitable[Any]]) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        await body()
        best = min(best, time.perf_counter() - start)
    return best


async def direct(n: int) -> None:
    for i in range(n):
        await add_impl(i, 1)


def pydantic_ai_runner(n: int) -> Callable[[], Awaitable[Any]] | None:
    try:
        from pydantic_ai import Agent
        from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
        from pydantic_ai.models.function import AgentInfo, FunctionModel
    except ImportError:
        return None

    def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(
                parts=[
                    ToolCallPart("add", {"a": i, "b": 1}, tool_call_id=f"c{i}") for i in range(n)
                ]
            )
        return ModelResponse(parts=[TextPart("done")])

    def model_only(messages: list[Any], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(model))
    agent.tool_plain(add_impl, name="add")
    baseline = Agent(FunctionModel(model_only))

    async def run() -> float:
        # The agent's own cost without tools, measured in the same pass and subtracted.
        start = time.perf_counter()
        await baseline.run("go")
        empty = time.perf_counter() - start
        start = time.perf_counter()
        await agent.run("go")
        return time.perf_counter() - start - empty

    return run


async def main_async(calls: int, repeat: int, json_path: str | None = None) -> None:
    toolset = ToolSet([add, add_sync])
    response = gemini_response("add", calls)
    response_sync = gemini_response("add_sync", calls)
    executor = Executor(toolset, store=MemoryStore())

    floor = await best_of(repeat, lambda: direct(calls)) / calls
    ours = (
        await best_of(
            repeat, lambda: execute_tool_calls(toolset, "gemini", response, executor=executor)
        )
        / calls
    )
    ours_sync = (
        await best_of(
            repeat, lambda: execute_tool_calls(toolset, "gemini", response_sync, executor=executor)
        )
        / calls
    )
    print(f"{calls} calls of a trivial tool, best of {repeat}\n")
    print(f"{'direct call':42} {floor * 1e6:9.2f} us/call")
    print(
        f"{'toolwire execute_tool_calls (async tool)':42} {ours * 1e6:9.2f} us/call   "
        f"overhead {(ours - floor) * 1e6:7.2f} us"
    )
    print(
        f"{'toolwire execute_tool_calls (sync tool)':42} {ours_sync * 1e6:9.2f} us/call   "
        f"overhead {(ours_sync - floor) * 1e6:7.2f} us"
    )
    runner = pydantic_ai_runner(calls)
    if runner is not None:
        best = float("inf")
        for _ in range(repeat):
            best = min(best, await runner())
        theirs = best / calls
        print(
            f"{'pydantic-ai Agent + FunctionModel':42} {theirs * 1e6:9.2f} us/call   "
            f"overhead {(theirs - floor) * 1e6:7.2f} us"
        )
        ratio = (ours - floor) / (theirs - floor)
        print(f"\ntoolwire overhead / pydantic-ai overhead: {ratio:.2f}")
    else:
        theirs = None
        print("pydantic-ai not installed; skipped")
    figures: dict[str, Any] = {
        "calls": calls,
        "repeat": repeat,
        "us_per_call": {
            "direct call": floor * 1e6,
            "toolwire execute_tool_calls (async tool)": ours * 1e6,
            "toolwire execute_tool_calls (sync tool)": ours_sync * 1e6,
            "pydantic-ai Agent + FunctionModel": None if theirs is None else theirs * 1e6,
        },
        "concurrency_s": {},
    }

    @tool
    async def nap() -> str:
        """Sleep 100 ms."""
        await anyio.sleep(0.1)
        return "rested"

    @tool(parallel_safe=False)
    async def nap_alone() -> str:
        """Sleep 100 ms, alone."""
        await anyio.sleep(0.1)
        return "rested"

    naps = ToolSet([nap, nap_alone])
    nap_executor = Executor(naps, max_concurrency=100, store=MemoryStore())
    for name in ("nap", "nap_alone"):
        body = {
            "candidates": [
                {
                    "content": {
                        "parts": [
                            {"functionCall": {"name": name}}
                            for _ in range(100 if name == "nap" else 10)
                        ]
                    }
                }
            ]
        }
        start = time.perf_counter()
        outcome = await execute_tool_calls(naps, "gemini", body, executor=nap_executor)
        elapsed = time.perf_counter() - start
        print(f"\n{len(outcome.results)} calls of a 100 ms tool ({name}): {elapsed:.3f} s")
        figures["concurrency_s"][name] = {"calls": len(outcome.results), "seconds": elapsed}
    if json_path is not None:
        with open(json_path, "w", encoding="utf-8") as f:
            json.dump(figures, f, indent=2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE as JSON")
    args = parser.parse_args()
    anyio.run(main_async, args.calls, args.repeat, args.json)


if __name__ == "__main__":
    main()
