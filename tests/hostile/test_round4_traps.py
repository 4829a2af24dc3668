"""A new user's traps, attacked from outside once closed: a SQLite store given a URL or a
query, a tool argument without a type hint, a policy rule that matches no tool, and a gateway
with no policy in front of tools named to destroy. Each says so in one bounded line, never
with a credential or a hidden character in it, and never changes what a policy decides."""

from __future__ import annotations

import functools
import string
import sys
import warnings
from pathlib import Path
from typing import Any

import anyio
import pytest
from hostile_mcp_servers import stdio_args
from hypothesis import given, settings
from hypothesis import strategies as st

import toolwire
import toolwire.mcp
from toolwire import (
    ConfigurationError,
    Policy,
    Rule,
    SQLiteStore,
    StoreUnavailable,
    Tool,
    ToolSet,
    ToolwireWarning,
    tool,
)
from toolwire.mcp import Hub, StdioServer
from toolwire.policy import PolicyContext, unmatched_rules

BOUND = 60


def _notes(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, ToolwireWarning)]


# -- a SQLite store given a URL, or a query -------------------------------------------------


@pytest.mark.parametrize(
    "given_path",
    [
        "postgresql://app:s3cret-pw@db.internal/runs",
        "redis://:s3cret-pw@127.0.0.1:6379/0",
        "SQLite:///runs.db?key=s3cret-pw",
    ],
)
def test_a_url_given_as_a_sqlite_path_is_refused_without_repeating_its_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given_path: str
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigurationError, match="not a URL") as refused:
        SQLiteStore(given_path)
    assert "s3cret-pw" not in str(refused.value)
    assert list(tmp_path.rglob("*")) == []


def test_a_query_in_a_sqlite_path_is_refused_without_repeating_its_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigurationError, match=r"followed by a URL query \(key=\.\.\.&ttl") as e:
        SQLiteStore("runs.db?key=s3cret-pw&ttl=60")
    assert "s3cret-pw" not in str(e.value)
    assert list(tmp_path.iterdir()) == []


def test_a_huge_path_holding_a_query_gives_a_short_refusal(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError) as refused:
        SQLiteStore(
            str(tmp_path / ("x" * 100_000)) + "?" + "&".join(f"k{i}=v" for i in range(10**4))
        )
    assert len(str(refused.value)) < 1_500


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=string.ascii_letters + string.digits + "?#%&.-_ :=", max_size=30))
def test_a_file_name_is_refused_only_when_it_carries_a_query(name: str) -> None:
    """Names with a lone ``?`` (``what?.db``) stay names; ``x?key=`` is a query, refused before
    any file is touched. Never opened here (``create=False`` on a missing file)."""
    path = f"/nonexistent-{id(name)}/{name or 'x'}"
    carries_a_query = any(
        part[:1].isalpha() or part[:1] == "_"
        for part in name.split("?")[1:]
        if "=" in part and part.partition("=")[0].replace(".", "").replace("-", "").isidentifier()
    )
    if carries_a_query:
        with pytest.raises(ConfigurationError):
            SQLiteStore(path, create=False)
    else:
        with pytest.raises((StoreUnavailable, ConfigurationError)) as refused:
            SQLiteStore(path, create=False)
        assert isinstance(refused.value, StoreUnavailable), refused.value


# -- tool arguments without a type hint ------------------------------------------------------


def _said(make: Any) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        make()
    return _notes(caught)


def test_an_untyped_parameter_with_a_default_warns_and_any_value_still_passes() -> None:
    def search(query: str, limit=10):  # type: ignore[no-untyped-def]
        """Search."""
        return query

    made: list[Tool] = []
    [note] = _said(lambda: made.append(tool(search)))
    assert "tool 'search': parameter 'limit' without a type hint" in note
    checked = made[0].validate_arguments({"query": "q", "limit": {"nested": [1]}})
    assert checked["limit"] == {"nested": [1]}


def test_the_parameters_the_model_does_not_fill_are_never_named() -> None:
    class Repository:
        def find(self, number: int) -> str:
            """Find an issue."""
            return str(number)

    def lookup(connection, key: str) -> str:  # type: ignore[no-untyped-def]
        """Look a key up."""
        return key

    assert _said(lambda: tool(Repository().find)) == []  # `self` is bound
    assert _said(lambda: tool(functools.partial(lookup, "db"))) == []  # bound by position
    [note] = _said(lambda: tool(name="count", description="Count.")(lambda step: step + 1))
    assert "tool 'count': parameter 'step'" in note


def test_a_flood_of_untyped_parameters_is_named_five_and_counted() -> None:
    names = [f"p{i}" for i in range(40)]
    namespace: dict[str, Any] = {}
    exec(f'def wide({", ".join(names)}):\n    """Wide."""\n', namespace)
    [note] = _said(lambda: tool(namespace["wide"]))
    assert "'p0', 'p1', 'p2', 'p3', 'p4' and 35 more" in note
    assert len(note) < 400


# -- policy rules that match no tool -----------------------------------------------------------

_NAMES = st.sampled_from(["read_file", "get_forecast", "delete", "Search", "a.b"])
_SERVERS = st.sampled_from([None, "files", "weather", "a.b"])
_TOOLS = st.lists(
    st.builds(lambda name, server: Tool(name=name, server_id=server), _NAMES, _SERVERS),
    min_size=1,
    max_size=4,
    unique_by=lambda t: t.qualified_name,
)


def _allowed(policy: Policy, tools: list[Tool]) -> list[str]:
    return [
        t.qualified_name
        for t in tools
        if policy.evaluate(
            PolicyContext(tool=t, arguments={}, principal=None, taint=frozenset())
        ).effect
        == "allow"
    ]


@settings(max_examples=300, deadline=None)
@given(_TOOLS, st.data())
def test_the_identity_a_warning_suggests_allows_what_the_rule_named_and_the_rule_still_not(
    tools: list[Tool], data: st.DataObject
) -> None:
    """An allow naming tools by another name is never widened; written as the warning says,
    it allows them."""
    target = data.draw(st.sampled_from(tools))
    pattern = data.draw(
        st.sampled_from(
            [target.name, target.name.upper(), toolwire.ToolSet([target]).exposed_names[0]]
        )
    )
    policy = Policy(Rule("allow", pattern), default="deny")
    named = [
        (name, t) for name, t in zip(ToolSet(tools).exposed_names, ToolSet(tools), strict=True)
    ]
    notes = unmatched_rules(policy, named, "listing")
    before = _allowed(policy, tools)
    if not before:
        [note] = notes  # a rule that allows nothing says so
        if "did you mean" in note:
            said = note.rpartition("did you mean ")[2].rstrip("?").split(" or ")
            meant = Policy(*(Rule("allow", m.strip("'")) for m in said), default="deny")
            assert target.qualified_name in _allowed(meant, tools)
    else:
        assert notes == []
    assert _allowed(policy, tools) == before  # warned or not, it decides the same


@pytest.mark.parametrize(
    "pattern", ["read\u202efile", "read_file\n[[rules]]", "\udc80read_file", "x" * 100_000]
)
def test_a_rule_pattern_is_shown_escaped_and_cut(pattern: str) -> None:
    files = Tool(name="read_file", server_id="files")
    [note] = unmatched_rules(
        Policy(Rule("allow", pattern)), [("files__read_file", files)], "gateway"
    )
    assert "\u202e" not in note
    assert "\n" not in note
    note.encode("utf-8")  # no lone surrogate left: it can be printed and logged
    assert len(note) < 600


def test_the_tools_of_a_server_that_is_down_are_still_tools_its_rules_name() -> None:
    up = Tool(name="read_note", description="Read.", server_id="notes")
    down = Tool(name="search", description="Search.", server_id="wiki")

    class HalfDown:
        """A tool source one of whose servers is down (its tools as last listed)."""

        def as_toolset(self) -> ToolSet:
            return ToolSet([up])

        def unavailable_tools(self) -> dict[str, tuple[Tool, str]]:
            return {"wiki__search": (down, "server 'wiki' is down")}

    policy = Policy(Rule("allow", "notes/*"), Rule("ask", "wiki/search"), default="deny")
    assert _said(lambda: toolwire.tools(HalfDown(), "anthropic", policy=policy)) == []


def test_a_rule_repeated_across_policies_applied_together_is_noted_once() -> None:
    mine = Tool(name="mine", description="Mine.")
    together = Policy.all_of(Policy(Rule("deny", "drop_*")), Policy(Rule("deny", "drop_*")))
    assert len(_said(lambda: toolwire.tools([mine], "anthropic", policy=together))) == 1


# -- a gateway with no policy, and tools named to destroy ------------------------------------


async def _serve_notes(source: Any, **options: Any) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with anyio.fail_after(BOUND), anyio.CancelScope() as serving:
            await toolwire.mcp.serve(
                source,
                transport="http",
                port=0,
                on_listening=lambda url: serving.cancel(),
                **options,
            )
    return _notes(caught)


@pytest.mark.anyio
async def test_a_hostile_servers_hidden_delete_is_named_by_its_portable_name() -> None:
    # `delete\u200bfile` and `delete.file`: one hides the word with a zero-width space
    hub = Hub({"evil": StdioServer(command=sys.executable, args=stdio_args("hostile", "names"))})
    notes = [note for note in await _serve_notes(hub) if note.startswith("no policy")]
    [note] = notes
    assert "evil__delete_file" in note
    assert "\u200b" not in note


@pytest.mark.anyio
async def test_a_flood_of_destructive_names_is_named_ten_and_counted() -> None:
    tools = [
        Tool(name=f"delete_{i}", description="Delete.", handler=lambda: "gone") for i in range(50)
    ]
    [note] = await _serve_notes(tools)
    assert "delete_9 and 40 more" in note
    assert len(note) < 700


@pytest.mark.anyio
async def test_annotations_that_contradict_themselves_do_not_spare_a_destructive_name() -> None:
    contradiction = Tool(
        name="purge_cache",
        description="Purge.",
        handler=lambda: "purged",
        annotations={"readOnlyHint": True, "destructiveHint": True},
    )
    spared = Tool(
        name="purge_view",
        description="Purge a view.",
        handler=lambda: "purged",
        annotations={"readOnlyHint": True},
    )
    [note] = await _serve_notes([contradiction, spared])
    assert "every call of purge_cache runs" in note


@pytest.mark.anyio
async def test_a_source_modules_own_policy_counts_as_a_policy(tmp_path: Path) -> None:
    module = tmp_path / "own_policy_tools.py"
    module.write_text(
        "import toolwire\n\n\n"
        "@toolwire.tool\n"
        "def delete_everything() -> str:\n"
        '    """Delete everything."""\n'
        '    return "gone"\n\n\n'
        'policy = toolwire.Policy(toolwire.Rule("deny", "delete_everything"))\n'
    )
    assert await _serve_notes(str(module)) == []
