"""Common mistakes in making tools: each one simply works, or says in one line what to do."""

from __future__ import annotations

import functools
import warnings
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import toolwire
from toolwire import ConfigurationError, Executor, Tool, ToolSet, tool
from toolwire.errors import ToolwireWarning
from toolwire.providers import gemini, parse_calls
from toolwire.tool import tool_from_definition

pytestmark = pytest.mark.anyio


@tool
def greet(name: str) -> str:
    """Greet someone."""
    return f"hello {name}"


def shout(text: str) -> str:
    """Say it loudly."""
    return text.upper()


def gemini_response(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [{"functionCall": {"name": name, "args": args}}],
                }
            }
        ]
    }


# -- one tool where a list is expected -----------------------------------------------------------


@pytest.mark.parametrize("single", [greet, shout], ids=["a Tool", "a function"])
def test_a_single_tool_or_function_is_a_toolset_of_one(single: Any) -> None:
    for toolset in (ToolSet(single), ToolSet.of(single), Executor(single).toolset):
        assert len(toolset) == 1
        assert toolset.exposed_names == (getattr(single, "name", None) or single.__name__,)
    assert toolwire.tools(single, "gemini").tools == toolwire.tools([single], "gemini").tools


def test_a_string_where_tools_are_expected_is_one_line_naming_it() -> None:
    with pytest.raises(ConfigurationError, match="'greet'") as refused:
        ToolSet("greet")  # type: ignore[arg-type]
    assert "\n" not in str(refused.value)


# -- functools.partial ---------------------------------------------------------------------------


def convert(amount: float, rate: float, currency: str = "EUR") -> str:
    """Convert an amount of money.

    Args:
        amount: How much.
        rate: The exchange rate.
        currency: The currency to convert to.
    """
    return f"{amount * rate:.2f} {currency}"


async def test_a_partial_is_a_tool_of_the_function_it_wraps_without_the_bound_arguments() -> None:
    to_usd = tool(functools.partial(convert, rate=1.1, currency="USD"))
    assert (to_usd.name, to_usd.description) == ("convert", "Convert an amount of money.")
    assert to_usd.input_schema["properties"] == {
        "amount": {"type": "number", "title": "Amount", "description": "How much."}
    }
    assert to_usd.input_schema["required"] == ["amount"]
    toolset = ToolSet([to_usd])
    [outcome] = await Executor(toolset).run(
        parse_calls("gemini", gemini_response("convert", {"amount": 10}), toolset)
    )
    assert outcome.result.text == "11.00 USD"


async def test_the_model_cannot_set_an_argument_a_partial_binds() -> None:
    toolset = ToolSet([functools.partial(convert, rate=1.1)])
    [outcome] = await Executor(toolset).run(
        parse_calls("gemini", gemini_response("convert", {"amount": 1, "rate": 100}), toolset)
    )
    assert outcome.result.error_kind == "invalid_arguments"


def test_a_partial_binding_a_leading_argument_positionally_leaves_it_out() -> None:
    ten = tool(functools.partial(convert, 10))
    assert set(ten.input_schema["properties"]) == {"rate", "currency"}
    assert ten.validate_arguments({"rate": 2}) == {"rate": 2.0, "currency": "EUR"}


@given(bound=st.sets(st.sampled_from(["amount", "rate", "currency"])))
def test_a_partials_schema_is_the_functions_without_what_it_binds(bound: set[str]) -> None:
    values = {"amount": 1.0, "rate": 2.0, "currency": "GBP"}
    partial = functools.partial(convert, **{name: values[name] for name in bound})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the wrapped function's docstring counts
        made = tool(partial)
    whole = tool(convert).input_schema["properties"]
    assert made.input_schema["properties"] == {k: v for k, v in whole.items() if k not in bound}


# -- dict definitions ----------------------------------------------------------------------------

WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}


@pytest.mark.parametrize(
    "definition",
    [
        {"name": "weather", "description": "The weather.", "input_schema": WEATHER_SCHEMA},
        {"name": "weather", "description": "The weather.", "inputSchema": WEATHER_SCHEMA},
        {"name": "weather", "description": "The weather.", "parameters": WEATHER_SCHEMA},
        {
            "type": "function",
            "function": {
                "name": "weather",
                "description": "The weather.",
                "parameters": WEATHER_SCHEMA,
            },
        },
    ],
    ids=["anthropic", "mcp", "openai-responses or gemini", "openai-chat"],
)
def test_a_dict_definition_in_a_tool_list_is_read_as_a_tool(definition: dict[str, Any]) -> None:
    [made] = ToolSet([greet, definition]).tools[1:]
    assert (made.name, made.description, made.input_schema, made.handler) == (
        "weather",
        "The weather.",
        WEATHER_SCHEMA,
        None,
    )
    assert gemini.function_declarations(ToolSet([definition])) == [
        {
            "name": "weather",
            "description": "The weather.",
            "parametersJsonSchema": WEATHER_SCHEMA,
        }
    ]


def test_a_definition_keeps_its_output_schema_and_annotations() -> None:
    made = tool_from_definition(
        {
            "name": "weather",
            "inputSchema": WEATHER_SCHEMA,
            "outputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": True},
            "title": "Weather",  # other keys are not toolwire's
        }
    )
    assert (made.output_schema, made.annotations, made.description) == (
        {"type": "object"},
        {"readOnlyHint": True},
        None,
    )


async def test_a_call_of_a_definition_without_a_handler_is_answered_with_an_error() -> None:
    toolset = ToolSet([{"name": "weather", "parameters": WEATHER_SCHEMA}])
    [outcome] = await Executor(toolset).run(
        parse_calls("gemini", gemini_response("weather", {"city": "Porto"}), toolset)
    )
    assert outcome.result.error_kind == "failed"


@pytest.mark.parametrize(
    ("definition", "named"),
    [
        ({"description": "no name"}, "'name'"),
        ({"name": "w", "parameters": {}, "input_schema": {}}, "'parameters'"),
        ({"name": "w", "parameters": "a string"}, "'w'"),
        ({"name": "w", "description": 3}, "description"),
        ({"name": "w", "annotations": []}, "annotations"),
        ({"name": "w", "outputSchema": []}, "output schema"),
    ],
)
def test_a_definition_that_cannot_be_a_tool_is_one_line_naming_the_problem(
    definition: dict[str, Any], named: str
) -> None:
    with pytest.raises(ConfigurationError, match=named) as refused:
        ToolSet([definition])
    assert "\n" not in str(refused.value)


# -- hints pydantic cannot describe --------------------------------------------------------------


class Connection:
    """A class of the application's, not a JSON value."""


def test_a_parameter_of_a_class_pydantic_cannot_describe_is_one_line_naming_it() -> None:
    def query(sql: str, connection: Connection) -> str:
        """Run a query."""
        return sql

    with pytest.raises(ConfigurationError) as refused:
        tool(query)
    message = str(refused.value)
    assert "\n" not in message
    for named in ("'query'", "'connection'", "Connection", "CallContext"):
        assert named in message


def test_a_class_pydantic_cannot_describe_inside_a_container_is_named_too() -> None:
    def pool(connections: list[Connection]) -> str:
        """Use a pool."""
        return ""

    with pytest.raises(ConfigurationError, match="'connections'") as refused:
        tool(pool)
    assert "\n" not in str(refused.value)


# -- missing descriptions ------------------------------------------------------------------------


def undocumented(x: int) -> int:
    return x


def test_a_function_without_a_docstring_warns_that_the_model_sees_no_description() -> None:
    with pytest.warns(ToolwireWarning, match="'undocumented'") as caught:
        made = tool(undocumented)
    assert made.description == ""
    [warning] = caught.list
    assert warning.filename == __file__  # points at the caller, not at toolwire


def test_a_function_without_a_docstring_in_a_toolset_warns_at_the_toolset() -> None:
    with pytest.warns(ToolwireWarning) as caught:
        ToolSet([greet, undocumented])
    [warning] = caught.list
    assert warning.filename == __file__


@pytest.mark.parametrize("description", ["Double a number.", ""])
def test_a_description_given_is_no_warning(description: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        made = tool(name="double", description=description)(undocumented)
    assert made.description == description


def test_a_tool_made_by_hand_without_a_description_is_no_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Tool(name="raw", handler=undocumented)
        ToolSet([{"name": "raw"}])


# -- parameters without a type hint ----------------------------------------------------------


def find_order(order_id, *, verbose=False) -> str:  # type: ignore[no-untyped-def]
    """Find an order."""
    return f"order {order_id}"


def test_a_parameter_without_a_type_hint_warns_naming_the_tool_and_the_parameter() -> None:
    with pytest.warns(ToolwireWarning, match="without a type hint") as caught:
        made = tool(find_order)
    [warning] = caught.list
    assert "tool 'find_order'" in str(warning.message)
    assert "'order_id', 'verbose'" in str(warning.message)
    assert warning.filename == __file__  # the caller's line, not toolwire's
    # what the warning is about: no type is declared, so the schema checks nothing
    assert "type" not in made.input_schema["properties"]["order_id"]
    checked = made.validate_arguments({"order_id": {"any": ["thing"]}})
    assert checked["order_id"] == {"any": ["thing"]}


def test_a_bare_function_without_type_hints_in_a_toolset_warns_at_the_toolset() -> None:
    with pytest.warns(ToolwireWarning, match="'find_order'") as caught:
        ToolSet([greet, find_order])
    assert [w.filename for w in caught.list] == [__file__]


def account_balance(account: Any, ctx: toolwire.CallContext, connection: object = None) -> str:
    """An account's balance."""
    return f"{account}: 10"


def test_hinted_parameters_context_and_bound_arguments_are_no_warning() -> None:
    def with_connection(account: str, connection) -> str:  # type: ignore[no-untyped-def]
        """An account's balance, on a connection the application binds."""
        return account

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tool(account_balance)  # `Any` said explicitly, and the call's context
        tool(functools.partial(with_connection, connection="db"))  # not a model argument
