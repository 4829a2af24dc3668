"""Gemini schema conversion: toolwire against its peers, on the same corpus, in one run.

For each converter, over every schema of tests/data/tools.jsonl and stress.jsonl:

- converted: schemas converted without an exception;
- fits rules: converted schemas whose output meets Gemini's documented rules for the field the
  converter targets (``parametersJsonSchema`` or ``parameters``), judged by
  ``toolwire.schema.checks.gemini_violations``;
- paths kept: the share of the original's property paths still described by the output;
- us/tool: microseconds per schema, the best of several cold passes over the whole corpus.

Run with the peers installed (``pip install -e '.[bench]'``)::

    python benchmarks/gemini_schema.py [--repeat 5] [--json FILE]

With ``--json FILE`` the figures are also written to FILE as JSON.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# litellm fetches a price list at import time unless told not to; this benchmark is offline.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from toolwire import Tool, ToolSet
from toolwire.providers import gemini
from toolwire.schema import to_gemini_json_schema, to_gemini_openapi_schema
from toolwire.schema.checks import gemini_violations, property_paths

DATA = Path(__file__).parent.parent / "tests" / "data"


@dataclass
class Converter:
    name: str
    mode: str  # "json" or "openapi": which Gemini field the output is for
    convert: Callable[[Any], Any]
    copies_input: bool = False  # True when the converter mutates its input


def _dump(schema: Any) -> Any:
    return schema.model_dump(mode="json", by_alias=True, exclude_none=True)


def converters() -> list[Converter]:
    found = [
        Converter("toolwire json", "json", lambda s: to_gemini_json_schema(s)[0]),
        Converter("toolwire openapi", "openapi", lambda s: to_gemini_openapi_schema(s)[0]),
    ]
    try:
        from pydantic_ai.profiles.google import (
            GoogleJsonSchemaTransformer,
            GoogleOpenAPISchemaTransformer,
        )

        found += [
            Converter("pydantic-ai json", "json", lambda s: GoogleJsonSchemaTransformer(s).walk()),
            Converter(
                "pydantic-ai openapi",
                "openapi",
                lambda s: GoogleOpenAPISchemaTransformer(s).walk(),
            ),
        ]
    except ImportError:
        print("pydantic-ai not installed; skipped")
    try:
        from langchain_google_genai._function_utils import convert_to_genai_function_declarations

        def langchain(schema: Any) -> Any:
            tool = {"type": "function", "function": {"name": "t", "parameters": schema}}
            [declarations] = convert_to_genai_function_declarations([tool])
            declaration = (declarations.function_declarations or [])[0]
            if declaration.parameters_json_schema is not None:
                return declaration.parameters_json_schema
            return _dump(declaration.parameters) if declaration.parameters else {}

        found.append(Converter("langchain-google-genai", "openapi", langchain))
    except ImportError:
        print("langchain-google-genai not installed; skipped")
    try:
        from litellm.llms.vertex_ai.common_utils import _build_vertex_schema

        found.append(
            Converter("litellm", "openapi", _build_vertex_schema, copies_input=True)  # type: ignore[arg-type]
        )
    except ImportError:
        print("litellm not installed; skipped")
    try:
        from google.genai import _mcp_utils, types

        def genai(schema: Any) -> Any:
            # The SDK's own MCP path: filter to the keys JSONSchema takes, then convert.
            filtered = _mcp_utils._filter_to_supported_schema(schema)
            return _dump(types.Schema.from_json_schema(json_schema=types.JSONSchema(**filtered)))

        found.append(Converter("google-genai", "openapi", genai))
    except ImportError:
        print("google-genai not installed; skipped")
    return found


def load() -> list[dict[str, Any]]:
    records = []
    for name in ("tools", "stress"):
        with (DATA / f"{name}.jsonl").open(encoding="utf-8") as f:
            records += [json.loads(line) for line in f if line.strip()]
    return records


def measure(converter: Converter, schemas: list[Any]) -> dict[str, Any]:
    outputs: list[Any] = []
    errors = 0
    for schema in schemas:
        source = copy.deepcopy(schema) if converter.copies_input else schema
        try:
            outputs.append(converter.convert(source))
        except Exception:
            outputs.append(None)
            errors += 1
    fits = 0
    kept = total = 0
    for schema, out in zip(schemas, outputs, strict=True):
        original = property_paths(schema)
        total += len(original)
        if out is None:
            continue
        if not gemini_violations(out, mode=converter.mode):  # type: ignore[arg-type]
            fits += 1
        kept += len(original & property_paths(out))

    return {
        "converted": len(schemas) - errors,
        "fits": fits,
        "paths": kept / total if total else 1.0,
    }


def one_pass(converter: Converter, schemas: list[Any]) -> float:
    """Seconds for one cold pass of ``converter`` over ``schemas``."""
    inputs = [copy.deepcopy(s) for s in schemas] if converter.copies_input else schemas
    start = time.perf_counter()
    for source in inputs:
        try:
            converter.convert(source)
        except Exception:
            continue
    return time.perf_counter() - start


def times_per_schema(found: list[Converter], schemas: list[Any], repeat: int) -> dict[str, float]:
    """Microseconds per schema for each converter: the best of ``repeat`` passes, the
    converters taking turns within each round so they share the machine's noise."""
    best = {c.name: float("inf") for c in found}
    for _ in range(repeat):
        for converter in found:
            best[converter.name] = min(best[converter.name], one_pass(converter, schemas))
    return {name: seconds / len(schemas) * 1e6 for name, seconds in best.items()}


def cached_declarations(records: list[dict[str, Any]], repeat: int) -> float:
    """Microseconds per tool for a repeated ``function_declarations`` on an unchanged ToolSet."""
    toolset = ToolSet(
        [Tool(name=f"t{i}", input_schema=r["inputSchema"]) for i, r in enumerate(records)]
    )
    gemini.function_declarations(toolset)  # the first, cold call fills the cache
    rounds = 200
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(rounds):
            gemini.function_declarations(toolset)
        best = min(best, time.perf_counter() - start)
    return best / rounds / len(records) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=9, help="timed passes; the best is kept")
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE as JSON")
    args = parser.parse_args()
    records = load()
    schemas = [r["inputSchema"] for r in records]
    tools = [r["inputSchema"] for r in records if r.get("kind") != "schema_stress_not_a_tool"]
    stress = [r["inputSchema"] for r in records if r.get("kind") == "schema_stress_not_a_tool"]
    n = len(schemas)
    print(f"{n} schemas: {len(tools)} tools + {len(stress)} stress schemas\n")
    header = (
        f"{'converter':24} {'field':8} {'converted':>10} {'fits rules':>11} "
        f"{'paths kept':>11} {'us/tool':>9} {'us/stress':>10}"
    )
    print(header)
    print("-" * len(header))
    found = converters()
    tool_times = times_per_schema(found, tools, args.repeat)
    stress_times = times_per_schema(found, stress, args.repeat)
    results = {}
    for converter in found:
        r = measure(converter, schemas)
        r["us"] = tool_times[converter.name]
        r["us_stress"] = stress_times[converter.name]
        r["field"] = converter.mode
        results[converter.name] = r
        print(
            f"{converter.name:24} {converter.mode:8} {r['converted'] / n:>10.1%} "
            f"{r['fits'] / n:>11.1%} {r['paths']:>11.1%} {r['us']:>9.1f} {r['us_stress']:>10.1f}"
        )
    cached = cached_declarations(records, args.repeat)
    print(
        "\ntoolwire function_declarations, repeated on an unchanged ToolSet: "
        f"{cached:.3f} us/tool (cached)"
    )
    for ours, theirs in (
        ("toolwire json", "pydantic-ai json"),
        ("toolwire openapi", "pydantic-ai openapi"),
    ):
        if theirs in results:
            mine, other = results[ours], results[theirs]
            print(
                f"{ours} / {theirs}: time per tool {mine['us'] / other['us']:.2f}, "
                f"per stress schema {mine['us_stress'] / other['us_stress']:.2f}"
            )
    if args.json is not None:
        figures = {
            "repeat": args.repeat,
            "schemas": n,
            "tools": len(tools),
            "stress": len(stress),
            "converters": results,
            "cached_us_per_tool": cached,
        }
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(figures, f, indent=2)


if __name__ == "__main__":
    main()
