"""Provider modules, one per API, found by name in a registry.

Every module fulfils the same [`Provider`][] contract under the same names (``declare``,
``parse``, ``answer``, ``assess``, ``followup``, ``Options``, ``PROFILE``, ...), so the core,
the CLI, ``toolwire check`` and the demo never branch on a provider's name: adding a provider
is one module and one line in ``_register_builtin``. [`StreamLimits`][] bounds what a
stream accumulator of any provider keeps.
"""

from __future__ import annotations

from typing import Any

from toolwire.errors import ConfigurationError
from toolwire.providers._contract import (
    Declaration,
    DeclaredTool,
    Provider,
    ProviderProfile,
    StreamAccumulator,
    Verdict,
    implicit_declaration,
    options_for,
)
from toolwire.providers._wire import StreamLimits

__all__ = [
    "Declaration",
    "DeclaredTool",
    "Provider",
    "ProviderProfile",
    "StreamAccumulator",
    "StreamLimits",
    "Verdict",
    "get_provider",
    "make_options",
    "provider_names",
    "register_provider",
]

_REGISTRY: dict[str, Provider] = {}


def register_provider(provider: Provider) -> None:
    """Make ``provider`` (a module or object fulfilling [`Provider`][]) available under
    ``provider.NAME``."""
    _REGISTRY[provider.NAME] = provider


def get_provider(name: str) -> Provider:
    """The provider registered as ``name``.

    Raises:
        ConfigurationError: naming the known providers.
    """
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        known = ", ".join(sorted(_REGISTRY))
        raise ConfigurationError(f"unknown provider {name!r}; known: {known}") from None


def provider_names() -> list[str]:
    """The registered provider names, sorted."""
    return sorted(_REGISTRY)


def make_options(provider: Provider, values: dict[str, Any], base: Any = None) -> Any:
    """``provider``'s options from keyword ``values`` (on top of ``base``).

    Raises:
        ConfigurationError: naming an unknown option and the valid ones, or a value of the
            wrong type.
    """
    return options_for(provider.NAME, provider.Options, values, base)


def declaration_for(provider: Provider, toolset: Any, options: Any) -> Declaration:
    """What the model is taken to have been shown when no listing is given (see
    ``toolwire.providers._contract.implicit_declaration``)."""
    return implicit_declaration(provider.NAME, toolset, options, provider.declare)


def _register_builtin() -> None:
    from toolwire.providers import (
        anthropic,
        gemini,
        gemini_interactions,
        openai_chat,
        openai_responses,
    )

    for module in (gemini, gemini_interactions, anthropic, openai_chat, openai_responses):
        register_provider(module)


_register_builtin()
