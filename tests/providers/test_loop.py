"""``toolwire.loop`` over each provider's official async client, against the scripted model on
127.0.0.1 (it calls the first tool a request declares, then answers quoting the results):
the loop sends, runs the call governed, answers, and stops on the model's text; a call that
needs a human pauses it, and the run resumes after the decision; a blocked response, the turn
bound and the streamed variant say what happened."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import Any

import pytest

import toolwire
from docs_support.model import RESULTS_TEXT, serve_model
from integrations.interactions_server import RawReply, Request, ScriptedInteractions, serve
from toolwire import DeferredApproval, LoopResult, Policy, Rule
from toolwire.store import MemoryStore

pytestmark = pytest.mark.anyio

genai = pytest.importorskip("google.genai")
anthropic = pytest.importorskip("anthropic")
openai = pytest.importorskip("openai")

PROVIDERS = ["gemini", "gemini-interactions", "anthropic", "openai-chat", "openai-responses"]


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedInteractions]:
    yield from serve_model()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the SDKs' async clients (httpx) and loop_events run on asyncio


@toolwire.tool
def get_weather(city: str) -> dict[str, Any]:
    """The weather in ``city``."""
    return {"city": city, "forecast": "sunny"}


def _client_send(provider: str, base_url: str, *, stream: bool = False) -> Any:
    """The SDK method of ``provider`` with the model bound, pointed at the scripted model."""
    if provider in ("gemini", "gemini-interactions"):
        client = genai.Client(api_key="test-key", http_options={"base_url": base_url})
        if provider == "gemini":
            method = (
                client.aio.models.generate_content_stream
                if stream
                else client.aio.models.generate_content
            )
            return functools.partial(method, model="gemini-test")
        extra = {"stream": True} if stream else {}
        return functools.partial(client.aio.interactions.create, model="gemini-test", **extra)
    extra = {"stream": True} if stream else {}
    if provider == "anthropic":
        claude = anthropic.AsyncAnthropic(api_key="test-key", base_url=base_url)
        return functools.partial(
            claude.messages.create, model="claude-test", max_tokens=256, **extra
        )
    client = openai.AsyncOpenAI(api_key="test-key", base_url=base_url + "/v1")
    if provider == "openai-chat":
        return functools.partial(client.chat.completions.create, model="gpt-test", **extra)
    return functools.partial(client.responses.create, model="gpt-test", **extra)


def _first_message(provider: str, text: str) -> list[Any]:
    if provider == "gemini":
        return [{"role": "user", "parts": [{"text": text}]}]
    if provider == "gemini-interactions":
        return [{"type": "user_input", "content": [{"type": "text", "text": text}]}]
    return [{"role": "user", "content": text}]


def _quoted(text: str) -> Any:
    assert text.startswith(RESULTS_TEXT), text
    return json.loads(text.removeprefix(RESULTS_TEXT))


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_the_loop_runs_a_call_and_stops_on_the_answer(
    provider: str, server: ScriptedInteractions
) -> None:
    listing = toolwire.tools([get_weather], provider)
    before = len(server.requests)
    result = await toolwire.loop(
        _client_send(provider, server.base_url),
        listing,
        _first_message(provider, "Weather in Lisbon?"),
    )
    assert result.done
    assert [len(outcome.calls) for outcome in result.outcomes] == [1, 0]  # one per response
    [call] = result.outcomes[0].calls
    assert call.ran
    assert call.item.name == "get_weather"
    assert _quoted(result.text)["forecast"] == "sunny"
    sent = server.requests[before:]
    assert len(sent) == 2  # the call, then the answer
    # The conversation holds the first message, the model's turn and the answer (for the
    # Interactions API, which keeps the conversation, what the loop sent).
    assert len(result.conversation) >= 2


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_call_waiting_for_a_human_pauses_the_loop_and_the_run_resumes(
    provider: str, server: ScriptedInteractions
) -> None:
    store = MemoryStore()
    policy = Policy(Rule("ask", "get_weather", reason="costs money"))
    listing = toolwire.tools([get_weather], provider, policy=policy)
    send = _client_send(provider, server.base_url)
    paused = await toolwire.loop(
        send,
        listing,
        _first_message(provider, "Weather?"),
        conversation="trip",
        store=store,
        approver=DeferredApproval(),
    )
    assert paused.pending is not None
    assert not paused.done
    run_id = paused.pending.run_id
    assert run_id.startswith("trip-1-")  # the conversation's first turn, this request's run
    assert paused.pending.store is store
    [request] = paused.pending.pending
    assert request.reason == "costs money"
    await toolwire.decide(run_id, request.call_id, toolwire.allow(), store=store, by="ops")
    # Resumed without store=: the run is where the paused turn kept it.
    finished = await toolwire.loop(send, listing, paused, approver=DeferredApproval())
    assert finished.done
    assert finished is paused  # the same result, carried on
    assert _quoted(finished.text)["city"]


async def test_the_turn_bound_is_an_error_naming_it(server: ScriptedInteractions) -> None:
    listing = toolwire.tools([get_weather], "anthropic")

    async def always_calls(**request: Any) -> dict[str, Any]:
        return {
            "role": "assistant",
            "stop_reason": "tool_use",
            "content": [
                {
                    "type": "tool_use",
                    "id": f"t{len(request['messages'])}",
                    "name": "get_weather",
                    "input": {"city": "Oslo"},
                }
            ],
        }

    with pytest.raises(toolwire.TurnLimit, match="max_turns=3") as limit:
        await toolwire.loop(always_calls, listing, _first_message("anthropic", "?"), max_turns=3)
    assert len(limit.value.result.outcomes) == 3
    assert all(outcome.calls for outcome in limit.value.result.outcomes)


async def test_a_blocked_response_stops_the_loop_saying_so() -> None:
    listing = toolwire.tools([get_weather], "gemini")

    def blocked(**request: Any) -> dict[str, Any]:  # a sync send works too
        return {"candidates": [{"finishReason": "SAFETY"}]}

    result = await toolwire.loop(blocked, listing, _first_message("gemini", "?"))
    assert not result.done
    assert result.stopped == toolwire.Stopped("blocked", "SAFETY")


async def test_a_bound_gemini_config_keeps_its_settings_beside_the_tools(
    server: ScriptedInteractions,
) -> None:
    listing = toolwire.tools([get_weather], "gemini")
    client = genai.Client(api_key="test-key", http_options={"base_url": server.base_url})
    config = genai.types.GenerateContentConfig(temperature=0.2, system_instruction="Be brief.")
    send = functools.partial(client.aio.models.generate_content, model="gemini-test", config=config)
    before = len(server.requests)
    result = await toolwire.loop(send, listing, _first_message("gemini", "?"))
    assert result.done
    body = server.requests[before].body
    assert body["generationConfig"]["temperature"] == 0.2
    assert body["systemInstruction"]["parts"][0]["text"] == "Be brief."
    assert body["tools"][0]["functionDeclarations"][0]["name"] == "get_weather"


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_the_streamed_loop_yields_events_calls_and_the_end(
    provider: str, server: ScriptedInteractions
) -> None:
    listing = toolwire.tools([get_weather], provider)
    kinds: list[str] = []
    result: LoopResult | None = None
    async for event in toolwire.loop_events(
        _client_send(provider, server.base_url, stream=True),
        listing,
        _first_message(provider, "Weather?"),
    ):
        kinds.append(event.kind)
        if event.kind == "call":
            assert event.call is not None
            assert event.call.call.exposed_name == "get_weather"
        if event.kind == "done":
            result = event.result
    assert result is not None
    assert result.done
    assert kinds.count("call") == 1
    assert kinds.count("response") == 2
    assert kinds.index("call") < kinds.index("outcome") < kinds[::-1].index("event") + 10**6
    assert kinds[-1] == "done"
    assert "event" in kinds
    assert _quoted(result.text)["forecast"] == "sunny"


# -- a conversation's turns each have their own run -------------------------------------------


def _mailer(request: Request) -> RawReply:
    """A Gemini model that, asked anything by the user, emails Ana (as Gemini sends calls: no
    id), and says so once the answer is in."""
    last = (request.body.get("contents") or [{}])[-1]
    asked = last.get("role") == "user" and any("text" in part for part in last.get("parts", []))
    parts: list[dict[str, Any]] = (
        [{"functionCall": {"name": "send_email", "args": {"to": "ana@example.com"}}}]
        if asked
        else [{"text": "Sent."}]
    )
    body = {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "index": 0, "finishReason": "STOP"}
        ],
        "modelVersion": "gemini-scripted",
    }
    return RawReply([json.dumps(body).encode()])


@pytest.fixture(scope="module")
def mailer() -> Iterator[ScriptedInteractions]:
    yield from serve(_mailer)


def _outbox() -> tuple[list[str], toolwire.Tool]:
    sent: list[str] = []

    @toolwire.tool
    def send_email(to: str) -> str:
        """Email ``to``."""
        sent.append(to)
        return f"sent to {to}"

    return sent, send_email


def _gemini(server: ScriptedInteractions) -> Any:
    client = genai.Client(api_key="test-key", http_options={"base_url": server.base_url})
    return functools.partial(client.aio.models.generate_content, model="gemini-test")


def _next_message(result: LoopResult, text: str) -> list[Any]:
    """The conversation so far, the model's last answer, and the user's next message."""
    return [*result.conversation, result.response.candidates[0].content, *_user(text)]


def _user(text: str) -> list[Any]:
    return _first_message("gemini", text)


@pytest.mark.parametrize("naming", ["run_id", "conversation"])
async def test_a_repeated_call_for_the_next_user_message_runs_again(
    mailer: ScriptedInteractions, naming: str
) -> None:
    sent, send_email = _outbox()
    listing = toolwire.tools([send_email], "gemini")
    send, store = _gemini(mailer), MemoryStore()
    named = {naming: "chat-42"}  # the chat's id, the same for every message of it
    first = await toolwire.loop(send, listing, _user("Email Ana."), store=store, **named)
    assert (first.done, sent) == (True, ["ana@example.com"])
    second = await toolwire.loop(
        send, listing, _next_message(first, "Again, please."), store=store, **named
    )
    assert second.done
    [call] = second.outcomes[0].calls
    assert (call.ran, call.from_store) == (True, False)
    assert sent == ["ana@example.com", "ana@example.com"]  # the model was told the truth
    assert second.outcomes[0].run_id != first.outcomes[0].run_id
    assert str(second.outcomes[0].run_id).startswith("chat-42-1-")


async def test_the_same_request_again_is_answered_from_its_run(
    mailer: ScriptedInteractions,
) -> None:
    sent, send_email = _outbox()
    listing = toolwire.tools([send_email], "gemini")
    send, store = _gemini(mailer), MemoryStore()
    first = await toolwire.loop(send, listing, _user("Email Ana."), conversation="c", store=store)
    # The same loop again (a retry after a crash): the same requests, the same runs.
    retried = await toolwire.loop(send, listing, _user("Email Ana."), conversation="c", store=store)
    [call] = retried.outcomes[0].calls
    assert (call.ran, call.from_store) == (False, True)
    assert retried.outcomes[0].run_id == first.outcomes[0].run_id
    assert sent == ["ana@example.com"]
    # Another conversation with the same words is another run.
    await toolwire.loop(send, listing, _user("Email Ana."), conversation="other", store=store)
    assert sent == ["ana@example.com", "ana@example.com"]


async def test_a_run_id_named_for_another_turn_is_refused_naming_the_run(
    mailer: ScriptedInteractions,
) -> None:
    sent, send_email = _outbox()
    listing = toolwire.tools([send_email], "gemini")
    send, store = _gemini(mailer), MemoryStore()

    def by_number(turn: int) -> str:
        return f"mine-{turn}"  # the n-th turn of every message: one run

    first = await toolwire.loop(send, listing, _user("Email Ana."), run_id=by_number, store=store)
    with pytest.raises(toolwire.RunBindingConflict, match="run 'mine-1' was started for another"):
        await toolwire.loop(
            send, listing, _next_message(first, "Again."), run_id=by_number, store=store
        )
    assert sent == ["ana@example.com"]


async def test_a_paused_conversation_resumes_its_own_turn_in_its_own_store(
    mailer: ScriptedInteractions, tmp_path: Any
) -> None:
    sent, send_email = _outbox()
    policy = Policy(Rule("ask", "send_email", reason="leaves the company"))
    listing = toolwire.tools([send_email], "gemini", policy=policy)
    send, store = _gemini(mailer), toolwire.SQLiteStore(tmp_path / "runs.db")
    paused = await toolwire.loop(
        send,
        listing,
        _user("Email Ana."),
        conversation="c",
        store=store,
        approver=DeferredApproval(),
    )
    assert paused.pending is not None
    assert paused.pending.store is store
    [request] = paused.pending.pending
    await toolwire.decide(request.run_id, request.call_id, toolwire.allow(), store=store)
    finished = await toolwire.loop(send, listing, paused, approver=DeferredApproval())
    # Without store=: decided in the run's store, so it runs (in the default store it would
    # wait again, undecided).
    assert (finished.done, sent) == (True, ["ana@example.com"])
