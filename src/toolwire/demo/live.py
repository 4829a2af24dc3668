"""The demo's real models: each provider through its official SDK, with the conversation kept
in that provider's own message format."""

from __future__ import annotations

import importlib
import os
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


def _sdk(module: str, package: str, extra: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependency(package, extra) from None


class _Driver:
    """A conversation with one provider: ``history`` in that provider's own message format."""

    label: str

    def __init__(self, key: str, model: str, tools: Any, prompt: str) -> None:
        self._client = self._connect(key)
        self._model, self._tools = model, tools
        self.history: list[Any] = [self._user(prompt)]

    def _connect(self, key: str) -> Any:
        raise NotImplementedError

    def _user(self, prompt: str) -> Any:
        return {"role": "user", "content": prompt}


class _Gemini(_Driver):
    def _connect(self, key: str) -> Any:
        return _sdk("google.genai", "google-genai", "genai").Client(api_key=key)

    def _user(self, prompt: str) -> Any:
        return {"role": "user", "parts": [{"text": prompt}]}

    async def respond(self) -> Any:
        config: Any = {"tools": self._tools} if self._tools else None
        return await self._client.aio.models.generate_content(
            model=self._model, contents=self.history, config=config
        )

    def add_answers(self, response: Any, results: list[Any]) -> None:
        self.history.append(response.candidates[0].content)  # kept whole: thought signatures
        self.history.append({"role": "user", "parts": results})


class _Anthropic(_Driver):
    def _connect(self, key: str) -> Any:
        return _sdk("anthropic", "anthropic", "anthropic").AsyncAnthropic(api_key=key)

    async def respond(self) -> Any:
        return await self._client.messages.create(
            model=self._model, max_tokens=1024, tools=self._tools, messages=self.history
        )

    def add_answers(self, response: Any, results: list[Any]) -> None:
        self.history.append({"role": "assistant", "content": _dump(response)["content"]})
        self.history.append({"role": "user", "content": results})


class _OpenAIChat(_Driver):
    def _connect(self, key: str) -> Any:
        return _sdk("openai", "openai", "openai").AsyncOpenAI(api_key=key)

    async def respond(self) -> Any:
        return await self._client.chat.completions.create(
            model=self._model, messages=self.history, tools=self._tools
        )

    def add_answers(self, response: Any, results: list[Any]) -> None:
        self.history.append(_dump(response.choices[0].message))
        self.history.extend(results)


class _OpenAIResponses(_OpenAIChat):
    async def respond(self) -> Any:
        return await self._client.responses.create(
            model=self._model, input=self.history, tools=self._tools
        )

    def add_answers(self, response: Any, results: list[Any]) -> None:
        self.history.extend(_dump(item) for item in response.output)
        self.history.extend(results)


DRIVERS: dict[str, type[_Driver]] = {
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
