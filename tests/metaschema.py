"""The draft 2020-12 meta-schema check of a schema the library made, once per distinct schema.

The corpus sweeps check thousands of declared schemas, many of them alike (one tool's schema
declared for several providers and modes), and the check is their slowest step. A module of its
own, as ``corpus.py`` is."""

from __future__ import annotations

import functools
import json
from typing import Any

from jsonschema import Draft202012Validator


def check_schema(schema: Any) -> None:
    """Raise jsonschema's ``SchemaError`` unless ``schema`` is valid draft 2020-12 (the order
    of an object's keys, which the check does not read, aside)."""
    _check(json.dumps(schema, sort_keys=True))


@functools.lru_cache(maxsize=8192)
def _check(text: str) -> None:
    Draft202012Validator.check_schema(json.loads(text))
