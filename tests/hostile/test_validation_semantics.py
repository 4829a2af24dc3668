"""Validation accepts nothing the schema forbids.

Reproduction (issue 14, item 9): OpenAI arguments ``{"amount": NaN}`` passed ``minimum`` and
``maximum`` and ran the tool; ``^[a-z]+$`` accepted ``"main\\n"``; ``^\\d+$`` accepted
Arabic-Indic digits; ``format`` (``date-time``, ``email``, ``uri``, ``hostname``, ...) was not
checked. Patterns are ECMA-262 (what JSON Schema specifies): ``$`` is the very end, ``\\d`` and
``\\w`` are ASCII.
"""

from __future__ import annotations

import datetime
import decimal
import ipaddress
import math
import types
import uuid
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolwire
from toolwire import InvalidArguments, Tool, tool
from toolwire.calls import MAX_INTEGER_DIGITS

AMOUNT = {
    "type": "object",
    "properties": {"amount": {"type": "number", "minimum": 0, "maximum": 100}},
    "required": ["amount"],
}
NON_FINITE = [math.nan, math.inf, -math.inf]


def _raw(schema: dict[str, Any]) -> Tool:
    return Tool(name="t", input_schema=schema)


def _rejected(subject: Tool, arguments: Any) -> InvalidArguments:
    with pytest.raises(InvalidArguments) as info:
        subject.validate_arguments(arguments)
    assert info.value.tool == subject.name
    return info.value


# -- NaN and Infinity ------------------------------------------------------------------------


@pytest.mark.anyio
async def test_openai_arguments_with_nan_never_run_the_tool() -> None:
    ran: list[Any] = []
    pay = Tool(name="pay", input_schema=AMOUNT, handler=lambda **kw: ran.append(kw))
    for raw in ('{"amount": NaN}', '{"amount": Infinity}', '{"amount": -Infinity}'):
        response = {
            "choices": [
                {
                    "message": {
                        "role": "assistant",
                        "tool_calls": [
                            {
                                "id": "c1",
                                "type": "function",
                                "function": {"name": "pay", "arguments": raw},
                            }
                        ],
                    }
                }
            ]
        }
        with anyio.fail_after(10):
            outcome = await toolwire.execute_tool_calls([pay], "openai-chat", response)
        (call,) = outcome.calls
        assert call.result.error_kind == "invalid_arguments"
    assert ran == []


@pytest.mark.parametrize("value", NON_FINITE)
def test_non_finite_numbers_are_rejected_by_a_raw_schema_tool(value: float) -> None:
    error = _rejected(_raw(AMOUNT), {"amount": value})
    ((path, message),) = error.errors
    assert path == "$"
    assert "not a JSON number" in message
    assert "null" not in message  # not the validator's view of a NaN turned into null


@pytest.mark.parametrize("value", [decimal.Decimal("NaN"), decimal.Decimal("-Inf")])
def test_non_finite_decimals_are_rejected_by_both_kinds_of_tool(value: decimal.Decimal) -> None:
    _rejected(_raw(AMOUNT), {"amount": value})
    assert _rejected(transfer, {"amount": 1.0, "memo": value}).errors[0][0] == "$.memo"


@pytest.mark.parametrize("value", NON_FINITE)
def test_non_finite_numbers_are_rejected_anywhere_in_a_schema_that_accepts_anything(
    value: float,
) -> None:
    subject = _raw({"type": "object"})
    _rejected(subject, {"deep": [{"x": [1, value]}]})


@tool
def transfer(amount: float, memo: Any = None, extra: dict[str, Any] | None = None) -> str:
    """Move money."""
    return f"{amount}"


@pytest.mark.parametrize("value", NON_FINITE)
def test_non_finite_numbers_are_rejected_by_a_function_tool_at_their_path(value: float) -> None:
    assert _rejected(transfer, {"amount": value}).errors[0][0] == "$.amount"
    assert _rejected(transfer, {"amount": 1.0, "memo": [1, value]}).errors[0][0] == "$.memo[1]"
    extra = {"amount": 1.0, "extra": {"k": {"v": value}}}
    assert _rejected(transfer, extra).errors[0][0] == "$.extra.k.v"


def test_pydantic_itself_refuses_non_finite_floats() -> None:
    assert transfer.function is not None
    for value in NON_FINITE:
        with pytest.raises(InvalidArguments):
            transfer.function.validate("transfer", {"amount": value})


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=500, deadline=None)
@given(JSON, st.sampled_from(NON_FINITE), st.randoms(use_true_random=False))
def test_a_non_finite_number_hidden_anywhere_is_always_rejected(
    value: Any, bad: float, random: Any
) -> None:
    # Put `bad` at a random place in a random JSON value.
    holder: dict[str, Any] = {"x": value}
    node: Any = holder
    key: Any = "x"
    while isinstance(node[key], dict | list) and node[key] and random.random() < 0.7:
        node = node[key]
        key = random.choice(list(node) if isinstance(node, dict) else range(len(node)))
    node[key] = bad
    _rejected(_raw({"type": "object"}), holder)
    _rejected(transfer, {"amount": 1.0, "memo": holder})


# -- other values JSON has no room for ---------------------------------------------------------


def test_an_integer_too_long_for_json_is_rejected_not_accepted_by_maximum() -> None:
    subject = _raw({"type": "object", "properties": {"n": {"type": "integer", "maximum": 5}}})
    _rejected(subject, {"n": 10**4500})
    _rejected(subject, {"n": 10 ** (MAX_INTEGER_DIGITS + 1)})
    assert _rejected(subject, {"n": 10**300}).errors[0][0] == "$.n"  # long, still JSON: decided


@pytest.mark.parametrize(
    "arguments",
    [
        {"s": "\ud800"},
        {"\udfff": "x"},
        {1: "not a string key"},
        {"s": {1, 2}},
        {"s": b"bytes"},
        {"s": object()},
    ],
    ids=["lone surrogate", "surrogate key", "int key", "set", "bytes", "object"],
)
def test_values_json_cannot_hold_are_invalid_arguments(arguments: dict[Any, Any]) -> None:
    _rejected(_raw({"type": "object"}), arguments)


@pytest.mark.parametrize("arguments", [[1, 2], "text", None, 5])
def test_arguments_that_are_not_an_object_are_invalid(arguments: Any) -> None:
    error = _rejected(_raw({"type": "object"}), arguments)
    assert error.errors[0][0] == "$"
    _rejected(transfer, arguments)


def test_mappings_and_str_subclasses_are_read_as_json() -> None:
    class Name(str):
        pass

    subject = _raw(
        {
            "type": "object",
            "properties": {"a": {"type": "object"}, "n": {"type": "string", "pattern": "^x"}},
        }
    )
    arguments = types.MappingProxyType({"a": types.MappingProxyType({}), "n": Name("xy")})
    assert subject.validate_arguments(arguments) == dict(arguments)
    _rejected(subject, types.MappingProxyType({"n": Name("yx")}))


def test_errors_are_capped_and_their_messages_short() -> None:
    subject = _raw({"type": "object", "additionalProperties": {"type": "integer", "maxLength": 1}})
    error = _rejected(subject, {f"k{i}": "x" * 100_000 for i in range(200)})
    assert len(error.errors) == 20
    assert all(len(message) <= 500 for _, message in error.errors)


# -- patterns are ECMA-262 -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "rejected", "accepted"),
    [
        ("^[a-z]+$", ["main\n", "\nmain", "main\r\n", "MAIN", ""], ["main"]),
        ("^\\d+$", ["٣٤", "\uff11\uff12", "१२", "12\n", "¹²"], ["0123456789"]),
        ("^\\w+$", ["é", "ß", "a\u200bb"], ["a_Z9"]),
        ("^a.c$", ["a\nc", "a\u2028c"], ["abc", "a-c"]),
        ("^[^\\s]+$", ["a\u00a0b", "a\u2003b", "a\ufeffb"], ["ab"]),
    ],
)
def test_patterns_mean_what_json_schema_says(
    pattern: str, rejected: list[str], accepted: list[str]
) -> None:
    subject = _raw({"type": "object", "properties": {"s": {"type": "string", "pattern": pattern}}})
    for value in rejected:
        assert _rejected(subject, {"s": value}).errors[0][0] == "$.s", value
    for value in accepted:
        assert subject.validate_arguments({"s": value}) == {"s": value}


@settings(max_examples=2000, deadline=None)
@given(st.text(max_size=12))
def test_a_lower_case_pattern_accepts_exactly_lower_case_ascii(text: str) -> None:
    subject = _lower_case
    expected = bool(text) and all("a" <= c <= "z" for c in text)
    try:
        subject.validate_arguments({"s": text})
    except InvalidArguments:
        assert not expected, text
    else:
        assert expected, text


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet=st.characters(categories=["Nd", "No", "Cc", "Zs"]), max_size=8))
def test_a_digits_pattern_accepts_exactly_ascii_digits(text: str) -> None:
    expected = bool(text) and all(c in "0123456789" for c in text)
    try:
        _digits.validate_arguments({"s": text})
    except InvalidArguments:
        assert not expected, text
    else:
        assert expected, text


_lower_case = _raw(
    {"type": "object", "properties": {"s": {"type": "string", "pattern": "^[a-z]+$"}}}
)
_digits = _raw({"type": "object", "properties": {"s": {"type": "string", "pattern": "^\\d+$"}}})


# -- formats are asserted --------------------------------------------------------------------------

FORMATS: dict[str, tuple[list[str], list[str]]] = {
    "date-time": (
        ["2024-01-31T12:30:00Z", "2024-01-31T12:30:00.5+02:00"],
        ["2024-13-01T00:00:00Z", "2024-01-31 12:30", "yesterday", "2024-01-31T12:30:00Z\n"],
    ),
    "date": (["2024-02-29"], ["2023-02-29", "2024-1-1", "٢٠٢٤-01-01"]),
    "time": (["12:30:00Z", "23:59:59+01:00"], ["25:00:00Z", "12:30", "noon"]),
    "email": (
        ["a@example.com", "first.last@sub.example.org"],
        ["not an email", "a@", "Name <a@b.c>", "a b@c.d"],
    ),
    "uri": (
        ["https://example.com/a?b=c", "mailto:a@example.com"],
        ["/relative/path", "not a uri", "http://a b"],
    ),
    "uuid": (["123e4567-e89b-12d3-a456-426614174000"], ["123e4567e89b12d3a456426614174000", "xyz"]),
    "ipv4": (["192.168.0.1"], ["256.1.1.1", "1.2.3", "01.2.3.4", "1.2.3.4\n"]),
    "ipv6": (["::1", "2001:db8::8a2e:370:7334"], ["::g", "1:2:3:4:5:6:7:8:9", "12345::"]),
    "hostname": (["example.com", "a-b.example"], ["-a.com", "a..b", "a" * 64 + ".com", "a.com\n"]),
}


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_formats_are_asserted_for_raw_schema_tools(fmt: str) -> None:
    valid, invalid = FORMATS[fmt]
    subject = _raw({"type": "object", "properties": {"v": {"type": "string", "format": fmt}}})
    for value in valid:
        assert subject.validate_arguments({"v": value}) == {"v": value}, value
    for value in invalid:
        assert _rejected(subject, {"v": value}).errors[0][0] == "$.v", value


def test_unknown_formats_are_annotations() -> None:
    subject = _raw({"type": "object", "properties": {"v": {"type": "string", "format": "int32"}}})
    assert subject.validate_arguments({"v": "anything"}) == {"v": "anything"}


@tool
def schedule(
    when: datetime.datetime,
    day: datetime.date,
    at: datetime.time,
    ref: uuid.UUID,
    v4: ipaddress.IPv4Address,
    v6: ipaddress.IPv6Address,
) -> str:
    """Schedule something."""
    return "ok"


def test_function_tools_get_their_formats_from_their_types() -> None:
    good = {
        "when": "2024-01-31T12:30:00Z",
        "day": "2024-02-29",
        "at": "12:30:00",
        "ref": "123e4567-e89b-12d3-a456-426614174000",
        "v4": "192.168.0.1",
        "v6": "::1",
    }
    kwargs = schedule.validate_arguments(good)
    assert isinstance(kwargs["when"], datetime.datetime)
    assert isinstance(kwargs["ref"], uuid.UUID)
    bad = {
        "when": "2024-13-01T00:00:00Z",
        "day": "2023-02-29",
        "at": "25:00",
        "ref": "xyz",
        "v4": "256.1.1.1",
        "v6": "::g",
    }
    for name, value in bad.items():
        error = _rejected(schedule, {**good, name: value})
        assert [path for path, _ in error.errors] == [f"$.{name}"]
