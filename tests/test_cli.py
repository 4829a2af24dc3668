from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from command_line import console_script, run_cli
from toolwire.providers import get_provider, provider_names

ROOT = Path(__file__).parent.parent
EXAMPLE = ROOT / "examples" / "weather_tools.py"


def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, env=env)


def assert_one_line_error(result: subprocess.CompletedProcess[str], message: str) -> None:
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("toolwire: error:"), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert message in result.stderr


def write_definitions(path: Path, names: list[str]) -> Path:
    path.write_text(
        json.dumps(
            [{"name": n, "inputSchema": {"type": "object", "properties": {}}} for n in names]
        )
    )
    return path


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


@pytest.mark.parametrize("command", ["declare", "call", "demo"])
def test_provider_help_lists_the_registered_providers_and_the_default(command: str) -> None:
    result = run(command, "--help", COLUMNS="200")  # wide: no name broken at its hyphen
    assert result.returncode == 0, result.stderr
    [line] = [line for line in result.stdout.splitlines() if line.startswith("  --provider")]
    assert ", ".join(provider_names()) in line
    assert "(default: gemini)" in line


def test_check_provider_help_lists_the_registered_providers() -> None:
    result = run("check", "--help", COLUMNS="200")
    [line] = [line for line in result.stdout.splitlines() if line.startswith("  --provider")]
    assert ", ".join(provider_names()) in line
    assert "default: all" in line


def test_declare_has_a_flag_for_each_declaration_option_the_command_line_can_spell() -> None:
    import dataclasses

    result = run("declare", "--help", COLUMNS="200")
    for name in provider_names():
        provider = get_provider(name)
        for field in dataclasses.fields(provider.Options):  # type: ignore[arg-type]
            if field.name in provider.PROFILE.declared_options and field.name != "native_tools":
                assert f"--{field.name.replace('_', '-')} " in result.stdout


def test_declare_no_strict_sends_every_openai_tool_without_strict_mode() -> None:
    strict = run("declare", str(EXAMPLE), "--provider", "openai-chat", "--strict")
    loose = run("declare", str(EXAMPLE), "--provider", "openai-chat", "--no-strict")
    assert strict.returncode == loose.returncode == 0, strict.stderr + loose.stderr
    assert True in {t["function"]["strict"] for t in json.loads(strict.stdout)}
    assert {t["function"]["strict"] for t in json.loads(loose.stdout)} == {False}


def test_declare_cache_control_last_marks_the_last_anthropic_tool() -> None:
    result = run("declare", str(EXAMPLE), "--provider", "anthropic", "--cache-control", "last")
    assert result.returncode == 0, result.stderr
    marks = [t.get("cache_control") for t in json.loads(result.stdout)]
    assert marks == [None, None, {"type": "ephemeral"}]


@pytest.mark.parametrize(
    ("provider", "option", "takes"),
    [
        ("gemini", ["--no-strict"], "gemini takes --schema, --backend"),
        ("anthropic", ["--schema", "openapi"], "anthropic takes --cache-control"),
        ("openai-responses", ["--cache-control", "last"], "takes --strict/--no-strict"),
    ],
)
def test_an_option_the_provider_does_not_take_is_a_one_line_error_naming_what_it_takes(
    provider: str, option: list[str], takes: str
) -> None:
    result = run("declare", str(EXAMPLE), "--provider", provider, *option)
    assert_one_line_error(result, f"is not an option of {provider}")
    assert takes in result.stderr
    assert result.stdout == ""


def test_an_empty_source_declares_null(tmp_path: Path) -> None:
    result = run("declare", str(write_definitions(tmp_path / "tools.json", [])))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) is None
    assert result.stderr.startswith("toolwire: warning: no tools to declare to gemini")


DEMO_SERVER = f"stdio:{sys.executable} -m toolwire.demo.server"


def test_check_over_the_corpus_reports_every_tool_and_provider(tmp_path: Path) -> None:
    result = run("check", str(ROOT / "tests" / "data" / "tools.jsonl"), "--json")
    reports = json.loads(result.stdout)
    assert len(reports) > 700
    statuses = {v["status"] for r in reports for v in r["verdicts"].values()}
    assert statuses <= {"accepted", "converted", "rejected", "skipped"}
    assert all(set(r["verdicts"]) == set(provider_names()) for r in reports)
    rejected = any(v["status"] == "rejected" for r in reports for v in r["verdicts"].values())
    over_limit = any("over_limit" in v for r in reports for v in r["verdicts"].values())
    assert result.returncode == (1 if rejected or over_limit else 0), result.stderr
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


def test_check_names_a_rename_only_beyond_the_server_namespace(tmp_path: Path) -> None:
    source = tmp_path / "server_tools.py"
    source.write_text(
        "from toolwire import Tool\n\n"
        "tools = [\n"
        "    Tool(name='read_file', server_id='files'),\n"
        "    Tool(name='read file', server_id='files'),\n"  # made portable, then a collision
        "    Tool(name='list dir', server_id='files'),\n"  # made portable
        "    Tool(name='ping'),\n"
        "]\n"
    )
    result = run("check", str(source), "--provider", "gemini")
    assert result.returncode == 0, result.stderr
    labels = [line.split("  ")[0] for line in result.stdout.splitlines()[1:5]]
    assert labels == [
        "files__read_file",
        "files__read_file_2 (was read file)",
        "files__list_dir (was list dir)",
        "ping",
    ]


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


def test_check_reports_more_tools_than_a_provider_takes(tmp_path: Path) -> None:
    limit = get_provider("openai-chat").PROFILE.max_tools
    assert limit is not None
    source = write_definitions(tmp_path / "many.json", [f"tool_{i}" for i in range(limit + 1)])
    table = run("check", str(source), "--provider", "anthropic", "--provider", "openai-chat")
    assert table.returncode == 1
    assert table.stderr.splitlines() == [
        f"toolwire: warning: openai-chat: {limit + 1} tools, but OpenAI Chat Completions "
        f"takes at most {limit} in one request"
    ]
    summary = table.stdout.splitlines()[-1]
    assert "anthropic: 0 rejected," in summary
    assert "openai-chat: 0 rejected (over its tool limit)" in summary

    listed = run(
        "check", str(source), "--provider", "anthropic", "--provider", "openai-chat", "--json"
    )
    assert listed.returncode == 1
    reports = json.loads(listed.stdout)
    assert len(reports) == limit + 1  # still one entry per tool
    assert not any(r["verdicts"]["openai-chat"]["status"] == "rejected" for r in reports)
    assert all("takes at most" in r["verdicts"]["openai-chat"]["over_limit"] for r in reports)
    assert not any("over_limit" in r["verdicts"]["anthropic"] for r in reports)

    declared = run("declare", str(source), "--provider", "openai-chat")
    assert declared.returncode == 0, declared.stderr
    assert len(json.loads(declared.stdout)) == limit + 1
    [warning] = declared.stderr.splitlines()  # the library's warning, on one line
    assert warning.startswith(f"toolwire: warning: {limit + 1} tools are declared to openai-chat")


NOISY_SERVER = """\
import sys

print("noisy: starting up", file=sys.stderr, flush=True)
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("noisy")


@server.tool(description="Echo a text.", annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str) -> str:
    print("noisy: echoing", text, file=sys.stderr, flush=True)
    return text


server.run(transport="stdio")
"""


def test_a_stdio_server_s_stderr_goes_to_stderr_and_stdout_stays_json(tmp_path: Path) -> None:
    script = tmp_path / "noisy.py"
    script.write_text(NOISY_SERVER)
    source = f"stdio:{sys.executable} {script}"
    declared = run("declare", source)
    assert declared.returncode == 0, declared.stderr
    [wrapper] = json.loads(declared.stdout)
    assert [d["name"] for d in wrapper["functionDeclarations"]] == ["noisy__echo"]
    assert "noisy: starting up" in declared.stderr

    called = run("call", source, "noisy__echo", "--args", '{"text": "hi"}', "--json")
    assert called.returncode == 0, called.stderr
    assert json.loads(called.stdout)["ok"] is True
    assert "noisy: echoing hi" in called.stderr
    assert "noisy:" not in called.stdout


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


DANGEROUS_TOOLS = """\
import toolwire


@toolwire.tool
def delete_everything(path: str) -> str:
    \"\"\"Delete everything under a path.\"\"\"
    return f"deleted {path}"


@toolwire.tool(annotations={"readOnlyHint": True})
def look(path: str) -> str:
    \"\"\"Look at a path.\"\"\"
    return f"looked at {path}"
"""


def call_json(*args: str, **env: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    result = run("call", *args, "--args", '{"path": "/srv"}', "--json", **env)
    return result, json.loads(result.stdout)


def test_call_asks_before_a_python_tool_that_is_not_read_only(tmp_path: Path) -> None:
    source = tmp_path / "tools.py"
    source.write_text(DANGEROUS_TOOLS)
    # No terminal to ask on (stdin is not one): refused at once, with the way out.
    refused, body = call_json(str(source), "delete_everything")
    assert refused.returncode == 1
    assert (body["ok"], body["error_kind"]) == (False, "approval_denied")
    [line] = refused.stderr.splitlines()
    assert line.startswith("toolwire: delete_everything(")
    assert "not declare it read-only" in line
    assert "pass --yes" in line

    approved, body = call_json(str(source), "delete_everything", "--yes")
    assert approved.returncode == 0, approved.stderr
    assert body["answer"]["functionResponse"]["response"] == {"output": "deleted /srv"}
    assert "approved (--yes)" in approved.stderr

    read_only, body = call_json(str(source), "look")
    assert read_only.returncode == 0, read_only.stderr
    assert body["ok"] is True
    assert read_only.stderr == ""


def test_call_runs_the_example_s_read_only_tool_and_asks_before_its_alert() -> None:
    # The README's command: get_weather is read-only by its annotations, set_alert is not.
    weather = run("call", str(EXAMPLE), "get_weather", "--args", '{"location": {"city": "Oslo"}}')
    assert weather.returncode == 0, weather.stderr
    assert json.loads(weather.stdout)["functionResponse"]["response"]["output"]["city"] == "Oslo"
    alert = run("call", str(EXAMPLE), "set_alert", "--args", '{"city": "Oslo", "level": "info"}')
    assert alert.returncode == 1
    assert "set_alert(" in alert.stderr
    assert "pass --yes" in alert.stderr


@pytest.mark.parametrize("name", ["policy", "POLICY"])
def test_call_applies_the_policy_the_module_defines(tmp_path: Path, name: str) -> None:
    source = tmp_path / "tools.py"
    source.write_text(
        DANGEROUS_TOOLS
        + f"\n{name} = toolwire.Policy(toolwire.Rule('deny', 'delete_*', reason='never'))\n"
    )
    denied, body = call_json(str(source), "delete_everything", "--yes")  # --yes: not a deny
    assert denied.returncode == 1
    assert body["error_kind"] == "denied"
    assert body["answer"]["functionResponse"]["response"] == {"error": "Denied: never."}


def test_call_applies_a_policy_file_and_the_module_s_policy_both(tmp_path: Path) -> None:
    source = tmp_path / "tools.py"
    source.write_text(DANGEROUS_TOOLS + "\npolicy = toolwire.Policy(default='ask')\n")
    policy = tmp_path / "policy.toml"
    policy.write_text('[[rules]]\ntool = "delete_*"\naction = "deny"\n')
    # The file denies; the module's policy would only ask, and --yes would approve that.
    denied, body = call_json(str(source), "delete_everything", "--policy", str(policy), "--yes")
    assert (denied.returncode, body["error_kind"]) == (1, "denied")
    # The module's policy asks about a read-only tool the file allows.
    asked, body = call_json(str(source), "look", "--policy", str(policy))
    assert (asked.returncode, body["error_kind"]) == (1, "approval_denied")
    assert "pass --yes" in asked.stderr
    # The file alone, on a module without a policy of its own.
    source.write_text(DANGEROUS_TOOLS)
    policy.write_text('default = "deny"\n')
    denied, body = call_json(str(source), "look", "--policy", str(policy))
    assert (denied.returncode, body["error_kind"]) == (1, "denied")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("policy = 'strict'", "`policy` is not a toolwire.Policy but str"),
        (
            "policy = toolwire.Policy()\nPOLICY = toolwire.Policy()",
            "defines both `policy` and `POLICY`",
        ),
    ],
)
def test_a_module_policy_that_cannot_be_applied_is_a_one_line_error(
    tmp_path: Path, extra: str, message: str
) -> None:
    source = tmp_path / "tools.py"
    source.write_text(DANGEROUS_TOOLS + "\n" + extra + "\n")
    result = run("call", str(source), "look", "--args", '{"path": "/"}')
    assert_one_line_error(result, message)
    assert result.stdout == ""


def test_a_package_s_submodule_named_policy_is_not_its_policy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from toolwire.cli import main

    package = tmp_path / "team_pkg_with_policy_module"
    package.mkdir()
    (package / "policy.py").write_text("RULES = []\n")
    (package / "__init__.py").write_text(DANGEROUS_TOOLS + "\nfrom . import policy\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    args = ["--args", '{"path": "/srv"}']
    assert main(["call", f"{package.name}:look", "look", *args]) == 0, capsys.readouterr().err
    assert "looked at /srv" in capsys.readouterr().out
    assert main(["call", f"{package.name}:delete_everything", "delete_everything", *args]) == 1
    assert "pass --yes" in capsys.readouterr().err  # still asked: no policy loosened it


def test_call_with_a_policy_file_that_cannot_be_read_is_a_one_line_error(tmp_path: Path) -> None:
    source = tmp_path / "tools.py"
    source.write_text(DANGEROUS_TOOLS)
    result = run("call", str(source), "look", "--policy", str(tmp_path / "nowhere.toml"))
    assert_one_line_error(result, "cannot read policy file nowhere.toml")


HINT = st.one_of(st.booleans(), st.none(), st.just("true"), st.just(1))


@given(
    annotations=st.dictionaries(
        st.sampled_from(["readOnlyHint", "destructiveHint", "idempotentHint", "title"]), HINT
    )
)
def test_call_asks_about_a_python_tool_as_about_the_same_tool_of_a_server(
    annotations: dict[str, Any],
) -> None:
    from toolwire import Policy, Tool
    from toolwire._cli.calling import call_policy
    from toolwire.policy import PolicyContext

    def verdict(policy: Policy, server: str | None) -> str:
        tool = Tool(name="t", server_id=server, annotations=annotations or None)
        context = PolicyContext(tool=tool, arguments={}, principal=None, taint=frozenset())
        return policy.evaluate(context).effect

    served = verdict(Policy(destructive="ask"), "srv")
    assert verdict(call_policy([]), None) == served
    assert verdict(call_policy([]), "srv") == served
    # Only a promise spares it: readOnlyHint true (without destructiveHint) or destructiveHint
    # false, each the boolean itself.
    read_only, destructive = annotations.get("readOnlyHint"), annotations.get("destructiveHint")
    promised = destructive is False or (read_only is True and destructive is None)
    assert (served == "allow") == promised


@pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal")
@pytest.mark.parametrize(
    ("typed", "ran"), [("y\n", True), ("yes\n", True), ("n\n", False), ("", False)]
)
def test_call_asks_on_the_terminal_and_runs_only_on_yes(
    tmp_path: Path, typed: str, ran: bool
) -> None:
    import pty

    source = tmp_path / "tools.py"
    source.write_text(DANGEROUS_TOOLS)
    command = console_script()
    main_end, terminal = pty.openpty()
    try:
        os.write(main_end, typed.encode() if typed else b"\x04")  # \x04: end of input
        result = subprocess.run(
            [*command, "call", str(source), "delete_everything", "--args", '{"path": "/srv"}'],
            stdin=terminal,
            capture_output=True,
            text=True,
            check=False,
            cwd=ROOT,
            timeout=120,
            env={**os.environ, "NO_COLOR": "1"},
        )
    finally:
        os.close(terminal)
        os.close(main_end)
    # The question goes to stderr: stdout is the answer alone.
    assert 'delete_everything({"path": "/srv"}) needs approval' in result.stderr
    assert result.stderr.rstrip().endswith("Run it? [y/N]")
    answer = json.loads(result.stdout)["functionResponse"]["response"]
    if ran:
        assert (result.returncode, answer) == (0, {"output": "deleted /srv"})
    else:
        assert (result.returncode, answer) == (1, {"error": "Denied: the user said no."})


@pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal")
def test_call_s_question_shows_hidden_characters_as_escapes_and_says_so(tmp_path: Path) -> None:
    import pty

    source = tmp_path / "tools.py"
    source.write_text(DANGEROUS_TOOLS)
    command = console_script()
    tricky = "/srv/app/\u202egol.dlo"  # shows as /srv/app/old.log on a terminal
    main_end, terminal = pty.openpty()
    try:
        os.write(main_end, b"n\n")
        result = subprocess.run(
            [
                *command,
                "call",
                str(source),
                "delete_everything",
                "--args",
                json.dumps({"path": tricky}, ensure_ascii=False),
            ],
            stdin=terminal,
            capture_output=True,
            text=True,
            check=False,
            cwd=ROOT,
            timeout=120,
            env={**os.environ, "NO_COLOR": "1"},
        )
    finally:
        os.close(terminal)
        os.close(main_end)
    assert "\u202e" not in result.stderr  # the character itself never reaches the terminal
    assert 'delete_everything({"path": "/srv/app/\\u202egol.dlo"}) needs approval' in result.stderr
    assert "careful: hidden characters" in result.stderr
    assert result.returncode == 1  # it was answered no


@pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal and SIGINT")
def test_ctrl_c_at_the_question_ends_call_at_once_and_runs_nothing(tmp_path: Path) -> None:
    import pty
    import signal

    source = tmp_path / "tools.py"
    source.write_text(DANGEROUS_TOOLS.replace('return f"deleted {path}"', "return 1 / 0"))
    command = console_script()
    main_end, terminal = pty.openpty()
    process = subprocess.Popen(
        [*command, "call", str(source), "delete_everything", "--args", '{"path": "/srv"}'],
        stdin=terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env={**os.environ, "NO_COLOR": "1"},
    )
    try:
        assert process.stderr is not None
        asked = b""
        while not asked.endswith(b"[y/N] "):  # the question is up: the call waits for it
            byte = process.stderr.read(1)
            assert byte, asked
            asked += byte
        process.send_signal(signal.SIGINT)
        out, _ = process.communicate(timeout=60)  # no line typed: it must not wait for one
    finally:
        process.kill()
        os.close(terminal)
        os.close(main_end)
    assert process.returncode == 130
    assert out == b""  # nothing ran, no answer


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


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("tools.json", b'{"name": ', "not valid JSON"),
        ("tools.json", b"\xff\xfe[", "cannot read"),
        ("tools.py", b"def broken(:\n", "SyntaxError"),
        (
            "tools.py",
            b"x = 1\nraise RuntimeError('boom')\n",
            "RuntimeError: boom (tools.py, line 2)",
        ),
    ],
)
def test_a_broken_source_file_is_a_one_line_error(
    tmp_path: Path, name: str, content: bytes, message: str
) -> None:
    (tmp_path / name).write_bytes(content)
    assert_one_line_error(run("declare", str(tmp_path / name)), message)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["declare", str(EXAMPLE), "--provider", "nope"], "invalid choice: 'nope'"),
        (["check", str(EXAMPLE), "--provider", "nope"], "invalid choice: 'nope'"),
        (["declare", str(EXAMPLE), "--schema", "yaml"], "invalid choice: 'yaml'"),
        (["declare"], "required: source"),
        (["call", str(EXAMPLE), "get_weather", "--timeout", "soon"], "invalid float value"),
    ],
)
def test_usage_errors_are_one_line_too(args: list[str], message: str) -> None:
    result = run(*args)
    assert_one_line_error(result, message)
    assert f"(see toolwire {args[0]} --help)" in result.stderr


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


@pytest.mark.parametrize(
    "command",
    [
        ["pending"],
        ["pending", "--json"],
        ["history", "r1"],
        ["decide", "r1", "c1", "allow"],
        ["respond", "r1", "c1", "{}"],
    ],
    ids=" ".join,
)
def test_a_command_on_runs_made_elsewhere_refuses_a_sqlite_file_that_is_not_there(
    tmp_path: Path, command: list[str]
) -> None:
    typo = tmp_path / "typo.db"
    result = run(*command, "--store", f"sqlite:///{typo}")
    assert_one_line_error(result, "typo.db'): no such database file")
    assert result.stdout == ""
    assert list(tmp_path.iterdir()) == []  # nothing created


def test_a_command_on_runs_made_elsewhere_refuses_a_memory_store(tmp_path: Path) -> None:
    assert_one_line_error(run("pending", "--store", "memory://"), "new, empty store")


def test_history_of_a_run_that_is_not_there_is_an_error_naming_it(tmp_path: Path) -> None:
    import anyio

    from toolwire.store import CallRecord, SQLiteStore

    path = tmp_path / "runs.db"

    async def one_run() -> None:
        async with SQLiteStore(path) as store:
            record = CallRecord(call_id="c1", tool="pay", fingerprint="f" * 16, state="pending")
            await store.swap("r1", None, record)

    anyio.run(one_run)
    url = f"sqlite:///{path}"
    assert run("history", "r1", "--store", url).returncode == 0
    result = run("history", "no-such-run", "--store", url)
    assert_one_line_error(result, "no run 'no-such-run' in SQLiteStore(")
    assert result.stdout == ""


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://someone:hunter2@127.0.0.1:{port}/runs",
        "redis://:hunter2@127.0.0.1:{port}/0",
    ],
    ids=["postgres", "redis"],
)
@pytest.mark.parametrize("command", [["pending"], ["history", "r1"]], ids=" ".join)
def test_an_unreachable_store_server_is_one_line_without_its_password(
    url: str, command: list[str]
) -> None:
    import socket

    with socket.socket() as s:  # a loopback port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = run(*command, "--store", url.format(port=port))
    assert_one_line_error(result, f"127.0.0.1:{port}")  # one line: no pool retries logged
    assert "hunter2" not in result.stderr


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
    command = console_script()
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


def test_check_assesses_the_declaration_the_options_ask_for() -> None:
    source = str(ROOT / "tests" / "data" / "tools.jsonl")
    strict = json.loads(
        run("check", source, "--provider", "anthropic", "--strict", "--json").stdout
    )
    plain = json.loads(run("check", source, "--provider", "anthropic", "--json").stdout)
    strict_notes = [n for r in strict for n in r["verdicts"]["anthropic"]["notes"]]
    assert any(n.startswith("strict: spends") for n in strict_notes)
    assert any(n.startswith("sent without strict (") for n in strict_notes)
    assert not any("strict" in n for r in plain for n in r["verdicts"]["anthropic"]["notes"])
    refused = run("check", source, "--provider", "gemini", "--strict")
    assert refused.returncode != 0
    assert "--strict/--no-strict is not an option of gemini" in refused.stderr


def test_check_json_shows_titles_and_safe_icons(tmp_path: Path) -> None:
    icon = {"src": "https://example.com/w.png", "mimeType": "image/png", "sizes": ["48x48"]}
    source = tmp_path / "tools.json"
    source.write_text(
        json.dumps(
            [
                {
                    "name": "weather",
                    "title": "Weather",
                    "icons": [icon, {"src": "javascript:alert(1)"}],
                    "inputSchema": {"type": "object", "properties": {}},
                },
                {
                    "name": "plain",
                    "annotations": {"title": "Plain tool"},
                    "inputSchema": {"type": "object", "properties": {}},
                },
                {"name": "bare", "inputSchema": {"type": "object", "properties": {}}},
            ]
        )
    )
    result = run("check", str(source), "--provider", "anthropic", "--json")
    assert result.returncode == 0, result.stderr
    reports = {r["name"]: r for r in json.loads(result.stdout)}
    assert reports["weather"]["title"] == "Weather"
    assert reports["weather"]["icons"] == [icon]  # the javascript: one is dropped
    assert reports["plain"]["title"] == "Plain tool"  # annotations.title stands in
    assert "icons" not in reports["plain"]
    assert set(reports["bare"]) == {"name", "exposed_name", "verdicts"}


def test_pending_names_a_damaged_record_and_lists_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import sqlite3

    import anyio

    from toolwire import ApprovalPending, DeferredApproval, Executor, Policy, ToolSet, make_call
    from toolwire import tool as make_tool
    from toolwire.cli import main
    from toolwire.store import from_url

    url = f"sqlite:///{tmp_path / 'runs.db'}"

    @make_tool
    def pay(amount: int) -> str:
        """Pay."""
        return f"paid {amount}"

    tools = ToolSet([pay])

    async def turn(run_id: str) -> Any:
        executor = Executor(
            tools, store=from_url(url), policy=Policy(default="ask"), approver=DeferredApproval()
        )
        return await executor.run(
            [make_call(tools, "pay", {"amount": 5}, call_id="c1")], run_id=run_id
        )

    for run_id in ("intact", "damaged"):
        with pytest.raises(ApprovalPending):
            anyio.run(turn, run_id)
    with sqlite3.connect(tmp_path / "runs.db") as db:
        db.execute(
            "UPDATE toolwire_calls SET record = json_set(record, '$.request', 'x')"
            " WHERE run_id = 'damaged'"
        )
    assert main(["pending", "--store", url]) == 1
    captured = capsys.readouterr()
    assert "intact  c1  pay" in captured.out
    assert "damaged: damaged  c1: the stored record of call 'c1' cannot be read" in captured.err
    assert main(["pending", "--store", url, "--json"]) == 1
    assert [r["run_id"] for r in json.loads(capsys.readouterr().out)] == ["intact"]


def _parsers() -> list[tuple[str, Any]]:
    """Every command's parser, by its command line (``toolwire``, ``toolwire mcp login``)."""
    import argparse

    from toolwire.cli import _parser

    found: list[tuple[str, Any]] = []
    stack = [("toolwire", _parser())]
    while stack:
        name, parser = stack.pop()
        found.append((name, parser))
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                stack.extend((f"{name} {sub}", p) for sub, p in action.choices.items())
    return found


def test_every_command_and_argument_says_what_it_is() -> None:
    import argparse

    missing = []
    for name, parser in _parsers():
        if parser.description is None:
            missing.append(f"{name}: no description")
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction | argparse._VersionAction):
                continue
            if isinstance(action, argparse._SubParsersAction):
                continue
            if not action.help:
                missing.append(f"{name}: {action.option_strings or action.dest} has no help")
    assert missing == []
    assert len(_parsers()) > 12


def test_option_help_names_the_api_it_applies_to_first() -> None:
    result = run("declare", "--help")
    flat = " ".join(result.stdout.split())
    assert "Anthropic Messages: mark the last tool so the tool list is cached" in flat
    assert "is cached of" not in flat


def test_a_python_file_with_an_attribute_is_a_source(tmp_path: Path) -> None:
    module = tmp_path / "my_tools.py"
    module.write_text(
        "import toolwire\n\n"
        "@toolwire.tool\n"
        "def ping() -> str:\n"
        '    """Answer pong."""\n'
        "    return 'pong'\n\n"
        "@toolwire.tool\n"
        "def other() -> str:\n"
        '    """Not in the set."""\n'
        "    return ''\n\n"
        "chosen = [ping]\n"
    )
    result = run("declare", f"{module}:chosen")
    assert result.returncode == 0, result.stderr
    [wrapper] = json.loads(result.stdout)
    assert [d["name"] for d in wrapper["functionDeclarations"]] == ["ping"]
    missing = run("declare", f"{module}:nothing")
    assert_one_line_error(missing, "has no attribute 'nothing'")


def test_a_stdio_server_is_named_by_name_or_by_the_package_it_runs() -> None:
    from toolwire.sources import _server_name

    assert _server_name(["npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp"]) == (
        "server_filesystem"
    )
    assert _server_name(["npx", "--package", "x", "mcp-remote@0.1.2"]) == "mcp_remote"
    assert _server_name(["uvx", "mcp-server-fetch"]) == "mcp_server_fetch"
    assert _server_name(["uvx", "--from", "git-mcp==1.0", "git-server"]) == "git_mcp"
    assert _server_name(["python", "-m", "notes.server"]) == "server"
    assert _server_name(["/usr/bin/node", "dist/index.js"]) == "node"
    server = f"stdio:{sys.executable} -m toolwire.demo.server"
    named = run("declare", server, "--name", "notes", "--provider", "anthropic")
    assert named.returncode == 0, named.stderr
    assert all(tool["name"].startswith("notes__") for tool in json.loads(named.stdout))
    refused = run("declare", str(EXAMPLE), "--name", "notes")
    assert_one_line_error(refused, "--name names the server of a stdio: or http(s):// SOURCE")
