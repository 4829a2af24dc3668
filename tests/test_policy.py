from __future__ import annotations

from typing import Any

import pytest

from toolwire import ConfigurationError, Policy, Rule, Tool, tainted_by
from toolwire.policy import PolicyContext


def ctx(tool: Tool, principal: Any = None, taint: frozenset[str] = frozenset()) -> PolicyContext:
    return PolicyContext(tool=tool, arguments={}, principal=principal, taint=taint)


get_issue = Tool(name="get_issue", server_id="github")
merge_pr = Tool(name="merge_pr", server_id="github")
pay = Tool(name="send", server_id="payments")
local = Tool(name="local_tool")


def test_deny_wins_over_any_earlier_allow() -> None:
    policy = Policy(Rule("allow", "github/*"), Rule("deny", "github/merge_*"))
    assert policy.evaluate(ctx(merge_pr)).effect == "deny"
    assert policy.evaluate(ctx(get_issue)).effect == "allow"


def test_first_matching_allow_or_ask_decides() -> None:
    policy = Policy.of(allow=["github/get_*"], ask=["github/*"], default="deny")
    assert policy.evaluate(ctx(get_issue)).effect == "allow"
    assert policy.evaluate(ctx(merge_pr)).effect == "ask"
    verdict = policy.evaluate(ctx(pay))
    assert verdict.effect == "deny"
    assert verdict.reason == "denied by the default policy"


def test_bare_tool_names_match_too() -> None:
    assert Policy(Rule("deny", "local_*")).evaluate(ctx(local)).effect == "deny"
    assert Policy(Rule("deny", "get_issue")).evaluate(ctx(get_issue)).effect == "deny"


def test_rules_see_the_principal_and_the_taint() -> None:
    policy = Policy(
        Rule("deny", "payments/*", when=tainted_by("web"), reason="web content is in context"),
        Rule("ask", "*", when=lambda c: c.principal != "admin"),
    )
    assert policy.evaluate(ctx(pay, taint=frozenset({"web"}))).reason == (
        "web content is in context"
    )
    assert policy.evaluate(ctx(pay, principal="admin")).effect == "allow"
    assert policy.evaluate(ctx(pay, principal="bob")).effect == "ask"


def test_annotations_only_tighten() -> None:
    readonly = Tool(name="read", server_id="fs", annotations={"readOnlyHint": True})
    unannotated = Tool(name="write", server_id="fs")
    safe = Tool(name="touch", server_id="fs", annotations={"destructiveHint": False})
    policy = Policy(Rule("deny", "fs/read"), destructive="ask")
    assert policy.evaluate(ctx(readonly)).effect == "deny"  # a hint never loosens
    assert policy.evaluate(ctx(unannotated)).effect == "ask"
    assert policy.evaluate(ctx(safe)).effect == "allow"
    assert policy.evaluate(ctx(local)).effect == "allow"  # not a server's tool
    assert Policy().evaluate(ctx(unannotated)).effect == "allow"  # annotations ignored


def test_bad_effects_are_configuration_errors() -> None:
    with pytest.raises(ConfigurationError):
        Rule("maybe", "*")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        Policy(default="sometimes")  # type: ignore[arg-type]
