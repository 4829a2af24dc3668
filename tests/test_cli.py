from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).parent.parent
EXAMPLE = ROOT / "examples" / "weather_tools.py"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("toolwire")
    command = [exe] if exe else [sys.executable, "-m", "toolwire.cli"]
    return subprocess.run(
        [*command, *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        timeout=120,
        env={**os.environ, "GEMINI_API_KEY": "", "GOOGLE_API_KEY": "", "NO_COLOR": ""},
        stdin=subprocess.DEVNULL,
    )


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
    assert result.returncode == 2
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


DEMO_SERVER = f"stdio:{sys.executable} -m toolwire.demo.server"


def test_check_over_the_corpus_reports_every_tool_and_provider(tmp_path: Path) -> None:
    result = run("check", str(ROOT / "tests" / "data" / "tools.jsonl"), "--json")
    reports = json.loads(result.stdout)
    assert len(reports) > 700
    statuses = {v["status"] for r in reports for v in r["verdicts"].values()}
    assert statuses <= {"accepted", "converted", "rejected", "skipped"}
    assert all(
        set(r["verdicts"]) == {"gemini", "anthropic", "openai-chat", "openai-responses"}
        for r in reports
    )
    rejected = any(v["status"] == "rejected" for r in reports for v in r["verdicts"].values())
    assert result.returncode == (1 if rejected else 0), result.stderr
    # A converted verdict always says what changed.
    assert all(
        v["notes"]
        for r in reports
        for v in r["verdicts"].values()
        if v["status"] in ("converted", "rejected")
    )


def test_check_prints_a_plain_table_when_not_on_a_terminal() -> None:
    result = run("check", str(EXAMPLE), "--provider", "gemini", "--provider", "openai-chat")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["tool", "gemini", "openai-chat"]
    assert "\033[" not in result.stdout  # no colours off a terminal
    assert any(line.startswith("get_weather ") for line in lines)
    assert lines[-1].startswith("3 tool(s); gemini: 0 rejected")


def test_check_exits_non_zero_when_a_provider_rejects_a_tool(tmp_path: Path) -> None:
    source = tmp_path / "tools.json"
    source.write_text(
        json.dumps(
            [
                {"name": "ok", "inputSchema": {"type": "object", "properties": {}}},
                {
                    "name": "broken",
                    "inputSchema": {"type": "object", "properties": {"a": {"$ref": "#/x"}}},
                },
            ]
        )
    )
    result = run("check", str(source), "--json")
    assert result.returncode == 1
    verdicts = {r["name"]: r["verdicts"] for r in json.loads(result.stdout)}
    assert verdicts["ok"]["anthropic"]["status"] == "accepted"
    assert verdicts["broken"]["gemini"]["status"] == "rejected"
    assert "#/x" in verdicts["broken"]["gemini"]["notes"][0]


def test_check_and_call_an_mcp_server_over_stdio() -> None:
    result = run("check", DEMO_SERVER, "--json")
    assert result.returncode == 0, result.stderr
    assert [r["exposed_name"] for r in json.loads(result.stdout)] == [
        "server__find_notes",
        "server__delete_note",
    ]
    found = run("call", DEMO_SERVER, "server__find_notes", "--args", '{"word": "oslo"}')
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["functionResponse"]["response"] == {
        "output": {"result": ["oslo: Pack boots."]}
    }


def test_call_asks_before_a_destructive_server_tool_and_yes_approves() -> None:
    denied = run("call", DEMO_SERVER, "server__delete_note", "--args", '{"key": "old"}', "--json")
    assert denied.returncode == 1
    body = json.loads(denied.stdout)
    assert body["error_kind"] == "approval_denied"
    assert "pass --yes" in denied.stderr
    approved = run(
        "call",
        DEMO_SERVER,
        "server__delete_note",
        "--args",
        '{"key": "old"}',
        "--yes",
        "--provider",
        "anthropic",
        "--json",
    )
    assert approved.returncode == 0, approved.stderr
    assert json.loads(approved.stdout)["answer"] == {
        "type": "tool_result",
        "tool_use_id": "call_1",
        "content": "deleted old",
    }


def test_call_validates_arguments_and_answers_in_the_provider_shape() -> None:
    result = run(
        "call", str(EXAMPLE), "get_weather", "--args", '{"days": "x"}', "--provider", "openai-chat"
    )
    assert result.returncode == 1
    answer = json.loads(result.stdout)
    assert answer["role"] == "tool"
    assert answer["content"].startswith("Error: ")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["call", str(EXAMPLE), "nope"], "has no tool 'nope'"),
        (["call", str(EXAMPLE), "get_weather", "--args", "{"], "--args is not valid JSON"),
        (["check", "stdio:definitely-not-a-command-xyz"], "cannot reach the MCP server"),
        (["check", "http://127.0.0.1:9/mcp"], "cannot reach the MCP server"),
    ],
)
def test_errors_are_one_line_with_exit_status_2(args: list[str], message: str) -> None:
    result = run(*args)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("provider", ["gemini", "anthropic", "openai-chat", "openai-responses"])
def test_demo_runs_the_whole_loop_without_a_key(provider: str) -> None:
    result = run("demo", "--provider", provider)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "scripted model (no API key set" in out
    assert "✓ get_weather: " in out
    assert '"sky":"snow"' in out
    assert "✗ get_weather: invalid_arguments" in out
    assert "denied (no terminal to ask; pass --yes)" in out  # set_alert needs approval
    assert "the model answers" in out


def test_demo_with_mcp_and_yes_runs_the_server_tools() -> None:
    result = run("demo", "--mcp", "--yes")
    assert result.returncode == 0, result.stderr
    assert "✓ notes__find_notes: oslo: Pack boots." in result.stdout
    assert "✓ notes__delete_note: deleted old" in result.stdout
    assert "✓ set_alert: warning alert published for Oslo" in result.stdout


# -- the inbox on a run store, by URL -------------------------------------------------------------


def test_pending_decide_and_history_work_on_a_store_url(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import anyio

    from toolwire import (
        ApprovalPending,
        DeferredApproval,
        Executor,
        Policy,
        Rule,
        Tool,
        ToolSet,
        make_call,
    )
    from toolwire.cli import main
    from toolwire.store import from_url

    url = f"sqlite:///{tmp_path / 'runs.db'}"

    def pay(amount: int) -> str:
        return f"paid {amount}"

    tools = ToolSet([Tool(name="pay", input_schema={"type": "object"}, handler=pay)])
    calls = [make_call(tools, "pay", {"amount": 5}, call_id="c1")]

    async def turn() -> Any:
        executor = Executor(
            tools,
            store=from_url(url),
            policy=Policy(Rule("ask", "pay", reason="money")),
            approver=DeferredApproval(),
        )
        return await executor.run(calls, run_id="r1", principal="ana")

    with pytest.raises(ApprovalPending):
        anyio.run(turn)
    assert main(["pending", "--store", url, "--json"]) == 0
    [request] = json.loads(capsys.readouterr().out)
    assert (request["run_id"], request["call_id"], request["reason"]) == ("r1", "c1", "money")
    assert main(["pending", "--store", url, "--principal", "bob"]) == 0
    assert "nothing waits" in capsys.readouterr().out
    assert main(["decide", "r1", "c1", "allow", "--store", url, "--args", "[1]"]) == 2
    assert "--args must be a JSON object" in capsys.readouterr().err
    assert main(["decide", "r1", "c1", "allow", "--store", url, "--by", "ops"]) == 0
    [outcome] = anyio.run(turn)
    assert outcome.result.text == "paid 5"
    capsys.readouterr()
    assert main(["history", "r1", "--store", url]) == 0
    [trail] = json.loads(capsys.readouterr().out)
    assert trail["decided"]["by"] == "ops"
    assert trail["finished"]["state"] == "completed"
    assert main(["pending", "--store", "ftp://x"]) == 2


def test_a_module_of_the_current_directory_is_a_source(tmp_path: Path) -> None:
    (tmp_path / "my_team_tools.py").write_text(
        "import toolwire\n\n\n@toolwire.tool\ndef ping(host: str) -> str:\n"
        '    """Pings a host."""\n    return host\n\n\nTOOLS = [ping]\n'
    )
    # The console script (whose own directory, not the current one, starts its path).
    exe = shutil.which("toolwire", path=str(Path(sys.executable).parent)) or shutil.which(
        "toolwire"
    )
    if exe is None:
        pytest.skip("the toolwire console script is not installed")
    result = subprocess.run(
        [exe, "declare", "my_team_tools:TOOLS"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    [wrapper] = json.loads(result.stdout)
    assert [d["name"] for d in wrapper["functionDeclarations"]] == ["ping"]


def test_output_cut_off_by_its_reader_ends_without_a_traceback() -> None:
    exe = shutil.which("toolwire")
    command = [exe] if exe else [sys.executable, "-m", "toolwire.cli"]
    process = subprocess.Popen(
        [*command, "declare", str(ROOT / "tests" / "data" / "tools.jsonl")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert process.stdout is not None
    assert process.stdout.read(100)  # `| head -c 100`: far less than the declarations
    process.stdout.close()
    _, stderr = process.communicate(timeout=120)
    assert b"Traceback" not in stderr, stderr.decode()
    assert process.returncode == 141
