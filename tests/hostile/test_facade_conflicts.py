"""The facade never drops what it is given: a listing's policy binds every call parsed against
it, and options an ``executor=`` would ignore are a ``ConfigurationError`` naming them."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

import toolwire
from toolwire import ConfigurationError, Executor, MemoryStore, Policy, Rule
from toolwire.approval import AutoApprove

RAN: list[str] = []


@toolwire.tool
def delete_everything() -> str:
    """Delete every file."""
    RAN.append("delete_everything")
    return "deleted"


@toolwire.tool
def read_file(path: str) -> str:
    """Read a file."""
    RAN.append(path)
    return "text"


DENY_DELETE = Policy(Rule("deny", "delete_everything"))
CALL = {
    "candidates": [
        {"content": {"role": "model", "parts": [{"functionCall": {"name": "delete_everything"}}]}}
    ]
}


@pytest.fixture(autouse=True)
def _nothing_ran() -> None:
    RAN.clear()


def _listing(policy: Policy | None = DENY_DELETE) -> toolwire.Listing:
    # The denied tool is left out of the declaration, so list it under another policy and
    # keep this one: what matters is the policy the listing binds its calls to.
    listing = toolwire.tools([delete_everything, read_file], "gemini")
    return toolwire.Listing(listing.declaration, None, policy)


def test_an_executor_without_the_listings_policy_is_refused_and_nothing_runs() -> None:
    with pytest.raises(ConfigurationError, match="policy"):
        toolwire.execute_tool_calls_sync(
            _listing(), CALL, executor=Executor([delete_everything, read_file])
        )
    assert RAN == []


def test_an_executor_with_the_listings_policy_denies_the_call() -> None:
    executor = Executor([delete_everything, read_file], policy=DENY_DELETE)
    outcome = toolwire.execute_tool_calls_sync(_listing(), CALL, executor=executor)
    assert RAN == []
    assert outcome.calls[0].result.error_kind == "denied"


def test_an_executor_of_another_policy_than_the_listings_is_refused() -> None:
    executor = Executor([delete_everything], policy=Policy(Rule("deny", "read_*")))
    with pytest.raises(ConfigurationError, match="listing"):
        toolwire.execute_tool_calls_sync(_listing(), CALL, executor=executor)
    assert RAN == []


def test_a_listing_without_a_policy_takes_any_executor() -> None:
    executor = Executor([delete_everything], policy=DENY_DELETE)
    outcome = toolwire.execute_tool_calls_sync(_listing(None), CALL, executor=executor)
    assert RAN == []
    assert outcome.calls[0].result.error_kind == "denied"


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("policy", DENY_DELETE),
        ("approver", AutoApprove()),
        ("timeout", 5.0),
        ("store", MemoryStore()),
        ("on_unknown", "raise"),
        ("before_call", [lambda call, context: None]),
        ("after_call", [lambda call, result, context: None]),
        ("on_interrupted", "rerun_idempotent"),
        ("wait_for_running", 1.0),
    ],
)
def test_an_option_beside_executor_is_refused_naming_it(option: str, value: Any) -> None:
    executor = Executor([delete_everything, read_file])
    with pytest.raises(ConfigurationError, match=option):
        toolwire.execute_tool_calls_sync(_listing(None), CALL, executor=executor, **{option: value})
    assert RAN == []


def test_every_conflicting_option_is_named_at_once() -> None:
    with pytest.raises(ConfigurationError) as raised:
        toolwire.execute_tool_calls_sync(
            _listing(None),
            CALL,
            executor=Executor([delete_everything]),
            policy=DENY_DELETE,
            timeout=3.0,
        )
    assert "policy" in str(raised.value)
    assert "timeout" in str(raised.value)


def test_the_old_form_with_an_executor_and_a_policy_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="policy"):
        toolwire.execute_tool_calls_sync(
            [delete_everything],
            "gemini",
            CALL,
            executor=Executor([delete_everything]),
            policy=DENY_DELETE,
        )
    assert RAN == []


def test_options_at_their_defaults_beside_executor_are_not_a_conflict() -> None:
    outcome = toolwire.execute_tool_calls_sync(
        _listing(None),
        CALL,
        executor=Executor([delete_everything], policy=DENY_DELETE),
        before_call=(),
        after_call=[],
        on_unknown="answer",
    )
    assert outcome.calls[0].result.error_kind == "denied"


def test_a_toolset_beside_a_listing_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="toolset"):
        toolwire.execute_tool_calls_sync(
            _listing(None), CALL, toolset=toolwire.ToolSet([read_file])
        )
    assert RAN == []


def test_genai_helpers_refuse_a_toolset_beside_an_executor() -> None:
    genai = pytest.importorskip("toolwire.integrations.genai")
    executor = Executor([delete_everything], policy=DENY_DELETE)
    calls = [{"name": "delete_everything", "args": {}}]
    with pytest.raises(ConfigurationError, match="toolset"):
        anyio.run(
            lambda: genai.run_function_calls(calls, executor=executor, toolset=[delete_everything])
        )
    assert RAN == []


def test_a_listing_made_by_tools_binds_its_argument_dependent_policy() -> None:
    secret = Policy(Rule("deny", "read_file", when=lambda c: c.arguments.get("path") == "/key"))
    listing = toolwire.tools([read_file], "gemini", policy=secret)
    response = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [{"functionCall": {"name": "read_file", "args": {"path": "/key"}}}],
                }
            }
        ]
    }
    with pytest.raises(ConfigurationError, match="policy"):
        toolwire.execute_tool_calls_sync(listing, response, executor=Executor([read_file]))
    outcome = toolwire.execute_tool_calls_sync(
        listing, response, executor=Executor([read_file], policy=secret)
    )
    assert outcome.calls[0].result.error_kind == "denied"
    assert RAN == []
