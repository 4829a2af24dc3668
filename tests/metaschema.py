"""The draft 2020-12 meta-schema check of a schema the library made, once per distinct schema.

The corpus sweeps check thousands of declared schemas, many of them alike (one tool's schema
declared for several providers and modes), and the check is their slowest step: it runs in
jsonschema-rs (the validator the library itself uses), against the meta-schema the
``jsonschema`` package ships, with formats checked (a ``pattern`` must be an ECMA-262 regular
expression, as the draft says). A module of its own, as ``corpus.py`` is."""

from __future__ import annotations

import functools
import json
from typing import Any

import jsonschema_rs
from jsonschema import Draft202012Validator


class InvalidSchema(AssertionError):
    """A schema that is not valid draft 2020-12."""


def check_schema(schema: Any) -> None:
    """Raise :class:`InvalidSchema`, saying where, unless ``schema`` is valid draft 2020-12
    (the order of an object's keys, which the check does not read, aside)."""
    _check(json.dumps(schema, sort_keys=True))


@functools.cache
def _meta() -> Any:
    return jsonschema_rs.Draft202012Validator(
        Draft202012Validator.META_SCHEMA, validate_formats=True
    )


@functools.lru_cache(maxsize=8192)
def _check(text: str) -> None:
    errors = [
        f"{error.instance_path}: {error.message}" for error in _meta().iter_errors(json.loads(text))
    ]
    if errors:
        raise InvalidSchema("not a valid draft 2020-12 schema: " + "; ".join(errors[:5]))
