"""Which providers can take which tools, and what declaring them changes.

:func:`check` gives, per tool and provider, one of three verdicts: ``accepted`` (declared as
is), ``converted`` (declared, with notes on what was dropped or rewritten) or ``rejected``
(cannot be declared, or its arguments cannot be validated, and why); ``skipped`` when the
tool's own ``providers`` leave the provider out. References to other documents (never fetched)
are noted for every provider. It is what ``toolwire check`` prints.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from toolwire.errors import ConfigurationError, SchemaConversionError, ToolwireError
from toolwire.providers import anthropic, gemini, provider_names
from toolwire.providers._openai import declared
from toolwire.schema._base import ConversionNote
from toolwire.schema._rewrite import declared_object, external_references
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


def _lost_paths(original: set[str], declared_schema: Any) -> list[str]:
    lost = sorted(original - property_paths(declared_schema))
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


class _Rejected(Exception):
    """A declaration a provider would refuse, with the reasons."""

    def __init__(self, notes: list[str]) -> None:
        self.notes = notes


class _Original:
    """The tool's own schema, and what is computed from it once for every provider."""

    def __init__(self, tool: Tool) -> None:
        self.schema = tool.input_schema
        self._paths: set[str] | None = None

    @property
    def paths(self) -> set[str]:
        if self._paths is None:
            self._paths = property_paths(self.schema)
        return self._paths


def _verdict(
    provider: str, original: _Original, declared_schema: Any, notes: list[str]
) -> ProviderVerdict:
    if declared_schema == original.schema and not notes:
        return ProviderVerdict(provider, "accepted")
    notes = (
        notes
        + _lost_paths(original.paths, declared_schema)
        + _changes(original.schema, declared_schema)
    )
    if not notes:
        notes = ["rewritten with the same keywords (references moved or inlined)"]
    return ProviderVerdict(provider, "converted", tuple(dict.fromkeys(notes)))


def _texts(notes: Iterable[ConversionNote]) -> list[str]:
    return [f"{n.path}: {n.message}" for n in notes]


# Each declarer returns the schema a provider is sent and notes on what declaring changed,
# or raises (a ToolwireError, or _Rejected).


def _gemini(tool: Tool) -> tuple[Any, list[str]]:
    single = ToolSet([tool])
    (declaration,) = gemini.function_declarations(single)
    schema = declaration.get("parametersJsonSchema", {})
    violations = gemini_violations(schema)
    if violations:  # never expected: the lowering is built to the same rules
        raise _Rejected(_texts(violations))
    return schema, _texts(gemini.conversion_notes(single)[single.exposed_name(tool)])


def _anthropic(tool: Tool) -> tuple[Any, list[str]]:
    (entry,) = anthropic.tools([tool])
    return entry["input_schema"], _texts(declared_object(tool.input_schema)[1])


def _openai(provider: str) -> Callable[[Tool], tuple[Any, list[str]]]:
    def declare(tool: Tool) -> tuple[Any, list[str]]:
        (entry,) = declared(ToolSet([tool]), provider, True)
        notes = _texts(declared_object(tool.input_schema)[1])
        if not entry.strict:
            notes.insert(0, f"sent with strict: false ({entry.not_strict_because})")
        elif entry.null_paths:
            notes.append(
                f"strict: {len(entry.null_paths)} optional argument(s) made nullable "
                "(nulls are stripped before the call)"
            )
        return entry.parameters, notes

    return declare


_DECLARERS: dict[str, Callable[[Tool], tuple[Any, list[str]]]] = {
    "gemini": _gemini,
    "anthropic": _anthropic,
    "openai-chat": _openai("openai-chat"),
    "openai-responses": _openai("openai-responses"),
}


def _assess(tool: Tool, providers: Sequence[str]) -> tuple[ProviderVerdict, ...]:
    """The tool's verdict for each provider.

    A schema that cannot validate arguments is rejected for every provider: each call would
    be answered with that error. References to other documents are noted for every provider
    (never fetched; the part they name accepts any value).
    """
    unusable = None
    external: list[str] = []
    try:
        tool.check_schema()
        external = _texts(external_references(tool.input_schema))
    except ConfigurationError as exc:
        unusable = str(exc)
    except SchemaConversionError:
        pass  # too large or deep: each declaration reports it
    original = _Original(tool)
    verdicts = []
    for provider in providers:
        if tool.providers is not None and provider not in tool.providers:
            only = ", ".join(sorted(tool.providers))
            verdicts.append(
                ProviderVerdict(provider, "skipped", (f"the tool is declared to {only} only",))
            )
            continue
        try:
            schema, notes = _DECLARERS[provider](tool)
        except _Rejected as exc:
            verdicts.append(ProviderVerdict(provider, "rejected", tuple(exc.notes)))
        except ToolwireError as exc:  # e.g. a SchemaConversionError naming the path
            verdicts.append(ProviderVerdict(provider, "rejected", (str(exc),)))
        else:
            if unusable is not None:  # declared, but every call would fail
                verdicts.append(ProviderVerdict(provider, "rejected", (unusable,)))
            else:
                verdicts.append(_verdict(provider, original, schema, notes + external))
    return tuple(verdicts)


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
        if name not in _DECLARERS:
            known = ", ".join(sorted(_DECLARERS))
            raise ConfigurationError(f"unknown provider {name!r}; known: {known}")
    toolset = ToolSet.of(source)
    return [
        ToolReport(
            name=tool.name,
            exposed_name=exposed,
            verdicts=_assess(tool, names),
        )
        for exposed, tool in zip(toolset.exposed_names, toolset, strict=True)
    ]
