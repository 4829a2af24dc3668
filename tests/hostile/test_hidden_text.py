"""Descriptions and titles are cleaned for every provider at every depth.

Reproduction (issue 14, item 13): Gemini's lowering cleaned nested descriptions, but the
Anthropic ``input_schema`` and the OpenAI ``parameters`` (strict and not) passed them through:
Unicode tag characters (invisible, read by models as text), bidi overrides, zero-width
characters and 20 KB property descriptions reached the model. One copy-on-write transform
cleans them for both; the tool's own schema is never changed.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from provider_turns import DECLARATION_IDS, DECLARATIONS

import toolwire
from toolwire import Tool, ToolSet, compat
from toolwire.schema._rewrite import for_declaration

TAGS = "".join(chr(c) for c in range(0xE0020, 0xE007F))  # "ignore previous ..." in tags
HIDDEN = [
    "\U000e0049\U000e0047\U000e004e\U000e004f\U000e0052\U000e0045",  # IGNORE, in tag characters
    "\u202e",  # right-to-left override
    "\u2066",  # left-to-right isolate
    "\u200b",  # zero-width space
    "\u2060",  # word joiner
    "\ufeff",  # byte order mark
    "\u00ad",  # soft hyphen
    "\x1b[2J",  # a terminal escape
]
INVISIBLE = frozenset(
    [chr(c) for c in range(0xE0000, 0xE0080)]
    + [chr(c) for c in range(0x202A, 0x202F)]
    + [chr(c) for c in range(0x2066, 0x2070)]
    + [chr(c) for c in range(0x200B, 0x2010)]
    + [chr(c) for c in range(0x2060, 0x2065)]
    + ["\ufeff", "\u00ad", "\u061c", "\u180e"]
    + [chr(c) for c in range(0x20) if chr(c) not in "\t\n"]
    + [chr(c) for c in range(0x7F, 0xA0)]
)
LIMIT = 4096


def poisoned(text: str = "Where to go.") -> str:
    return text + "".join(HIDDEN) + TAGS


def texts(value: Any) -> Iterator[tuple[str, str]]:
    """Every (key, text) pair under a ``description`` or ``title`` key in ``value``."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, item in node.items():
                if key in ("description", "title") and isinstance(item, str):
                    yield key, item
                else:
                    stack.append(item)
        elif isinstance(node, list):
            stack.extend(node)


def assert_clean(declared: Any) -> None:
    found = list(texts(declared))
    assert found, "nothing to check"
    for key, text in found:
        assert not INVISIBLE & set(text), (key, text[:80])
        assert len(text.encode()) <= LIMIT, (key, len(text))


def reproduction() -> dict[str, Any]:
    """The issue's schema: hidden text and a 20 KB description, nested."""
    return {
        "type": "object",
        "title": poisoned("Trip"),
        "properties": {
            "city": {"type": "string", "description": poisoned()},
            "notes": {"type": "string", "description": "x" * 20_000},
            "stops": {
                "type": "array",
                "items": {
                    "type": "object",
                    "title": poisoned("Stop"),
                    "properties": {"name": {"type": "string", "description": poisoned()}},
                    "required": ["name"],
                    "additionalProperties": False,
                },
            },
            "mode": {
                "anyOf": [
                    {"type": "string", "enum": ["car", "train"], "description": poisoned()},
                    {"type": "null", "description": poisoned()},
                ],
                "description": poisoned(),
            },
            "home": {"$ref": "#/$defs/Address"},
        },
        "required": ["city"],
        "$defs": {
            "Address": {
                "type": "object",
                "description": poisoned("An address."),
                "properties": {"street": {"type": "string", "title": poisoned()}},
                "required": ["street"],
                "additionalProperties": False,
            }
        },
    }


@pytest.mark.parametrize(("provider", "options"), DECLARATIONS, ids=DECLARATION_IDS)
def test_nested_descriptions_reach_no_provider_with_hidden_text(
    provider: str, options: dict[str, Any]
) -> None:
    schema = reproduction()
    before = copy.deepcopy(schema)
    trip = Tool(name="trip", description=poisoned("Plan a trip."), input_schema=schema)
    listing = toolwire.tools([trip], provider, **options)
    assert_clean(listing.tools)
    assert schema == before  # the tool's own schema is never changed


@pytest.mark.parametrize(("provider", "options"), DECLARATIONS, ids=DECLARATION_IDS)
def test_a_long_description_is_capped_with_a_visible_mark(
    provider: str, options: dict[str, Any]
) -> None:
    schema = {
        "type": "object",
        "properties": {"notes": {"type": "string", "description": "é" * 20_000}},
    }
    listing = toolwire.tools([Tool(name="t", input_schema=schema)], provider, **options)
    (text,) = [t for key, t in texts(listing.tools) if key == "description" and "é" in t]
    assert len(text.encode()) <= LIMIT
    assert text.endswith("[truncated]")


def test_names_and_values_are_never_cleaned() -> None:
    # A property may be called "description"; an enum value is data the model must send back.
    schema = {
        "type": "object",
        "properties": {
            "description": {"type": "string", "description": "The description\u200b."},
            "title": {"type": "string", "enum": ["a\u200bb", "c"]},
            "odd\u200bname": {"type": "string", "default": "d\u202ef"},
        },
    }
    cleaned, notes = for_declaration(schema)
    props = cleaned["properties"]
    assert set(props) == {"description", "title", "odd\u200bname"}
    assert props["description"] == {"type": "string", "description": "The description."}
    assert props["title"]["enum"] == ["a\u200bb", "c"]
    assert props["odd\u200bname"]["default"] == "d\u202ef"
    assert [n.path for n in notes] == ["#/properties/description"]


def test_a_clean_schema_is_the_very_same_object() -> None:
    schema = {
        "type": "object",
        "properties": {"q": {"type": "string", "description": "Plain text."}},
        "required": ["q"],
    }
    cleaned, notes = for_declaration(schema)
    assert cleaned is schema
    assert notes == []
    (entry,) = toolwire.tools([Tool(name="t", input_schema=schema)], "anthropic").tools
    assert entry["input_schema"] == schema
    assert entry["input_schema"]["properties"] is schema["properties"]  # shared, not copied


def test_only_the_nodes_on_the_way_to_a_change_are_copied() -> None:
    clean_branch = {"type": "object", "properties": {"a": {"type": "string"}}}
    schema = {
        "type": "object",
        "properties": {"clean": clean_branch, "dirty": {"type": "string", "title": "T\u202e"}},
    }
    cleaned, _ = for_declaration(schema)
    assert cleaned is not schema
    assert cleaned["properties"]["clean"] is clean_branch
    assert cleaned["properties"]["dirty"] == {"type": "string", "title": "T"}
    assert schema["properties"]["dirty"]["title"] == "T\u202e"


def test_declarations_are_cached_per_toolset() -> None:
    toolset = ToolSet([Tool(name="t", input_schema=reproduction())])
    first = toolwire.tools(toolset, "anthropic").tools
    assert toolwire.tools(toolset, "anthropic").tools == first
    assert toolset.cached(("anthropic", None), list) is not None


_TEXT = st.lists(
    st.sampled_from([*"abc .", *HIDDEN, "\U000e0041", "\u2067", "\u200d", "\x07", "\r\n"]),
    min_size=1,
    max_size=30,
).map("".join)
_SCHEMA = st.recursive(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["string", "integer", "boolean"])},
        optional={"description": _TEXT, "title": _TEXT},
    ),
    lambda inner: (
        st.fixed_dictionaries(
            {
                "type": st.just("object"),
                "properties": st.dictionaries(
                    st.sampled_from(["a", "b", "description"]), inner, min_size=1, max_size=3
                ),
            },
            optional={"description": _TEXT, "title": _TEXT},
        )
        | st.fixed_dictionaries(
            {"type": st.just("array"), "items": inner}, optional={"description": _TEXT}
        )
        | st.fixed_dictionaries(
            {"anyOf": st.lists(inner, min_size=1, max_size=3)}, optional={"description": _TEXT}
        )
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(_SCHEMA, _TEXT)
def test_hidden_text_at_any_depth_reaches_no_provider(node: dict[str, Any], text: str) -> None:
    schema = {"type": "object", "description": text, "properties": {"x": node}}
    before = copy.deepcopy(schema)
    toolset = ToolSet([Tool(name="t", input_schema=schema)])
    for provider, options in DECLARATIONS:
        listing = toolwire.tools(toolset, provider, **options)
        for key, found in texts(listing.tools):
            assert not INVISIBLE & set(found), (provider, options, key, found)
    assert schema == before
    assert json.dumps(schema) == json.dumps(before)


@pytest.mark.parametrize(("provider", "options"), DECLARATIONS, ids=DECLARATION_IDS)
def test_lone_surrogates_in_names_and_descriptions_never_reach_a_request(
    provider: str, options: dict[str, Any]
) -> None:
    # From json.loads of "\ud800" escapes: short and long texts, a long name.
    subject = Tool(
        name="n" * 70 + "\ud800",
        description="x" * 1100 + "\ud800 and \udfff short",
        input_schema={
            "type": "object",
            "title": "t\ud800",
            "properties": {"a": {"type": "string", "description": "hi\udc00"}},
        },
    )
    listing = toolwire.tools([subject], provider, **options)
    sent = json.dumps(listing.tools, ensure_ascii=False)
    sent.encode("utf-8")  # what an HTTP client does: it would raise on a lone surrogate
    assert "\\ud800" not in json.dumps(listing.tools)
    compat.check([subject])
