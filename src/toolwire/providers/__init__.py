"""Provider adapters, one module each, found by name in a registry.

Every adapter module offers the same three steps under its provider's own vocabulary; the
registry maps a provider name to a :class:`ProviderAdapter` so the core never branches on a
provider's name. :class:`StreamLimits` bounds what a stream accumulator of any provider keeps.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from toolwire.calls import RejectedCall, ToolCall
from toolwire.errors import ConfigurationError
from toolwire.providers._wire import StreamLimits
from toolwire.tool import ToolSet

__all__ = [
    "ProviderAdapter",
    "StreamLimits",
    "get_provider",
    "provider_names",
    "register_provider",
]


@dataclass(frozen=True, slots=True)
class ProviderAdapter:
    """The three steps a provider needs, as plain functions."""

    name: str
    declare: Callable[..., Any]
    """``declare(toolset, **options)`` → the request fragment declaring the tools."""
    parse: Callable[[Any, ToolSet], list[ToolCall | RejectedCall]]
    """``parse(response, toolset)`` → the calls in the model's order, resolved or rejected."""
    answer: Callable[..., Any]
    """``answer(call, result, **options)`` → the provider's answer to one call."""
    null_paths: Callable[..., Mapping[str, Any]] = lambda toolset, **options: {}
    """``null_paths(toolset, **options)`` → per exposed name, the paths strict mode made
    nullable (empty for providers without such a mode)."""
    declaration_options: tuple[Mapping[str, Any], ...] = ({},)
    """Every set of ``declare`` options that converts schemas differently: a tool from an
    untrusted source is offered only when it can be declared under each (an MCP hub checks)."""


_REGISTRY: dict[str, ProviderAdapter] = {}


def register_provider(adapter: ProviderAdapter) -> None:
    """Make ``adapter`` available under ``adapter.name``."""
    _REGISTRY[adapter.name] = adapter


def get_provider(name: str) -> ProviderAdapter:
    """The adapter registered as ``name``.

    Raises:
        ConfigurationError: naming the known providers.
    """
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        raise ConfigurationError(f"unknown provider {name!r}; known: {known}") from None


def provider_names() -> list[str]:
    """The registered provider names, sorted."""
    return sorted(_REGISTRY)


def _register_builtin() -> None:
    from toolwire.providers import anthropic, gemini, openai_chat, openai_responses

    register_provider(
        ProviderAdapter(
            name=gemini.NAME,
            declare=gemini.declare,
            parse=gemini.parse_calls,
            answer=gemini.answer,
            declaration_options=(
                {},
                {"schema": "openapi"},
                {"schema": "openapi", "backend": "vertex"},
            ),
        )
    )
    register_provider(
        ProviderAdapter(
            name=anthropic.NAME,
            declare=anthropic.declare,
            parse=anthropic.parse_calls,
            answer=anthropic.answer,
        )
    )
    for module in (openai_chat, openai_responses):
        register_provider(
            ProviderAdapter(
                name=module.NAME,
                declare=module.declare,
                parse=module.parse_calls,
                answer=module.answer,
                null_paths=module.null_paths,
                declaration_options=({}, {"strict": False}),
            )
        )


_register_builtin()
