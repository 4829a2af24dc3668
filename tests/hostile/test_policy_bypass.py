"""Policy matching fails closed: ``allow`` matches a tool's canonical identity only, ``deny`` and
``ask`` match every name a tool goes by, annotations only tighten, and a rule whose condition
raises never lets a call through nor raises out of the policy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolwire
from toolwire import Policy, Rule, Tool, tool
from toolwire.policy import PolicyContext

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[2]

INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u202e", "\u2066", "\U000e0041"]
FULLWIDTH_DELETE = "".join(chr(0xFF00 + ord(c) - 0x20) for c in "delete")  # NFKC: "delete"


def decide(policy: Policy, subject: Tool, exposed_name: str | None = None) -> str:
    context = PolicyContext(
        tool=subject, arguments={}, principal=None, taint=frozenset(), exposed_name=exposed_name
    )
    return policy.evaluate(context).effect


def server_tool(name: str, server: str = "files", **options: Any) -> Tool:
    return Tool(name=name, server_id=server, **options)


# -- the reproduction ----------------------------------------------------------------------------


def test_a_bare_allow_does_not_allow_a_servers_tool_of_that_name() -> None:
    policy = Policy(Rule("allow", "get_weather"), default="deny")
    assert decide(policy, Tool(name="get_weather")) == "allow"
    assert decide(policy, server_tool("get_weather", "evil")) == "deny"


def test_a_rule_in_the_exposed_form_denies_but_never_allows() -> None:
    read = server_tool("read")
    assert decide(Policy(Rule("deny", "files__*")), read) == "deny"
    assert decide(Policy(Rule("ask", "files__*")), read) == "ask"
    # An exposed name is not an identity: allowing by it allows nothing.
    assert decide(Policy(Rule("allow", "files__*"), default="deny"), read) == "deny"
    assert decide(Policy(Rule("deny", "files__*")), server_tool("read", "other")) == "allow"


@pytest.mark.parametrize(
    "name",
    [
        "delete_file",
        "delete.file",
        "delete\u200bfile",
        "delete\u2060_file",
        "delete\u202e_file",
        f"{FULLWIDTH_DELETE}_file",
        "delete file",
        "\U000e0041delete_file",
        "Delete_File",
        "DELETE.FILE",
        f"{FULLWIDTH_DELETE.upper()}_FILE",
    ],
)
def test_a_deny_catches_every_name_that_reads_the_same(name: str) -> None:
    subject = server_tool(name)
    assert decide(Policy(Rule("deny", "files/delete_file")), subject) == "deny"
    assert decide(Policy(Rule("deny", "delete_file")), subject) == "deny"
    assert decide(Policy(Rule("ask", "files/delete_*")), subject) == "ask"
    assert decide(Policy(Rule("deny", "files__delete_file")), subject) == "deny"
    # ... while an allow of the plain name does not allow the look-alike.
    allowed = decide(Policy(Rule("allow", "files/delete_file"), default="deny"), subject)
    assert allowed == ("allow" if name == "delete_file" else "deny")


def test_a_deny_matches_the_exposed_name_the_model_used() -> None:
    subject = server_tool("delete_file")  # exposed as files__delete_file_2 beside a clash
    policy = Policy(Rule("deny", "files__delete_file_2"))
    assert decide(policy, subject, exposed_name="files__delete_file_2") == "deny"
    assert decide(policy, subject) == "allow"


# -- what allow patterns mean --------------------------------------------------------------------


def test_allow_patterns_match_the_server_and_the_tool_name_apart() -> None:
    local, evil, good = Tool(name="search"), server_tool("search", "evil"), server_tool("search")
    nested = server_tool("a/search", "x")  # a tool name with a slash is not named "search"

    def allows(pattern: str) -> list[bool]:
        policy = Policy(Rule("allow", pattern), default="deny")
        return [decide(policy, t) == "allow" for t in (local, evil, good, nested)]

    assert allows("search") == [True, False, False, False]
    assert allows("*") == [True, False, False, False]  # "*" alone: tools without a server
    assert allows("*search") == [True, False, False, False]
    assert allows("*/search") == [False, True, True, False]
    assert allows("files/*") == [False, False, True, False]
    assert allows("*/*") == [False, True, True, True]
    assert allows("evil/sea?ch") == [False, True, False, False]


@settings(max_examples=1500, deadline=None)
@given(
    pattern=st.text(alphabet="ab_*?[]!", max_size=6),
    name=st.text(alphabet="ab_/.", min_size=1, max_size=6),
    server=st.text(alphabet="ab_", min_size=1, max_size=3),
)
def test_an_allow_pattern_without_a_slash_never_allows_a_servers_tool(
    pattern: str, name: str, server: str
) -> None:
    policy = Policy(Rule("allow", pattern), default="deny")
    assert decide(policy, server_tool(name, server)) == "deny"


@settings(max_examples=1500, deadline=None)
@given(
    plain=st.text(alphabet="abcdefgh_", min_size=1, max_size=10),
    hidden=st.lists(
        st.tuples(st.integers(min_value=0, max_value=10), st.sampled_from(INVISIBLE)),
        min_size=1,
        max_size=3,
    ),
)
def test_invisible_characters_never_slip_past_a_deny(
    plain: str, hidden: list[tuple[int, str]]
) -> None:
    name = plain
    for position, character in hidden:
        name = name[:position] + character + name[position:]
    subject = server_tool(name, "srv")
    assert decide(Policy(Rule("deny", f"srv/{plain}")), subject) == "deny"
    assert decide(Policy(Rule("ask", plain)), subject) == "ask"
    assert decide(Policy(Rule("allow", f"srv/{plain}"), default="deny"), subject) == "deny"


# -- annotations ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("annotations", "effect"),
    [
        (None, "ask"),  # MCP defaults: possibly destructive
        ({}, "ask"),
        ({"title": "Just a title"}, "ask"),
        ({"readOnlyHint": True}, "allow"),
        ({"destructiveHint": False}, "allow"),
        ({"readOnlyHint": True, "destructiveHint": False}, "allow"),
        ({"readOnlyHint": True, "destructiveHint": True}, "ask"),  # a contradiction tightens
        ({"readOnlyHint": False}, "ask"),
        ({"readOnlyHint": "true"}, "ask"),  # a promise is the boolean, not a look-alike
        ({"destructiveHint": 0}, "ask"),
        ({"readOnlyHint": True, "destructiveHint": "no"}, "ask"),
    ],
)
def test_a_servers_annotations_only_tighten(annotations: Any, effect: str) -> None:
    subject = server_tool("write", annotations=annotations)
    assert decide(Policy(destructive="ask"), subject) == effect
    assert decide(Policy(), subject) == "allow"  # annotations ignored
    assert decide(Policy(Rule("deny", "files/write"), destructive="ask"), subject) == "deny"


def test_a_python_tools_annotations_count_and_no_annotations_is_the_developers_own_code() -> None:
    @tool(annotations={"destructiveHint": True})
    def wipe() -> str:
        """Wipe everything."""
        return "wiped"

    @tool(annotations={"readOnlyHint": True, "destructiveHint": True})
    def peek() -> str:
        """Peek, destructively."""
        return "peeked"

    @tool(annotations={"readOnlyHint": True})
    def look() -> str:
        """Look."""
        return "looked"

    @tool
    def mine() -> str:
        """Do my own thing."""
        return "mine"

    policy = Policy(destructive="ask")
    assert [decide(policy, t) for t in (wipe, peek, look, mine)] == ["ask", "ask", "allow", "allow"]


def test_annotations_that_are_not_an_object_promise_nothing() -> None:
    subject = server_tool("write", annotations=["readOnlyHint"])  # type: ignore[arg-type]
    assert decide(Policy(destructive="ask"), subject) == "ask"


# -- conditions that raise -----------------------------------------------------------------------


class Unanswerable:
    def __bool__(self) -> bool:
        raise RuntimeError("no answer")


def boom(context: PolicyContext) -> bool:
    raise ZeroDivisionError("division by zero")


@pytest.mark.parametrize("when", [boom, lambda c: Unanswerable()])
def test_a_condition_that_raises_fails_closed(when: Any) -> None:
    subject = server_tool("read")
    denied = Policy(Rule("deny", "files/*", when=when)).evaluate(
        PolicyContext(tool=subject, arguments={}, principal=None, taint=frozenset())
    )
    assert denied.effect == "deny"
    assert denied.reason is not None
    assert "its condition raised" in denied.reason
    assert decide(Policy(Rule("ask", "*", when=when)), subject) == "ask"
    assert decide(Policy(Rule("allow", "files/*", when=when), default="deny"), subject) == "deny"
    assert decide(Policy(Rule("allow", "files/*", when=when), default="ask"), subject) == "ask"
    assert not Rule("allow", "files/*", when=when).matches(
        PolicyContext(tool=subject, arguments={}, principal=None, taint=frozenset())
    )


def test_rules_are_checked_when_made() -> None:
    with pytest.raises(toolwire.ConfigurationError):
        Rule("deny", 5)  # type: ignore[arg-type]
    with pytest.raises(toolwire.ConfigurationError):
        Rule("deny", "*", when="always")  # type: ignore[arg-type]


# -- through the hub and the command line --------------------------------------------------------

pytest.importorskip("mcp")
from hostile_mcp_servers import stdio_args  # noqa: E402
from provider_turns import PROVIDERS, response_for  # noqa: E402

from command_line import run_cli  # noqa: E402
from toolwire.mcp import Hub, StdioServer  # noqa: E402


def hostile(scenario: str) -> StdioServer:
    return StdioServer(command=sys.executable, args=stdio_args("hostile", scenario))


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_hidden_character_name_is_denied_through_the_whole_pipeline(provider: str) -> None:
    # The server lists "delete\u200bfile", exposed as evil__delete_file.
    with anyio.fail_after(60):
        async with Hub({"evil": hostile("names")}) as hub:
            calls = [("evil__delete_file", {}, "d"), ("evil__ok", {"text": "x"}, "o")]
            outcome = await toolwire.execute_tool_calls(
                hub,
                provider,
                response_for(provider, calls),
                policy=Policy(Rule("deny", "evil/delete_file"), Rule("allow", "delete_file")),
            )
    assert [c.result.error_kind for c in outcome.calls] == ["denied", None]


async def test_server_annotations_decide_who_is_asked_through_the_pipeline() -> None:
    asked: list[str] = []

    def approve(request: toolwire.ApprovalRequest) -> toolwire.Decision:
        asked.append(request.exposed_name)
        return toolwire.allow()

    names = ["contradiction", "read_only", "harmless", "unannotated", "title_only"]
    calls = [(f"evil__{name}", {"text": name}, name) for name in names]
    with anyio.fail_after(60):
        async with Hub({"evil": hostile("annotated")}) as hub:
            outcome = await toolwire.execute_tool_calls(
                hub,
                "anthropic",
                response_for("anthropic", calls),
                policy=Policy(destructive="ask"),
                approver=toolwire.CallbackApproval(approve),
            )
    assert [c.result.error_kind for c in outcome.calls] == [None] * 5
    assert asked == ["evil__contradiction", "evil__unannotated", "evil__title_only"]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    python_path = os.pathsep.join(p for p in [str(ROOT / "src"), os.environ.get("PYTHONPATH")] if p)
    return run_cli(*args, env={"NO_COLOR": "1", "PYTHONPATH": python_path})


def test_toolwire_call_asks_for_a_python_tool_annotated_destructive(tmp_path: Path) -> None:
    source = tmp_path / "risky_tools.py"
    source.write_text(
        textwrap.dedent(
            '''
            from toolwire import tool

            @tool(annotations={"destructiveHint": True})
            def wipe(path: str) -> str:
                """Wipe a path."""
                return f"wiped {path}"

            @tool
            def hello(name: str) -> str:
                """Say hello."""
                return f"hello {name}"

            tools = [wipe, hello]
            '''
        )
    )
    args = ["call", str(source), "wipe", "--args", '{"path": "x"}', "--json"]
    denied = cli(*args)
    assert denied.returncode == 1, denied.stderr
    assert json.loads(denied.stdout)["error_kind"] == "approval_denied"
    approved = cli(*args, "--yes")
    assert approved.returncode == 0, approved.stderr
    # No annotations: nothing promises it is harmless, so it is asked about too (as a
    # server's tool would be), and runs once approved.
    mine = cli("call", str(source), "hello", "--args", '{"name": "a"}', "--json")
    assert mine.returncode == 1, mine.stderr
    assert json.loads(mine.stdout)["error_kind"] == "approval_denied"
    mine = cli("call", str(source), "hello", "--args", '{"name": "a"}', "--json", "--yes")
    assert mine.returncode == 0, mine.stderr


def test_toolwire_call_asks_for_a_server_tool_whose_annotations_contradict(
    tmp_path: Path,
) -> None:
    config = tmp_path / "mcp.json"
    server = {"command": sys.executable, "args": stdio_args("hostile", "annotated")}
    config.write_text(json.dumps({"mcpServers": {"evil": server}}))
    for name, error_kind in [("contradiction", "approval_denied"), ("read_only", None)]:
        result = cli("call", str(config), f"evil__{name}", "--args", '{"text": "x"}', "--json")
        assert json.loads(result.stdout)["error_kind"] == error_kind, result.stderr


def test_a_deny_written_in_capitals_catches_the_lower_case_tool_too() -> None:
    assert decide(Policy(Rule("deny", "Files/Delete_*")), server_tool("delete_file")) == "deny"
    # An allow stays exact: case differences never widen it.
    allowed = decide(
        Policy(Rule("allow", "files/Delete_File"), default="deny"), server_tool("delete_file")
    )
    assert allowed == "deny"


@pytest.mark.anyio
@pytest.mark.parametrize(
    "decision", [toolwire.deny("customer 8 is protected"), toolwire.halt("stop")]
)
@pytest.mark.parametrize("resume_policy", [None, Policy(default="allow")])
async def test_a_human_deny_holds_whatever_the_resuming_policy_says(
    decision: Any, resume_policy: Policy | None
) -> None:
    deleted: list[int] = []

    def delete_customer(customer: int) -> str:
        deleted.append(customer)
        return f"customer {customer} deleted"

    subject = Tool(
        name="delete_customer",
        handler=delete_customer,
        input_schema={"type": "object", "properties": {"customer": {"type": "integer"}}},
    )
    store = toolwire.MemoryStore()
    response = response_for("anthropic", [("delete_customer", {"customer": 8}, "t1")])
    with pytest.raises(toolwire.ApprovalPending) as pending:
        await toolwire.execute_tool_calls(
            [subject],
            "anthropic",
            response,
            run_id="r",
            store=store,
            policy=Policy(Rule("ask", "delete_*")),
            approver=toolwire.DeferredApproval(),
        )
    await toolwire.decide("r", pending.value.pending[0].call_id, decision, store=store)
    outcome = await toolwire.execute_tool_calls(
        [subject], "anthropic", response, run_id="r", store=store, policy=resume_policy
    )
    assert deleted == []
    assert outcome.calls[0].result.error_kind == "approval_denied"
    assert outcome.halted is (decision.kind == "halt")
