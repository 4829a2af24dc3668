from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
EXAMPLE = ROOT / "examples" / "weather_tools.py"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("toolwire")
    command = [exe] if exe else [sys.executable, "-m", "toolwire.cli"]
    return subprocess.run([*command, *args], capture_output=True, text=True, check=False, cwd=ROOT)


def test_declare_prints_the_gemini_tools_of_a_python_file() -> None:
    result = run("declare", str(EXAMPLE))
    assert result.returncode == 0, result.stderr
    [wrapper] = json.loads(result.stdout)
    names = [d["name"] for d in wrapper["functionDeclarations"]]
    assert names == ["get_weather", "set_alert", "list_stations"]
    assert all("parametersJsonSchema" in d for d in wrapper["functionDeclarations"])


def test_declare_in_openapi_mode() -> None:
    result = run("declare", str(EXAMPLE), "--schema", "openapi")
    assert result.returncode == 0, result.stderr
    declarations = json.loads(result.stdout)[0]["functionDeclarations"]
    assert declarations[1]["parameters"]["properties"]["level"] == {
        "type": "STRING",
        "enum": ["info", "warning", "severe"],
        "format": "enum",
        "description": "How serious the alert is.",
    }


def test_declare_reads_mcp_style_definitions(tmp_path: Path) -> None:
    source = tmp_path / "tools.jsonl"
    source.write_text(
        json.dumps(
            {
                "name": "read file",
                "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
            }
        )
        + "\n"
    )
    result = run("declare", str(source))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)[0]["functionDeclarations"][0]["name"] == "read_file"


@pytest.mark.parametrize("source", ["missing.py", "no_such_module_xyz", "missing.json"])
def test_a_bad_source_is_a_one_line_error(source: str) -> None:
    result = run("declare", source)
    assert result.returncode == 1
    assert result.stderr.startswith("toolwire: error:")
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("provider", "name_of"),
    [
        ("anthropic", lambda t: t["name"]),
        ("openai-chat", lambda t: t["function"]["name"]),
        ("openai-responses", lambda t: t["name"]),
    ],
)
def test_declare_for_every_provider(provider: str, name_of: object) -> None:
    result = run("declare", str(EXAMPLE), "--provider", provider)
    assert result.returncode == 0, result.stderr
    tools = json.loads(result.stdout)
    assert [name_of(t) for t in tools] == ["get_weather", "set_alert", "list_stations"]  # type: ignore[operator]
