"""The test corpus: real tool definitions and stress schemas (see tests/data/README.md).

A module of its own, not conftest: test folders with a conftest of their own would shadow
``from corpus import ...``."""

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
