"""The benchmarks page, generated from saved runs instead of typed.

``run`` runs every benchmark of ``benchmarks/`` (with settings that keep a full run to a few
minutes), and saves each one's figures (its ``--json`` output), its printed output and the
run's metadata (date, machine, Python, the versions of toolwire and of every peer package)
into ``benchmarks/results/<name>.json``. ``render`` turns those files into
``docs/benchmarks.md``; ``tests/test_docs_tools.py`` checks that the committed page is exactly
what ``render`` makes of the committed results.

    python scripts/benchmarks_page.py run [--only NAME ...]
    python scripts/benchmarks_page.py render [--check]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
PAGE = ROOT / "docs" / "benchmarks.md"
RERUN = "python scripts/benchmarks_page.py run && python scripts/benchmarks_page.py render"

# Every package whose version a result records: toolwire, the peers (the `bench` extra) and
# what the benchmarks run on.
PACKAGES = (
    "toolwire",
    "pydantic-ai-slim",
    "langchain-google-genai",
    "langchain-core",
    "litellm",
    "google-genai",
    "openai-agents",
    "openai",
    "mcp",
    "pydantic",
    "anyio",
    "redis",
    "psycopg",
)

# Row labels of the benchmarks' output, by prefix, and the package each one exercises.
LABEL_PACKAGES = (
    ("toolwire", "toolwire"),
    ("hub", "toolwire"),
    ("through gateway", "toolwire"),
    ("pydantic-ai", "pydantic-ai-slim"),
    ("langchain-google-genai", "langchain-google-genai"),
    ("litellm", "litellm"),
    ("google-genai", "google-genai"),
    ("openai-agents", "openai-agents"),
    ("openai-python", "openai"),
    ("bare mcp.Client", "mcp"),
    ("direct mcp.Client", "mcp"),
)


@dataclass(frozen=True)
class Benchmark:
    name: str
    title: str
    script: str
    args: tuple[str, ...]
    peers: tuple[str, ...]
    about: str
    render: Callable[[dict[str, Any]], list[str]] = field(repr=False)
    python: str | None = None
    """The environment variable naming the Python to run it with (a benchmark whose
    packages live in an environment of their own), else this one."""


# --- formatting -------------------------------------------------------------------------------

NONE = "\N{EN DASH}"  # a figure that does not apply
TIMES = "\N{MULTIPLICATION SIGN}"


def _num(value: float | None, digits: int = 1) -> str:
    return NONE if value is None else f"{value:,.{digits}f}"


def _pct(value: float | None) -> str:
    return NONE if value is None else f"{value:.1%}"


def _ratio(value: float | None) -> str:
    return NONE if value is None else f"{value:.2f}{TIMES}"


def _signed_pct(value: float | None) -> str:
    return NONE if value is None else f"{value:+.1%}"


def _table(header: list[str], rows: list[list[str]], align: str | None = None) -> list[str]:
    """A Markdown table; ``align`` holds one of "l"/"r" per column (text left, figures right)."""
    kinds = align or "l" + "r" * (len(header) - 1)
    rule = ["---:" if kind == "r" else "---" for kind in kinds]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(rule) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def package_of(label: str) -> str | None:
    for prefix, package in LABEL_PACKAGES:
        if label.startswith(prefix):
            return package
    return None


def _versions(result: dict[str, Any]) -> dict[str, str | None]:
    versions: dict[str, str | None] = result.get("metadata", {}).get("packages", {})
    return versions


def _labelled(label: str, result: dict[str, Any]) -> str:
    """A peer's row label with the version of the package it exercises (and the package's
    name, when the label does not start with it); toolwire's rows as they are (its version is
    given once per benchmark)."""
    package = package_of(label)
    version = None if package is None else _versions(result).get(package)
    if package is None or package == "toolwire" or version is None:
        return label
    if label.startswith(package.removesuffix("-slim")):
        return f"{label} ({version})"
    return f"{label} ({package} {version})"


# --- one renderer per benchmark: its figures as tables -----------------------------------------


def render_dispatch(result: dict[str, Any]) -> list[str]:
    figures = result["figures"]
    per_call: dict[str, float | None] = figures["us_per_call"]
    floor = per_call["direct call"] or 0.0
    rows = []
    for label, took in per_call.items():
        overhead = None if took is None or label == "direct call" else took - floor
        rows.append([_labelled(label, result), _num(took, 2), _num(overhead, 2)])
    lines = [
        f"{figures['calls']} calls of a trivial tool in one response; the best of "
        f"{figures['repeat']} runs.",
        "",
        *_table(["path", "µs per call", "overhead over a direct call (µs)"], rows),
    ]
    ours = per_call.get("toolwire execute_tool_calls (async tool)")
    theirs = per_call.get("pydantic-ai Agent + FunctionModel")
    if ours is not None and theirs is not None and theirs > floor:
        lines += [
            "",
            f"**toolwire's overhead ÷ pydantic-ai's: {(ours - floor) / (theirs - floor):.2f}** "
            "(below 1: toolwire adds less per call).",
        ]
    naps = figures.get("concurrency_s") or {}
    if naps:
        lines += [
            "",
            "Concurrency: calls of a tool that sleeps 100 ms, in one response.",
            "",
            *_table(
                ["tool", "calls", "seconds for all"],
                [
                    [
                        {"nap": "parallel-safe", "nap_alone": "parallel_safe=False"}.get(k, k),
                        str(v["calls"]),
                        _num(v["seconds"], 3),
                    ]
                    for k, v in naps.items()
                ],
            ),
        ]
    return lines


def _converter_ratios(
    converters: dict[str, dict[str, Any]], ours: str, key: str, what: str
) -> list[str]:
    mine = converters.get(ours, {}).get(key)
    lines = []
    for name, row in converters.items():
        if name.startswith("toolwire") or not mine or not row.get(key):
            continue
        lines.append(f"- {ours} ÷ {name}, {what}: **{mine / row[key]:.2f}**")
    return lines


def render_gemini_schema(result: dict[str, Any]) -> list[str]:
    figures = result["figures"]
    n = figures["schemas"]
    converters: dict[str, dict[str, Any]] = figures["converters"]
    rows = [
        [
            _labelled(name, result),
            f"`{row['field']}`",
            _pct(row["converted"] / n),
            _pct(row["fits"] / n),
            _pct(row["paths"]),
            _num(row["us"]),
            _num(row["us_stress"]),
        ]
        for name, row in converters.items()
    ]
    lines = [
        f"{n} schemas ({figures['tools']} tool schemas and {figures['stress']} stress schemas), "
        f"times the best of {figures['repeat']} passes.",
        "",
        *_table(
            [
                "converter",
                "field",
                "converted",
                "fits Gemini's rules",
                "paths kept",
                "µs per tool",
                "µs per stress schema",
            ],
            rows,
            "llrrrrr",
        ),
        "",
        "Time per tool schema, toolwire ÷ peer (below 1: toolwire is faster):",
        "",
    ]
    for ours in ("toolwire json", "toolwire openapi"):
        field_of = converters.get(ours, {}).get("field")
        same_field = {
            k: v for k, v in converters.items() if v["field"] == field_of or k.startswith(ours)
        }
        lines += _converter_ratios(same_field, ours, "us", "per tool")
    cached = figures.get("cached_us_per_tool")
    if cached is not None:
        lines += [
            "",
            f"`function_declarations` repeated on an unchanged `ToolSet` (cached): "
            f"{cached:.3f} µs per tool.",
        ]
    return lines


def render_strict_schema(result: dict[str, Any]) -> list[str]:
    figures = result["figures"]
    converters: dict[str, dict[str, Any]] = figures["converters"]
    rows = [
        [
            _labelled(name, result),
            _pct(row["no_error"]),
            _pct(row["strict"]),
            _pct(row["optional_kept"]),
            _num(row["us_per_schema"]),
        ]
        for name, row in converters.items()
    ]
    return [
        f"{figures['schemas']} schemas, times the best of {figures['repeat']} passes.",
        "",
        *_table(
            [
                "converter",
                "no error",
                "really strict",
                "optional kept optional",
                "µs per schema",
            ],
            rows,
        ),
        "",
        "Time per schema, toolwire ÷ peer (below 1: toolwire is faster):",
        "",
        *_converter_ratios(converters, "toolwire strict_schema", "us_per_schema", "per schema"),
    ]


def render_mcp_overhead(result: dict[str, Any]) -> list[str]:
    figures = result["figures"]
    lines = [
        f"{figures['calls']} calls one at a time (in blocks of {figures['block']}), then "
        f"batches of {figures['batch']} calls at once; medians.",
    ]
    for name, paths in figures["comparisons"].items():
        base_label = next(iter(paths))
        base = paths[base_label]
        rows = []
        for label, row in paths.items():
            rows.append(
                [
                    _labelled(label, result),
                    _num(row["us_per_call"]),
                    _signed_pct(
                        None
                        if label == base_label
                        else row["us_per_call"] / base["us_per_call"] - 1
                    ),
                    _num(row["calls_per_s"], 0),
                    _signed_pct(
                        None
                        if label == base_label
                        else row["calls_per_s"] / base["calls_per_s"] - 1
                    ),
                    _num(row.get("client_cpu_us_per_call")),
                ]
            )
        lines += [
            "",
            f"**{name}**",
            "",
            *_table(
                [
                    "path",
                    "µs per call",
                    "latency vs first row",
                    "calls/s (batch)",
                    "throughput vs first row",
                    "client CPU µs per call",
                ],
                rows,
            ),
        ]
    return lines


def render_mcp_instructions(result: dict[str, Any]) -> list[str]:
    figures = result["figures"]
    counts: dict[str, float] = figures["instructions_per_call"]
    base_label = next(iter(counts))
    base = counts[base_label]
    rows = [
        [
            _labelled(label, result),
            _num(count / 1e6, 3),
            NONE if label == base_label else f"{(count - base) / 1e3:+,.1f} k",
            _signed_pct(None if label == base_label else count / base - 1),
        ]
        for label, count in counts.items()
    ]
    return [
        f"Instructions per call ({figures['transport']}): the difference between runs of "
        f"{figures['few']} and {figures['many']} calls, divided by the extra calls.",
        "",
        *_table(["path", "M instructions per call", "added", "added vs bare"], rows),
    ]


def render_instructions(result: dict[str, Any]) -> list[str]:
    figures = result["figures"]
    counts: dict[str, dict[str, float]] = figures["instructions_per_turn"]
    before, after = counts["before"], counts["after"]
    lines = [
        f"Instructions per turn ({figures['calls_per_turn']} calls a turn), "
        f"{figures['iterations']} turns counted after {figures['warmup']} of warm-up; before: "
        f"`{figures['before']}`, after: {figures['after']}.",
    ]
    for family, workloads in figures["families"].items():
        rows = [
            [f"`{w}`", _num(before[w], 0), _num(after[w], 0), f"{after[w] / before[w]:.4f}"]
            for w in workloads
        ]
        if len(workloads) > 1:
            b, a = sum(before[w] for w in workloads), sum(after[w] for w in workloads)
            rows.append([f"**{family}, all**", _num(b, 0), _num(a, 0), f"**{a / b:.4f}**"])
        lines += ["", *_table(["workload", "before", "after", "after ÷ before"], rows)]
    return lines


def render_store(result: dict[str, Any]) -> list[str]:
    figures = result["figures"]
    lines = [
        f"{figures['turns']} turns per block, {figures['blocks']} blocks, medians; µs per call. "
        "`vs floor`: the store's time per call in a new run over the same reads and writes done "
        "directly with the database's driver.",
    ]
    for size, stores in figures["sizes"].items():
        rows = [
            [
                name,
                _num(row["new_run_us"]),
                _ratio(row["vs_memory"]),
                _num(row["added_us"]),
                _num(row["resume_us"]),
                _num(row["floor_us"]),
                _ratio(row["vs_floor"]),
            ]
            for name, row in stores.items()
        ]
        lines += [
            "",
            f"**Turns of {size} call{'s' if size != '1' else ''}**",
            "",
            *_table(
                ["store", "new run", "vs memory", "added", "resume", "floor", "vs floor"], rows
            ),
        ]
    queue = figures.get("queue")
    if queue:
        rows = [
            [
                name,
                _num(row["floor_ms"], 2),
                _num(row["pending_ms"], 2),
                _num(row["console_ms"], 2),
                _num(row["deep_ms"], 2),
                _ratio(row["ratio"]),
            ]
            for name, row in queue["stores"].items()
        ]
        lines += [
            "",
            f"**The approval queue with {queue['count']:,} calls waiting** (ms per page of 50, "
            f"median of {queue.get('rounds', 15)}, the four taking turns round by round): "
            "the floor is the newest 50 by the store's index, read with its "
            "driver and each record parsed from JSON; `pending` is `toolwire.pending(limit=50, "
            "newest_first=True)`; `console` the console's list (`ledger.waiting`) at the head, "
            "`deep` half-way down the queue; `ratio` the slowest of the three over the floor.",
            "",
            *_table(["store", "floor", "pending", "console", "deep", "ratio"], rows),
        ]
    return lines


def render_large_toolsets(result: dict[str, Any]) -> list[str]:
    figures = result["figures"]
    rows = []
    by_provider: dict[str, dict[str, dict[str, Any]]] = {}
    for row in figures["rows"]:
        by_provider.setdefault(row["provider"], {})[row["way"]] = row
    for provider, ways in by_provider.items():
        eager, lazy = ways["eager"], ways["deferred"]
        rows.append(
            [
                provider,
                _num(eager["request_bytes"] / 1024),
                _num(lazy["request_bytes"] / 1024),
                _num(eager["context_bytes"] / 1024),
                _num(lazy["context_bytes"] / 1024),
                _pct(1 - lazy["context_bytes"] / eager["context_bytes"]),
                _num(eager["declare_ms"]),
                _num(lazy["declare_ms"]),
            ]
        )
    lines = [
        f"{figures['tools']} tools of {figures['servers']} servers from the test corpus; "
        f"deferred: all but the first {figures['eager']}.",
        "",
    ]
    return lines + _table(
        [
            "provider",
            "request KB, eager",
            "request KB, deferred",
            "shown KB, eager",
            "shown KB, deferred",
            "shown less",
            "declare ms, eager",
            "declare ms, deferred",
        ],
        rows,
        "lrrrrrrr",
    )


def _cell(text: str) -> str:
    """Text in a table cell: its pipes escaped."""
    return text.replace("|", "\\|")


def _render_bfcl(figures: dict[str, Any]) -> list[str]:
    functions, calls = figures["functions"], figures["calls"]
    unfit = calls["do_not_fit"]
    lines = [
        f"**Berkeley Function Calling Leaderboard** ({figures['package']}): "
        f"{functions['unique']:,} unique functions (by name and parameters), read and converted "
        f"with BFCL's own code ({figures['conversion']}).",
        "",
        *_table(
            ["source", "entries", "functions"],
            [
                [f"`{source}`", f"{row['entries']:,}", f"{row['functions']:,}"]
                for source, row in functions["sources"].items()
            ],
        ),
        "",
        f"Its {calls['answers']:,} ground-truth calls (`possible_answer/`) made into "
        f"{calls['unique']:,} distinct calls: each answer's first acceptable value of every "
        "parameter, then one call per other acceptable value. The `jsonschema` package judges "
        "whether each fits its function's schema.",
        "",
        *_table(
            [
                "source",
                "answers",
                "distinct calls",
                "do not fit",
                "answers with a value that does not fit",
            ],
            [
                [
                    f"`{source}`",
                    f"{row['answers']:,}",
                    f"{row['calls']:,}",
                    f"{row['do_not_fit']:,}",
                    f"{row['answers_do_not_fit']:,}",
                ]
                for source, row in calls["sources"].items()
            ],
        ),
        "",
        f"{unfit['unique']:,} distinct calls do not fit their schema ("
        + ", ".join(f"{kind}: {n}" for kind, n in unfit["kinds"].items())
        + f"), from {unfit['answers']:,} answers; {unfit['first_values']} of them are calls "
        "of first acceptable values:",
        "",
        *_table(
            ["entry", "function", "where and why"],
            [
                [
                    f"`{call['entry']}`",
                    f"`{call['function']}`",
                    f"`{_cell('; '.join(call['errors']))}`",
                ]
                for call in calls["first_values_not_fitting"]
            ],
            "lll",
        ),
        "",
        "Per provider and mode: every function declared alone, checked with the provider's "
        "SDK type and toolwire's rules for it (`problems`); every distinct call sent in a "
        "response of that provider and run (`disagree`: judged otherwise than `jsonschema`, "
        "where strict mode's nulls for optional arguments count as left out).",
    ]
    for provider, declared_modes in figures["declared"].items():
        rows = []
        notes = []
        for mode, declared in declared_modes.items():
            validated = figures["validated"][provider][mode]
            problems = declared["problems"] + validated["unclear"] + validated["altered"]
            rows.append(
                [
                    mode,
                    f"{declared['declared']:,}",
                    f"{declared['accepted_as_is']:,}",
                    f"{declared['converted']:,}",
                    f"{declared['strict']:,}",
                    f"{problems:,}",
                    f"{validated['accepted']:,}",
                    f"{validated['rejected']:,}",
                    f"{validated['disagreements']:,}",
                ]
            )
            notes += [
                f"- {mode}: {n:,} not strict: {_cell(reason)}"
                for reason, n in declared["not_strict"].items()
            ]
        lines += [
            "",
            f"**{provider}**",
            "",
            *_table(
                [
                    "mode",
                    "declared",
                    "as is",
                    "converted",
                    "strict",
                    "problems",
                    "calls accepted",
                    "rejected",
                    "disagree",
                ],
                rows,
            ),
        ]
        if notes:
            lines += ["", *notes]
    return lines


def _render_json_schema_suite(figures: dict[str, Any]) -> list[str]:
    return [
        f"**The JSON Schema Test Suite** ({figures['package']}, `tests/` and "
        "`optional/format/`): each case through toolwire's public path, a tool with the case's "
        "schema (the suite's remote documents given as `resources`) and a call with its "
        "instance.",
        "",
        *_table(
            ["cases", "agree", "fail open", "fail closed (documented)", "refused", "agreement"],
            [
                [
                    f"{figures['cases']:,}",
                    f"{figures['agree']:,}",
                    f"{figures['fail_open']:,}",
                    f"{figures['fail_closed']:,}",
                    f"{figures['refused']:,}",
                    f"{figures['agreement']:.1%}",
                ]
            ],
            "rrrrrr",
        ),
        "",
        "The cases failing closed are toolwire's documented choices: `format` is asserted "
        "(the suite's format-as-annotation cases), and a custom meta-schema's vocabularies are "
        "not honoured (everything is validated). Without them, agreement is "
        f"{figures['agreement_without_documented_choices']:.1%}.",
    ]


_PUBLIC_SUITES: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    "bfcl": _render_bfcl,
    "json_schema_test_suite": _render_json_schema_suite,
}
"""How each suite of ``benchmarks/public_suites.py``'s figures (one key per suite) is shown."""


def render_public_suites(result: dict[str, Any]) -> list[str]:
    figures = result["figures"]
    lines: list[str] = []
    for suite, render_suite in _PUBLIC_SUITES.items():
        if suite in figures:
            lines += [*(["", "---", ""] if lines else []), *render_suite(figures[suite])]
    return lines


_RECIPES = {
    "none": "no policy",
    "taint-deny": "taint, deny",
    "taint-ask": "taint, ask",
    "provenance-deny": '`provenance="deny"`',
    "provenance-ask": '`provenance="ask"`',
}
_SUITES = ("workspace", "travel", "banking", "slack", "all")
_GOALS = "attack success on tool-call goals at most 2%, utility at least 90%, asked in at most 30%"


def render_prompt_injection(result: dict[str, Any]) -> list[str]:
    figures = result["figures"]
    rows = []
    recipes = [name for name in _RECIPES if name in figures["recipes"]]
    for recipe in recipes:
        suites = figures["recipes"][recipe]
        order = [name for name in _SUITES if name in suites]
        for suite in order:
            row = suites[suite]
            rows.append(
                [
                    _RECIPES[recipe] if suite == order[0] else "",
                    f"**{suite}**" if suite == "all" else suite,
                    _pct(row["utility"]),
                    _pct(row["utility_under_attack"]),
                    _pct(row["tool_call_attack_success"]),
                    _pct(row["tasks_asked"]),
                    str(row["calls_asked"]),
                ]
            )
    best = figures["recipes"].get("provenance-ask", {}).get("all")
    lines = [
        f"AgentDojo {figures['agentdojo']} (benchmark {figures['version']}), the "
        f"`{figures['attack']}` attack. Utility: the user's tasks done, without attack and "
        "under attack (each pair); attack success: the pairs whose attacker's goal, reached "
        "by a call that acts or reaches outside, the benchmark's own check finds reached; "
        "asked: the user tasks (without attack) in which a human was asked, and the calls "
        "asked about.",
        "",
        *_table(
            ["recipe", "suite", "utility", "under attack", "attack success", "asked", "calls"],
            rows,
            "llrrrrr",
        ),
    ]
    if best is not None:
        lines += [
            "",
            f'The goal ({_GOALS}, over all suites), for `provenance="ask"`: attack success '
            f"{_pct(best['tool_call_attack_success'])}, utility {_pct(best['utility'])}, "
            f"asked in {_pct(best['tasks_asked'])} of the user tasks.",
        ]
    return lines


BENCHMARKS = (
    Benchmark(
        "dispatch",
        "Dispatch overhead",
        "benchmarks/dispatch.py",
        ("--calls", "200", "--repeat", "7"),
        ("pydantic-ai-slim",),
        "Parse, validate, policy, run and answer, per call of a trivial tool: toolwire's "
        "`execute_tool_calls` on a Gemini response against pydantic-ai running the same tool "
        "through an `Agent` with a `FunctionModel`, and both against calling the function.",
        render_dispatch,
    ),
    Benchmark(
        "gemini_schema",
        "Gemini schema conversion",
        "benchmarks/gemini_schema.py",
        ("--repeat", "5"),
        ("pydantic-ai-slim", "langchain-google-genai", "litellm", "google-genai"),
        "Every schema of the test corpus converted for Gemini by each converter: how many "
        "convert, how many meet Gemini's documented rules for the field they target, how much "
        "of the original they keep, and how long it takes.",
        render_gemini_schema,
    ),
    Benchmark(
        "strict_schema",
        "OpenAI strict conversion",
        "benchmarks/strict_schema.py",
        ("--repeat", "5"),
        ("openai-agents", "openai"),
        "Every schema of the test corpus made strict for OpenAI: how many convert without an "
        "error, how many come out really strict, and how many optional properties stay "
        "optional (the model may send null) instead of being forced.",
        render_strict_schema,
    ),
    Benchmark(
        "mcp_overhead",
        "MCP hub and gateway overhead",
        "benchmarks/mcp_overhead.py",
        ("--calls", "200"),
        ("mcp",),
        "The same MCP calls on a bare `mcp.Client`, through toolwire's hub, and through the "
        "whole governed pipeline, in process and over stdio; then a bare client of a server "
        "against a client of a toolwire gateway in front of it; then the gateway over HTTP "
        "without and with authentication (JWT access tokens); then what serving tasks adds to a "
        "call answered at once (a 2026-07-28 client declaring the tasks extension, each of its "
        "calls kept in a run, against one that does not); last, a resource read and a prompt "
        "get of the server, directly and through the gateway in front of it (each read and get "
        "governed as a call), in process and over stdio.",
        render_mcp_overhead,
    ),
    Benchmark(
        "store",
        "Durable run stores",
        "benchmarks/store.py",
        ("--turns", "100", "--blocks", "5", "--queue", "100000"),
        ("redis", "psycopg"),
        "What a durable run store costs per call, against the in-memory one and against its "
        "floor: the same reads and writes done directly with the database's driver.",
        render_store,
    ),
    Benchmark(
        "large_toolsets",
        "Large toolsets: deferred loading",
        "benchmarks/large_toolsets.py",
        ("--tools", "500", "--repeat", "5"),
        (),
        "Declaring 500 real tools for each provider with tool search, every one in full "
        "against all but five deferred: the bytes of the request's tools (sent on every turn; "
        "a deferred tool is still declared whole), the bytes the model is shown before it "
        "searches, and the time of one declaration of a new toolset.",
        render_large_toolsets,
    ),
    Benchmark(
        "mcp_instructions",
        "MCP hub overhead in instructions",
        "benchmarks/mcp_instructions.py",
        ("--few", "10", "--many", "30"),
        ("mcp",),
        "The hub's cost per call counted in instructions by valgrind's callgrind, far steadier "
        "than wall-clock time.",
        render_mcp_instructions,
    ),
    Benchmark(
        "instructions",
        "Dispatch and run ledger in instructions, before and after",
        "benchmarks/instructions.py",
        ("1243433", "--iterations", "100", "--warmup", "20"),
        (),
        "Instructions (callgrind's Ir) per turn of the governed path, in the code before the "
        "core's recomposition (the revision named) and in this checkout: `execute_tool_calls` "
        "on a response of each provider holding four calls, without a run id and with one (the "
        "run ledger on the in-memory store); and what a named turn does on `MemoryStore` and "
        "`SQLiteStore`: run its calls and retry (answered from the store), or pause for an "
        "approval, `toolwire.decide` and resume. Only the counted turns are counted: start-up, "
        "imports and warm-up are marked off.",
        render_instructions,
    ),
    Benchmark(
        "public_suites",
        "Public test suites",
        "benchmarks/public_suites.py",
        (),
        (),
        "The Berkeley Function Calling Leaderboard's data (bfcl-eval, installed by pip "
        "without its dependencies): every real function declared to every provider in every "
        "mode, checked with the official SDK types and toolwire's rules; every ground-truth "
        "call validated by toolwire and judged against the `jsonschema` package; and the "
        "official JSON Schema Test Suite through toolwire's validation. The same figures "
        "tests/public_suites/ asserts.",
        render_public_suites,
    ),
    Benchmark(
        "prompt_injection",
        "Prompt injection (AgentDojo)",
        "benchmarks/prompt_injection.py",
        (),
        (),
        "AgentDojo replayed with no LLM: a scripted model makes each user task's ground-truth "
        "calls through `execute_tool_calls` and obeys every injection it reads (the worst "
        "case); a human asked approves the user's calls and denies the attacker's. The "
        "recipes are those of the prompt-injection page. Run with a Python that has "
        "`agentdojo` (`AGENTDOJO_PYTHON`; `.ci/run` makes one and checks the figures).",
        render_prompt_injection,
        python="AGENTDOJO_PYTHON",
    ),
)


# --- run -------------------------------------------------------------------------------------


def _command_version(command: list[str]) -> str | None:
    if shutil.which(command[0]) is None:
        return None
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (done.stdout or done.stderr).strip().splitlines()
    return text[0].split(" sha=")[0] if text else None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _os_name() -> str:
    try:
        for line in Path("/etc/os-release").read_text(encoding="utf-8").splitlines():
            if line.startswith("PRETTY_NAME="):
                return f"{line.split('=', 1)[1].strip(chr(34))}, {platform.system()} " + (
                    platform.release()
                )
    except OSError:
        pass
    return platform.platform()


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def machine_metadata() -> dict[str, Any]:
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": {
            "cpu": _cpu_model(),
            "cores": os.cpu_count(),
            "arch": platform.machine(),
            "os": _os_name(),
        },
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "packages": {package: _version(package) for package in PACKAGES},
        "tools": {
            "sqlite": f"SQLite {sqlite3.sqlite_version}",
            "redis-server": _command_version(["redis-server", "--version"]),
            "postgres": _command_version(["postgres", "--version"]),
            "valgrind": _command_version(["valgrind", "--version"]),
        },
    }


def _scrub(text: str) -> str:
    """Output without this checkout's location (results are committed)."""
    return text.replace(str(ROOT) + os.sep, "").replace(str(ROOT), ".")


def run_one(benchmark: Benchmark) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "figures.json"
        python = os.environ.get(benchmark.python, "") if benchmark.python else ""
        command = [python or sys.executable, benchmark.script, *benchmark.args, "--json", str(out)]
        start = time.monotonic()
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
        seconds = time.monotonic() - start
        figures = json.loads(out.read_text(encoding="utf-8")) if out.exists() else None
    result: dict[str, Any] = {
        "benchmark": benchmark.name,
        "command": " ".join(["python", benchmark.script, *benchmark.args]),
        "returncode": done.returncode,
        "seconds": round(seconds, 1),
        "figures": figures,
        "output": _scrub(done.stdout),
        "metadata": machine_metadata(),
    }
    if done.returncode != 0:
        result["error"] = _scrub(done.stderr)[-4000:]
    return result


def run(only: list[str] | None = None) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    for benchmark in BENCHMARKS:
        if only and benchmark.name not in only:
            continue
        print(f"running {benchmark.name} ...", flush=True)
        result = run_one(benchmark)
        print(f"  {result['seconds']} s, exit {result['returncode']}", flush=True)
        path = RESULTS / f"{benchmark.name}.json"
        path.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


# --- render ----------------------------------------------------------------------------------


def load_results(directory: Path = RESULTS) -> dict[str, dict[str, Any]]:
    results = {}
    for path in sorted(directory.glob("*.json")):
        result = json.loads(path.read_text(encoding="utf-8"))
        results[result.get("benchmark", path.stem)] = result
    return results


def _machine_lines(results: dict[str, dict[str, Any]]) -> list[str]:
    runs = [r["metadata"] for r in results.values() if "metadata" in r]
    if not runs:
        return []
    latest = max(runs, key=lambda m: str(m["date"]))
    machine = latest["machine"]
    dates = sorted({str(m["date"]) for m in runs})
    when = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"
    packages = ", ".join(f"{name} {v}" for name, v in latest["packages"].items() if v is not None)
    tools = ", ".join(f"{v}" for v in latest.get("tools", {}).values() if v)
    return [
        f"- **Run:** {when}",
        f"- **Machine:** {machine['cpu']}, {machine['cores']} cores ({machine['arch']}), "
        f"{machine['os']}",
        f"- **Python:** {latest['python']}",
        f"- **Packages:** {packages}",
        *([f"- **Servers and tools:** {tools}"] if tools else []),
    ]


def render_benchmark(benchmark: Benchmark | None, result: dict[str, Any]) -> list[str]:
    name = result.get("benchmark", "?")
    title = benchmark.title if benchmark else name
    versions = _versions(result)
    lines = [f"## {title}", ""]
    if benchmark is not None:
        lines += [benchmark.about, ""]
        peers = ", ".join(
            f"{peer} {versions.get(peer) or '(not installed)'}" for peer in benchmark.peers
        )
        mine = f"toolwire {versions.get('toolwire')}"
        # a benchmark of toolwire against itself (one way of declaring against another)
        lines += [f"Compared with: {peers}; {mine}." if peers else f"Measured: {mine}.", ""]
    lines += [f"`{result.get('command', '')}`, run {result.get('metadata', {}).get('date')}.", ""]
    if result.get("returncode") == 0 and result.get("figures") is not None and benchmark:
        lines += benchmark.render(result)
    else:
        status = f"exit status {result.get('returncode')}"
        lines += [f"No figures ({status}); its output:", "", "```text"]
        lines += (result.get("output", "") + result.get("error", "")).rstrip().splitlines()
        lines += ["```"]
    return [*lines, ""]


def render_page(results: dict[str, dict[str, Any]]) -> str:
    known = {b.name: b for b in BENCHMARKS}
    lines = [
        "<!-- Generated by scripts/benchmarks_page.py from benchmarks/results/*.json: "
        "do not edit; rerun it. -->",
        "",
        "# Benchmarks",
        "",
        "This page is generated by `scripts/benchmarks_page.py` from the saved results in "
        "`benchmarks/results/`; do not edit it by hand.",
        "",
        "Every figure below comes from one run of the scripts in `benchmarks/`, on the machine "
        "described here, against the peer packages at the versions shown. Times depend on the "
        "machine; compare rows of one table, not figures across machines.",
        "",
        *_machine_lines(results),
        "",
        f"To rerun them all, `{RERUN}` (with the peers installed: "
        "`pip install -e '.[bench]'`; the store benchmark also uses `redis-server` and "
        "PostgreSQL's `initdb` when present, and the instruction counts need `valgrind`):",
        "",
        "```bash",
        RERUN.replace(" && ", " &&\n"),
        "```",
        "",
        "Each script also runs alone with its own options, e.g. "
        "`python benchmarks/dispatch.py --help`.",
        "",
    ]
    order = [b.name for b in BENCHMARKS] + sorted(set(results) - set(known))
    for name in order:
        if name in results:
            lines += render_benchmark(known.get(name), results[name])
    return "\n".join(lines).rstrip() + "\n"


def render(check: bool = False) -> int:
    page = render_page(load_results())
    if check:
        current = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
        if current != page:
            print(f"{PAGE.relative_to(ROOT)} is stale: run {RERUN}", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(page, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    running = commands.add_parser("run", help="run the benchmarks, save benchmarks/results/")
    running.add_argument(
        "--only", nargs="+", choices=[b.name for b in BENCHMARKS], help="just these benchmarks"
    )
    rendering = commands.add_parser("render", help="write docs/benchmarks.md from the results")
    rendering.add_argument("--check", action="store_true", help="fail if the page is stale")
    options = parser.parse_args(argv)
    if options.command == "run":
        run(options.only)
        return 0
    return render(options.check)


if __name__ == "__main__":
    sys.exit(main())
