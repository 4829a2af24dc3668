"""``Listing.tool_choice``: every provider's tool-choice setting, over every declared tool or
narrowed to some, in the shape its SDK's own types take; the declaration left as it is; and
each choice a provider cannot express, or a name not declared, refused."""

from __future__ import annotations

from typing import Any

import pytest

import toolwire
from toolwire import ConfigurationError, Tool

pydantic = pytest.importorskip("pydantic")
openai_responses_params = pytest.importorskip("openai.types.responses.response_create_params")
openai_chat = pytest.importorskip("openai.types.chat")
anthropic_types = pytest.importorskip("anthropic.types")
genai_types = pytest.importorskip("google.genai.types")
interactions = pytest.importorskip("google.genai._gaos.types.interactions")


@toolwire.tool
def search_orders(customer: str) -> list[str]:
    """Find a customer's orders."""
    return []


@toolwire.tool
def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


NOTES = Tool(name="notes", description="Free-text notes.", kind="custom")
TOOLS = [search_orders, refund]


def sdk_check(provider: str) -> Any:
    """The provider's SDK type for its tool-choice setting, as a validating function."""
    match provider:
        case "openai-responses":
            return pydantic.TypeAdapter(openai_responses_params.ToolChoice).validate_python
        case "openai-chat":
            return pydantic.TypeAdapter(
                openai_chat.ChatCompletionToolChoiceOptionParam
            ).validate_python
        case "anthropic":
            return pydantic.TypeAdapter(anthropic_types.ToolChoiceParam).validate_python
        case "gemini":
            return genai_types.ToolConfig.model_validate
        case _:
            return lambda value: interactions.GenerationConfig.model_validate(
                {"tool_choice": value}
            )


PROVIDERS = ["openai-responses", "openai-chat", "anthropic", "gemini", "gemini-interactions"]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("mode", ["auto", "required", "none"])
def test_every_mode_over_every_tool_is_taken_by_the_sdk(provider: str, mode: str) -> None:
    listing = toolwire.tools(TOOLS, provider)
    declared = listing.tools
    sdk_check(provider)(listing.tool_choice(mode=mode))  # type: ignore[arg-type]
    assert listing.tools is declared  # nothing declared changes


@pytest.mark.parametrize("provider", [p for p in PROVIDERS if p != "anthropic"])
@pytest.mark.parametrize("mode", ["auto", "required"])
def test_a_turn_narrowed_to_some_tools_is_taken_by_the_sdk(provider: str, mode: str) -> None:
    listing = toolwire.tools(TOOLS, provider)
    choice = listing.tool_choice(["refund"], mode=mode)  # type: ignore[arg-type]
    sdk_check(provider)(choice)
    assert "refund" in repr(choice)
    assert "search_orders" not in repr(choice)


def test_gemini_narrows_with_validated_while_the_model_may_answer_in_text() -> None:
    listing = toolwire.tools(TOOLS, "gemini")
    assert listing.tool_choice(["refund", "search_orders"]) == {
        "functionCallingConfig": {
            "mode": "VALIDATED",
            "allowedFunctionNames": ["search_orders", "refund"],  # in declaration order
        }
    }
    assert listing.tool_choice(["refund"], mode="required")["functionCallingConfig"]["mode"] == (
        "ANY"
    )


def test_openai_names_a_custom_tool_as_custom() -> None:
    responses = toolwire.tools([*TOOLS, NOTES], "openai-responses").tool_choice(["notes"])
    assert responses["tools"] == [{"type": "custom", "name": "notes"}]
    chat = toolwire.tools([*TOOLS, NOTES], "openai-chat").tool_choice(["notes"])
    assert chat["allowed_tools"]["tools"] == [{"type": "custom", "custom": {"name": "notes"}}]
    sdk_check("openai-responses")(responses)
    sdk_check("openai-chat")(chat)


def test_anthropic_narrows_only_to_one_tool_the_model_must_call() -> None:
    listing = toolwire.tools(TOOLS, "anthropic")
    assert listing.tool_choice(["refund"], mode="required") == {"type": "tool", "name": "refund"}
    # Every declared tool is no narrowing at all.
    assert listing.tool_choice(["refund", "search_orders"]) == {"type": "auto"}
    with pytest.raises(ConfigurationError, match="only to one tool it must call"):
        listing.tool_choice(["refund"])
    sdk_check("anthropic")(listing.tool_choice(["refund"], mode="required"))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_what_no_provider_can_mean_is_refused(provider: str) -> None:
    listing = toolwire.tools(TOOLS, provider)
    with pytest.raises(ConfigurationError, match="which is not declared; declared: "):
        listing.tool_choice(["delete_everything"], mode="required")
    with pytest.raises(ConfigurationError, match="mode none allows no tool"):
        listing.tool_choice(["refund"], mode="none")
    with pytest.raises(ConfigurationError, match="give None for every declared tool"):
        listing.tool_choice([])
    with pytest.raises(ConfigurationError, match="not one string"):
        listing.tool_choice("refund")
    with pytest.raises(ConfigurationError, match="auto, required or none"):
        listing.tool_choice(mode="sometimes")  # type: ignore[arg-type]
