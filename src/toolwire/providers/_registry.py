"""The provider registry: providers found by name.

A leaf of the providers package: it imports no provider module (the package registers the
built-in ones when it is imported), so a provider's own code can look another up (to say
which provider a misdirected response looks like) without an import circle.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from toolwire.calls import RejectedCall, ToolCall
from toolwire.errors import ConfigurationError
from toolwire.providers._contract import Declaration, Provider, implicit_declaration, options_for
from toolwire.tool import Tool
from toolwire.toolset import ToolSet

__all__ = [
    "declaration_for",
    "get_provider",
    "make_options",
    "parse_calls",
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


def parse_calls(
    provider: str, response: Any, toolset: ToolSet | Iterable[Tool], **options: Any
) -> list[ToolCall | RejectedCall]:
    """Every call of ``response`` the client must answer, parsed by ``provider`` against
    ``toolset`` declared with ``options``: for a program that holds a toolset and no
    [`Declaration`][] (a listing's ``declaration``, or the provider's ``declare``).

    The calls resolve against what [`toolwire.tools`][] would declare with the same options;
    a tool of ``toolset`` that cannot be declared is resolved on its own when a call names
    it, so calls to the others still parse.

    Args:
        provider: a registered provider name (see [`provider_names`][]).
        response: the model's response, as the provider's ``parse`` takes it.
        toolset: the tools (a plain list is wrapped in a [`ToolSet`][toolwire.ToolSet]).
        **options: the provider's options (as [`make_options`][] takes them).

    Raises:
        ConfigurationError: for an unknown provider, or an option it does not take.
        MalformedResponse: as the provider's ``parse``.
    """
    adapter = get_provider(provider)
    settings = make_options(adapter, options)
    return adapter.parse(response, declaration_for(adapter, ToolSet.of(toolset), settings))
