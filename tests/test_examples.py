from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parent.parent / "examples"
LOOPS = ["gemini_loop", "anthropic_loop", "openai_chat_loop", "openai_responses_loop"]


@pytest.mark.parametrize("name", LOOPS)
def test_provider_examples_import_with_their_sdks(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # They need an API key to run; importing checks the SDK names and toolwire calls they use.
    monkeypatch.syspath_prepend(str(EXAMPLES))
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert callable(module.main)


def run_example(script: str) -> str:
    """Run ``examples/<script>`` as a program from its folder; its output, once it succeeded."""
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / script)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=EXAMPLES,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_mcp_hub_example_runs_without_a_key() -> None:
    output = run_example("mcp_hub.py")
    assert '"name": "notes__find_notes"' in output
    assert "oslo: Pack boots." in output
    assert "Denied: not in this example." in output
    assert "2 contents to append; taint now ['notes']" in output


def test_the_approval_example_resumes_across_three_processes() -> None:
    lines = run_example("approval_across_processes.py").splitlines()
    assert "  waiting for a human: transfer({'to': 'acme', 'amount': 120})" in lines
    assert any(line.startswith("  approved tw_") and "(by ops-lead)" in line for line in lines)
    assert "  transfer({'to': 'acme', 'amount': 120}): money leaves the company" in lines
    assert lines[-2:] == [
        '  {"name": "get_balance", "response": {"output": "ops: 1,000 EUR"}}  (from the store)',
        '  {"name": "transfer", "response": {"output": "sent 120 EUR to acme"}}  (ran now)',
    ]


def test_the_example_tools_take_their_service_as_context_never_from_the_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import anyio

    import toolwire
    from toolwire.providers import get_provider, provider_names

    monkeypatch.syspath_prepend(str(EXAMPLES))
    weather = importlib.import_module("weather_tools")
    for provider in provider_names():
        listing = toolwire.tools(weather.toolset, provider)
        assert "context" not in repr(listing.tools)
    listing = toolwire.tools(weather.toolset, "openai-chat")
    response = get_provider("openai-chat").response_for(
        [("c1", "get_weather", {"location": {"city": "Oslo"}, "days": 2})]
    )

    class Snowy(weather.Forecasts):  # type: ignore[misc, name-defined]
        def days(self, city: str, days: int) -> list[str]:
            return [f"snow in {city}"] * days

    outcome = anyio.run(lambda: toolwire.execute_tool_calls(listing, response, deps=Snowy()))
    assert outcome.calls[0].result.structured_content == {
        "city": "Oslo",
        "units": "celsius",
        "forecast": ["snow in Oslo", "snow in Oslo"],
    }
