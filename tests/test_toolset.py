from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolwire import NameCollisionError, Tool, ToolNotFound, ToolSet
from toolwire.tool import exposed_name_for

PORTABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")


def t(name: str, server: str | None = None) -> Tool:
    return Tool(name=name, server_id=server)


def test_names_of_server_tools_are_namespaced() -> None:
    ts = ToolSet([t("read_file", "files"), t("search", "web"), t("local")])
    assert ts.exposed_names == ("files__read_file", "web__search", "local")


def test_sanitizing_is_deterministic_and_portable() -> None:
    assert exposed_name_for("my tool/v2.1") == "my_tool_v2_1"
    assert exposed_name_for("3d") == "_3d"
    assert exposed_name_for("x", "my.server") == "my_server__x"
    long = "a" * 100
    first = exposed_name_for(long)
    assert first == exposed_name_for(long)
    assert len(first) == 64
    assert first != exposed_name_for("a" * 99 + "b")


def test_lookup_from_exposed_name_back_to_the_tool() -> None:
    tool = t("get weather", "svc")
    ts = ToolSet([tool])
    assert ts.get("svc__get_weather") is tool
    assert ts["svc__get_weather"] is tool
    assert ts.exposed_name(tool) == "svc__get_weather"
    assert "svc__get_weather" in ts
    assert ts.get("get weather") is None


def test_collisions_get_a_suffix_by_default() -> None:
    a, b, c = t("a.b"), t("a_b"), t("a b")
    ts = ToolSet([a, b, c])
    assert ts.exposed_names == ("a_b", "a_b_2", "a_b_3")
    assert ts["a_b_2"] is b


def test_collisions_can_be_an_error_naming_both_tools() -> None:
    with pytest.raises(NameCollisionError) as info:
        ToolSet([t("a.b"), t("a_b")], on_collision="error")
    assert (info.value.first, info.value.second, info.value.exposed_name) == ("a.b", "a_b", "a_b")


def test_collisions_can_skip_the_later_tool() -> None:
    first, second = t("x", "s"), t("x", "s")
    ts = ToolSet([first, second], on_collision="skip")
    assert ts.tools == (first,)
    assert ts.skipped == (second,)


def test_filters_hide_tools_without_renaming_others() -> None:
    tools = [t("read", "files"), t("write", "files"), t("search", "web")]
    ts = ToolSet(tools, include=["files/*", "web__*"], exclude=["*write*"])
    assert ts.exposed_names == ("files__read", "web__search")
    assert ts.get("files__write") is None
    with pytest.raises(ToolNotFound):
        ts.exposed_name(tools[1])
    with pytest.raises(ToolNotFound):
        ts["files__write"]


def test_order_is_the_order_given() -> None:
    names = ["zeta", "alpha", "mid"]
    assert ToolSet([t(n) for n in names]).exposed_names == tuple(names)


def test_the_same_tool_twice_is_refused() -> None:
    tool = t("x")
    with pytest.raises(ValueError, match="twice"):
        ToolSet([tool, tool])


@given(
    st.lists(
        st.tuples(st.text(min_size=1, max_size=90), st.none() | st.text(min_size=1, max_size=20)),
        max_size=30,
    )
)
def test_any_names_give_unique_portable_reversible_exposed_names(
    specs: list[tuple[str, str | None]],
) -> None:
    tools = [t(name, server) for name, server in specs]
    ts = ToolSet(tools)
    names = ts.exposed_names
    assert len(set(names)) == len(tools)
    for tool, name in zip(tools, names, strict=True):
        assert PORTABLE.match(name), name
        assert ts.get(name) is tool
    assert ToolSet([t(n, s) for n, s in specs]).exposed_names == names
