"""The stores the state machines run on: memory and SQLite in the README's test command, all
four (Redis and PostgreSQL from the suite's servers) in the deep run (``-m deep``)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

import machinery
import pytest
from hypothesis import settings
from machinery import Stores

from budgets import RUN_KIND

STORES = [
    pytest.param(("memory", False), id="memory"),
    pytest.param(("sqlite", False), id="sqlite"),
    *(
        pytest.param((kind, True), id=f"deep-{kind}", marks=pytest.mark.deep)
        for kind in ("memory", "sqlite", "redis", "postgres")
    ),
]


@pytest.fixture(params=STORES)
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Stores:
    """Fresh stores of the parameter's kind, one per machine."""
    kind, _ = request.param
    return _stores(request, tmp_path, kind)


@pytest.fixture(params=["memory", "sqlite", "redis", "postgres"])
def deep_stores(request: pytest.FixtureRequest, tmp_path: Path) -> Stores:
    """Fresh stores of each kind, for a machine that runs only in the deep run."""
    return _stores(request, tmp_path, request.param)


def _stores(request: pytest.FixtureRequest, tmp_path: Path, kind: str) -> Stores:
    url = None
    if kind == "redis":
        url = request.getfixturevalue("redis_url")
    elif kind == "postgres":
        url = request.getfixturevalue("postgres_url")
    return Stores(kind, tmp_path, url)


@pytest.fixture
def budget(request: pytest.FixtureRequest) -> Callable[[int, int], settings]:
    """``budget(examples, steps)``: a machine's hypothesis settings for this run's kind, scaled
    as the suite's conftest scales every property test (the deep budget for a test marked
    deep)."""
    deep = request.node.get_closest_marker("deep") is not None
    return functools.partial(machinery.budget, kind="deep" if deep else RUN_KIND)
