from __future__ import annotations

import pytest

from toolwire.demo.live import MODELS, live_model


@pytest.mark.parametrize("provider", sorted(MODELS))
def test_live_drivers_build_their_sdk_client_and_start_the_conversation(provider: str) -> None:
    # No request is sent: building the official client needs no network.
    model = live_model(provider, "test-key", None, [], with_mcp=True)
    assert model.label == f"{provider} ({MODELS[provider]}, live)"
    [first] = model.history
    assert first["role"] == "user"
    assert "travel notes" in str(first)
