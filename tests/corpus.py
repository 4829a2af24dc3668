"""The test corpus: real tool definitions and stress schemas (see tests/data/README.md).

A module of its own, not conftest: test folders with a conftest of their own would shadow
``from corpus import ...``."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from budgets import RUN_KIND, SHORT_SWEEP

DATA = Path(__file__).parent / "data"


def load_corpus(name: str) -> list[dict[str, Any]]:
    """Records of tests/data/<name>.jsonl (see tests/data/README.md)."""
    with (DATA / f"{name}.jsonl").open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


TOOLS = load_corpus("tools")
STRESS = load_corpus("stress")
ALL_SCHEMAS = TOOLS + STRESS


def corpus_id(record: dict[str, Any]) -> str:
    return f"{server_of(record)}:{record['name']}"


def server_of(record: dict[str, Any]) -> str:
    return str(record["source"]).split(":")[0]


def swept(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records a corpus sweep (a test per record) takes in this run: all of them in CI's
    run and the deep run; in the README's short run every stress schema and, of each server's
    tools, one in ``SHORT_SWEEP`` (see ``budgets.py``). Whole-corpus checks take every record
    in any run."""
    if RUN_KIND != "dev":
        return records
    stress = {id(record) for record in STRESS}
    seen: defaultdict[str, int] = defaultdict(int)
    taken = []
    for record in records:
        server = server_of(record)
        if id(record) in stress or seen[server] % SHORT_SWEEP == 0:
            taken.append(record)
        seen[server] += 1
    return taken
