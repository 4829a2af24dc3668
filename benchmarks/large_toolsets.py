"""Declaring 500 real tools, every one in full against all but a few deferred, for each
provider with tool search.

The tools are the first 500 of the test corpus (``tests/data/tools.jsonl``, tools published by
public MCP servers), each kept under its server (``server__name``), so Responses can group
them in namespaces. Per provider and way of declaring:

- **request bytes**: the JSON of the request's ``tools``, what is sent on every turn. Deferring
  does not shrink it: a deferred tool is still declared whole, so the API can load it;
- **context bytes**: what of it the model is shown before it searches: the tools not deferred,
  the search tool, a deferred tool's short description (Interactions) and a namespace's
  description (Responses). This is what deferring saves;
- **declaration time**: ``toolwire.tools`` on a toolset it has not declared before (a new one
  per run; a listing is cached on its toolset, so later turns cost a dictionary look-up).

    python benchmarks/large_toolsets.py [--tools 500] [--eager 5] [--repeat 5] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import toolwire
from toolwire import Tool, ToolSet
from toolwire.tool import tool_from_definition

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "data" / "tools.jsonl"
PROVIDERS = {
    "anthropic": {},
    "openai-responses": {},
    "openai-responses (namespaces)": {"namespaces": True},
    "gemini-interactions": {},
}


def corpus_tools(count: int) -> list[Tool]:
    """The first ``count`` tools of the corpus that every provider declares, each under its
    server (the repository its record names, made a portable id)."""
    tools: list[Tool] = []
    seen: set[tuple[str, str]] = set()
    for line in CORPUS.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("kind") == "custom":
            continue
        server = record["source"].split(":")[0].split("/")[-1].replace("-", "_").replace(".", "_")
        if (server, record["name"]) in seen:
            continue
        try:
            base = tool_from_definition(record)
            tool = Tool(
                name=base.name,
                description=base.description,
                input_schema=base.input_schema,
                server_id=server,
            )
            for provider in ("anthropic", "openai-responses", "gemini-interactions"):
                toolwire.tools([tool], provider)
        except toolwire.ToolwireError:
            continue
        seen.add((server, record["name"]))
        tools.append(tool)
        if len(tools) == count:
            return tools
    raise SystemExit(f"the corpus has only {len(tools)} tools every provider declares")


def _size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def context_bytes(tools: list[dict[str, Any]]) -> int:
    """What of the request's ``tools`` the model sees before searching."""
    total = 0
    for entry in tools:
        if entry.get("type") == "namespace":
            shown = [t for t in entry["tools"] if not t.get("defer_loading")]
            total += _size({**entry, "tools": shown})
        elif entry.get("defer_loading"):
            if "short_description" in entry:  # Interactions shows a summary until loaded
                total += _size({"name": entry["name"], "summary": entry["short_description"]})
        else:
            total += _size(entry)
    return total


def declare_seconds(
    tools: list[Tool], provider: str, options: dict[str, Any], deferred: list[str], repeat: int
) -> float:
    """The median time of one declaration of a toolset never declared before."""
    times = []
    for _ in range(repeat):
        toolset = ToolSet(tools)
        start = time.perf_counter()
        toolwire.tools(toolset, provider, deferred=deferred, **options)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tools", type=int, default=500)
    parser.add_argument("--eager", type=int, default=5, help="tools left loaded when deferring")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    # 500 tools are past OpenAI's documented 128 per request, which toolwire warns about;
    # the figures are what would be sent all the same.
    warnings.filterwarnings("ignore", category=toolwire.ToolwireWarning)

    tools = corpus_tools(args.tools)
    names = ToolSet(tools).exposed_names
    deferred = list(names[args.eager :])
    servers = len({t.server_id for t in tools})
    print(f"{len(tools)} tools of {servers} servers; deferring all but the first {args.eager}\n")
    rows = []
    header = f"{'provider':32} {'way':9} {'request KB':>11} {'context KB':>11} {'declare ms':>11}"
    print(header)
    print("-" * len(header))
    for label, options in PROVIDERS.items():
        provider = label.split(" ")[0]
        for way, chosen in (("eager", []), ("deferred", deferred)):
            listing = toolwire.tools(ToolSet(tools), provider, deferred=chosen, **options)
            request = _size(listing.tools)
            context = context_bytes(listing.tools)
            seconds = declare_seconds(tools, provider, options, chosen, args.repeat)
            rows.append(
                {
                    "provider": label,
                    "way": way,
                    "request_bytes": request,
                    "context_bytes": context,
                    "declare_ms": round(seconds * 1000, 2),
                }
            )
            print(
                f"{label:32} {way:9} {request / 1024:11.1f} {context / 1024:11.1f} "
                f"{seconds * 1000:11.1f}"
            )
    print()
    for label in PROVIDERS:
        eager, lazy = (r for r in rows if r["provider"] == label)
        saved = 1 - lazy["context_bytes"] / eager["context_bytes"]
        grown = lazy["request_bytes"] / eager["request_bytes"] - 1
        slower = lazy["declare_ms"] / eager["declare_ms"]
        print(
            f"{label}: the model is shown {saved:.1%} less up front; the request is "
            f"{grown:+.1%}; declaring takes {slower:.2f}x the time"
        )
    if args.json:
        figures = {"tools": len(tools), "servers": servers, "eager": args.eager, "rows": rows}
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
