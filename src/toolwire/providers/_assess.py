"""What every provider's ``assess`` shares: the verdict on one tool, from what its
declaration changed and what the provider's rules checker finds in it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import urldefrag

from toolwire.errors import ConfigurationError, SchemaConversionError, ToolwireError
from toolwire.providers._contract import ProviderProfile, Verdict
from toolwire.providers._registry import get_provider
from toolwire.schema import ConversionNote, bundle, external_references
from toolwire.schema.checks import property_paths
from toolwire.tool import Tool

__all__ = ["Rejected", "assessed", "custom_verdict", "texts"]

_NOTES_SHOWN = 5
_NAME_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "defs"})


class Rejected(Exception):
    """A declaration the provider would refuse, with the reasons."""

    def __init__(self, notes: list[str]) -> None:
        super().__init__("; ".join(notes))
        self.notes = notes


def texts(notes: Iterable[ConversionNote]) -> list[str]:
    """Conversion notes as ``path: message`` lines."""
    return [f"{n.path}: {n.message}" for n in notes]


def assessed(
    provider: str,
    tool: Tool,
    declare: Callable[[], tuple[Any, list[str]]],
    rules: Callable[[Any], list[ConversionNote]],
) -> Verdict:
    """``provider``'s verdict on ``tool``.

    ``declare()`` gives the schema the provider is sent and notes on what declaring changed
    (or raises a [`ToolwireError`][toolwire.errors.ToolwireError] or [`Rejected`][]); ``rules``
    is the provider's rules checker, written from its documentation, which the declared
    schema must pass. A schema that cannot validate arguments is rejected: each call would be
    answered with that error. References to other documents (never fetched) are noted.
    """
    skipped = _skipped(provider, tool)
    if skipped is not None:
        return skipped
    unusable = None
    external: list[str] = []
    try:
        tool.check_schema()
        given = frozenset(urldefrag(uri).url for uri in tool.resources or ())
        external = texts(external_references(tool.input_schema, given))
        external += texts(bundle(tool.input_schema, tool.resources)[1])
    except ConfigurationError as exc:
        unusable = str(exc)
    except SchemaConversionError:
        pass  # too large or deep: the declaration reports it
    try:
        schema, notes = declare()
        broken = rules(schema)
        if broken:  # never expected: every lowering is built to the same rules
            raise Rejected(
                [f"the declaration breaks {provider}'s rules: {t}" for t in texts(broken)]
            )
    except Rejected as exc:
        return Verdict(provider, "rejected", tuple(exc.notes))
    except ToolwireError as exc:  # e.g. a SchemaConversionError naming the path
        return Verdict(provider, "rejected", (str(exc),))
    if unusable is not None:  # declared, but every call would fail
        return Verdict(provider, "rejected", (unusable,))
    notes = notes + external
    if tool.kind == "custom":  # declared here as what it stands for
        notes.insert(0, _as_function(tool))
    if tool.input_examples and not get_provider(provider).PROFILE.input_examples:
        count = len(tool.input_examples)
        notes.insert(
            0,
            f"its {count} input example{'s' if count > 1 else ''} folded into the description "
            "(the API takes none of its own)",
        )
    notes[:0] = _loading_notes(tool, get_provider(provider).PROFILE)
    original = tool.input_schema
    if schema == original and not notes:
        return Verdict(provider, "accepted")
    notes = notes + _lost_paths(original, schema) + _changes(original, schema)
    if not notes:
        notes = ["rewritten with the same keywords (references moved or inlined)"]
    return Verdict(provider, "converted", tuple(dict.fromkeys(notes)))


def _loading_notes(tool: Tool, profile: ProviderProfile) -> list[str]:
    """What a provider without tool search or programmatic calling does with a tool that
    asks for them."""
    notes = []
    if tool.deferred and not profile.tool_search:
        notes.append("declared in full: the API has no tool search to load it on demand")
    if "code" in tool.callers and not profile.code_callers:
        notes.append(
            "called by the model only: the API runs no code that calls tools"
            if "direct" in tool.callers
            else "every call is refused: only code may call it, and the API runs no code "
            "that calls tools"
        )
    return notes


def custom_verdict(provider: str, tool: Tool, note: str) -> Verdict:
    """The verdict of a provider that declares ``tool``, a custom tool, natively: ``note``
    says how (its input schema is toolwire's own, not sent)."""
    skipped = _skipped(provider, tool)
    return skipped if skipped is not None else Verdict(provider, "converted", (note,))


def _skipped(provider: str, tool: Tool) -> Verdict | None:
    if tool.providers is not None and provider not in tool.providers:
        only = ", ".join(sorted(tool.providers))
        return Verdict(provider, "skipped", (f"the tool is declared to {only} only",))
    return None


def _as_function(tool: Tool) -> str:
    grammar = tool.grammar
    checked = (
        f"; its {grammar.syntax} grammar is checked by toolwire before each call, not enforced "
        "by the model (describe the format in the description)"
        if grammar is not None
        else ""
    )
    return (
        f"custom tool: declared as a function with one string parameter, "
        f"{tool.text_argument!r}{checked}"
    )


def _lost_paths(original: Any, declared: Any) -> list[str]:
    lost = sorted(property_paths(original) - property_paths(declared))
    if not lost:
        return []
    shown = ", ".join(lost[:_NOTES_SHOWN]) + (" ..." if len(lost) > _NOTES_SHOWN else "")
    return [f"{len(lost)} argument path(s) not described: {shown}"]


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


def _changes(original: Any, declared: Any) -> list[str]:
    before, after = _keywords(original), _keywords(declared)
    notes = []
    for label, counts in (("dropped", before - after), ("added", after - before)):
        if counts:
            notes.append(f"{label}: " + ", ".join(f"{k} ({n})" for k, n in sorted(counts.items())))
    return notes
