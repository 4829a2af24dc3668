"""``toolwire.pipeline._settings``: an executor's settings are checked once, when it is made,
and read-only after (its parts are built from them): a changed setting is another executor,
made by ``Executor.replace``, which leaves the one it was given as it was."""

from __future__ import annotations

from typing import Any

import pytest

from toolwire import (
    ConfigurationError,
    DeferredApproval,
    Executor,
    MemoryStore,
    Policy,
    Rule,
    ToolSet,
    tool,
)
from toolwire.pipeline._settings import Setting


@tool
def add(a: int, b: int) -> int:
    """Adds."""
    return a + b


TOOLSET = ToolSet([add])


@pytest.mark.parametrize(
    "options",
    [
        {"max_concurrency": 0},
        {"max_concurrency_per_server": 0},
        {"timeout": 0},
        {"wait_for_running": -1},
        {"on_unknown": "ignore"},
        {"on_interrupted": "retry"},
    ],
)
def test_impossible_options_are_refused(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        Executor(TOOLSET, **options)


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"lease": 0}, "lease"),
        ({"lease": float("nan")}, "lease"),
        ({"approval_ttl": 0}, "approval_ttl"),
        ({"approval_ttl": -5}, "approval_ttl"),
        ({"wait_for_running": float("nan")}, "wait_for_running"),
        ({"max_output_chars": 0}, "max_output_chars"),
        ({"max_media_chars": -1}, "max_media_chars"),
        ({"store": MemoryStore(ttl=60), "approval_ttl": 120}, "approval_ttl"),
    ],
)
def test_a_setting_out_of_its_range_is_refused_by_name(options: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigurationError, match=named):
        Executor(TOOLSET, **options)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("policy", Policy(Rule("deny", "*"))),
        ("approver", DeferredApproval()),
        ("timeout", 5.0),
        ("approval_ttl", 60.0),
        ("max_output_chars", 10),
        ("before_call", ()),
    ],
)
def test_a_setting_is_read_only_once_the_executor_is_made(name: str, value: Any) -> None:
    executor = Executor(TOOLSET)
    before = getattr(executor, name)
    with pytest.raises(ConfigurationError, match=rf"executor.replace\({name}="):
        setattr(executor, name, value)
    assert getattr(executor, name) is before


def test_replace_makes_another_executor_and_leaves_the_first_as_it_was() -> None:
    store = MemoryStore()
    policy = Policy(Rule("ask", "*"))
    first = Executor(TOOLSET, store=store, policy=policy, timeout=3.0)
    approver = DeferredApproval()
    second = first.replace(approver=approver, timeout=7.0)
    assert second is not first
    assert (second.approver, second.timeout, second.policy) == (approver, 7.0, policy)
    assert (first.approver, first.timeout) == (None, 3.0)
    assert second.store is store
    assert second.toolset is first.toolset
    assert second.worker_id != first.worker_id  # another executor claims as another worker
    assert second.decider.approver is approver  # its parts are built from its settings
    assert first.decider.approver is None


def test_replace_refuses_a_setting_no_executor_has_and_a_bad_value() -> None:
    executor = Executor(TOOLSET)
    with pytest.raises(ConfigurationError, match="no setting colour, speed"):
        executor.replace(speed=1, colour="red")
    with pytest.raises(ConfigurationError, match="lease"):
        executor.replace(lease=-1)
    assert executor.replace() is not executor


def test_a_setting_read_from_the_class_is_its_descriptor() -> None:
    assert isinstance(Executor.timeout, Setting)
    assert Executor.timeout.name == "timeout"
