from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data"


def load_corpus(name: str) -> list[dict[str, Any]]:
    """Records of tests/data/<name>.jsonl (see tests/data/README.md)."""
    with (DATA / f"{name}.jsonl").open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


TOOLS = load_corpus("tools")
STRESS = load_corpus("stress")
ALL_SCHEMAS = TOOLS + STRESS


def corpus_id(record: dict[str, Any]) -> str:
    return f"{record['source'].split(':')[0]}:{record['name']}"


import os  # noqa: E402

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

# CI replays the same examples on every run (a failure there is reproducible and never a coin
# toss); local runs keep exploring new ones.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
