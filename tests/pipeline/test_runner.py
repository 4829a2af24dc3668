"""``toolwire.pipeline._runner``: one approved call run under the executor's limits. Whatever
the tool does, the runner answers (a value, a failure, a timeout, a cancelled turn), caps the
answer, and refuses limits no executor can run with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anyio
import pytest

from toolwire import ConfigurationError, ToolSet, make_call, tool
from toolwire.pipeline._runner import CANCELLED, Job, Runner

pytestmark = pytest.mark.anyio


@dataclass
class Control:
    """What a call's run shares with its turn (a turn of one call here)."""

    scope: anyio.CancelScope | None = None
    cancelled: bool = False


RAN: list[str] = []


@tool
def shout(word: str) -> str:
    """Shouts."""
    RAN.append(word)
    return word.upper() * 20


@tool
def explode() -> str:
    """Fails."""
    raise ValueError("cannot today")


@tool(timeout=0.05)
async def stall() -> str:
    """Takes longer than its own timeout allows."""
    await anyio.sleep(30)
    return "never"


@tool
async def slow() -> str:
    """Takes longer than the runner's timeout allows."""
    await anyio.sleep(30)
    return "never"


TOOLS = ToolSet([shout, explode, stall, slow])


def runner(**limits: Any) -> Runner:
    settings: dict[str, Any] = {
        "timeout": None,
        "max_concurrency": 4,
        "max_concurrency_per_server": None,
        "after_call": (),
        "max_output_chars": 1_000,
        "max_media_chars": 1_000,
    }
    return Runner(**{**settings, **limits})


def job(name: str, **arguments: Any) -> Job:
    return Job(
        call=make_call(TOOLS, name, arguments), kwargs=arguments, context=None, in_flight=None
    )


async def test_a_call_is_answered_with_what_its_tool_returns() -> None:
    result = await runner().run(job("shout", word="hi"), Control())
    assert result.text == "HI" * 20
    assert not result.is_error


async def test_a_call_of_a_cancelled_turn_is_answered_cancelled_and_never_runs() -> None:
    RAN.clear()
    assert await runner().run(job("shout", word="no"), Control(cancelled=True)) == CANCELLED
    assert RAN == []


async def test_a_tool_that_raises_is_answered_failed_naming_why() -> None:
    result = await runner().run(job("explode"), Control())
    assert result.error_kind == "failed"
    assert "cannot today" in (result.text or "")


async def test_a_call_past_its_timeout_is_answered_and_the_tools_own_timeout_wins() -> None:
    with anyio.fail_after(10):
        assert (await runner().run(job("stall"), Control())).error_kind == "timeout"
        limited = runner(timeout=0.05)
        assert (await limited.run(job("slow"), Control())).error_kind == "timeout"
    assert limited.timeout_of(stall) == 0.05
    assert runner(timeout=9).timeout_of(stall) == 0.05
    assert runner(timeout=9).timeout_of(shout) == 9
    assert runner().timeout_of(None) is None


async def test_an_answer_past_the_output_limit_is_cut() -> None:
    result = await runner(max_output_chars=10).run(job("shout", word="hi"), Control())
    assert result.content[0].text == "HIHIHIHIHI"  # type: ignore[union-attr]
    assert len(result.content) == 2  # and a notice of the cut


@pytest.mark.parametrize(
    "limits",
    [
        {"max_output_chars": 0},
        {"max_media_chars": -1},
        {"max_concurrency": 0},
        {"max_concurrency_per_server": 0},
        {"timeout": 0},
        {"timeout": -1.5},
    ],
)
def test_limits_no_executor_can_run_with_are_refused(limits: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        runner(**limits)
