"""What both Gemini lowerings share: the backends, the constraints they describe rather than
keep, the budget of inlined nodes, and small helpers."""

from __future__ import annotations

from typing import Any, Literal

from toolwire.schema._base import short_json

__all__ = ["DESCRIBED", "INLINE_BUDGET", "Backend", "enum_hint", "is_extension"]

Backend = Literal["gemini", "vertex"]

# Constraints the JSON target does not keep (the OpenAPI target keeps some per type):
# described for the model, still checked by the validator against the original schema.
DESCRIBED = frozenset(
    {
        "pattern",
        "minLength",
        "maxLength",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minProperties",
        "maxProperties",
        "uniqueItems",
    }
)

INLINE_BUDGET = 5_000
"""Output nodes after which further references are cut rather than inlined."""


def is_extension(key: Any) -> bool:
    """An ``x-`` keyword: a vendor's, dropped without a note."""
    return key.__class__ is str and key.startswith("x-")


def enum_hint(values: list[Any]) -> str:
    """The values for the description (the first 50), where the target cannot keep them."""
    return (
        "allowed values: "
        + ", ".join(short_json(v) for v in values[:50])
        + (", ..." if len(values) > 50 else "")
    )
