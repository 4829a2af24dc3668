"""The demo's real models: each provider through its official SDK, with the conversation kept
in that provider's own message format."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from toolwire.errors import MissingDependency

PROMPT = (
    "What's the weather in Lisbon and in Oslo (in Fahrenheit)? If Oslo has snow, publish a "
    "warning alert for it."
)
PROMPT_WITH_NOTES = PROMPT + " Also look up my travel notes about Oslo and delete the note 'old'."

KEYS = {
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "openai-chat": ("OPENAI_API_KEY",),
    "openai-responses": ("OPENAI_API_KEY",),
}
MODELS = {
    "gemini": "gemini-2.5-flash",
    "anthropic": "claude-sonnet-4-5",
    "openai-chat": "gpt-4.1-mini",
    "openai-responses": "gpt-4.1-mini",
}


def api_key(provider: str) -> str | None:
    """The provider's API key from the environment, if one is set."""
    return next((os.environ[k] for k in KEYS[provider] if os.environ.get(k)), None)


def _dump(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    return dump(mode="json", exclude_none=True) if callable(dump) else value


class _Gemini:
    def __init__(self, key: str, model: str, tools: Any, prompt: str) -> None:
        try:
            from google import genai
        except ImportError:
            raise MissingDependency("google-genai", "genai") from None
        self._client = genai.Client(api_key=key)
        self._model, self._tools = model, tools
        self._contents: list[Any] = [{"role": "user", "parts": [{"text": prompt}]}]

    async def respond(self) -> Any:
        config: Any = {"tools": self._tools} if self._tools else None
        return await self._client.aio.models.generate_content(
            model=self._model, contents=self._contents, config=config
        )

    def add_answers(self, response: Any, results: list[Any]) -> None:
        self._contents.append(response.candidates[0].content)  # kept whole: thought signatures
        self._contents.append({"role": "user", "parts": results})


class _Anthropic:
    def __init__(self, key: str, model: str, tools: Any, prompt: str) -> None:
        try:
            import anthropic
        except ImportError:
            raise MissingDependency("anthropic", "anthropic") from None
        self._client = anthropic.AsyncAnthropic(api_key=key)
        self._model, self._tools = model, tools
        self._messages: list[Any] = [{"role": "user", "content": prompt}]

    async def respond(self) -> Any:
        return await self._client.messages.create(
            model=self._model, max_tokens=1024, tools=self._tools, messages=self._messages
        )

    def add_answers(self, response: Any, results: list[Any]) -> None:
        self._messages.append({"role": "assistant", "content": _dump(response)["content"]})
        self._messages.append({"role": "user", "content": results})


class _OpenAIChat:
    def __init__(self, key: str, model: str, tools: Any, prompt: str) -> None:
        try:
            import openai
        except ImportError:
            raise MissingDependency("openai", "openai") from None
        self._client = openai.AsyncOpenAI(api_key=key)
        self._model, self._tools = model, tools
        self._messages: list[Any] = [{"role": "user", "content": prompt}]

    async def respond(self) -> Any:
        return await self._client.chat.completions.create(
            model=self._model, messages=self._messages, tools=self._tools
        )

    def add_answers(self, response: Any, results: list[Any]) -> None:
        self._messages.append(_dump(response.choices[0].message))
        self._messages.extend(results)


class _OpenAIResponses:
    def __init__(self, key: str, model: str, tools: Any, prompt: str) -> None:
        try:
            import openai
        except ImportError:
            raise MissingDependency("openai", "openai") from None
        self._client = openai.AsyncOpenAI(api_key=key)
        self._model, self._tools = model, tools
        self._input: list[Any] = [{"role": "user", "content": prompt}]

    async def respond(self) -> Any:
        return await self._client.responses.create(
            model=self._model, input=self._input, tools=self._tools
        )

    def add_answers(self, response: Any, results: list[Any]) -> None:
        self._input.extend(_dump(item) for item in response.output)
        self._input.extend(results)


DRIVERS: dict[str, Callable[[str, str, Any, str], Any]] = {
    "gemini": _Gemini,
    "anthropic": _Anthropic,
    "openai-chat": _OpenAIChat,
    "openai-responses": _OpenAIResponses,
}


def live_model(provider: str, key: str, model: str | None, tools: Any, *, with_mcp: bool) -> Any:
    """A model object (``respond()``, ``add_answers()``, ``label``) for the real provider."""
    driver = DRIVERS[provider](
        key, model or MODELS[provider], tools, PROMPT_WITH_NOTES if with_mcp else PROMPT
    )
    driver.label = f"{provider} ({model or MODELS[provider]}, live)"
    return driver
