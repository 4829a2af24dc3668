"""The output cap holds for every kind of content: text, embedded resources, links, images and
audio (by their base64 size), structured content."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from provider_turns import PROVIDERS, answer_text, response_for, strict_json

from toolwire import (
    AudioContent,
    EmbeddedResource,
    Executor,
    ImageContent,
    ResourceLink,
    TextContent,
    Tool,
    ToolResult,
    ToolSet,
    execute_tool_calls,
)

pytestmark = pytest.mark.anyio

MB = 1_000_000
PNG = b"\x89PNG\r\n\x1a\n"


def _returning(value: Any) -> ToolSet:
    return ToolSet([Tool(name="big", handler=lambda: value)])


def _sent_size(answer: Any) -> int:
    """Characters an answer puts on the wire."""
    return len(strict_json(answer))


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    "content",
    [
        pytest.param(EmbeddedResource(uri="file:///log", text="x" * (5 * MB)), id="embedded text"),
        pytest.param(ResourceLink(uri="https://example.com/" + "a" * (5 * MB)), id="link uri"),
        pytest.param(
            ResourceLink(uri="https://example.com/", description="d" * (5 * MB)),
            id="link description",
        ),
        pytest.param(
            EmbeddedResource(uri="file:///blob", blob=b"\x00" * (5 * MB)), id="embedded blob"
        ),
        pytest.param(ImageContent(PNG + b"\x00" * (5 * MB), "image/png"), id="image"),
        pytest.param(AudioContent(b"\x00" * (5 * MB), "audio/wav"), id="audio"),
    ],
)
async def test_no_content_kind_passes_the_cap(provider: str, content: Any) -> None:
    outcome = await execute_tool_calls(
        _returning(ToolResult(content=(content,))),
        provider,
        response_for(provider, [("big", {}, "c1")]),
    )
    (answer,) = outcome.results
    # Under the 100,000-character text limit (plus the notices) or the media limit: 5 MiB of
    # base64 at most, and the 5 MB parts here are over both.
    assert _sent_size(answer) < 200_000
    text = answer_text(answer)
    assert "left out" in text or "truncated" in text


@pytest.mark.parametrize("provider", ["anthropic", "openai-responses"])
async def test_images_within_the_media_limit_are_sent_and_the_rest_named(provider: str) -> None:
    small = ImageContent(PNG + b"\x01" * 3_000, "image/png")
    huge = ImageContent(PNG + b"\x02" * (6 * MB), "image/png")
    outcome = await execute_tool_calls(
        _returning(ToolResult(content=(TextContent("two screenshots"), small, huge))),
        provider,
        response_for(provider, [("big", {}, "c1")]),
    )
    (answer,) = outcome.results
    text = answer_text(answer)
    assert base64.b64encode(small.data).decode() in text
    assert base64.b64encode(huge.data[:3000]).decode()[:100] not in text
    assert "[image: image/png, 6000008 bytes]" in text
    assert "left out" in text


async def test_the_media_limit_counts_every_part_of_a_result() -> None:
    one_mb_image = ImageContent(PNG + b"\x03" * MB, "image/png")
    executor = Executor(
        _returning(ToolResult(content=(one_mb_image,) * 10)), max_media_chars=3 * MB
    )
    (call,) = _calls(executor)
    (outcome,) = await executor.run([call])
    images = [p for p in outcome.result.content if isinstance(p, ImageContent)]
    assert len(images) == 2  # 1.33 M characters of base64 each: two fit in 3 M
    assert sum(4 * ((len(p.data) + 2) // 3) for p in images) <= 3 * MB
    assert "left out" in outcome.result.content[-1].text  # type: ignore[union-attr]


async def test_many_small_text_parts_add_up_to_the_limit() -> None:
    parts = tuple(TextContent("y" * 1_000) for _ in range(1_000))  # 1 M characters in all
    executor = Executor(_returning(ToolResult(content=parts)), max_output_chars=10_000)
    (outcome,) = await executor.run(_calls(executor))
    texts = [p.text for p in outcome.result.content if isinstance(p, TextContent)]
    assert sum(len(t) for t in texts[:-1]) == 10_000
    assert texts[-1] == "[truncated: 10000 of 1000000 characters shown]"


async def test_large_structured_content_becomes_truncated_json_text() -> None:
    executor = Executor(_returning({"rows": ["r" * 100] * 10_000}), max_output_chars=5_000)
    (outcome,) = await executor.run(_calls(executor))
    assert outcome.result.structured_content is None
    first, notice = outcome.result.content  # type: ignore[misc]
    assert isinstance(first, TextContent)
    assert first.text.startswith('{"rows":["rrr')
    assert len(first.text) == 5_000
    assert notice == TextContent("[truncated: 5000 of 1030010 characters shown]")


async def test_a_result_within_the_limits_is_left_as_it_is() -> None:
    result = ToolResult(
        content=(
            TextContent("ok"),
            ImageContent(PNG, "image/png"),
            ResourceLink(uri="https://example.com/a"),
            EmbeddedResource(uri="file:///a", text="short"),
        ),
        structured_content={"a": 1},
    )
    executor = Executor(_returning(result))
    (outcome,) = await executor.run(_calls(executor))
    assert outcome.result == result


def test_impossible_limits_are_refused() -> None:
    from toolwire import ConfigurationError

    with pytest.raises(ConfigurationError):
        Executor([], max_output_chars=0)
    with pytest.raises(ConfigurationError):
        Executor([], max_media_chars=-1)


def _calls(executor: Executor) -> list[Any]:
    from toolwire import make_call

    return [make_call(executor.toolset, "big", {}, call_id="c1")]


async def test_an_image_over_anthropics_limit_is_named_not_sent_even_when_the_cap_allows() -> None:
    from toolwire.providers.anthropic import IMAGE_LIMIT

    fits = ImageContent(PNG + b"\x04" * 1_000, "image/png")
    over = ImageContent(PNG + b"\x05" * (IMAGE_LIMIT * 3 // 4 + 10), "image/png")
    toolset = _returning(ToolResult(content=(fits, over)))
    executor = Executor(toolset, max_media_chars=4 * IMAGE_LIMIT)
    outcome = await execute_tool_calls(
        toolset, "anthropic", response_for("anthropic", [("big", {}, "c1")]), executor=executor
    )
    (answer,) = outcome.results
    blocks = answer["content"]
    assert [b["type"] for b in blocks] == ["image", "text"]
    assert "not sent: over the API's limit for one image" in blocks[1]["text"]
    assert _sent_size(answer) < 10_000
