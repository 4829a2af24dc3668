"""``toolwire declare`` and ``toolwire check``: a SOURCE's tools declared to a provider, and
judged for each."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import toolwire
from toolwire import _text
from toolwire._cli.common import colour, print_json, safe
from toolwire._cli.options import given_options, options_by_provider
from toolwire.providers import provider_names
from toolwire.sources import open_source, opened_source
from toolwire.tool import Tool, exposed_name_for
from toolwire.toolset import ToolSet

__all__ = ["run_check", "run_declare"]

LeftOut = Mapping[str, Mapping[str, str]]
"""Per MCP server, the tools its hub left out: name → why."""


async def run_declare(args: argparse.Namespace) -> int:
    options = given_options(args)
    async with open_source(args.source, server_name=args.name) as toolset:
        listing = toolwire.tools(toolset, args.provider, **options)
    if listing.tools is None:  # what the request's `tools` is: left out
        print(
            f"toolwire: warning: no tools to declare to {args.provider}: "
            "send the request without tools",
            file=sys.stderr,
        )
    print_json(listing.tools)
    return 0


_STATUS_STYLE = {"accepted": "32", "converted": "33", "rejected": "31", "skipped": "2"}


async def run_check(args: argparse.Namespace) -> int:
    from toolwire.compat import check, limits

    providers = list(dict.fromkeys(args.provider or provider_names()))
    options = options_by_provider(args, providers)
    async with opened_source(args.source, warn_left_out=False, server_name=args.name) as opened:
        toolset = opened.toolset
        reports = check(toolset, providers, options=options) + _left_out_reports(
            opened.left_out, providers
        )
        over = limits(toolset, providers)
        renamed = _renamed(toolset)
    for provider, message in over.items():
        print(f"toolwire: warning: {provider}: {safe(message)}", file=sys.stderr)
    if args.json:
        print_json([_report_json(r, over) for r in reports])
    else:
        _print_table(reports, providers, renamed, over, colour=colour(sys.stdout))
    return 1 if over or any(r.rejected for r in reports) else 0


def _report_json(report: Any, over: Mapping[str, str]) -> dict[str, Any]:
    """A report as ``check --json`` prints it; a provider whose tool limit the source passes
    has ``over_limit`` in every verdict (the tool is fine alone, not with all the others).
    A tool's ``title`` and ``icons`` are there when it has them."""
    verdicts = {}
    for verdict in report.verdicts:
        shown: dict[str, Any] = {"status": verdict.status, "notes": list(verdict.notes)}
        if verdict.provider in over:
            shown["over_limit"] = over[verdict.provider]
        verdicts[verdict.provider] = shown
    shown_report: dict[str, Any] = {"name": report.name, "exposed_name": report.exposed_name}
    if report.title is not None:
        shown_report["title"] = report.title
    if report.icons:
        shown_report["icons"] = [dict(icon) for icon in report.icons]
    shown_report["verdicts"] = verdicts
    return shown_report


def _renamed(toolset: ToolSet) -> frozenset[str]:
    """The exposed names worth showing with the tool's own name (see [`_is_renamed`][])."""
    return frozenset(
        exposed
        for exposed, tool in zip(toolset.exposed_names, toolset, strict=True)
        if _is_renamed(exposed, tool)
    )


def _is_renamed(exposed: str, tool: Tool) -> bool:
    """True when ``exposed`` is more than ``tool``'s name namespaced by its server (as
    ``server__read_file`` is): a collision suffix (``search_2``), or the name itself made
    portable (``read file`` became ``read_file``) or cut."""
    if not tool.server_id:
        return exposed != tool.name
    namespaced = exposed_name_for(tool.name, tool.server_id)
    return exposed != namespaced or not exposed.endswith(tool.name)


def _left_out_reports(left_out: LeftOut, providers: Sequence[str]) -> list[Any]:
    """A rejected report per tool a hub (or a file of definitions) left out, for every
    provider, with the reason; its ``exposed_name`` is ``server/name`` (``file/name``), as the
    tool has none."""
    from toolwire.compat import ProviderVerdict, ToolReport

    def said(where: str, why: str) -> str:
        by = "the file" if where.endswith((".json", ".jsonl")) else "the hub"
        return f"left out by {by}: {why}"

    return [
        ToolReport(
            name=name,
            exposed_name=f"{server}/{name}",
            verdicts=tuple(
                ProviderVerdict(provider, "rejected", (said(server, why),))
                for provider in providers
            ),
        )
        for server, tools in left_out.items()
        for name, why in tools.items()
    ]


def _label(report: Any, renamed: frozenset[str]) -> str:
    if "/" in report.exposed_name:  # exposed names are portable: a tool the hub left out
        server = report.exposed_name[: len(report.exposed_name) - len(report.name)]
        return f"{server}{_text.shown_name(report.name)} (left out)"
    if report.exposed_name in renamed:
        return f"{report.exposed_name} (was {_text.shown_name(report.name)})"
    return str(report.exposed_name)


def _print_table(
    reports: Sequence[Any],
    providers: Sequence[str],
    renamed: frozenset[str],
    over: Mapping[str, str],
    *,
    colour: bool,
) -> None:
    def paint(text: str, status: str) -> str:
        return f"\033[{_STATUS_STYLE[status]}m{text}\033[0m" if colour else text

    labels = [_label(r, renamed) for r in reports]
    width = max([len("tool"), *map(len, labels)]) + 2
    columns = [max(len(p), len("converted")) + 2 for p in providers]
    print(
        "tool".ljust(width) + "".join(p.ljust(c) for p, c in zip(providers, columns, strict=True))
    )
    for label, report in zip(labels, reports, strict=True):
        cells = "".join(
            paint(v.status.ljust(c), v.status)
            for v, c in zip(report.verdicts, columns, strict=True)
        )
        print(label.ljust(width) + cells)
        for verdict in report.verdicts:
            if verdict.status in ("converted", "rejected"):
                for note in verdict.notes[:3]:
                    print(f"    {verdict.provider}: {safe(note)}")
                if len(verdict.notes) > 3:
                    print(f"    {verdict.provider}: ... {len(verdict.notes) - 3} more")
    counts = {
        p: sum(r.verdicts[i].status == "rejected" for r in reports) for i, p in enumerate(providers)
    }
    summary = ", ".join(
        f"{p}: {n} rejected" + (" (over its tool limit)" if p in over else "")
        for p, n in counts.items()
    )
    print(f"\n{len(reports)} tool(s); {summary}")
