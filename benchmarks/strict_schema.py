"""OpenAI strict conversion: toolwire against openai-agents and openai-python, in one run.

For each converter, over every tool schema of tests/data/tools.jsonl (and the stress schemas):

- strict: schemas it turns into a strict schema without an error, and whose output really is
  strict (every object closed, every property required, only supported keywords);
- optional kept optional: among the optional properties of the schemas it made strict, the share
  the model may still leave out (send null for, with toolwire stripping it) rather than being
  forced to invent a value (the SDKs make them required and non-nullable);
- us/schema: microseconds per schema, the best of several passes.

    python benchmarks/strict_schema.py [--repeat 5] [--json FILE]

With ``--json FILE`` the figures are also written to FILE as JSON.
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from toolwire.schema._base import follow_pointer
from toolwire.schema.checks import openai_strict_violations
from toolwire.schema.openai import strict_schema

DATA = Path(__file__).parent.parent / "tests" / "data"


def is_strict(schema: Any) -> bool:
    return not openai_strict_violations(schema)


def _resolve(root: Any, node: Any, depth: int = 0) -> Any:
    while isinstance(node, dict) and isinstance(node.get("$ref"), str) and depth < 20:
        node, depth = follow_pointer(root, node["$ref"], {}), depth + 1
    return node


def _optional_paths(schema: Any) -> list[tuple[str, ...]]:
    """Instance paths of optional properties (items as "*"), refs followed once per path."""
    found: list[tuple[str, ...]] = []
    stack: list[tuple[Any, tuple[str, ...], tuple[str, ...]]] = [(schema, (), ())]
    while stack and len(found) < 10_000:
        node, path, refs = stack.pop()
        if isinstance(node, dict) and isinstance(node.get("$ref"), str):
            if node["$ref"] in refs or len(path) > 8:
                continue
            refs = (*refs, node["$ref"])
            node = _resolve(schema, node)
        if not isinstance(node, dict):
            continue
        required = set(node.get("required") or [])
        for name, sub in (node.get("properties") or {}).items():
            if name not in required:
                found.append((*path, name))
            stack.append((sub, (*path, name), refs))
        if isinstance(node.get("items"), dict):
            stack.append((node["items"], (*path, "*"), refs))
    return found


def _accepts_null_at(schema: Any, path: tuple[str, ...]) -> bool:
    nodes = [schema]
    for step in path:
        following = []
        for node in nodes:
            node = _resolve(schema, node)
            if not isinstance(node, dict):
                continue
            branches = [_resolve(schema, b) for b in node.get("anyOf") or []] or [node]
            for branch in branches:
                if not isinstance(branch, dict):
                    continue
                if step == "*" and isinstance(branch.get("items"), dict):
                    following.append(branch["items"])
                elif step != "*" and step in (branch.get("properties") or {}):
                    following.append(branch["properties"][step])
        nodes = following
    return any(
        '"null"' in json.dumps(_resolve(schema, n)) or _resolve(schema, n).get("type") == "null"
        for n in nodes
        if isinstance(_resolve(schema, n), dict)
    )


def _optional_counts(original: Any, strict: Any) -> tuple[int, int]:
    """(optional properties in the original, of those the strict schema lets be null)."""
    paths = _optional_paths(original)
    return len(paths), sum(_accepts_null_at(strict, p) for p in paths)


def converters() -> list[tuple[str, Callable[[Any], Any]]]:
    found: list[tuple[str, Callable[[Any], Any]]] = [
        ("toolwire strict_schema", lambda s: strict_schema(s)[0])
    ]
    try:
        from agents.strict_schema import ensure_strict_json_schema

        found.append(
            (
                "openai-agents ensure_strict_json_schema",
                lambda s: ensure_strict_json_schema(copy.deepcopy(s)),
            )
        )
    except ImportError:
        print("openai-agents not installed; skipped")
    try:
        from openai.lib._pydantic import _ensure_strict_json_schema

        def openai_python(schema: Any) -> Any:
            copied = copy.deepcopy(schema)
            return _ensure_strict_json_schema(copied, path=(), root=copied)

        found.append(("openai-python to_strict_json_schema", openai_python))
    except ImportError:
        print("openai not installed; skipped")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE as JSON")
    args = parser.parse_args()
    schemas = []
    for name in ("tools", "stress"):
        with (DATA / f"{name}.jsonl").open(encoding="utf-8") as f:
            schemas += [json.loads(line)["inputSchema"] for line in f if line.strip()]
    n = len(schemas)
    print(f"{n} schemas\n")
    header = (
        f"{'converter':40} {'no error':>9} {'strict':>8} {'optional kept':>14} {'us/schema':>10}"
    )
    print(header)
    print("-" * len(header))
    results: dict[str, dict[str, float]] = {}
    for name, convert in converters():
        outputs = []
        for schema in schemas:
            try:
                outputs.append(convert(schema))
            except Exception:
                outputs.append(None)
        converted = sum(o is not None for o in outputs)
        strict = [
            (s, o) for s, o in zip(schemas, outputs, strict=True) if o is not None and is_strict(o)
        ]
        total = kept = 0
        for original, output in strict:
            t, k = _optional_counts(original, output)
            total += t
            kept += k
        best = float("inf")
        for _ in range(args.repeat):
            start = time.perf_counter()
            for schema in schemas:
                try:
                    convert(schema)
                except Exception:
                    continue
            best = min(best, time.perf_counter() - start)
        print(
            f"{name:40} {converted / n:>9.1%} {len(strict) / n:>8.1%} "
            f"{(kept / total if total else 1):>14.1%} {best / n * 1e6:>10.1f}"
        )
        results[name] = {
            "no_error": converted / n,
            "strict": len(strict) / n,
            "optional_kept": kept / total if total else 1.0,
            "us_per_schema": best / n * 1e6,
        }
    if args.json is not None:
        figures = {"repeat": args.repeat, "schemas": n, "converters": results}
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(figures, f, indent=2)


if __name__ == "__main__":
    main()
