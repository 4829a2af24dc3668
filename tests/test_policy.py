from __future__ import annotations

import warnings
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolwire
from toolwire import ConfigurationError, Policy, Rule, Tool, ToolwireWarning, tainted_by
from toolwire.policy import PolicyContext, may_ask


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


# -- may_ask: whether any call of a tool may need approval, judged before the call ---------------

_ANNOTATIONS: list[dict[str, Any] | None] = [
    None,
    {"readOnlyHint": True},
    {"destructiveHint": True},
    {"destructiveHint": False},
    {"readOnlyHint": True, "destructiveHint": True},
]
_TOOLS = st.builds(
    lambda name, server, annotations, changed: Tool(
        name=name, server_id=server, annotations=annotations, needs_approval=changed
    ),
    st.sampled_from(["get_issue", "merge_pr", "send"]),
    st.sampled_from([None, "github"]),
    st.sampled_from(_ANNOTATIONS),
    st.booleans(),
)
_WHEN: dict[str, Any] = {
    "always": None,
    "for alice": lambda c: c.principal == "alice",
    "reads the arguments": lambda c: c.arguments.get("force") is True,
    "reads the taint": tainted_by("web"),
    "raises": lambda c: 1 / 0,
}
_RULES = st.builds(
    lambda effect, pattern, when: Rule(effect, pattern, when=_WHEN[when]),
    st.sampled_from(["allow", "ask", "deny"]),
    st.sampled_from(["*", "get_*", "github/*", "github/merge_pr", "send", "other"]),
    st.sampled_from(list(_WHEN)),
)
_POLICIES = st.builds(
    lambda rules, default, destructive: Policy(*rules, default=default, destructive=destructive),
    st.lists(_RULES, max_size=4),
    st.sampled_from(["allow", "ask", "deny"]),
    st.sampled_from(["ask", "ignore"]),
)
_CALLS = [({}, frozenset()), ({"force": True}, frozenset()), ({}, frozenset({"web"}))]


@settings(max_examples=500, deadline=None)
@given(_POLICIES, _TOOLS, st.sampled_from([None, "alice", "bob"]))
def test_a_tool_no_call_of_which_may_need_approval_is_never_asked_about(
    policy: Policy, tool: Tool, principal: Any
) -> None:
    # may_ask None is a promise: whatever the call's arguments and taint, no ask.
    reason = may_ask(policy, tool, principal=principal)
    effects = {
        policy.evaluate(
            PolicyContext(tool=tool, arguments=arguments, principal=principal, taint=taint)
        ).effect
        for arguments, taint in _CALLS
    }
    if reason is None:
        assert "ask" not in effects
    if "ask" in effects:
        assert reason


def test_may_ask_names_why_a_call_may_need_approval() -> None:
    destructive = Tool(name="drop", annotations={"destructiveHint": True})
    assert may_ask(Policy(Rule("ask", "github/*")), merge_pr) == "policy rule 'github/*' asks"
    assert may_ask(Policy(default="ask"), local) == "the policy's default asks"
    assert may_ask(Policy(destructive="ask"), destructive) == (
        "its annotations do not declare it read-only or non-destructive"
    )
    changed = Tool(name="local_tool", needs_approval=True)
    assert may_ask(Policy(), changed) == (
        "the tool is new or its definition changed since it was approved"
    )
    # An allow for every call decides before the ask rule and the default.
    assert (
        may_ask(Policy(Rule("allow", "local_tool"), Rule("ask", "*"), default="ask"), local) is None
    )
    # A tool denied outright is never asked about.
    assert may_ask(Policy(Rule("deny", "*"), default="ask"), local) is None
    # An allow that depends on the call may not apply: the ask behind it may.
    behind = Policy(Rule("allow", "local_tool", when=tainted_by("web")), Rule("ask", "*"))
    assert may_ask(behind, local) == "policy rule '*' asks"


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_POLICIES, max_size=3),
    _TOOLS,
    st.sampled_from([None, "alice", "bob"]),
    st.sampled_from(_CALLS),
)
def test_policies_applied_together_deny_if_any_denies_else_ask_if_any_asks(
    policies: list[Policy], tool: Tool, principal: Any, call: tuple[dict[str, Any], frozenset[str]]
) -> None:
    arguments, taint = call
    context = PolicyContext(tool=tool, arguments=arguments, principal=principal, taint=taint)
    verdicts = [policy.evaluate(context) for policy in policies]
    together = Policy.all_of(*policies)
    expected = next((v for effect in ("deny", "ask") for v in verdicts if v.effect == effect), None)
    if expected is None:
        assert together.evaluate(context).effect == "allow"
    else:
        assert together.evaluate(context) == expected
    # What a listing leaves out, and the promise of no ask, hold for the policies together.
    outright = [policy.denies_outright(tool, principal=principal) for policy in policies]
    assert together.denies_outright(tool, principal=principal) == next(
        (why for why in outright if why is not None), None
    )
    if together.evaluate(context).effect == "ask":
        assert may_ask(together, tool, principal=principal)


def test_policies_applied_together_skip_evaluation_only_when_each_allows_everything() -> None:
    assert Policy.all_of(Policy(), Policy()).allows_everything
    assert Policy.all_of().allows_everything
    assert not Policy.all_of(Policy(), Policy(default="ask")).allows_everything
    # A tool that needs approval is still asked about: each policy asks about it.
    changed = Tool(name="local_tool", needs_approval=True)
    assert Policy.all_of(Policy(), Policy()).evaluate(ctx(changed)).effect == "ask"


def test_one_policy_applied_alone_is_itself_and_a_non_policy_is_refused() -> None:
    policy = Policy(Rule("deny", "send"))
    assert Policy.all_of(policy) is policy
    with pytest.raises(ConfigurationError, match="not a Policy"):
        Policy.all_of(policy, "deny *")  # type: ignore[arg-type]


def test_may_ask_of_policies_together_asks_what_each_would() -> None:
    asking = Policy(Rule("ask", "github/*"))
    together = Policy.all_of(Policy(), asking)
    assert may_ask(together, merge_pr) == "policy rule 'github/*' asks"
    assert together.may_ask(merge_pr) == "policy rule 'github/*' asks"
    # ... and nothing about a tool one of them denies outright.
    assert may_ask(Policy.all_of(asking, Policy(Rule("deny", "github/*"))), merge_pr) is None


# -- rules that match no tool of a listing ---------------------------------------------------

read_file = Tool(name="read_file", description="Read a file.", server_id="files")
get_forecast = Tool(name="get_forecast", description="A forecast.", server_id="weather")
own_tool = Tool(name="own_tool", description="Yours.")


def _listed_with_notes(policy: Policy, tools: list[Tool]) -> tuple[toolwire.Listing, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        listing = toolwire.tools(tools, "anthropic", policy=policy)
    assert all(issubclass(w.category, ToolwireWarning) for w in caught)
    assert all(w.filename == __file__ for w in caught)  # the caller's line, not toolwire's
    return listing, [str(w.message) for w in caught]


def _listing_notes(policy: Policy, tools: list[Tool]) -> list[str]:
    return _listed_with_notes(policy, tools)[1]


def test_an_allow_naming_a_servers_tool_by_its_bare_name_warns_with_the_identity_meant() -> None:
    policy = Policy(Rule("allow", "read_file"), default="deny")
    listing, [note] = _listed_with_notes(policy, [read_file, own_tool])
    assert note.startswith("policy rule allow 'read_file' matches no tool of the listing")
    assert "did you mean 'files/read_file'?" in note
    # and the rule is not widened: the server's tool is still denied, so left out
    assert "files__read_file" in listing.declaration.left_out
    assert listing.tools is None  # nothing left to declare


@pytest.mark.parametrize(
    ("pattern", "meant"),
    [
        ("get_*", "'weather/get_*'"),  # a bare glob: the same glob under the server
        ("weather__get_forecast", "'weather/get_forecast'"),  # the exposed name
        ("Files/Read_File", "'files/read_file'"),  # another case
    ],
)
def test_an_allow_written_with_another_name_of_a_servers_tool_says_which_was_meant(
    pattern: str, meant: str
) -> None:
    [note] = _listing_notes(Policy(Rule("allow", pattern)), [read_file, get_forecast])
    assert f"did you mean {meant}?" in note
    assert "an allow rule matches only a tool's canonical identity" in note


def test_a_rule_of_any_effect_that_matches_no_tool_warns_naming_the_tools() -> None:
    policy = Policy.all_of(
        Policy(Rule("deny", "delete-file"), Rule("ask", "payments/*")),
        Policy(Rule("allow", "nothing_like_it")),
    )
    notes = _listing_notes(policy, [read_file, own_tool])
    assert [note.partition(" matches")[0] for note in notes] == [
        "policy rule deny 'delete-file'",
        "policy rule ask 'payments/*'",
        "policy rule allow 'nothing_like_it'",
    ]
    assert all(note.endswith("(its tools: 'files/read_file', 'own_tool')") for note in notes)


def test_rules_that_match_some_tool_are_quiet_whatever_their_effect_or_condition() -> None:
    policy = Policy(
        Rule("allow", "files/read_*"),
        Rule("allow", "own_tool", when=lambda context: False),  # the pattern is what counts
        Rule("deny", "read_file"),  # deny and ask match every name a tool goes by
        Rule("ask", "weather__*"),
        default="deny",
    )
    assert _listing_notes(policy, [read_file, get_forecast, own_tool]) == []
    # the rule for a tool the policy leaves out of the listing still names a tool of it
    assert _listing_notes(Policy(Rule("deny", "own_tool")), [own_tool, read_file]) == []
