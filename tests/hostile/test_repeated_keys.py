"""A JSON configuration file that gives a key twice is refused, naming the key and the file.

Reproduction (issue 27, item 4): ``{"default": "deny", "default": "allow"}`` loaded as a policy
that allows, and a rule whose ``action`` was given twice (``deny``, then ``allow``) let
``delete_everything`` run: Python's ``json`` keeps the last value, while a person reading the
file sees the first. TOML already refused a repeated key. The same holds for every JSON file
toolwire reads configuration from: policy files, MCP configs (a server, its ``disabled`` or its
tool filters given twice) and tool-definition files.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolwire import ConfigurationError, tool
from toolwire._jsonfile import RepeatedKey
from toolwire.mcp.client._config import read_config
from toolwire.policy import PolicyContext
from toolwire.policy_file import load_policy

ROOT = Path(__file__).resolve().parents[2]


@tool
def delete_everything() -> str:
    """Delete everything."""
    return "gone"


def effect(policy: Any) -> str:
    context = PolicyContext(tool=delete_everything, arguments={}, principal=None, taint=frozenset())
    return str(policy.evaluate(context).effect)


def written(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# -- the reproduction ----------------------------------------------------------------------------


def test_a_json_policy_with_a_repeated_default_is_refused_naming_it(tmp_path: Path) -> None:
    path = written(tmp_path, "policy.json", '{"default": "deny", "default": "allow"}')
    with pytest.raises(RepeatedKey) as refused:
        load_policy(path)
    assert isinstance(refused.value, ConfigurationError)
    assert (refused.value.key, refused.value.path) == ("default", "")
    assert "policy.json" in str(refused.value)
    assert "'default'" in str(refused.value)


def test_a_json_policy_rule_with_a_repeated_action_is_refused_naming_it(tmp_path: Path) -> None:
    text = (
        '{"default": "deny", "rules": [{"tool": "read_*", "action": "allow"},'
        ' {"tool": "delete_*", "action": "deny", "action": "allow"}]}'
    )
    with pytest.raises(RepeatedKey) as refused:
        load_policy(written(tmp_path, "policy.json", text))
    assert (refused.value.key, refused.value.path) == ("action", "rules[1]")
    assert "policy.json" in str(refused.value)
    # the same policy, each key once, denies: the repeat was the only way to loosen it
    once = '{"default": "deny", "rules": [{"tool": "delete_*", "action": "deny"}]}'
    assert effect(load_policy(written(tmp_path, "once.json", once))) == "deny"


def test_toml_refuses_the_same_repeats(tmp_path: Path) -> None:
    for text in (
        'default = "deny"\ndefault = "allow"\n',
        '[[rules]]\ntool = "delete_*"\naction = "deny"\naction = "allow"\n',
    ):
        with pytest.raises(ConfigurationError):
            load_policy(written(tmp_path, "policy.toml", text))


def test_a_policy_nested_past_the_stack_is_a_configuration_error(tmp_path: Path) -> None:
    deep = '{"rules": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with pytest.raises(ConfigurationError):
        load_policy(written(tmp_path, "policy.json", deep))


# -- every place, every depth: hypothesis ------------------------------------------------------

EFFECT = st.sampled_from(["allow", "ask", "deny"])
GLOB = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)
RULE = st.fixed_dictionaries(
    {"tool": GLOB, "action": EFFECT},
    optional={
        "reason": st.text(max_size=20),
        "principals": st.lists(st.text(max_size=8), max_size=3),
        "taint": st.lists(st.text(max_size=8), max_size=3),
    },
)
POLICY = st.fixed_dictionaries(
    {},
    optional={
        "default": EFFECT,
        "destructive": st.sampled_from(["ask", "ignore"]),
        "rules": st.lists(RULE, max_size=4),
    },
)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10) | EFFECT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=6,
)


def objects(value: Any) -> list[dict[str, Any]]:
    """Every non-empty object in ``value``, in document order."""
    found: list[dict[str, Any]] = []
    if isinstance(value, dict):
        if value:
            found.append(value)
        for item in value.values():
            found += objects(item)
    elif isinstance(value, list):
        for item in value:
            found += objects(item)
    return found


def dumps_repeating(value: Any, target: dict[str, Any], key: str, extra: Any, before: bool) -> str:
    """``value`` as JSON, ``target`` giving ``key`` a second time (``extra``), before or after
    its own."""
    if isinstance(value, dict):
        members = [(k, v) for k, v in value.items()]
        if value is target:
            at = [k for k, _ in members].index(key) + (0 if before else 1)
            members.insert(at, (key, extra))
        inner = ", ".join(
            f"{json.dumps(k)}: {dumps_repeating(v, target, key, extra, before)}" for k, v in members
        )
        return "{" + inner + "}"
    if isinstance(value, list):
        return "[" + ", ".join(dumps_repeating(v, target, key, extra, before) for v in value) + "]"
    return json.dumps(value)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(policy=POLICY, data=st.data())
def test_a_policy_with_a_key_repeated_anywhere_is_always_refused(
    tmp_path: Path, policy: dict[str, Any], data: st.DataObject
) -> None:
    # the policy as written, each key once, loads: only the repeat makes it an error
    load_policy(written(tmp_path, "once.json", json.dumps(policy)))
    candidates = objects(policy)
    if not candidates:  # {}: nothing to repeat
        return
    target = data.draw(st.sampled_from(candidates), label="object")
    key = data.draw(st.sampled_from(sorted(target)), label="key")
    extra = data.draw(JSON_VALUES | st.just(target[key]), label="second value")
    before = data.draw(st.booleans(), label="second value first")
    text = dumps_repeating(policy, target, key, extra, before)
    with pytest.raises(RepeatedKey) as refused:
        load_policy(written(tmp_path, "policy.json", text))
    assert refused.value.key == key
    assert "policy.json" in str(refused.value)


# -- MCP configs and tool definitions --------------------------------------------------------------

REPEATED_CONFIGS = {
    "a filter loosened": (
        '{"mcpServers": {"files": {"command": "files-server",'
        ' "exclude": ["delete_*"], "exclude": []}}}',
        "exclude",
        "mcpServers.files",
    ),
    "a disabled server enabled": (
        '{"mcpServers": {"shell": {"command": "sh-server", "disabled": true, "disabled": false}}}',
        "disabled",
        "mcpServers.shell",
    ),
    "a server given twice": (
        '{"servers": {"files": {"command": "safe-server"}, "files": {"command": "other-server"}}}',
        "files",
        "servers",
    ),
    "two servers objects": (
        '{"mcpServers": {}, "mcpServers": {"x": {"command": "x"}}}',
        "mcpServers",
        "",
    ),
    "with comments (JSONC)": (
        '{\n  // VS Code style\n  "servers": {"files": {"command": "files-server",'
        ' "include": ["read_*"], "include": ["*"],}}\n}',
        "include",
        "servers.files",
    ),
}


@pytest.mark.parametrize("case", list(REPEATED_CONFIGS))
def test_an_mcp_config_with_a_repeated_key_is_refused_naming_it(tmp_path: Path, case: str) -> None:
    text, key, where = REPEATED_CONFIGS[case]
    path = written(tmp_path, "mcp.json", text)
    with pytest.raises(RepeatedKey) as refused:
        read_config(path)
    assert (refused.value.key, refused.value.path) == (key, where)
    assert "mcp.json" in str(refused.value)


def test_a_tool_definitions_file_with_a_repeated_key_is_one_line_from_the_cli(
    tmp_path: Path,
) -> None:
    definitions = written(
        tmp_path,
        "tools.json",
        '[{"name": "wipe", "inputSchema": {"type": "object"},'
        ' "annotations": {"destructiveHint": true, "destructiveHint": false}}]',
    )
    done = subprocess.run(
        [sys.executable, "-m", "toolwire.cli", "check", str(definitions)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode != 0
    (line,) = done.stderr.strip().splitlines()
    assert "tools.json" in line
    assert "'destructiveHint'" in line
    assert "[0].annotations" in line


@pytest.mark.anyio
async def test_an_approvers_edit_with_a_repeated_key_is_refused_and_nothing_is_decided() -> None:
    pytest.importorskip("starlette")
    import httpx

    import toolwire
    from toolwire import Executor, MemoryStore, Policy
    from toolwire.approval import ApprovalPending, DeferredApproval
    from toolwire.executor import make_call
    from toolwire.inbox import app

    @toolwire.tool
    def move(path: str) -> str:
        """Move a file."""
        return path

    store = MemoryStore()
    executor = Executor(
        [move], policy=Policy(default="ask"), approver=DeferredApproval(), store=store
    )
    with pytest.raises(ApprovalPending):
        await executor.run(
            [make_call(executor.toolset, "move", {"path": "/tmp/a"}, call_id="c1")], run_id="r"
        )
    transport = httpx.ASGITransport(app=app(store, authorize=lambda request: "ana"))
    async with httpx.AsyncClient(transport=transport, base_url="http://console") as client:
        answer = await client.post(
            "/api/runs/r/calls/c1/decision",
            content='{"decision": "allow", "arguments": {"path": "/tmp/a", "path": "/etc"}}',
            headers={"X-Toolwire-Inbox": "1", "Content-Type": "application/json"},
        )
    assert answer.status_code == 400
    assert "'path'" in answer.json()["error"]["message"]
    assert [request.call_id for request in await toolwire.pending(store=store)] == ["c1"]
