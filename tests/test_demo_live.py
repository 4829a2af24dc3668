from __future__ import annotations

import pytest

from toolwire.demo.live import DRIVERS, live_model
from toolwire.errors import ConfigurationError
from toolwire.providers import get_provider, provider_names


@pytest.mark.parametrize("provider", provider_names())
def test_every_registered_provider_has_a_live_driver(provider: str) -> None:
    # No request is sent: building the official client needs no network.
    assert provider in DRIVERS
    model = live_model(provider, "test-key", None, [], with_mcp=True)
    assert model.label == f"{provider} ({get_provider(provider).PROFILE.default_model}, live)"
    [first] = model.history
    assert first.get("role") == "user" or first.get("type") == "user_input"
    assert "travel notes" in str(first)


def test_the_conversation_grows_by_each_turns_followup() -> None:
    model = live_model("openai-chat", "test-key", "gpt-x", None, with_mcp=False)
    model.add([{"role": "assistant", "content": None}, {"role": "tool", "tool_call_id": "c"}])
    assert [m["role"] for m in model.history] == ["user", "assistant", "tool"]


def test_a_provider_without_a_driver_says_to_run_the_script() -> None:
    with pytest.raises(ConfigurationError, match="--scripted"):
        live_model("nobody", "k", None, None, with_mcp=False)
