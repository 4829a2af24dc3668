"""The demo's real models: each provider through its official SDK, with the conversation kept
in that provider's own message format."""

from __future__ import annotations

import importlib
import os
from typing import Any

from toolwire.errors import ConfigurationError, MissingDependency
from toolwire.providers import get_provider

PROMPT = (
    "What's the weather in Lisbon and in Oslo (in Fahrenheit)? If Oslo has snow, publish a "
    "warning alert for it."
)
PROMPT_WITH_NOTES = PROMPT + " Also look up my travel notes about Oslo and delete the note 'old'."


def api_key(provider: str) -> str | None:
    """The provider's API key from the environment (its profile's variables), if one is set."""
    names = get_provider(provider).PROFILE.api_key_env
    return next((os.environ[k] for k in names if os.environ.get(k)), None)


def _sdk(module: str, package: str, extra: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependency(package, extra) from None


class _Driver:
    """A conversation with one provider: ``history`` in that provider's own message format,
    extended with each turn's ``outcome.followup(response)``."""

    label: str

    def __init__(self, key: str, model: str, tools: Any, prompt: str) -> None:
        self._client = self._connect(key)
        self._model, self._tools = model, tools
        self.history: list[Any] = [self._user(prompt)]

    def _connect(self, key: str) -> Any:
        raise NotImplementedError

    def _user(self, prompt: str) -> Any:
        return {"role": "user", "content": prompt}

    def add(self, followup: list[Any]) -> None:
        self.history.extend(followup)


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


class _GeminiInteractions(_Driver):
    """The Interactions API keeps the conversation: each turn sends only the steps not sent
    yet (the prompt, then the answers) with the previous interaction's id."""

    _previous: str | None = None
    _sent = 0

    def _connect(self, key: str) -> Any:
        return _sdk("google.genai", "google-genai", "genai").Client(api_key=key)

    def _user(self, prompt: str) -> Any:
        return {"type": "user_input", "content": [{"type": "text", "text": prompt}]}

    async def respond(self) -> Any:
        request: dict[str, Any] = {"model": self._model, "input": self.history[self._sent :]}
        if self._tools:
            request["tools"] = self._tools
        if self._previous is not None:
            request["previous_interaction_id"] = self._previous
        interaction = await self._client.aio.interactions.create(**request)
        self._previous, self._sent = interaction.id, len(self.history)
        return interaction


class _Anthropic(_Driver):
    def _connect(self, key: str) -> Any:
        return _sdk("anthropic", "anthropic", "anthropic").AsyncAnthropic(api_key=key)

    async def respond(self) -> Any:
        return await self._client.messages.create(
            model=self._model, max_tokens=1024, tools=self._tools, messages=self.history
        )


class _OpenAIChat(_Driver):
    def _connect(self, key: str) -> Any:
        return _sdk("openai", "openai", "openai").AsyncOpenAI(api_key=key)

    async def respond(self) -> Any:
        return await self._client.chat.completions.create(
            model=self._model, messages=self.history, tools=self._tools
        )


class _OpenAIResponses(_OpenAIChat):
    async def respond(self) -> Any:
        return await self._client.responses.create(
            model=self._model, input=self.history, tools=self._tools
        )


DRIVERS: dict[str, type[_Driver]] = {
    "gemini": _Gemini,
    "gemini-interactions": _GeminiInteractions,
    "anthropic": _Anthropic,
    "openai-chat": _OpenAIChat,
    "openai-responses": _OpenAIResponses,
}


def live_model(provider: str, key: str, model: str | None, tools: Any, *, with_mcp: bool) -> Any:
    """A model object (``respond()``, ``add(followup)``, ``label``) for the real provider.

    Raises:
        ConfigurationError: the demo has no driver for this provider (run it with --scripted).
    """
    driver_type = DRIVERS.get(provider)
    if driver_type is None:
        raise ConfigurationError(f"the demo cannot talk to {provider} yet; run it with --scripted")
    model = model or get_provider(provider).PROFILE.default_model or ""
    driver = driver_type(key, model, tools, PROMPT_WITH_NOTES if with_mcp else PROMPT)
    driver.label = f"{provider} ({model}, live)"
    return driver
