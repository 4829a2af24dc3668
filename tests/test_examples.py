"""Every file of ``examples/`` runs here, as a user would run it: the provider loops as
programs against the scripted model of ``docs_support.model`` (on 127.0.0.1), pointed at it
only by the SDKs' standard environment variables, with dummy keys; the others as programs
too (``weather_tools.py``, a module of tools, through ``toolwire declare`` and imported)."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from docs_support.model import RESULTS_TEXT, UNSET, environment, serve_model
from integrations.interactions_server import ScriptedInteractions

EXAMPLES = Path(__file__).parent.parent / "examples"
# The loop of each provider: the API paths it posts to, one call then the answer.
LOOPS = {
    "gemini_loop": ":generateContent",
    "anthropic_loop": "/v1/messages",
    "openai_chat_loop": "/v1/chat/completions",
    "openai_responses_loop": "/v1/responses",
}


def test_every_example_is_run_here() -> None:
    run_here = {*LOOPS, "mcp_hub", "approval_across_processes", "weather_tools", "dbos_workflow"}
    assert {path.stem for path in EXAMPLES.glob("*.py")} == run_here


def run_example(script: str, env: Mapping[str, str] | None = None) -> str:
    """Run ``examples/<script>`` as a program from its folder; its output, once it succeeded."""
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / script)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=EXAMPLES,
        env=None if env is None else {**os.environ, **env},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def model_server() -> Iterator[ScriptedInteractions]:
    yield from serve_model()


def model_environment(server: ScriptedInteractions) -> dict[str, str]:
    """The program's environment: the SDKs pointed at the model; the variables that would send
    them elsewhere left out."""
    env = {name: value for name, value in os.environ.items() if name not in UNSET}
    no_proxy = ",".join(filter(None, [env.get("NO_PROXY"), "127.0.0.1", "localhost"]))
    return env | environment(server) | {"NO_PROXY": no_proxy, "no_proxy": no_proxy}


@pytest.mark.parametrize("name", LOOPS)
def test_a_provider_loop_runs_against_the_scripted_model(
    name: str, model_server: ScriptedInteractions
) -> None:
    # The examples read their SDK's standard variables (key, base URL), as users run them.
    before = len(model_server.requests)
    output = run_example(f"{name}.py", model_environment(model_server)).strip()
    requests = model_server.requests[before:]
    assert [request.path.endswith(LOOPS[name]) for request in requests] == [True, True]
    # The model called get_weather (Lisbon); the loop ran it, sent the result, printed the answer.
    assert output.startswith(RESULTS_TEXT), output
    assert json.loads(output.removeprefix(RESULTS_TEXT)) == {
        "city": "Lisbon",
        "units": "celsius",
        "forecast": ["sunny"],
    }


def test_the_weather_tools_declare_from_the_command_line() -> None:
    toolwire_cli = [sys.executable, "-c", "import sys, toolwire.cli; sys.exit(toolwire.cli.main())"]
    for flags, key in (([], "parametersJsonSchema"), (["--schema", "openapi"], "parameters")):
        result = subprocess.run(
            [*toolwire_cli, "declare", "weather_tools.py", *flags],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
            cwd=EXAMPLES,
        )
        declarations = json.loads(result.stdout)[0]["functionDeclarations"]
        assert [d["name"] for d in declarations] == ["get_weather", "set_alert", "list_stations"]
        assert all(key in d for d in declarations)


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


def test_the_newcomer_script_goes_as_the_docs_say() -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES.parent / "scripts" / "newcomer.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "newcomer: every step went as the docs say"


def test_the_dbos_example_waits_for_a_decision_taken_in_another_process() -> None:
    pytest.importorskip("dbos")
    lines = run_example("dbos_workflow.py").splitlines()
    assert lines[0] == "waiting: transfer({'to': 'acme', 'amount': 120}) because moves money"
    assert lines[1].startswith("allow: run_")
    assert lines[2:] == ["answer: 2000", "answer: sent 120 EUR to acme"]


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
