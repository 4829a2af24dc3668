"""OpenAI custom tools: free-text input, optionally constrained by a Lark or regex grammar,
declared natively to both OpenAI APIs and as a one-string-parameter function elsewhere, the
grammar checked before every call."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import anyio
import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolwire
from corpus import load_corpus
from toolwire import (
    ConfigurationError,
    Grammar,
    MemoryStore,
    MissingDependency,
    RejectedCall,
    Tool,
    ToolCall,
    ToolSet,
    tool,
)
from toolwire.compat import check
from toolwire.providers import anthropic, gemini, get_provider, openai_chat, openai_responses
from toolwire.tool import tool_from_definition

responses_types = pytest.importorskip("openai.types.responses")
chat_types = pytest.importorskip("openai.types.chat")
llguidance = pytest.importorskip("llguidance")

RESPONSES_TOOLS = pydantic.TypeAdapter(list[responses_types.ToolParam])
RESPONSES_INPUT = pydantic.TypeAdapter(responses_types.ResponseInputParam)
RESPONSES_INPUT_ITEM = pydantic.TypeAdapter(responses_types.ResponseInputItemParam)
RESPONSES_EVENT = pydantic.TypeAdapter(responses_types.ResponseStreamEvent)
CHAT_TOOLS = pydantic.TypeAdapter(list[chat_types.ChatCompletionToolUnionParam])
CHAT_MESSAGES = pydantic.TypeAdapter(list[chat_types.ChatCompletionMessageParam])

RECORDS = load_corpus("openai_custom_tools")
SQL_GRAMMAR = Grammar(**{k: v for k, v in RECORDS[0]["grammar"].items() if k != "type"})
SQL = RECORDS[0]["expected_calls"][0]["input"]
RAN: list[str] = []


@tool(custom=SQL_GRAMMAR)
def run_sql(query: str) -> str:
    """Runs a read-only SQL query.

    Args:
        query: one SELECT statement.
    """
    RAN.append(query)
    return f"5 rows for {query}"


@tool(custom=True)
def run_python(code: str) -> str:
    """Runs Python code in a sandbox."""
    RAN.append(code)
    return "ran"


LARK = Grammar.lark('start: expr\nexpr: NUMBER (("+" | "-") NUMBER)*\nNUMBER: /[0-9]+/')


@tool(custom=LARK)
def calculate(expression: str) -> str:
    """Adds and subtracts whole numbers."""
    RAN.append(expression)
    return "42"


def search(city: str) -> str:
    """Looks up the weather."""
    return f"sunny in {city}"


@pytest.fixture(autouse=True)
def _forget_runs() -> None:
    RAN.clear()


def run(source: Any, *args: Any, **options: Any) -> toolwire.Outcome:
    return anyio.run(
        lambda: toolwire.execute_tool_calls(source, *args, store=MemoryStore(), **options)
    )


# -- grammars --------------------------------------------------------------------------------------


def test_a_regex_grammar_matches_the_whole_text_in_rust_syntax() -> None:
    digits = Grammar.regex(r"\d+")
    assert digits.matches("123")
    assert digits.matches("١٢٣")  # Rust's \d is Unicode, as OpenAI's engine reads it
    assert not digits.matches("12a")
    assert not digits.matches("a12")
    assert not digits.matches("12\n")  # no trailing newline slips through, as with Python's $
    assert Grammar.regex("[[:alpha:]]+").matches("abc")  # the crate's own syntax
    assert Grammar.regex("").matches("")
    assert not Grammar.regex("").matches("x")


def test_a_regex_grammar_cannot_escape_its_full_match() -> None:
    # A definition that only compiles once wrapped is refused, never read as another pattern.
    with pytest.raises(ConfigurationError):
        Grammar.regex("a)|(b")
    # A (?x) comment at the end does not swallow the anchor.
    commented = Grammar.regex("(?x) a b # two letters")
    assert commented.matches("ab")
    assert not commented.matches("abc")


@pytest.mark.parametrize(
    "definition",
    [r"(?=a)b", r"(a)\1", "(", "a{2,1}", r"\w{100000}"],
    ids=["look-around", "backreference", "unclosed", "bad-repeat", "too-large"],
)
def test_a_regex_grammar_that_does_not_compile_fails_where_it_is_written(definition: str) -> None:
    with pytest.raises(ConfigurationError, match="regex grammar"):
        Grammar.regex(definition)


def test_a_lark_grammar_is_read_as_openai_reads_it() -> None:
    assert LARK.matches("1+22-3")
    assert not LARK.matches("1+")
    assert not LARK.matches("1*2")
    # LLGuidance's lexer takes the longest lexeme, as OpenAI samples it.
    assert Grammar.lark("start: A\nA: /a|ab/").matches("ab")
    assert Grammar.lark("%import common.NUMBER\nstart: NUMBER").matches("12")
    # A definition that looks like JSON is still Lark (and here not valid Lark).
    with pytest.raises(ConfigurationError, match="Lark grammar"):
        Grammar.lark('{"grammars": []}')


@pytest.mark.parametrize(
    "definition",
    ["junk !!", 'start: "a"\nstart: "b"', "start: A\nA: /(?=a)b/", "start: missing"],
    ids=["syntax", "rule-twice", "look-around", "undefined-rule"],
)
def test_a_lark_grammar_that_does_not_compile_fails_where_it_is_written(definition: str) -> None:
    with pytest.raises(ConfigurationError, match="Lark grammar does not compile"):
        Grammar.lark(definition)


def test_an_empty_start_rule_is_the_grammar_of_the_empty_text() -> None:
    assert Grammar.lark("start: ").matches("")
    assert not Grammar.lark("start: ").matches("a")


def test_refusals_say_where_the_text_goes_wrong() -> None:
    assert LARK.problem("1+2") is None
    assert LARK.problem("1+x") == (
        "the text does not match the tool's Lark grammar: it fails at character 2 ('x')"
    )
    assert LARK.problem("1+") == "the text does not match the tool's Lark grammar: it ends early"
    assert LARK.problem("é+x") is not None
    assert Grammar.regex("a+").problem("b") == (
        "the text does not match the tool's regular expression 'a+'"
    )
    assert Grammar.regex("a+").problem("a\ud800") == (
        "the text is not valid Unicode (it holds a lone surrogate)"
    )


@pytest.mark.parametrize(
    ("grammar", "valid"),
    [
        (Grammar.regex("(a+)+$"), "aaa"),
        (Grammar.regex("(a|aa)*c"), "aaac"),
        (Grammar.lark("start: /(a+)+b/"), "aaab"),
    ],
    ids=["nested", "overlapping", "lark-terminal"],
)
def test_catastrophic_backtracking_patterns_are_checked_in_linear_time(
    grammar: Grammar, valid: str
) -> None:
    # A backtracking engine would not finish these in the lifetime of the suite.
    assert grammar.problem("a" * 200_000 + "!") is not None
    assert grammar.matches(valid)


def test_a_lark_grammar_without_llguidance_names_the_extra() -> None:
    script = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "llguidance":
            raise ImportError(f"blocked {name}")
        return None
sys.meta_path.insert(0, Block())
import toolwire
from toolwire import Grammar, MissingDependency, tool
assert Grammar.regex("a+").matches("aa")  # regex grammars need no extra
try:
    @tool(custom=Grammar.lark('start: "a"'))
    def f(text: str) -> str:
        "Doc."
        return text
except MissingDependency as exc:
    assert (exc.package, exc.extra) == ("llguidance", "lark"), exc
    print("ok")
"""
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
    assert issubclass(MissingDependency, ImportError)


GRAMMARS = [
    SQL_GRAMMAR,
    LARK,
    Grammar.regex(r"[a-z]+(-[a-z]+)*"),
    Grammar.regex(r"(?i)select \w+ from \w+;?"),
    Grammar.lark(
        'start: item ("," item)*\nitem: WORD | NUMBER\n%import common.WORD\n%import common.NUMBER'
    ),
]


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(grammar=st.sampled_from(GRAMMARS), text=st.text(max_size=80))
def test_random_text_is_only_ever_accepted_or_refused(grammar: Grammar, text: str) -> None:
    problem = grammar.problem(text)
    assert problem is None or (isinstance(problem, str) and problem)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(definition=st.text(alphabet="ab()|*+?[]{}^$.\\-0123,xz#:", max_size=12))
def test_random_regex_definitions_compile_or_fail_with_a_configuration_error(
    definition: str,
) -> None:
    try:
        grammar = Grammar.regex(definition)
    except ConfigurationError:
        return
    for text in ("", "a", "ab", "zzz", "a(b)", "\n"):
        problem = grammar.problem(text)
        assert problem is None or isinstance(problem, str)


PARITY_PATTERNS = [
    "(a+)+$",
    "^abc$",
    "a|ab",
    r"\d{2,3}",
    r"\w+",
    "[[:alpha:]]+",
    ".",
    "(?s).",
    "a*?",
    r"\s",
    "(?i)AbC",
    "[^b]+",
]


def _llguidance_verdict(definition: str, text: str) -> bool:
    class Bytes:
        eos_token_id = 256
        bos_token_id = None
        tokens = (*(bytes([b]) for b in range(256)), b"<|end|>")
        special_token_ids = (256,)

        def __call__(self, data: bytes) -> list[int]:
            return list(data)

    tokenizer = llguidance.LLTokenizer(llguidance.TokenizerWrapper(Bytes()), slices=[])
    matcher = llguidance.LLMatcher(
        tokenizer, llguidance.grammar_from("regex", definition), log_level=0
    )
    data = text.encode()
    return matcher.try_consume_tokens(list(data)) == len(data) and matcher.is_accepting()


@settings(max_examples=150, deadline=None)
@given(
    definition=st.sampled_from(PARITY_PATTERNS),
    text=st.text(alphabet="abcABC12٣ \n\t.é", max_size=6),
)
def test_regex_verdicts_agree_with_the_engine_openai_samples_with(
    definition: str, text: str
) -> None:
    assert Grammar.regex(definition).matches(text) == _llguidance_verdict(definition, text)


# -- the definition --------------------------------------------------------------------------------


def test_a_custom_function_tool_takes_its_one_string_parameter() -> None:
    assert run_sql.kind == "custom"
    assert run_sql.grammar == SQL_GRAMMAR
    assert run_sql.text_argument == "query"
    assert run_sql.input_schema == {
        "type": "object",
        "properties": {
            "query": {"type": "string", "title": "Query", "description": "one SELECT statement."}
        },
        "required": ["query"],
        "additionalProperties": False,
    }
    assert run_python.grammar is None
    assert run_sql.validate_arguments({"query": SQL}) == {"query": SQL}
    with pytest.raises(toolwire.InvalidArguments) as caught:
        run_sql.validate_arguments({"query": "DROP TABLE orders;"})
    assert caught.value.tool == "run_sql"
    [(path, message)] = caught.value.errors
    assert path == "$.query"
    assert message.startswith("the text does not match the tool's regular expression")


def test_a_custom_tool_needs_exactly_one_required_string_parameter() -> None:
    def two(a: str, b: str) -> str:
        """Doc."""
        return a

    def optional(a: str = "x") -> str:
        """Doc."""
        return a

    def number(a: int) -> str:
        """Doc."""
        return str(a)

    def nothing() -> str:
        """Doc."""
        return ""

    def maybe(a: str | None) -> str:
        """Doc."""
        return a or ""

    for function in (two, optional, number, nothing, maybe):
        with pytest.raises(ConfigurationError, match="exactly one required str parameter"):
            tool(custom=True)(function)


def test_a_custom_tool_may_also_ask_for_the_call_context() -> None:
    def lookup(text: str, context: toolwire.CallContext) -> str:
        """Doc."""
        return f"{context.call_id}: {text}"

    made = tool(custom=True)(lookup)
    assert made.text_argument == "text"
    assert made.context_parameter == "context"


def test_a_custom_tool_made_directly_takes_its_text_as_input() -> None:
    made = Tool(name="shell", kind="custom", handler=lambda input: input)
    assert made.text_argument == "input"
    assert made.input_schema["required"] == ["input"]
    assert made.validate_arguments({"input": "ls"}) == {"input": "ls"}
    with pytest.raises(toolwire.InvalidArguments):
        made.validate_arguments({"input": 3})
    named = Tool(
        name="shell",
        kind="custom",
        input_schema={
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
        format={"type": "grammar", "syntax": "regex", "definition": "ls( -l)?"},
    )
    assert named.text_argument == "command"
    assert named.grammar == Grammar.regex("ls( -l)?")


@pytest.mark.parametrize(
    "options",
    [
        {"kind": "custom", "input_schema": {"type": "object", "properties": {"a": {}}}},
        {
            "kind": "custom",
            "input_schema": {
                "type": "object",
                "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                "required": ["a", "b"],
            },
        },
        {"kind": "custom", "format": {"type": "grammar", "syntax": "ebnf", "definition": "x"}},
        {"kind": "custom", "format": {"type": "json"}},
        {"kind": "custom", "format": "digits"},
        {"format": Grammar.regex("a")},
        {"kind": "mcp"},
    ],
    ids=["untyped", "two-arguments", "syntax", "format-type", "format-string", "no-kind", "kind"],
)
def test_a_custom_tool_that_cannot_be_is_refused(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        Tool(name="t", **options)


def test_formats_are_read_in_both_openai_shapes() -> None:
    responses_shape = {"type": "grammar", "syntax": "lark", "definition": 'start: "a"'}
    chat_shape = {"type": "grammar", "grammar": {"syntax": "lark", "definition": 'start: "a"'}}
    for form in (responses_shape, chat_shape):
        assert Tool(name="t", kind="custom", format=form).grammar == Grammar.lark('start: "a"')
    assert Tool(name="t", kind="custom", format={"type": "text"}).grammar is None


def test_a_grammar_is_part_of_what_the_model_is_told() -> None:
    free = Tool(name="t", kind="custom")
    digits = Tool(name="t", kind="custom", format=Grammar.regex(r"\d+"))
    letters = Tool(name="t", kind="custom", format=Grammar.regex("[a-z]+"))
    assert len({free.definition_hash, digits.definition_hash, letters.definition_hash}) == 3
    plain = Tool(name="t", input_schema=dict(free.input_schema))
    assert plain.definition_hash == free.definition_hash  # tools without one keep their hash


def test_openai_custom_tool_definitions_are_read_as_custom_tools() -> None:
    responses_form = {
        "type": "custom",
        "name": "run_sql",
        "description": "Runs SQL.",
        "format": RECORDS[0]["grammar"],
    }
    chat_form = {"type": "custom", "custom": responses_form}
    for definition in (responses_form, chat_form):
        read = tool_from_definition(definition)
        assert (read.kind, read.name, read.description) == ("custom", "run_sql", "Runs SQL.")
        assert read.grammar == SQL_GRAMMAR


# -- declarations ----------------------------------------------------------------------------------


def test_responses_declares_custom_tools_natively_in_the_sdks_shape() -> None:
    listing = toolwire.tools([run_sql, run_python, calculate, search], "openai-responses")
    RESPONSES_TOOLS.validate_python(listing.tools)
    assert listing.tools[:3] == [
        {
            "type": "custom",
            "name": "run_sql",
            "description": "Runs a read-only SQL query.",
            "format": SQL_GRAMMAR.as_format(),
        },
        {
            "type": "custom",
            "name": "run_python",
            "description": "Runs Python code in a sandbox.",
            "format": {"type": "text"},
        },
        {
            "type": "custom",
            "name": "calculate",
            "description": "Adds and subtracts whole numbers.",
            "format": {"type": "grammar", "syntax": "lark", "definition": LARK.definition},
        },
    ]
    assert listing.tools[3]["type"] == "function"
    assert listing.tools[3]["strict"] is True


def test_chat_declares_custom_tools_natively_in_the_sdks_shape() -> None:
    listing = toolwire.tools([run_sql, run_python, search], "openai-chat")
    CHAT_TOOLS.validate_python(listing.tools)
    assert listing.tools[:2] == [
        {
            "type": "custom",
            "custom": {
                "name": "run_sql",
                "description": "Runs a read-only SQL query.",
                "format": {
                    "type": "grammar",
                    "grammar": {"syntax": "regex", "definition": SQL_GRAMMAR.definition},
                },
            },
        },
        {
            "type": "custom",
            "custom": {
                "name": "run_python",
                "description": "Runs Python code in a sandbox.",
                "format": {"type": "text"},
            },
        },
    ]
    assert listing.tools[2]["type"] == "function"


@pytest.mark.parametrize("provider", ["openai-chat", "openai-responses"])
@pytest.mark.parametrize("strict", [True, False])
def test_strict_mode_leaves_custom_tools_alone(provider: str, strict: bool) -> None:
    listing = toolwire.tools([run_sql, search], provider, strict=strict)
    entry = listing.declaration.entry("run_sql")
    assert entry is not None
    assert entry.strict is None  # a custom tool has no strict mode
    assert entry.null_paths == ()
    assert "strict" not in str(listing.tools[0])
    assert entry.not_strict_because is None
    assert "run_sql" not in listing.declaration.not_strict


@pytest.mark.parametrize(
    ("provider", "key"), [("gemini", "parametersJsonSchema"), ("anthropic", "input_schema")]
)
def test_other_providers_get_a_function_of_one_string_parameter(provider: str, key: str) -> None:
    listing = toolwire.tools([run_sql], provider)
    declared = listing.tools
    if provider == "gemini":
        [declared] = [group["functionDeclarations"] for group in declared]
    [entry] = declared
    assert entry["name"] == "run_sql"
    schema = entry[key]
    assert list(schema["properties"]) == ["query"]
    assert schema["properties"]["query"]["type"] == "string"
    assert schema["required"] == ["query"]


def test_check_says_how_each_provider_takes_a_custom_tool() -> None:
    [sql, free] = check([run_sql, run_python])
    by_provider = {v.provider: v for v in sql.verdicts}
    for provider in ("openai-chat", "openai-responses"):
        verdict = by_provider[provider]
        assert verdict.status == "converted"
        assert verdict.notes == (
            "custom tool (grammar: regex): the model writes the text itself, passed as the "
            "'query' argument",
        )
    for provider in ("gemini", "anthropic"):
        verdict = by_provider[provider]
        assert verdict.status == "converted"
        assert verdict.notes[0] == (
            "custom tool: declared as a function with one string parameter, 'query'; its "
            "regex grammar is checked by toolwire before each call, not enforced by the "
            "model (describe the format in the description)"
        )
    free_notes = {v.provider: v.notes[0] for v in free.verdicts}
    assert free_notes["openai-responses"].startswith("custom tool (free text)")
    assert free_notes["gemini"] == (
        "custom tool: declared as a function with one string parameter, 'code'"
    )


def test_check_skips_a_custom_tool_kept_from_a_provider() -> None:
    kept = Tool(name="t", kind="custom", providers=frozenset({"gemini"}))
    [report] = check([kept], ["openai-chat"])
    assert report.verdicts[0].status == "skipped"


# -- parsing and answering -------------------------------------------------------------------------


def test_a_responses_custom_call_runs_end_to_end_and_is_answered_in_kind() -> None:
    record = RECORDS[0]
    response = responses_types.Response.model_validate(record["response"])
    listing = toolwire.tools([run_sql], "openai-responses")
    outcome = anyio.run(toolwire.execute_tool_calls, listing, response)
    assert RAN == [SQL]
    call_id = record["expected_calls"][0]["id"]
    assert outcome.results == [
        {"type": "custom_tool_call_output", "call_id": call_id, "output": f"5 rows for {SQL}"}
    ]
    RESPONSES_INPUT_ITEM.validate_python(outcome.results[0])
    followup = outcome.followup(response)
    RESPONSES_INPUT.validate_python(followup)
    assert [item["type"] for item in followup] == [
        "reasoning",
        "custom_tool_call",
        "custom_tool_call_output",
    ]


def test_a_chat_custom_call_runs_end_to_end_and_is_answered_by_a_tool_message() -> None:
    record = RECORDS[1]
    completion = chat_types.ChatCompletion.model_validate(record["response"])
    listing = toolwire.tools([run_sql], "openai-chat")
    outcome = anyio.run(toolwire.execute_tool_calls, listing, completion)
    assert RAN == [SQL]
    call_id = record["expected_calls"][0]["id"]
    assert outcome.results == [
        {"role": "tool", "tool_call_id": call_id, "content": f"5 rows for {SQL}"}
    ]
    followup = outcome.followup(completion)
    CHAT_MESSAGES.validate_python(followup)
    assert followup[0]["tool_calls"] == [
        {"id": call_id, "type": "custom", "custom": {"name": "run_sql", "input": SQL}}
    ]


def test_every_recorded_custom_call_is_parsed_whole_and_answered() -> None:
    for record in RECORDS:
        provider = get_provider(record["provider"])
        if record["streamed"]:
            accumulator = provider.Accumulator()
            for event in record["events"]:
                accumulator.add(RESPONSES_EVENT.validate_python(event))
            response = accumulator.response()
        else:
            response = record["response"]
        listing = toolwire.tools([run_sql], record["provider"])
        items = provider.parse(response, listing.declaration)
        expected = record["expected_calls"]
        assert [(i.exposed_name, i.arguments, i.call_id) for i in items] == [
            ("run_sql", {"query": call["input"]}, call["id"]) for call in expected
        ]
        outcome = run(listing, response)
        assert [answer_id(a) for a in outcome.results] == [call["id"] for call in expected]
        assert not any(c.result.is_error for c in outcome.calls)


def answer_id(answer: dict[str, Any]) -> str:
    return answer.get("call_id") or answer["tool_call_id"]


@pytest.mark.parametrize("provider", ["openai-chat", "openai-responses"])
def test_text_the_grammar_refuses_is_answered_invalid_arguments_and_never_run(
    provider: str,
) -> None:
    module = get_provider(provider)
    response = module.response_for([("call_1", "run_sql", "DROP TABLE orders;")])
    outcome = run(toolwire.tools([run_sql], provider), response)
    assert RAN == []
    [call] = outcome.calls
    assert call.result.error_kind == "invalid_arguments"
    assert not call.ran
    text = call.result.text
    assert text.startswith("Invalid arguments for 'run_sql': $.query: the text does not match")
    [answer] = outcome.results
    if provider == "openai-responses":
        assert answer["type"] == "custom_tool_call_output"
        RESPONSES_INPUT_ITEM.validate_python(answer)
    assert answer_id(answer) == "call_1"


@pytest.mark.parametrize("provider", ["openai-chat", "openai-responses"])
def test_a_lark_refusal_is_answered_and_a_match_runs(provider: str) -> None:
    module = get_provider(provider)
    response = module.response_for([("c1", "calculate", "1+2-3"), ("c2", "calculate", "1+")])
    outcome = run(toolwire.tools([calculate], provider), response)
    assert RAN == ["1+2-3"]
    assert [c.result.error_kind for c in outcome.calls] == [None, "invalid_arguments"]
    assert outcome.calls[1].result.text.endswith("Lark grammar: it ends early")


@pytest.mark.parametrize("provider", ["openai-chat", "openai-responses"])
def test_custom_calls_that_cannot_run_are_answered(provider: str) -> None:
    module = get_provider(provider)
    listing = toolwire.tools([run_sql, search], provider)
    response = module.response_for(
        [("c1", "grep", "TODO"), ("c2", "search", "Paris"), ("c3", "run_sql", SQL)]
    )
    unknown, function, ran = module.parse(response, listing.declaration)
    assert isinstance(unknown, RejectedCall)
    assert unknown.error_kind == "not_found"
    assert "custom tool call" in unknown.message
    assert isinstance(function, RejectedCall)
    assert function.error_kind == "invalid_arguments"
    assert "is a function tool" in function.message
    assert isinstance(ran, ToolCall)
    for rejected in (unknown, function):
        if provider == "openai-responses":
            assert rejected.answer["type"] == "custom_tool_call_output"
            RESPONSES_INPUT_ITEM.validate_python(rejected.answer)
        assert answer_id(rejected.answer) == rejected.call_id


def test_custom_input_that_is_not_text_is_refused() -> None:
    listing = toolwire.tools([run_sql], "openai-responses")
    item = {"type": "custom_tool_call", "call_id": "c1", "name": "run_sql", "input": {"q": 1}}
    [rejected] = openai_responses.parse([item], listing.declaration)
    assert isinstance(rejected, RejectedCall)
    assert rejected.error_kind == "invalid_arguments"
    assert rejected.message == "Malformed custom tool call: its input is a dict, not text."


def test_a_function_call_to_a_custom_tool_is_still_checked() -> None:
    # What an OpenAI-compatible host may send: the tool's one argument as JSON.
    response = openai_chat.response_for([("c1", "run_sql", {"query": "DROP x"})])
    outcome = run(toolwire.tools([run_sql], "openai-chat"), response)
    assert outcome.calls[0].result.error_kind == "invalid_arguments"
    response = openai_responses.response_for([("c1", "run_sql", {"query": SQL})])
    outcome = run(toolwire.tools([run_sql], "openai-responses"), response)
    assert outcome.results[0]["type"] == "function_call_output"  # answered as it came
    assert RAN == [SQL]


def test_an_empty_custom_beside_a_function_is_a_function_call() -> None:
    records = [
        r
        for r in load_corpus("openai_compatible")
        if not r["streamed"] and "'custom'" in str(r["response"])
    ]
    assert records  # recorded from a real OpenAI-compatible host

    def get_weather(city: str) -> str:
        """Looks up the weather."""
        return f"sunny in {city}"

    for record in records:
        [entry] = record["response"]["choices"][0]["message"]["tool_calls"]
        assert (entry["type"], entry["custom"]) == ("function", {"input": "", "name": ""})
        # The entry's type decides, whether the tool it names is a function or a custom tool.
        for made in (tool(get_weather), tool(custom=True)(get_weather)):
            listing = toolwire.tools([made], "openai-chat")
            [item] = openai_chat.parse(record["response"], listing.declaration)
            assert isinstance(item, ToolCall)
            assert (item.exposed_name, item.arguments) == ("get_weather", {"city": "Mexico City"})
            outcome = run(listing, record["response"])
            assert outcome.results[0]["content"] == "sunny in Mexico City"


@pytest.mark.parametrize(("provider", "module"), [("gemini", gemini), ("anthropic", anthropic)])
def test_other_providers_run_a_custom_tool_as_a_function(provider: str, module: Any) -> None:
    listing = toolwire.tools([run_sql, calculate], provider)
    response = module.response_for(
        [
            ("c1", "run_sql", {"query": SQL}),
            ("c2", "run_sql", {"query": "DELETE FROM orders;"}),
            ("c3", "calculate", {"expression": "2+2"}),
        ]
    )
    outcome = run(listing, response)
    # Each valid call ran once (the two run concurrently, in worker threads: their answers are
    # in call order, the order they ran in is not), the refused one never.
    assert sorted(RAN) == sorted([SQL, "2+2"])
    assert [c.result.error_kind for c in outcome.calls] == [None, "invalid_arguments", None]


# -- streams ---------------------------------------------------------------------------------------


def test_a_streamed_responses_custom_call_comes_out_whole() -> None:
    [record] = [r for r in RECORDS if r["streamed"]]
    accumulator = openai_responses.Accumulator()
    for event in record["events"][:-1]:  # even before the item's done event
        accumulator.add(RESPONSES_EVENT.validate_python(event))
    [item] = accumulator.response()["output"]
    assert item["type"] == "custom_tool_call"
    assert item["input"] == SQL
    listing = toolwire.tools([run_sql], "openai-responses")
    [call] = openai_responses.parse(accumulator.response(), listing.declaration)
    assert isinstance(call, ToolCall)
    assert call.arguments == {"query": SQL}


def test_a_streamed_chat_custom_call_comes_out_whole() -> None:
    # The SDK has no chunk type for custom calls; these deltas are shaped as its message's.
    accumulator = openai_chat.Accumulator()
    pieces = [
        {"index": 0, "id": "call_1", "type": "custom", "custom": {"name": "run_sql", "input": ""}},
        *({"index": 0, "custom": {"input": SQL[i : i + 17]}} for i in range(0, len(SQL), 17)),
    ]
    for piece in pieces:
        accumulator.add({"choices": [{"index": 0, "delta": {"tool_calls": [piece]}}]})
    listing = toolwire.tools([run_sql], "openai-chat")
    [call] = openai_chat.parse(accumulator.response(), listing.declaration)
    assert isinstance(call, ToolCall)
    assert call.arguments == {"query": SQL}


# -- scripted responses ----------------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["openai-chat", "openai-responses"])
def test_response_for_writes_a_custom_call_for_text_arguments(provider: str) -> None:
    module = get_provider(provider)
    response = module.response_for([("c1", "run_python", "print(1)")], text="Running it.")
    if provider == "openai-responses":
        [_, item] = response["output"]
        responses_types.Response.model_validate(
            {
                **RECORDS[0]["response"],
                "output": response["output"],
            }
        )
        assert item == {
            "type": "custom_tool_call",
            "call_id": "c1",
            "name": "run_python",
            "input": "print(1)",
            "id": "ctc_0",
        }
    else:
        chat_types.ChatCompletion.model_validate({**RECORDS[1]["response"], **response})
    outcome = run(ToolSet([run_python]), provider, response)
    assert RAN == ["print(1)"]
    assert outcome.calls[0].result.text == "ran"
