"""The provider registry: providers found by name.

A leaf of the providers package: it imports no provider module (the package registers the
built-in ones when it is imported), so a provider's own code can look another up (to say
which provider a misdirected response looks like) without an import circle.
"""

from __future__ import annotations

from typing import Any

from toolwire.errors import ConfigurationError
from toolwire.providers._contract import Declaration, Provider, implicit_declaration, options_for

__all__ = [
    "declaration_for",
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
