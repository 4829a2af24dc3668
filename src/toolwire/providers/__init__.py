"""Provider modules, one per API, found by name in a registry.

Every module fulfils the same [`Provider`][] contract under the same names (``declare``,
``parse``, ``answer``, ``assess``, ``followup``, ``Options``, ``PROFILE``, ...), so the core,
the CLI, ``toolwire check`` and the demo never branch on a provider's name: adding a provider
is one module and one line in ``_register_builtin``. [`StreamLimits`][] bounds what a
stream accumulator of any provider keeps.
"""

from __future__ import annotations

from toolwire.providers._contract import (
    Declaration,
    DeclaredTool,
    Provider,
    ProviderProfile,
    Stopped,
    StreamAccumulator,
    Verdict,
)
from toolwire.providers._registry import (
    declaration_for as declaration_for,  # for the core: not part of the public API
)
from toolwire.providers._registry import (
    get_provider,
    make_options,
    parse_calls,
    provider_names,
    register_provider,
)
from toolwire.providers._wire import StreamLimits
from toolwire.providers._wire import as_data as as_data  # for hosted approvals: not public API
from toolwire.providers._wire import listed as listed

__all__ = [
    "Declaration",
    "DeclaredTool",
    "Provider",
    "ProviderProfile",
    "Stopped",
    "StreamAccumulator",
    "StreamLimits",
    "Verdict",
    "get_provider",
    "make_options",
    "parse_calls",
    "provider_names",
    "register_provider",
]


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
