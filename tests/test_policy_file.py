"""Policies read from TOML and JSON files (toolwire.policy_file)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolwire import ConfigurationError, tool
from toolwire.policy import PolicyContext
from toolwire.policy_file import load_policy, policy_from_dict


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    return path


@tool(annotations={"destructiveHint": True})
def wipe() -> str:
    """Wipe."""
    return ""


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return path


def _effect(policy: Any, t: Any, principal: Any = None, taint: frozenset[str] = frozenset()) -> str:
    context = PolicyContext(tool=t, arguments={}, principal=principal, taint=taint)
    return str(policy.evaluate(context).effect)


TOML = """
default = "ask"
destructive = "ask"

[[rules]]
tool = "delete_*"
action = "deny"
reason = "no deleting"

[[rules]]
tool = "read_*"
action = "allow"
principals = ["alice"]

[[rules]]
tool = "read_*"
action = "deny"
taint = ["web"]
"""


def test_a_toml_policy_keeps_its_rules_default_and_destructive(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(TOML, encoding="utf-8")
    policy = load_policy(path)
    assert (policy.default, policy.destructive) == ("ask", "ask")
    assert _effect(policy, delete_file) == "deny"
    assert (
        policy.evaluate(
            PolicyContext(tool=delete_file, arguments={}, principal=None, taint=frozenset())
        ).reason
        == "no deleting"
    )
    assert _effect(policy, read_file, principal="alice") == "allow"
    assert _effect(policy, read_file, principal="bob") == "ask"  # the default
    assert _effect(policy, read_file, principal="alice", taint=frozenset({"web"})) == "deny"


def test_a_json_policy_reads_the_same(tmp_path: Path) -> None:
    path = tmp_path / "policy.json"
    path.write_text(
        json.dumps({"destructive": "ask", "rules": [{"tool": "wipe", "action": "allow"}]}),
        encoding="utf-8",
    )
    policy = load_policy(path)
    assert policy.default == "allow"
    assert _effect(policy, wipe) == "ask"  # destructive tightens an allow
    assert _effect(policy, read_file) == "allow"


@pytest.mark.parametrize(
    ("data", "named"),
    [
        ({"defualt": "deny"}, "'defualt'"),
        ({"default": "maybe"}, "'default'"),
        ({"destructive": "yes"}, "'destructive'"),
        ({"rules": {"tool": "x"}}, "'rules'"),
        ({"rules": [{"tool": "x", "action": "allow", "principal": ["a"]}]}, "'principal'"),
        ({"rules": [{"tool": "x"}]}, "rules[0]: missing 'action'"),
        ({"rules": [{"action": "deny"}]}, "rules[0]: missing 'tool'"),
        ({"rules": [{"tool": "x", "action": "block"}]}, "'action'"),
        ({"rules": [{"tool": "x", "action": "deny", "taint": "web"}]}, "'taint'"),
        ([], "an object"),
    ],
)
def test_a_bad_policy_is_a_configuration_error_naming_the_key(data: Any, named: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        policy_from_dict(data, where="p.toml")
    assert named in str(raised.value)
    assert str(raised.value).startswith("p.toml")


def test_an_unparsable_file_names_the_file_and_the_format(tmp_path: Path) -> None:
    path = tmp_path / "broken.toml"
    path.write_text("default = \n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match=r"broken\.toml is not valid TOML"):
        load_policy(path)
    with pytest.raises(ConfigurationError, match="cannot read policy file"):
        load_policy(tmp_path / "missing.json")
