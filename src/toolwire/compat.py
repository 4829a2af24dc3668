"""Which providers can take which tools, and what declaring them changes.

:func:`check` gives, per tool and provider, one of three verdicts: ``accepted`` (declared as
is), ``converted`` (declared, with notes on what was dropped or rewritten) or ``rejected``
(cannot be declared, and why); ``skipped`` when the tool's own ``providers`` leave the
provider out. It is what ``toolwire check`` prints.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from toolwire.errors import ConfigurationError, ToolwireError
from toolwire.providers import anthropic, gemini, provider_names
from toolwire.providers._openai import declared
from toolwire.schema.checks import gemini_violations, property_paths
from toolwire.tool import Tool, ToolSet

__all__ = ["ProviderVerdict", "ToolReport", "check"]

Status = Literal["accepted", "converted", "rejected", "skipped"]
_NOTES_SHOWN = 5


@dataclass(frozen=True, slots=True)
class ProviderVerdict:
    """How one provider takes one tool."""

    provider: str
    status: Status
    notes: tuple[str, ...] = ()
    """What was dropped or rewritten (converted), or why it cannot be declared (rejected)."""


@dataclass(frozen=True, slots=True)
class ToolReport:
    """One tool's verdicts, one per provider asked about."""

    name: str
    exposed_name: str
    verdicts: tuple[ProviderVerdict, ...]

    @property
    def renamed(self) -> bool:
        """True when the model sees another name than the tool's own."""
        return self.name != self.exposed_name

    @property
    def rejected(self) -> bool:
        return any(v.status == "rejected" for v in self.verdicts)


def _lost_paths(original: Any, declared_schema: Any) -> list[str]:
    lost = sorted(property_paths(original) - property_paths(declared_schema))
    if not lost:
        return []
    shown = ", ".join(lost[:_NOTES_SHOWN]) + (" ..." if len(lost) > _NOTES_SHOWN else "")
    return [f"{len(lost)} argument path(s) not described: {shown}"]


_NAME_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "defs"})


def _keywords(schema: Any) -> Counter[str]:
    """How often each keyword appears in ``schema`` (property names are not keywords)."""
    counts: Counter[str] = Counter()
    stack: list[Any] = [schema]
    budget = 100_000  # values queued, not only visited: a wide node is counted as wide
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            children: list[Any] = node
        elif isinstance(node, Mapping):
            children = []
            for key, value in node.items():
                counts[key] += 1
                if key in _NAME_MAPS and isinstance(value, Mapping):
                    children.extend(value.values())
                elif isinstance(value, Mapping | list) and key not in ("enum", "const", "default"):
                    children.append(value)
        else:
            continue
        budget -= len(children)
        if budget < 0:
            break
        stack.extend(children)
    return counts


def _changes(original: Any, declared_schema: Any) -> list[str]:
    before, after = _keywords(original), _keywords(declared_schema)
    notes = []
    for label, counts in (("dropped", before - after), ("added", after - before)):
        if counts:
            notes.append(f"{label}: " + ", ".join(f"{k} ({n})" for k, n in sorted(counts.items())))
    return notes


def _verdict(
    provider: str, original: Any, declared_schema: Any, notes: list[str]
) -> ProviderVerdict:
    if declared_schema == original and not notes:
        return ProviderVerdict(provider, "accepted")
    notes = notes + _lost_paths(original, declared_schema) + _changes(original, declared_schema)
    if not notes:
        notes = ["rewritten with the same keywords (references moved or inlined)"]
    return ProviderVerdict(provider, "converted", tuple(notes))


def _gemini(tool: Tool) -> ProviderVerdict:
    single = ToolSet([tool])
    (declaration,) = gemini.function_declarations(single)
    schema = declaration.get("parametersJsonSchema", {})
    violations = gemini_violations(schema)
    if violations:  # never expected: the lowering is built to the same rules
        return ProviderVerdict(
            "gemini", "rejected", tuple(f"{v.path}: {v.message}" for v in violations)
        )
    conversion = gemini.conversion_notes(single)[single.exposed_name(tool)]
    notes = [f"{n.path}: {n.message}" for n in conversion]
    return _verdict("gemini", tool.input_schema, schema, notes)


def _anthropic(tool: Tool) -> ProviderVerdict:
    (entry,) = anthropic.tools([tool])
    return _verdict("anthropic", tool.input_schema, entry["input_schema"], [])


def _openai(provider: str) -> Callable[[Tool], ProviderVerdict]:
    def assess(tool: Tool) -> ProviderVerdict:
        (entry,) = declared(ToolSet([tool]), provider, True)
        if entry.strict:
            notes = []
            if entry.null_paths:
                notes.append(
                    f"strict: {len(entry.null_paths)} optional argument(s) made nullable "
                    "(nulls are stripped before the call)"
                )
            return _verdict(provider, tool.input_schema, entry.parameters, notes)
        note = f"sent with strict: false ({entry.not_strict_because})"
        return _verdict(provider, tool.input_schema, entry.parameters, [note])

    return assess


_ASSESSORS: dict[str, Callable[[Tool], ProviderVerdict]] = {
    "gemini": _gemini,
    "anthropic": _anthropic,
    "openai-chat": _openai("openai-chat"),
    "openai-responses": _openai("openai-responses"),
}


def _assess(provider: str, tool: Tool) -> ProviderVerdict:
    if tool.providers is not None and provider not in tool.providers:
        only = ", ".join(sorted(tool.providers))
        return ProviderVerdict(provider, "skipped", (f"the tool is declared to {only} only",))
    try:
        return _ASSESSORS[provider](tool)
    except ToolwireError as exc:  # e.g. a SchemaConversionError naming the path
        return ProviderVerdict(provider, "rejected", (str(exc),))


def check(
    source: ToolSet | Iterable[Tool | Callable[..., Any]],
    providers: Sequence[str] | None = None,
) -> list[ToolReport]:
    """Per visible tool of ``source``, how each provider (all when None) takes it.

    Raises:
        ConfigurationError: for an unknown provider name.
    """
    names = list(providers) if providers is not None else provider_names()
    for name in names:
        if name not in _ASSESSORS:
            known = ", ".join(sorted(_ASSESSORS))
            raise ConfigurationError(f"unknown provider {name!r}; known: {known}")
    toolset = ToolSet.of(source)
    return [
        ToolReport(
            name=tool.name,
            exposed_name=exposed,
            verdicts=tuple(_assess(provider, tool) for provider in names),
        )
        for exposed, tool in zip(toolset.exposed_names, toolset, strict=True)
    ]
