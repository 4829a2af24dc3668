"""Attacks on OpenAI custom tools (free text checked against a grammar before every call) and
on Anthropic strict tool use (strict schemas within a request's budgets, the nulls strict
mode made the model send stripped before the call).

Each test is an invariant: refused text never reaches a handler, a grammar check is bounded,
a strict schema meets the rules and budgets, and only the nulls strict mode made are stripped."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from typing import Any

import anyio
import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

import toolwire
from toolwire import Grammar, Policy, RejectedCall, Tool, ToolCall, ToolSet
from toolwire.providers import get_provider, openai_chat, openai_responses
from toolwire.schema.anthropic import to_anthropic_schema, to_anthropic_strict_schema
from toolwire.schema.checks import anthropic_strict_budget_violations, anthropic_violations

responses_types = pytest.importorskip("openai.types.responses")
chat_types = pytest.importorskip("openai.types.chat")
anthropic_types = pytest.importorskip("anthropic.types")
pytest.importorskip("llguidance")

RESPONSES_INPUT_ITEM = pydantic.TypeAdapter(responses_types.ResponseInputItemParam)
ANTHROPIC_TOOLS = pydantic.TypeAdapter(list[anthropic_types.ToolParam])
ANTHROPIC = get_provider("anthropic")
PROVIDERS = ["openai-chat", "openai-responses"]

RAN: list[Any] = []


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


DIGITS = Grammar.regex(r"[0-9]{1,6}")


@toolwire.tool(custom=DIGITS)
def lookup(number: str) -> str:
    """Looks up an order by number."""
    RAN.append(number)
    return f"order {number}"


def run(listing: Any, response: Any, **options: Any) -> toolwire.Outcome:
    return anyio.run(lambda: toolwire.execute_tool_calls(listing, response, **options))


def answer_id(answer: dict[str, Any]) -> str:
    return answer.get("call_id") or answer["tool_call_id"]


def within(seconds: float, fn: Any) -> Any:
    """``fn()`` run in a thread; fails when it has not returned after ``seconds`` (a bound on
    hanging in Python code, not a timing assertion; native code holding the GIL is bounded
    by a child process instead, see the Lark test)."""
    box: dict[str, Any] = {}

    def go() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s"
    if "error" in box:
        raise box["error"]
    return box["value"]


# -- custom tools: text the grammar refuses never reaches the handler -----------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_approver_editing_the_text_into_something_refused_does_not_run_it(
    provider: str,
) -> None:
    module = get_provider(provider)
    response = module.response_for([("c1", "lookup", "42")])

    def approve(request: toolwire.ApprovalRequest) -> toolwire.Decision:
        return toolwire.allow(arguments={"number": "42; DROP TABLE orders"})

    outcome = run(
        toolwire.tools([lookup], provider),
        response,
        policy=Policy.of(ask=["lookup"]),
        approver=approve,
    )
    assert RAN == []
    [call] = outcome.calls
    assert call.result.error_kind == "invalid_arguments"
    assert "approver edited" in call.result.text
    assert [answer_id(a) for a in outcome.results] == ["c1"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_hook_rewriting_the_text_into_something_refused_does_not_run_it(provider: str) -> None:
    module = get_provider(provider)
    response = module.response_for([("c1", "lookup", "42")])
    outcome = run(
        toolwire.tools([lookup], provider),
        response,
        before_call=[lambda context: {"number": "rm -rf /"}],
    )
    assert RAN == []
    assert outcome.calls[0].result.error_kind == "invalid_arguments"


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    "arguments",
    [{"number": "x"}, {"number": 42}, {"number": None}, {}, {"number": "1", "extra": "2"}],
)
def test_a_function_call_naming_a_custom_tool_is_checked_like_its_text(
    provider: str, arguments: dict[str, Any]
) -> None:
    module = get_provider(provider)
    outcome = run(
        toolwire.tools([lookup], provider), module.response_for([("c1", "lookup", arguments)])
    )
    assert RAN == []
    assert outcome.calls[0].result.error_kind == "invalid_arguments"
    assert [answer_id(a) for a in outcome.results] == ["c1"]


@pytest.mark.parametrize("value", [None, 42, ["1"], {"number": "1"}, True, 1.5])
def test_a_chat_custom_call_whose_input_is_not_text_is_refused(value: Any) -> None:
    listing = toolwire.tools([lookup], "openai-chat")
    completion = {
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": "c1", "type": "custom", "custom": {"name": "lookup", "input": value}}
                    ],
                },
            }
        ]
    }
    outcome = run(listing, completion)
    assert RAN == []
    [call] = outcome.calls
    assert call.result.is_error
    assert [answer_id(a) for a in outcome.results] == ["c1"]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("text", ["\ud800", "12\udfff", "1\x00", "", "1" * 7, "١٢٣"])
def test_lone_surrogates_nuls_and_near_misses_are_refused(provider: str, text: str) -> None:
    module = get_provider(provider)
    outcome = run(toolwire.tools([lookup], provider), module.response_for([("c1", "lookup", text)]))
    assert RAN == []
    assert outcome.calls[0].result.error_kind == "invalid_arguments"


def test_a_lone_surrogate_is_refused_even_by_a_free_text_grammar() -> None:
    assert Grammar.regex(r"(?s).*").problem("a\ud800") is not None
    assert Grammar.lark("start: /(.|\\n)*/").problem("a\ud800") is not None


def test_huge_text_is_answered_by_a_catastrophic_regex_grammar() -> None:
    grammar = Grammar.regex(r"(a|aa)*(a*)*b")
    text = "a" * 1_000_000
    assert within(30, lambda: grammar.problem(text)) is not None
    assert within(30, lambda: grammar.problem(text + "b")) is None


def test_a_regex_too_big_for_the_engine_fails_where_it_is_written() -> None:
    with pytest.raises(toolwire.ConfigurationError):
        Grammar.regex(r"(\w{100}){100}{100}")


def test_a_streamed_responses_custom_call_with_refused_text_is_not_run() -> None:
    accumulator = openai_responses.Accumulator()
    item = {
        "type": "custom_tool_call",
        "id": "ctc_1",
        "call_id": "c1",
        "name": "lookup",
        "input": "",
    }
    events = [
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": item,
            "sequence_number": 0,
        },
        *(
            {
                "type": "response.custom_tool_call_input.delta",
                "output_index": 0,
                "item_id": "ctc_1",
                "delta": piece,
                "sequence_number": i + 1,
            }
            for i, piece in enumerate(["12", "3; rm", " -rf"])
        ),
    ]
    for event in events:
        accumulator.add(event)
    listing = toolwire.tools([lookup], "openai-responses")
    response = accumulator.response()
    [call] = openai_responses.parse(response, listing.declaration)
    assert isinstance(call, ToolCall)
    assert call.arguments == {"number": "123; rm -rf"}
    outcome = run(listing, response)
    assert RAN == []
    assert outcome.results[0]["type"] == "custom_tool_call_output"
    RESPONSES_INPUT_ITEM.validate_python(outcome.results[0])


def test_a_streamed_chat_custom_call_whose_input_pieces_are_not_text_is_answered() -> None:
    accumulator = openai_chat.Accumulator()
    pieces = [
        {"index": 0, "id": "c1", "type": "custom", "custom": {"name": "lookup", "input": "1"}},
        {"index": 0, "custom": {"input": 2}},
    ]
    try:
        for piece in pieces:
            accumulator.add({"choices": [{"index": 0, "delta": {"tool_calls": [piece]}}]})
        response = accumulator.response()
    except toolwire.ToolwireError:
        return  # refused with our own error: fine
    outcome = run(toolwire.tools([lookup], "openai-chat"), response)
    assert RAN in ([], ["12"])  # "12" matches the grammar; anything else must not run
    assert len(outcome.results) == 1


# -- shape detection ------------------------------------------------------------------------------


def test_an_empty_custom_beside_a_function_is_still_checked_against_the_grammar() -> None:
    completion = {
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "lookup", "arguments": '{"number": "x; y"}'},
                            "custom": {},
                        },
                        {
                            "id": "c2",
                            "type": "custom",
                            "custom": {"name": "lookup", "input": "x; y"},
                            "function": {"name": "lookup", "arguments": '{"number": "7"}'},
                        },
                    ],
                },
            }
        ]
    }
    outcome = run(toolwire.tools([lookup], "openai-chat"), completion)
    assert RAN == []
    assert [c.result.error_kind for c in outcome.calls] == ["invalid_arguments"] * 2
    assert [answer_id(a) for a in outcome.results] == ["c1", "c2"]


def test_a_custom_tool_call_item_without_a_type_name_or_id_is_answered_once() -> None:
    listing = toolwire.tools([lookup], "openai-responses")
    items = [
        {"type": "custom_tool_call", "call_id": "c1", "input": "1"},
        {"type": "custom_tool_call", "call_id": "c2", "name": "lookup"},
        {"type": "custom_tool_call", "call_id": "c3", "name": "lookup", "input": "3"},
    ]
    parsed = openai_responses.parse(items, listing.declaration)
    assert [type(p) for p in parsed] == [RejectedCall, RejectedCall, ToolCall]
    outcome = run(listing, {"output": items})
    assert RAN == ["3"]
    assert [answer_id(a) for a in outcome.results] == ["c1", "c2", "c3"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_two_custom_calls_sharing_an_id_get_their_own_answers(provider: str) -> None:
    module = get_provider(provider)
    response = module.response_for([("dup", "lookup", "1"), ("dup", "lookup", "bad")])
    outcome = run(toolwire.tools([lookup], provider), response)
    assert len(outcome.results) == 2
    assert RAN in ([], ["1"])  # never "bad", never twice
    texts = [c.result.text for c in outcome.calls]
    assert "order bad" not in texts
    assert texts.count("order 1") <= 1


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet="0123456789ab; \x00\ud800", max_size=10))
def test_the_handler_only_ever_sees_text_the_grammar_accepts(text: str) -> None:
    RAN.clear()
    for provider in PROVIDERS:
        module = get_provider(provider)
        run(toolwire.tools([lookup], provider), module.response_for([("c1", "lookup", text)]))
    for seen in RAN:
        assert re.fullmatch(r"[0-9]{1,6}", seen)


# -- grammar checks are bounded -------------------------------------------------------------------


@pytest.mark.parametrize(
    "definition",
    [
        'start: x*\nx: "a"',
        "start: /(a|aa)*(a*)*b?/",
        "start: /(a|b)*a(a|b){200}/",
    ],
)
def test_unambiguous_lark_grammars_answer_huge_text(definition: str) -> None:
    grammar = Grammar.lark(definition)
    within(30, lambda: grammar.problem("a" * 200_000))


@pytest.mark.parametrize(
    ("definition", "text"),
    [('start: s\ns: s s | "a"', "a" * 1200), ('start: e\ne: e "+" e | "1"', "1+" * 1200 + "1")],
)
def test_an_ambiguous_lark_grammar_is_answered_within_a_bound(definition: str, text: str) -> None:
    # LLGuidance holds the GIL while it parses, so a thread's join timeout cannot bound it:
    # the check runs in a child process, killed after 30 s.
    script = (
        "import sys\nfrom toolwire import Grammar\n"
        "print(Grammar.lark(sys.argv[1]).problem(sys.argv[2]))"
    )
    try:
        subprocess.run(
            [sys.executable, "-c", script, definition, text],
            check=True,
            capture_output=True,
            timeout=30,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the grammar check was still running after 30 s")


# -- Anthropic strict: null paths -----------------------------------------------------------------


def optional_tool(name: str, optional: int) -> Tool:
    return Tool(
        name=name,
        description="Optional strings.",
        input_schema={
            "type": "object",
            "properties": {f"o{i}": {"type": "string"} for i in range(optional)},
        },
        handler=lambda **kwargs: json.dumps(kwargs, sort_keys=True),
    )


def recording(name: str, schema: dict[str, Any]) -> Tool:
    def handler(**kwargs: Any) -> str:
        RAN.append(kwargs)
        return json.dumps(kwargs, sort_keys=True)

    return Tool(
        name=name, description="Records its arguments.", input_schema=schema, handler=handler
    )


def nullable_listing(tool: Tool) -> toolwire.Listing:
    """``tool`` declared strict after a tool spending all 24 optional parameters, so its
    optional arguments are made required and nullable."""
    listing = toolwire.tools(ToolSet([optional_tool("wide", 24), tool]), "anthropic", strict=True)
    assert [t.get("strict") for t in listing.tools] == [True, True]
    ANTHROPIC_TOOLS.validate_python(listing.tools)
    assert anthropic_strict_budget_violations(listing.tools) == []
    return listing


def test_a_real_null_the_schema_allows_is_kept_when_nothing_was_made_nullable() -> None:
    schema = {
        "type": "object",
        "properties": {"q": {"type": "string"}, "n": {"type": ["string", "null"]}},
        "required": ["q"],
    }
    listing = nullable_listing(recording("t", schema))
    assert listing.null_paths == {}
    run(listing, ANTHROPIC.response_for([("u1", "t", {"q": "a", "n": None})]))
    assert RAN == [{"q": "a", "n": None}]


def test_only_nulls_are_stripped_never_falsy_values() -> None:
    schema = {
        "type": "object",
        "properties": {
            "s": {"type": "string"},
            "i": {"type": "integer"},
            "b": {"type": "boolean"},
            "a": {"type": "array", "items": {"type": "string"}},
        },
    }
    listing = nullable_listing(recording("t", schema))
    assert set(listing.null_paths["t"]) == {("s",), ("i",), ("b",), ("a",)}
    sent = {"s": "", "i": 0, "b": False, "a": []}
    run(listing, ANTHROPIC.response_for([("u1", "t", sent)]))
    assert [sent] == RAN


SHARED_PATH = {
    "type": "object",
    "properties": {
        "v": {
            "anyOf": [
                {
                    "type": "object",
                    "properties": {"kind": {"const": "a"}, "a": {"type": "string"}},
                    "required": ["kind"],
                },
                {
                    "type": "object",
                    "properties": {"kind": {"const": "b"}, "a": {"type": ["string", "null"]}},
                    "required": ["kind", "a"],
                },
            ]
        }
    },
    "required": ["v"],
}


def test_a_null_another_anyof_branch_requires_is_not_stripped() -> None:
    listing = nullable_listing(recording("pick", SHARED_PATH))
    sent = {"v": {"kind": "b", "a": None}}
    assert Draft202012Validator(SHARED_PATH).is_valid(sent)
    outcome = run(listing, ANTHROPIC.response_for([("u1", "pick", sent)]))
    assert outcome.calls[0].result.error_kind is None
    assert [sent] == RAN


def test_the_shared_path_null_is_kept_without_strict() -> None:
    listing = toolwire.tools(ToolSet([recording("pick", SHARED_PATH)]), "anthropic")
    sent = {"v": {"kind": "b", "a": None}}
    run(listing, ANTHROPIC.response_for([("u1", "pick", sent)]))
    assert [sent] == RAN


def test_a_property_named_star_has_its_strict_null_stripped() -> None:
    schema = {"type": "object", "properties": {"*": {"type": "string"}}}
    listing = nullable_listing(recording("star", schema))
    assert listing.null_paths == {"star": (("*",),)}
    outcome = run(listing, ANTHROPIC.response_for([("u1", "star", {"*": None})]))
    assert outcome.calls[0].result.error_kind is None
    assert RAN == [{}]


# -- Anthropic strict: what is declared is what the API takes -------------------------------------


@pytest.mark.parametrize("pattern", ["(", "[z-a]", "a\\", "a{2,1}"])
def test_a_pattern_that_is_no_regular_expression_is_not_declared_strict(pattern: str) -> None:
    with pytest.raises(re.error):
        re.compile(pattern)
    schema = {
        "type": "object",
        "properties": {"x": {"type": "string", "pattern": pattern}},
        "required": ["x"],
    }
    tool = Tool(name="t", description="d", input_schema=schema, handler=lambda **kw: "ok")
    [declared] = toolwire.tools([tool], "anthropic", strict=True).tools
    if declared.get("strict"):
        assert "pattern" not in declared["input_schema"]["properties"]["x"]
    assert anthropic_violations({**schema, "additionalProperties": False}, strict=True)


def hostile_schemas() -> dict[str, dict[str, Any]]:
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(3000):
        deep = {"type": "object", "properties": {"a": deep}, "required": ["a"]}
    defs: dict[str, Any] = {
        f"d{i}": {
            "type": "object",
            "properties": {"l": {"$ref": f"#/$defs/d{i + 1}"}, "r": {"$ref": f"#/$defs/d{i + 1}"}},
            "required": ["l", "r"],
        }
        for i in range(40)
    }
    defs["d40"] = {"type": "string"}
    return {
        "deep": {"type": "object", "properties": {"x": deep}},
        "recursive": {
            "type": "object",
            "properties": {"x": {"$ref": "#/$defs/n"}},
            "$defs": {"n": {"type": "object", "properties": {"c": {"$ref": "#/$defs/n"}}}},
        },
        "mutual": {
            "type": "object",
            "properties": {"x": {"$ref": "#/$defs/a"}},
            "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
        },
        "exponential": {
            "type": "object",
            "properties": {"x": {"$ref": "#/$defs/d0"}},
            "$defs": defs,
        },
        "huge enum": {
            "type": "object",
            "properties": {"x": {"enum": [str(i) for i in range(100_000)]}},
        },
        "huge pattern": {
            "type": "object",
            "properties": {"x": {"type": "string", "pattern": "(a|aa)*" * 5000}},
        },
        "wide anyOf": {
            "type": "object",
            "properties": {
                "x": {
                    "anyOf": [
                        {
                            "type": "object",
                            "properties": {f"k{i}": {"type": "string"}},
                            "required": [f"k{i}"],
                        }
                        for i in range(3000)
                    ]
                }
            },
        },
    }


@pytest.mark.parametrize("name", list(hostile_schemas()))
def test_hostile_schemas_are_made_strict_or_refused_never_crash_or_hang(name: str) -> None:
    schema = hostile_schemas()[name]

    def lower() -> Any:
        try:
            plain, _ = to_anthropic_schema(schema)
            return to_anthropic_strict_schema(plain)
        except toolwire.SchemaConversionError as exc:
            return exc

    result = within(30, lower)
    if not isinstance(result, toolwire.SchemaConversionError):
        assert anthropic_violations(result.schema, strict=True) == []
        Draft202012Validator.check_schema(result.schema)
    tool = Tool(name="t", description="d", input_schema=schema, handler=lambda **kw: "ok")
    try:
        listing = within(30, lambda: toolwire.tools([tool], "anthropic", strict=True))
    except toolwire.SchemaConversionError:
        return
    assert anthropic_strict_budget_violations(listing.tools) == []


# -- Anthropic strict: the budgets ----------------------------------------------------------------


def union_tool(name: str, unions: int, optional: int = 0) -> Tool:
    properties: dict[str, Any] = {f"u{i}": {"type": ["string", "integer"]} for i in range(unions)}
    properties.update({f"o{i}": {"type": "string"} for i in range(optional)})
    return Tool(
        name=name,
        description="d",
        input_schema={
            "type": "object",
            "properties": properties,
            "required": [f"u{i}" for i in range(unions)],
        },
        handler=lambda **kw: "ok",
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.integers(0, 9), st.integers(0, 12)),
        min_size=1,
        max_size=26,
    )
)
def test_whatever_the_toolset_the_declared_request_stays_within_the_budgets(
    shapes: list[tuple[int, int]],
) -> None:
    tools = [union_tool(f"t{i}", unions, optional) for i, (unions, optional) in enumerate(shapes)]
    toolset = ToolSet(tools)
    listing = toolwire.tools(toolset, "anthropic", strict=True)
    assert anthropic_strict_budget_violations(listing.tools) == []
    ANTHROPIC_TOOLS.validate_python(listing.tools)
    reasons = listing.declaration.not_strict
    for declared in listing.tools:  # each tool sent without strict is told why
        assert (declared.get("strict") is True) != (declared["name"] in reasons)


def test_keyword_named_properties_are_counted_as_parameters() -> None:
    names = ["anyOf", "type", "items", "properties", "required", "$ref", "enum"]
    schema = {"type": "object", "properties": {n: {"type": ["string", "null"]} for n in names}}
    tools = [
        Tool(name=f"k{i}", description="d", input_schema=schema, handler=lambda **kw: "ok")
        for i in range(5)
    ]
    listing = toolwire.tools(tools, "anthropic", strict=True)
    assert anthropic_strict_budget_violations(listing.tools) == []
