"""Which providers can take which tools, and what declaring them changes.

[`check`][] gives, per tool and provider, one of three verdicts: ``accepted`` (declared as
is), ``converted`` (declared, with notes on what was dropped or rewritten) or ``rejected``
(cannot be declared, or its arguments cannot be validated, and why); ``skipped`` when the
tool's own ``providers`` leave the provider out. References to other documents (never fetched)
are noted for every provider. It is what ``toolwire check`` prints.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolwire.providers import Verdict, get_provider, make_options, provider_names
from toolwire.tool import Tool
from toolwire.toolset import ToolSet

__all__ = ["ProviderVerdict", "ToolReport", "check", "limits"]

ProviderVerdict = Verdict
"""How one provider takes one tool ([`toolwire.providers.Verdict`][])."""


@dataclass(frozen=True, slots=True)
class ToolReport:
    """One tool's verdicts, one per provider asked about."""

    name: str
    exposed_name: str
    verdicts: tuple[Verdict, ...]
    title: str | None = None
    """The tool's title, for people (``Tool.title``)."""
    icons: tuple[Mapping[str, Any], ...] | None = None
    """The tool's icons (``Tool.icons``)."""

    @property
    def renamed(self) -> bool:
        """True when the model sees another name than the tool's own."""
        return self.name != self.exposed_name

    @property
    def rejected(self) -> bool:
        return any(v.status == "rejected" for v in self.verdicts)


def check(
    source: ToolSet | Tool | Iterable[Tool | Callable[..., Any]],
    providers: Sequence[str] | None = None,
    *,
    options: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[ToolReport]:
    """Per visible tool of ``source``, how each registered provider (all when None) takes it:
    each provider's ``assess``, which checks the declaration against the rules written from
    that provider's documentation.

    Args:
        source: the tools.
        providers: provider names (all registered ones when None).
        options: per provider name, the options to assess the declaration with (e.g.
            ``{"anthropic": {"strict": True}}``); a provider not named takes its defaults.

    Raises:
        ConfigurationError: for an unknown provider name, or an option its provider does not
            take.
    """
    assessors = [
        (provider, make_options(provider, dict(given)) if given else None)
        for provider, given in (
            (get_provider(name), (options or {}).get(name))
            for name in (providers or provider_names())
        )
    ]
    toolset = ToolSet.of(source)
    return [
        ToolReport(
            name=tool.name,
            exposed_name=exposed,
            verdicts=tuple(provider.assess(tool, chosen) for provider, chosen in assessors),
            title=tool.title,
            icons=tool.icons,
        )
        for exposed, tool in zip(toolset.exposed_names, toolset, strict=True)
    ]


def limits(
    source: ToolSet | Tool | Iterable[Tool | Callable[..., Any]],
    providers: Sequence[str] | None = None,
) -> dict[str, str]:
    """Per provider whose limit on declared tools ``source`` passes, what it says."""
    toolset = ToolSet.of(source)
    found = {}
    for name in providers or provider_names():
        provider = get_provider(name)
        limit = provider.PROFILE.max_tools
        count = sum(1 for t in toolset if t.providers is None or name in t.providers)
        if limit is not None and count > limit:
            found[name] = (
                f"{count} tools, but {provider.PROFILE.label} takes at most {limit} in one request"
            )
    return found
