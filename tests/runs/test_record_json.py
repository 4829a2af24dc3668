"""The readers that build a call's record and its approval request from their JSON forms
(inside pydantic-core): every field comes back as written, and a form that is not one is
refused with the library's own errors."""

from __future__ import annotations

import datetime
import json
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolwire import ApprovalRequest, ConfigurationError
from toolwire.approval import Decision
from toolwire.calls import ImageContent, TextContent, ToolResult
from toolwire.errors import StoreUnavailable
from toolwire.inputs import InputRequest
from toolwire.runs._record_json import decode_record, encode_record
from toolwire.store import CallRecord

JSON_LEAF = st.none() | st.booleans() | st.integers() | st.text(max_size=6)
JSON_VALUE = st.recursive(
    JSON_LEAF,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
TIMES = st.none() | st.floats(min_value=0, max_value=4e9, allow_nan=False)
NAMES = st.text(min_size=1, max_size=12)
OPTIONAL_NAMES = st.none() | NAMES


@st.composite
def requests(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "run_id": draw(NAMES),
        "call_id": draw(NAMES),
        "exposed_name": draw(NAMES),
        "server": draw(OPTIONAL_NAMES),
        "tool_name": draw(OPTIONAL_NAMES),
        "arguments": draw(st.dictionaries(st.text(max_size=5), JSON_VALUE, max_size=4)),
        "principal": draw(JSON_VALUE),
        "principal_key": draw(st.text(max_size=32)),
        "reason": draw(OPTIONAL_NAMES),
        "requested_at": draw(TIMES),
        "expires_at": draw(TIMES),
    }


@st.composite
def records(draw: st.DrawFn) -> CallRecord:
    state = draw(st.sampled_from(["pending", "approved", "denied", "running", "completed"]))
    decision = draw(
        st.none()
        | st.builds(
            Decision,
            st.sampled_from(["allow", "deny", "halt"]),
            OPTIONAL_NAMES,
            arguments=st.none() | st.dictionaries(st.text(max_size=4), JSON_VALUE, max_size=3),
        )
    )
    result = draw(
        st.none()
        | st.builds(
            ToolResult,
            content=st.lists(st.builds(TextContent, st.text(max_size=8)), max_size=2).map(tuple),
            value=JSON_VALUE,
        )
    )
    return CallRecord(
        call_id=draw(NAMES),
        tool=draw(NAMES),
        fingerprint=draw(st.text(min_size=1, max_size=27)),
        state=state,
        decision=decision,
        result=result,
        owner=draw(OPTIONAL_NAMES),
        started_at=draw(TIMES),
        lease_until=draw(TIMES),
        finished_at=draw(TIMES),
        tool_id=draw(OPTIONAL_NAMES),
        definition=draw(OPTIONAL_NAMES),
        request=draw(st.none() | requests()),
        decided_by=draw(JSON_VALUE),
        decided_at=draw(TIMES),
        caller=draw(st.none() | st.just({"kind": "code", "type": "code_execution", "id": "x1"})),
        position=draw(st.none() | st.integers(min_value=0, max_value=128)),
        wake=draw(st.none() | st.just({"engine": "dbos", "workflow": "w", "topic": "t"})),
        ticket=draw(st.none() | st.text(min_size=1, max_size=64)),
    )


@settings(max_examples=200, deadline=None)
@given(original=records(), version=st.integers(min_value=0, max_value=2**40))
def test_every_field_of_a_record_comes_back_from_its_json_form(
    original: CallRecord, version: int
) -> None:
    decoded = decode_record(encode_record(original), version, call_id=original.call_id)
    assert decoded == original.with_(version=version)
    assert type(decoded) is CallRecord
    assert decoded.decision is None or type(decoded.decision) is Decision
    assert decoded.result is None or type(decoded.result) is ToolResult


def test_a_record_naming_a_version_of_its_own_keeps_the_stores() -> None:
    form = json.loads(
        encode_record(CallRecord(call_id="c", tool="t", fingerprint="f", state="pending"))
    )
    decoded = decode_record(json.dumps({**form, "version": 99}), 4)
    assert decoded.version == 4


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"decision": {"kind": "maybe", "reason": None}}, "decision"),
        ({"result": {"content": [{"type": "image", "data": "%%%", "mime_type": "x"}]}}, "result"),
        ({"request": {"requested_at": "soon"}}, "request.requested_at"),
        ({"started_at": float("inf")}, ""),
        ({"position": "first"}, "position"),
        ({"state": "lost"}, "state"),
    ],
)
def test_a_damaged_record_is_refused_naming_what(change: dict[str, Any], where: str) -> None:
    form = json.loads(
        encode_record(CallRecord(call_id="c", tool="t", fingerprint="f", state="pending"))
    )
    with pytest.raises(StoreUnavailable, match="cannot be read") as raised:
        decode_record(json.dumps({**form, **change}), 1, call_id="c")
    assert where in str(raised.value)


@settings(max_examples=200, deadline=None)
@given(form=requests())
def test_a_request_comes_back_from_its_json_form(form: dict[str, Any]) -> None:
    request = ApprovalRequest.from_dict(form)
    assert request.tool is None
    assert request.input == ()
    again = json.loads(json.dumps(request.to_dict()))
    assert ApprovalRequest.from_dict(again) == request
    assert again["arguments"] == form["arguments"]
    assert request.arguments is not form["arguments"]  # a copy: the form may change


def test_a_request_with_questions_gives_them_the_calls_context() -> None:
    question = InputRequest(key="k", message="Which account?", round="r1")
    form = {
        "run_id": "run",
        "call_id": "c1",
        "exposed_name": "transfer",
        "server": "bank",
        "tool_name": "move",
        "arguments": {"amount": 5},
        "principal": "alice",
        "input": [question.to_dict()],
        "tool": "not read",
    }
    request = ApprovalRequest.from_dict(form)
    [asked] = request.input
    assert (asked.key, asked.message, asked.round) == ("k", "Which account?", "r1")
    assert (asked.server, asked.tool_name, asked.exposed_name) == ("bank", "move", "transfer")
    assert (asked.run_id, asked.call_id, asked.principal) == ("run", "c1", "alice")
    assert asked.arguments == {"amount": 5}
    assert request.tool is None
    assert ApprovalRequest.from_dict(json.loads(json.dumps(request.to_dict()))) == request


@pytest.mark.parametrize(
    "form",
    [
        None,
        "a request",
        {},
        {"run_id": "r", "call_id": "c"},
        {"run_id": 1, "call_id": "c", "exposed_name": "t"},
        {"run_id": "r", "call_id": "c", "exposed_name": "t", "arguments": [1, 2]},
        {"run_id": "r", "call_id": "c", "exposed_name": "t", "input": "why?"},
        {"run_id": "r", "call_id": "c", "exposed_name": "t", "input": [{"key": "k"}]},
        {"run_id": "r", "call_id": "c", "exposed_name": "t", "input": ["k"]},
    ],
)
def test_what_is_not_a_request_is_refused(form: Any) -> None:
    with pytest.raises(ConfigurationError, match=r"not an (approval|input) request"):
        ApprovalRequest.from_dict(form)


@settings(max_examples=300, deadline=None)
@given(
    form=st.dictionaries(
        st.sampled_from(["run_id", "call_id", "exposed_name", "arguments", "input", "server"]),
        JSON_VALUE,
    )
)
def test_any_json_object_is_a_request_or_a_configuration_error(form: dict[str, Any]) -> None:
    try:
        request = ApprovalRequest.from_dict(form)
    except ConfigurationError:
        return
    assert isinstance(request.run_id, str)
    assert isinstance(request.call_id, str)
    assert isinstance(request.arguments, dict)


def test_any_mapping_is_read_as_a_request() -> None:
    form = {"run_id": "r", "call_id": "c", "exposed_name": "t", "arguments": {"a": 1}}
    assert ApprovalRequest.from_dict(MappingProxyType(form)) == ApprovalRequest.from_dict(form)


def test_a_request_without_arguments_has_its_own_empty_ones() -> None:
    form = {"run_id": "r", "call_id": "c", "exposed_name": "t"}
    first, second = ApprovalRequest.from_dict(form), ApprovalRequest.from_dict(form)
    assert first.arguments == {}
    assert second.arguments == {}
    assert first.arguments is not second.arguments
    assert ApprovalRequest.from_dict({**form, "arguments": None}).arguments == {}


# -- results in a record's JSON form ------------------------------------------------------------


def stored(**changes: Any) -> CallRecord:
    """A record of an ``add`` call, with ``changes``."""
    base = CallRecord(call_id="c1", tool="add", fingerprint="f" * 16, state="pending")
    return base.with_(**changes)


def test_structured_content_that_json_cannot_write_is_kept_as_text() -> None:
    when = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    result = ToolResult(structured_content={"when": when, "odd": object.__new__(object)})
    decoded = decode_record(encode_record(stored(state="completed", result=result)), 3)
    assert decoded.version == 3
    assert decoded.result is not None
    assert decoded.result.structured_content is not None
    assert decoded.result.structured_content["when"] == "2026-01-02T03:04:05Z"
    assert decoded.result.structured_content["odd"].startswith("<object object")


@settings(max_examples=60, deadline=None)
@given(
    text=st.text(),
    data=st.binary(max_size=64),
    structured=st.dictionaries(
        st.text(max_size=8),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=8),
            lambda inner: st.lists(inner, max_size=3),
            max_leaves=6,
        ),
        max_size=4,
    ),
    kind=st.sampled_from([None, "failed", "timeout", "approval_denied"]),
)
def test_any_result_survives_the_json_form(
    text: str, data: bytes, structured: dict[str, Any], kind: Any
) -> None:
    result = ToolResult(
        content=(TextContent(text), ImageContent(data, "image/png")),
        structured_content=structured,
        is_error=kind is not None,
        error_kind=kind,
    )
    original = stored(state="failed" if kind else "completed", result=result, owner=None)
    assert decode_record(encode_record(original), 0) == original
