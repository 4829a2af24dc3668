"""The store tests' shared state: the run counts of ``store_kit``'s tools, cleared per test."""

from __future__ import annotations

import pytest
from store_kit import RUNS


@pytest.fixture(autouse=True)
def _count() -> None:
    RUNS.clear()
