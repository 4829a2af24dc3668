"""Every walk over a schema is bounded in total work, not only in depth.

Reproduction (issue 14, item 3): Gemini's whole-float coercion walked a union that refers back
to itself twice, without memoizing: a whole-number float argument cost ~2^depth steps. Work is
counted here (schema nodes decided), or bounded by wall clock around a subprocess that runs
every lowering, check and declaration on shapes built to blow up (exponential fan-out of
references, quadratic merges).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from schema_shapes import fan_out, pairs, self_referencing_union, union_chain

from toolwire import Tool, ToolSet
from toolwire.providers import parse_calls
from toolwire.schema import gemini as gemini_schema
from toolwire.schema.gemini import coerce_whole_floats

SHAPES_SCRIPT = Path(__file__).with_name("schema_shapes.py")


@pytest.fixture
def decisions(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per schema node the coercion decides."""
    seen: list[int] = []
    original = gemini_schema._Coercion._decide

    def counting(self: Any, schema: Any, depth: int) -> bool:
        seen.append(id(schema))
        return original(self, schema, depth)

    monkeypatch.setattr(gemini_schema._Coercion, "_decide", counting)
    return seen


def _gemini_call(arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "candidates": [{"content": {"parts": [{"functionCall": {"name": "t", "args": arguments}}]}}]
    }


def test_a_union_referring_back_to_itself_is_decided_once_per_node(decisions: list[int]) -> None:
    schema = self_referencing_union()
    toolset = ToolSet([Tool(name="t", input_schema=schema)])
    (call,) = parse_calls("gemini", _gemini_call({"n": 3.0}), toolset)
    assert call.arguments == {"n": 3}
    assert type(call.arguments["n"]) is int
    assert len(decisions) == len(set(decisions)) <= 4


@pytest.mark.parametrize("branches", [2, 10, 1000])
def test_many_self_references_cost_one_visit_each(decisions: list[int], branches: int) -> None:
    schema = self_referencing_union(branches)
    assert coerce_whole_floats({"n": 7.0, "m": 1.5}, schema) == {"n": 7, "m": 1.5}
    assert len(decisions) <= branches + 3


def test_a_chain_of_doubling_unions_is_linear(decisions: list[int]) -> None:
    # 2^40 paths through the chain; each definition is decided once.
    schema = union_chain(40)
    assert coerce_whole_floats({"n": 2.0}, schema) == {"n": 2}
    assert len(decisions) <= 2 * 41 + 2


def test_fan_out_is_decided_once_per_node_however_many_paths_reach_it(
    decisions: list[int],
) -> None:
    schema = fan_out(width=10, levels=30)
    arguments: dict[str, Any] = {"root": {}}
    node = arguments["root"]
    for _ in range(29):  # one path down the fan-out, a float at the bottom
        node["p3"] = {}
        node = node["p3"]
    node["p7"] = 5.0
    coerced = coerce_whole_floats(arguments, schema)
    leaf = coerced["root"]
    for _ in range(29):
        leaf = leaf["p3"]
    assert leaf == {"p7": 5}


def test_past_its_budget_the_coercion_changes_nothing(decisions: list[int]) -> None:
    # A union of 20,000 distinct branches: more than the coercion looks at.
    branches = [{"type": "string", "description": str(i)} for i in range(20_000)]
    schema = {"type": "object", "properties": {"n": {"anyOf": [*branches, {"type": "integer"}]}}}
    arguments = {"n": 4.0}
    assert coerce_whole_floats(arguments, schema) is arguments
    assert len(decisions) <= gemini_schema._COERCE_BUDGET
    # The validator still decides: JSON Schema counts 4.0 as an integer.
    assert Tool(name="t", input_schema=schema).validate_arguments(arguments) == arguments


def test_many_arguments_under_one_reference_follow_it_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Each of 20,000 objects in a list under one long pointer once followed it again: the
    # work was the number of arguments times the pointer's length.
    follows: list[str] = []
    original = gemini_schema.follow_pointer

    def counting(root: Any, pointer: str, missing: Any = None) -> Any:
        follows.append(pointer)
        return original(root, pointer, missing)

    monkeypatch.setattr(gemini_schema, "follow_pointer", counting)
    key = "k" * 5_000
    schema = {
        "type": "object",
        "$defs": {key: {"type": "object", "properties": {"n": {"type": "integer"}}}},
        "properties": {"xs": {"type": "array", "items": {"$ref": f"#/$defs/{key}"}}},
    }
    coerced = coerce_whole_floats({"xs": [{"n": 1.0}] * 20_000}, schema)
    assert coerced["xs"][0] == {"n": 1}
    assert type(coerced["xs"][-1]["n"]) is int
    assert len(follows) == 1


@settings(max_examples=300, deadline=None)
@given(
    st.recursive(
        st.sampled_from(
            [
                {"type": "integer"},
                {"type": "number"},
                {"$ref": "#/$defs/a"},
                {"$ref": "#/$defs/b"},
                {"$ref": "#"},
                {"type": ["integer", "null"]},
            ]
        ),
        lambda inner: (
            st.lists(inner, min_size=1, max_size=4).map(lambda b: {"anyOf": b})
            | st.lists(inner, min_size=1, max_size=4).map(lambda b: {"oneOf": b})
            | inner.map(lambda i: {"type": "array", "items": i})
            | st.dictionaries(st.sampled_from("xyz"), inner, max_size=3).map(
                lambda p: {"type": "object", "properties": p}
            )
        ),
        max_leaves=25,
    ),
    st.recursive(
        st.floats(allow_nan=False, allow_infinity=False) | st.integers(-5, 5) | st.none(),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(st.sampled_from("xyzn"), inner, max_size=3)
        ),
        max_leaves=15,
    ),
)
def test_coercion_of_any_schema_and_arguments_is_bounded_and_only_turns_whole_floats_into_ints(
    shape: dict[str, Any], value: Any
) -> None:
    schema = {
        "type": "object",
        "properties": {"n": shape},
        "$defs": {"a": shape, "b": {"anyOf": [shape, {"$ref": "#/$defs/a"}]}},
    }
    arguments = {"n": value}
    coerced = coerce_whole_floats(arguments, schema)

    def same_but_whole_floats(before: Any, after: Any) -> None:
        if isinstance(before, float) and isinstance(after, int):
            assert before == after
        elif isinstance(before, dict):
            assert isinstance(after, dict)
            assert before.keys() == after.keys()
            for key in before:
                same_but_whole_floats(before[key], after[key])
        elif isinstance(before, list):
            assert isinstance(after, list)
            assert len(before) == len(after)
            for b, a in zip(before, after, strict=True):
                same_but_whole_floats(b, a)
        else:
            assert before == after or (before != before and after != after)

    same_but_whole_floats(arguments, coerced)
    assert arguments == {"n": value}  # the input is never changed


@pytest.mark.parametrize(
    "size",
    [
        pytest.param("--short", id="short"),
        pytest.param("--whole", marks=pytest.mark.deep, id="whole"),
    ],
)
def test_every_walk_on_shapes_built_to_blow_up_finishes_with_a_bounded_output(size: str) -> None:
    # Unbounded, the fan-out is 10^30 nodes once inlined and each formerly quadratic step takes
    # minutes at the whole size (the slowest passed the bound alone); bounded, the whole run
    # takes seconds. The bound is generous for a slow, busy machine. The README's run builds
    # the quadratic shapes a quarter as large; the deep run, whole.
    result = subprocess.run(
        [sys.executable, str(SHAPES_SCRIPT), size],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=SHAPES_SCRIPT.parent,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(line["shape"], line["operation"]) for line in lines] == pairs()
    for line in lines:
        assert line["outcome"] in ("ok", "SchemaConversionError", "StrictSchemaError"), line
        assert line["size"] < 20_000_000, line  # no exponential output
    by = {(line["shape"], line["operation"]): line["outcome"] for line in lines}
    # What must still work on the fan-out: its declarations refer to definitions.
    for operation in ("gemini json", "declared object", "validator", "tools anthropic"):
        assert by["fan-out", operation] == "ok", operation
        assert by["fan-out with descriptions", operation] == "ok", operation
