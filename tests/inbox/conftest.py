from __future__ import annotations

import importlib.util

import pytest

# The console needs the inbox extra; without it these tests are skipped whole.
if importlib.util.find_spec("starlette") is None:
    collect_ignore_glob = ["test_*.py"]


@pytest.fixture(autouse=True)
def _clear() -> None:
    from inbox_tools import RAN

    RAN.clear()
