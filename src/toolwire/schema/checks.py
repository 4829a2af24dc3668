"""Checks on schemas: does one fit a provider's rules, and which property paths does it describe.

The checks are written from each API's documented rules (and the errors it is seen to answer),
independently of the converters, so they can judge any converter's output (ours in the tests,
peers' in the benchmarks) and say whether a raw declaration is accepted as is:

- [`gemini_violations`][]: ``parametersJsonSchema`` or ``parameters`` of a Gemini function.
- [`anthropic_violations`][]: a Messages API tool's ``input_schema``, with or without strict
  tool use; [`anthropic_strict_budget_violations`][]: a request's strict tools together.
- [`openai_violations`][]: a function tool's ``parameters``, with or without strict mode.
- [`anthropic_name_violations`][], [`openai_name_violations`][]: a tool's name.

Every check takes any value, never raises for what it is given, and is bounded: a schema too
deep or too large to judge gets one note saying so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolwire.schema._base import follow_pointer
from toolwire.schema._checks_anthropic import (
    anthropic_name_violations,
    anthropic_pattern_problem,
    anthropic_strict_budget_violations,
    anthropic_violations,
)
from toolwire.schema._checks_common import WALK_BUDGET, draft_2020_12_violations
from toolwire.schema._checks_gemini import gemini_violations
from toolwire.schema._checks_openai import (
    openai_name_violations,
    openai_strict_violations,
    openai_violations,
)

__all__ = [
    "anthropic_name_violations",
    "anthropic_pattern_problem",
    "anthropic_strict_budget_violations",
    "anthropic_violations",
    "draft_2020_12_violations",
    "gemini_violations",
    "openai_name_violations",
    "openai_strict_violations",
    "openai_violations",
    "property_paths",
]

_REF_CHAIN = 32
"""References [`property_paths`][] follows along one path."""


def property_paths(schema: Any, *, max_depth: int = 10) -> set[str]:
    """Every named property path the schema describes, like ``"filter.tags[].name"``.

    ``anyOf``/``oneOf``/``allOf`` branches add no segment, array items add ``[]``; local
    references (``$ref``, and Vertex's ``ref``) are followed, each at most once along a path
    and at most 32 along one; paths stop at ``max_depth`` segments. The walk queues at most
    200,000 nodes (a larger schema's paths are reported as far as it got).
    Used to measure what a conversion lost.
    """
    paths: set[str] = set()
    stack: list[tuple[Any, str, tuple[str, ...], int]] = [(schema, "", (), 0)]
    # Every entry pushed counts (not only those popped): a node with many branches reached
    # through many references would otherwise fill the stack long before the budget runs out.
    budget = WALK_BUDGET

    def push(entries: list[tuple[Any, str, tuple[str, ...], int]]) -> None:
        nonlocal budget
        budget -= len(entries)
        if budget >= 0:
            stack.extend(entries)

    while stack and budget > 0:
        node, prefix, seen, depth = stack.pop()
        if not isinstance(node, Mapping) or depth > max_depth:
            continue
        for ref_key in ("$ref", "ref"):
            ref = node.get(ref_key)
            if (
                isinstance(ref, str)
                and ref.startswith("#")
                and len(seen) < _REF_CHAIN
                and ref not in seen
            ):
                push([(follow_pointer(schema, ref, None), prefix, (*seen, ref), depth)])
        props = node.get("properties")
        if isinstance(props, Mapping):
            entries = []
            for name, sub in props.items():
                path = f"{prefix}.{name}" if prefix else str(name)
                paths.add(path)
                entries.append((sub, path, seen, depth + 1))
            push(entries)
        for key in ("anyOf", "oneOf", "allOf"):
            branches = node.get(key)
            if isinstance(branches, list):
                push([(b, prefix, seen, depth) for b in branches])
        items = node.get("items")
        if isinstance(items, list):
            push([(b, prefix + "[]", seen, depth + 1) for b in items])
        elif items is not None:
            push([(items, prefix + "[]", seen, depth + 1)])
        prefix_items = node.get("prefixItems")
        if isinstance(prefix_items, list):
            push([(b, prefix + "[]", seen, depth + 1) for b in prefix_items])
    return paths
