"""``toolwire.pipeline._output``: what the model is told. A result within the limits is given as
it is; past them, text is cut and media left out, each with a notice naming what was cut; the
cheap size estimate the caps rely on never underestimates; a refused or invalid call's answer
says why in the library's words."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolwire import ConfigurationError, ImageContent, TextContent, ToolResult, tool
from toolwire.errors import InvalidArguments
from toolwire.pipeline._output import cap_output, denied_answer, invalid_answer, not_run
from toolwire.policy import Verdict


@tool
def add(a: int, b: int) -> int:
    """Adds."""
    return a + b


def texts(result: ToolResult) -> list[str]:
    return [part.text for part in result.content if isinstance(part, TextContent)]


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(value=_JSON, budget=st.integers(min_value=0, max_value=400))
def test_the_output_cap_size_estimate_never_underestimates(value: Any, budget: int) -> None:
    from toolwire.calls import canonical_json
    from toolwire.pipeline._output import _json_fits

    if _json_fits(value, budget):
        assert len(canonical_json(value)) <= budget


@given(words=st.text(max_size=300), limit=st.integers(min_value=1, max_value=200))
def test_a_result_within_its_limits_is_given_as_it_is_and_a_longer_one_is_cut_saying_so(
    words: str, limit: int
) -> None:
    result = ToolResult(content=(TextContent(words),))
    capped = cap_output(result, limit, 1_000)
    if len(words) <= limit:
        assert capped is result
        return
    kept, *notices = texts(capped)
    assert words.startswith(kept)
    assert len(kept) <= limit
    assert notices
    assert str(limit) in notices[-1]


def test_structured_content_past_the_limit_is_given_as_text_and_cut() -> None:
    result = ToolResult(structured_content={"rows": ["x" * 50] * 10}, error_kind=None)
    capped = cap_output(result, 100, 1_000)
    assert capped.structured_content is None
    assert sum(len(text) for text in texts(capped)[:-1]) <= 100
    small = ToolResult(structured_content={"rows": [1, 2]})
    assert cap_output(small, 100, 1_000) is small


def test_media_past_its_limit_is_left_out_and_named_and_an_error_stays_an_error() -> None:
    image = ImageContent(b"\x89PNG" + b"\0" * 3000, "image/png")
    result = ToolResult(content=(TextContent("a chart"), image), is_error=True, error_kind="failed")
    capped = cap_output(result, 1_000, 100)
    assert not any(isinstance(part, ImageContent) for part in capped.content)
    assert texts(capped)[0] == "a chart"
    assert "image/png" in " ".join(texts(capped)[1:])
    assert (capped.is_error, capped.error_kind) == (True, "failed")
    assert cap_output(result, 1_000, 10_000) is result


def test_a_refused_or_invalid_calls_answer_says_why() -> None:
    assert denied_answer(Verdict("deny", "not on weekends")).text == "Denied: not on weekends."
    assert denied_answer(Verdict("deny")).error_kind == "denied"
    assert (
        not_run("a hook", ValueError("boom")).text == "Not run: a hook failed (ValueError: boom)."
    )
    invalid = invalid_answer(add, InvalidArguments("add", [("a", "not an integer")]), "", "plus")
    assert invalid.error_kind == "invalid_arguments"
    assert "'plus'" in (invalid.text or "")
    assert "a: not an integer" in (invalid.text or "")
    broken = invalid_answer(add, ConfigurationError("the schema is broken"), "", "plus")
    assert (broken.error_kind, broken.text) == ("failed", "the schema is broken")
    odd = invalid_answer(add, RuntimeError("validator crashed"), "", "plus")
    assert odd.error_kind == "failed"
    assert (odd.text or "").startswith("Not run: validating its arguments failed")


@pytest.mark.parametrize("limit", [1, 50])
def test_the_cap_of_a_long_text_never_exceeds_its_limit(limit: int) -> None:
    capped = cap_output(ToolResult(content=(TextContent("y" * 500),)), limit, 0)
    assert len(texts(capped)[0]) <= limit
