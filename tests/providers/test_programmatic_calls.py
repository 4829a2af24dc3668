"""Programmatic tool calling, governed: a tool may allow code the model writes to call it
(Anthropic's ``allowed_callers``, OpenAI's ``programmatic``); a call made by code is parsed
with its caller, the policy sees it (``PolicyContext.caller``, ``called_by``, a policy file's
``callers``), the span and the run's history record it, the answer goes back as the API
requires (text, the program's ``caller`` on Responses), and ``followup`` keeps the caller on
the assistant turn. A caller that is malformed, of another code execution, or not allowed by
the tool is refused, and the tool never runs. A whole conversation runs through the anthropic
SDK's client against a scripted server on loopback."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolwire
from toolwire import Caller, MemoryStore, Policy, Rule, Tool, called_by
from toolwire.compat import check
from toolwire.errors import ConfigurationError
from toolwire.policy_file import policy_from_dict
from toolwire.providers import anthropic as anthropic_provider

pydantic = pytest.importorskip("pydantic")
anthropic_types = pytest.importorskip("anthropic.types")
responses_types = pytest.importorskip("openai.types.responses")
ANTHROPIC_TOOLS = pydantic.TypeAdapter(list[anthropic_types.ToolUnionParam])
ANTHROPIC_MESSAGES = pydantic.TypeAdapter(list[anthropic_types.MessageParam])
RESPONSES_TOOLS = pydantic.TypeAdapter(list[responses_types.ToolParam])
RESPONSES_INPUT = pydantic.TypeAdapter(responses_types.ResponseInputParam)

RAN: list[str] = []
CODE = "code_execution_20260120"


@pytest.fixture(autouse=True)
def _clear() -> Iterator[None]:
    RAN.clear()
    yield
    RAN.clear()


@toolwire.tool(callers=("direct", "code"))
def query_rows(region: str) -> dict[str, Any]:
    """Sales of one region."""
    RAN.append(f"query_rows {region}")
    return {"region": region, "revenue": len(region) * 100}


@toolwire.tool(callers=("direct", "code"), annotations={"destructiveHint": True})
def drop_table(table: str) -> str:
    """Drop a table."""
    RAN.append(f"drop_table {table}")
    return "dropped"


@toolwire.tool
def send_email(to: str) -> str:
    """Send an email."""
    RAN.append(f"send_email {to}")
    return "sent"


@toolwire.tool(callers="code")
def only_from_code(x: int) -> int:
    """Called by code only."""
    RAN.append("only_from_code")
    return x


TOOLS = [query_rows, drop_table, send_email, only_from_code]


def code_message(*calls: tuple[str, str, dict[str, Any]], caller: Any = None) -> dict[str, Any]:
    """An Anthropic message whose code execution calls tools."""
    made_by = caller if caller is not None else {"type": CODE, "tool_id": "srvtoolu_code"}
    return {
        "type": "message",
        "role": "assistant",
        "stop_reason": "tool_use",
        "content": [
            {
                "type": "server_tool_use",
                "id": "srvtoolu_code",
                "name": "code_execution",
                "input": {"code": "print(await query_rows('west'))"},
                "caller": {"type": "direct"},
            },
            *(
                {"type": "tool_use", "id": i, "name": n, "input": a, "caller": made_by}
                for i, n, a in calls
            ),
        ],
        "container": {"id": "container_1", "expires_at": "2026-12-02T10:00:00Z"},
    }


# -- declared -------------------------------------------------------------------------------------


def test_callers_are_checked_and_hashed() -> None:
    assert query_rows.callers == {"direct", "code"}
    assert send_email.callers == {"direct"}
    assert only_from_code.callers == {"code"}
    with pytest.raises(ConfigurationError, match="callers are 'direct' and/or 'code'"):
        Tool(name="t", callers=frozenset({"program"}))  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="callers are"):
        Tool(name="t", callers=frozenset())
    plain = Tool(name="t", description="d")
    assert plain.definition_hash == Tool(name="t", description="d").definition_hash
    coded = Tool(name="t", description="d", callers=frozenset({"direct", "code"}))
    assert coded.definition_hash != plain.definition_hash  # who may call it is in the definition
    with pytest.raises(ConfigurationError, match="called_by takes"):
        called_by("program")  # type: ignore[arg-type]


def test_anthropic_declares_allowed_callers_and_the_code_execution_tool() -> None:
    listing = toolwire.tools(TOOLS, "anthropic")
    ANTHROPIC_TOOLS.validate_python(listing.tools)
    by_name = {t["name"]: t for t in listing.tools}
    assert by_name["query_rows"]["allowed_callers"] == ["direct", CODE]
    assert by_name["only_from_code"]["allowed_callers"] == [CODE]
    assert "allowed_callers" not in by_name["send_email"]
    assert listing.tools[-1] == {"type": CODE, "name": "code_execution"}
    older = toolwire.tools(TOOLS, "anthropic", code_execution="code_execution_20250825")
    assert older.tools[-1]["type"] == "code_execution_20250825"
    plain = toolwire.tools([send_email], "anthropic")
    assert [t["name"] for t in plain.tools] == ["send_email"]


def test_responses_declares_programmatic_callers_and_its_tool() -> None:
    listing = toolwire.tools(TOOLS, "openai-responses")
    RESPONSES_TOOLS.validate_python(listing.tools)
    by_name = {t.get("name", t["type"]): t for t in listing.tools}
    assert by_name["query_rows"]["allowed_callers"] == ["direct", "programmatic"]
    assert by_name["only_from_code"]["allowed_callers"] == ["programmatic"]
    assert "allowed_callers" not in by_name["send_email"]
    assert listing.tools[-1] == {"type": "programmatic_tool_calling"}


@pytest.mark.parametrize("provider", ["gemini", "openai-chat", "gemini-interactions"])
def test_a_provider_without_programmatic_calls_says_so(provider: str) -> None:
    listing = toolwire.tools(TOOLS, provider)
    assert "allowed_callers" not in json.dumps(listing.tools)
    (both, only) = check([query_rows, only_from_code], [provider])
    assert "called by the model only: the API runs no code that calls tools" in (
        both.verdicts[0].notes
    )
    assert any("every call is refused" in note for note in only.verdicts[0].notes)


# -- parsed, governed, answered -------------------------------------------------------------


def test_a_call_from_code_carries_its_caller_to_the_policy_the_span_and_the_history() -> None:
    listing = toolwire.tools(TOOLS, "anthropic")
    message = code_message(("toolu_1", "query_rows", {"region": "west"}))
    (call,) = anthropic_provider.parse(message, listing.declaration)
    assert isinstance(call, toolwire.ToolCall)
    assert call.caller == Caller("code", CODE, "srvtoolu_code")
    seen: list[Any] = []
    policy = Policy(Rule("allow", "*", when=lambda c: seen.append(c.caller) or True))
    store = MemoryStore()
    outcome = toolwire.execute_tool_calls_sync(
        listing, message, policy=policy, store=store, run_id="run_code"
    )
    assert seen == [call.caller]
    assert RAN == ["query_rows west"]
    (trail,) = asyncio.run(toolwire.history("run_code", store=store))
    assert trail.caller == {"kind": "code", "type": CODE, "id": "srvtoolu_code"}
    assert trail.to_dict()["caller"] == trail.caller
    (answer,) = outcome.results
    assert answer == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": '{"region":"west","revenue":400}',
    }


def test_a_rule_denies_code_called_destructive_tools_and_direct_calls_still_run() -> None:
    policy = Policy(Rule("deny", "drop_table", when=called_by("code")), default="allow")
    listing = toolwire.tools(TOOLS, "anthropic", policy=policy)
    assert "drop_table" in listing.declaration.entries  # a rule on the caller leaves it listed
    from_code = toolwire.execute_tool_calls_sync(
        listing, code_message(("toolu_1", "drop_table", {"table": "sales"}))
    )
    assert from_code.calls[0].result.error_kind == "denied"
    direct = anthropic_provider.response_for([("toolu_2", "drop_table", {"table": "tmp"})])
    toolwire.execute_tool_calls_sync(listing, direct)
    assert RAN == ["drop_table tmp"]


def test_a_policy_file_names_callers() -> None:
    policy = policy_from_dict(
        {"rules": [{"tool": "query_*", "action": "deny", "callers": ["code"]}]}
    )
    listing = toolwire.tools(TOOLS, "anthropic", policy=policy)
    denied = toolwire.execute_tool_calls_sync(
        listing, code_message(("toolu_1", "query_rows", {"region": "x"}))
    )
    assert denied.calls[0].result.error_kind == "denied"
    assert RAN == []
    with pytest.raises(ConfigurationError, match="'callers' lists direct and/or code"):
        policy_from_dict({"rules": [{"tool": "*", "action": "deny", "callers": ["robot"]}]})


@pytest.mark.parametrize(
    ("caller", "why"),
    [
        ({"type": "code_execution_20250825", "tool_id": "srv"}, "which no tool was declared"),
        ({"type": CODE}, "of a shape the API does not send"),
        ({"type": CODE, "tool_id": 7}, "of a shape the API does not send"),
        ("code", "of a shape the API does not send"),
        ({"type": "robot", "tool_id": "x"}, "which no tool was declared"),
    ],
)
def test_a_caller_of_another_code_execution_or_shape_is_refused(caller: Any, why: str) -> None:
    listing = toolwire.tools(TOOLS, "anthropic")
    message = code_message(("toolu_1", "query_rows", {"region": "x"}), caller=caller)
    outcome = toolwire.execute_tool_calls_sync(listing, message)
    (answer,) = outcome.results
    assert answer["is_error"] is True
    assert why in answer["content"]
    assert RAN == []


def test_code_cannot_call_a_tool_only_the_model_may_call_and_vice_versa() -> None:
    listing = toolwire.tools(TOOLS, "anthropic")
    message = code_message(("toolu_1", "send_email", {"to": "a@example.com"}))
    (answer,) = toolwire.execute_tool_calls_sync(listing, message).results
    assert "cannot be called from code" in answer["content"]
    direct = anthropic_provider.response_for([("toolu_2", "only_from_code", {"x": 1})])
    (answer,) = toolwire.execute_tool_calls_sync(listing, direct).results
    assert "is called only from code" in answer["content"]
    assert RAN == []


def test_followup_keeps_the_caller_and_answers_only_with_tool_results() -> None:
    listing = toolwire.tools(TOOLS, "anthropic")
    message = code_message(
        ("toolu_1", "query_rows", {"region": "west"}),
        ("toolu_2", "query_rows", {"region": "east"}),
    )
    outcome = toolwire.execute_tool_calls_sync(listing, message)
    followup = outcome.followup(message)
    ANTHROPIC_MESSAGES.validate_python(followup)
    assistant, user = followup
    assert [b.get("caller") for b in assistant["content"][1:]] == [
        {"type": CODE, "tool_id": "srvtoolu_code"}
    ] * 2
    assert {b["type"] for b in user["content"]} == {"tool_result"}
    assert anthropic_provider.container_id(message) == "container_1"
    assert anthropic_provider.container_id({"type": "message", "content": []}) is None


def test_responses_answers_a_programs_call_with_its_caller() -> None:
    listing = toolwire.tools(TOOLS, "openai-responses")
    response = {
        "object": "response",
        "output": [
            {
                "type": "program",
                "id": "prog_1",
                "call_id": "pc_1",
                "code": "await query_rows({region: 'west'})",
                "fingerprint": "f",
            },
            {
                "type": "function_call",
                "call_id": "c1",
                "name": "query_rows",
                "arguments": json.dumps({"region": "west"}),
                "caller": {"type": "program", "caller_id": "pc_1"},
            },
            {
                "type": "function_call",
                "call_id": "c2",
                "name": "send_email",
                "arguments": json.dumps({"to": "x@example.com"}),
                "caller": {"type": "program", "caller_id": "pc_1"},
            },
            {
                "type": "function_call",
                "call_id": "c3",
                "name": "query_rows",
                "arguments": json.dumps({"region": "x"}),
                "caller": {"type": "program"},
            },
        ],
    }
    outcome = toolwire.execute_tool_calls_sync(listing, response)
    assert outcome.calls[0].item.caller == Caller("code", "program", "pc_1")  # type: ignore[union-attr]
    assert RAN == ["query_rows west"]
    first, refused, malformed = outcome.results
    assert first["caller"] == {"type": "program", "caller_id": "pc_1"}
    assert first["output"] == '{"region":"west","revenue":400}'
    assert "cannot be called from code" in refused["output"]
    assert "shape the API does not send" in malformed["output"]
    wellformed = {"object": "response", "output": response["output"][:3]}
    followup = toolwire.execute_tool_calls_sync(listing, wellformed).followup(wellformed)
    RESPONSES_INPUT.validate_python(followup)
    assert followup[1]["caller"] == {"type": "program", "caller_id": "pc_1"}
    assert followup[3]["caller"] == {"type": "program", "caller_id": "pc_1"}


# -- a whole conversation through the SDK --------------------------------------------------------


def test_a_conversation_of_code_calling_tools_through_the_anthropic_client() -> None:
    anthropic = pytest.importorskip("anthropic")
    from integrations.interactions_server import RawReply, Request, serve

    def message(content: list[dict[str, Any]], stop: str) -> RawReply:
        body = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-opus-4-6",
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
            "container": {"id": "container_1", "expires_at": "2026-12-02T10:00:00Z"},
        }
        return RawReply([json.dumps(body).encode()])

    def respond(request: Request) -> RawReply:
        last = request.body["messages"][-1]
        if last["role"] == "user" and isinstance(last["content"], str):
            asked = code_message(("toolu_1", "query_rows", {"region": "west"}))
            return message(asked["content"], "tool_use")
        return message([{"type": "text", "text": "West sold 400."}], "end_turn")

    server_iter = serve(respond=respond)
    server = next(server_iter)
    try:
        client = anthropic.Anthropic(api_key="test-key", base_url=server.base_url)
        listing = toolwire.tools(TOOLS, "anthropic")
        messages: list[Any] = [{"role": "user", "content": "Which region sold most?"}]
        reply = client.messages.create(
            model="claude-opus-4-6", max_tokens=100, messages=messages, tools=listing.tools
        )
        outcome = toolwire.execute_tool_calls_sync(listing, reply)
        messages += outcome.followup(reply)
        final = client.messages.create(
            model="claude-opus-4-6",
            max_tokens=100,
            messages=messages,
            tools=listing.tools,
            container=anthropic_provider.container_id(reply),
        )
        assert anthropic_provider.text(final) == "West sold 400."
        sent = server.bodies[-1]
        assert sent["container"] == "container_1"
        assistant, answers = sent["messages"][-2:]
        assert assistant["content"][1]["caller"] == {"type": CODE, "tool_id": "srvtoolu_code"}
        assert [b["type"] for b in answers["content"]] == ["tool_result"]
        assert RAN == ["query_rows west"]
    finally:
        server_iter.close()


# -- hostile callers -------------------------------------------------------------------------


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
CALLER_FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from([CODE, "code_execution_20250825", "direct", "program"]) | JSON,
        "tool_id": st.text(max_size=6) | JSON,
        "caller_id": st.text(max_size=6) | JSON,
    },
)


@settings(max_examples=300, deadline=None)
@given(caller=CALLER_FIELDS | JSON, provider=st.sampled_from(["anthropic", "openai-responses"]))
def test_any_caller_is_answered_and_runs_a_tool_only_when_well_formed(
    caller: Any, provider: str
) -> None:
    RAN.clear()
    listing = toolwire.tools(TOOLS, provider)
    if provider == "anthropic":
        response: Any = code_message(("toolu_1", "query_rows", {"region": "x"}), caller=caller)
        well_formed = caller is None or (
            isinstance(caller, dict)
            and (
                caller.get("type") == "direct"
                or (
                    caller.get("type") == CODE
                    and isinstance(caller.get("tool_id"), str)
                    and caller["tool_id"] != ""
                )
            )
        )
    else:
        response = {
            "object": "response",
            "output": [
                {
                    "type": "function_call",
                    "call_id": "c1",
                    "name": "query_rows",
                    "arguments": json.dumps({"region": "x"}),
                    "caller": caller,
                }
            ],
        }
        well_formed = caller is None or (
            isinstance(caller, dict)
            and (
                caller.get("type") == "direct"
                or (
                    caller.get("type") == "program"
                    and isinstance(caller.get("caller_id"), str)
                    and caller["caller_id"] != ""
                )
            )
        )
    outcome = toolwire.execute_tool_calls_sync(listing, response)
    assert len(outcome.results) == 1
    assert (["query_rows x"] if well_formed else []) == RAN
    assert (outcome.calls[0].result.error_kind is None) == well_formed


def test_a_custom_tool_called_from_code_carries_its_caller_to_the_policy() -> None:
    ran: list[str] = []

    @toolwire.tool(custom=True, callers=("direct", "code"))
    def run_sql(query: str) -> str:
        """Run SQL."""
        ran.append(query)
        return "ok"

    policy = Policy(Rule("deny", "run_sql", when=called_by("code")), default="allow")
    listing = toolwire.tools([run_sql], "openai-responses", policy=policy)
    program = {"type": "program", "caller_id": "prog_1"}
    response = {
        "object": "response",
        "output": [
            {
                "type": "custom_tool_call",
                "call_id": "c1",
                "name": "run_sql",
                "input": "DROP TABLE users",
                "caller": program,
            }
        ],
    }
    outcome = toolwire.execute_tool_calls_sync(listing, response)
    assert outcome.calls[0].result.error_kind == "denied"
    assert outcome.results[0]["caller"] == program
    assert ran == []


def test_a_policy_file_rule_with_no_callers_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="'callers' lists direct and/or code"):
        policy_from_dict({"rules": [{"tool": "*", "action": "deny", "callers": []}]})
