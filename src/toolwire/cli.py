"""The ``toolwire`` command.

``toolwire declare SOURCE`` prints the request fragment declaring SOURCE's tools to a provider.
SOURCE is a Python file or ``module:attribute`` holding tools, or a JSON / JSON Lines file of
tool definitions (``name``, ``description``, ``inputSchema``), as MCP servers publish them.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from toolwire.errors import ToolwireError
from toolwire.providers import get_provider, provider_names
from toolwire.tool import Tool, ToolSet

__all__ = ["load_source", "main"]


class SourceError(ToolwireError):
    """SOURCE could not be loaded."""


def _tools_in(value: Any, where: str) -> ToolSet:
    if isinstance(value, ToolSet):
        return value
    if isinstance(value, Tool):
        return ToolSet([value])
    if isinstance(value, Iterable) and not isinstance(value, str | bytes):
        return ToolSet(list(value))
    if callable(value):
        return ToolSet([value])
    raise SourceError(f"{where} is not a tool, a list of tools or a ToolSet")


def _from_module(module: Any, where: str) -> ToolSet:
    for name in ("toolset", "tools"):
        if hasattr(module, name):
            return _tools_in(getattr(module, name), f"{where}:{name}")
    found = [v for v in vars(module).values() if isinstance(v, Tool)]
    if not found:
        raise SourceError(f"{where} defines no tools (no `toolset`, `tools` or Tool objects)")
    return ToolSet(found)


def _from_definitions(path: Path) -> ToolSet:
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix == ".jsonl":
            records = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            data = json.loads(text)
            records = data.get("tools", data) if isinstance(data, dict) else data
    except json.JSONDecodeError as exc:
        raise SourceError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(records, list):
        raise SourceError(f"{path}: expected a list of tool definitions")
    tools = []
    for i, record in enumerate(records):
        if not isinstance(record, dict) or not isinstance(record.get("name"), str):
            raise SourceError(f"{path}: entry {i} is not a tool definition with a name")
        tools.append(
            Tool(
                name=record["name"],
                description=record.get("description"),
                input_schema=record.get("inputSchema") or record.get("input_schema") or {},
                output_schema=record.get("outputSchema"),
                annotations=record.get("annotations"),
            )
        )
    return ToolSet(tools)


def load_source(source: str) -> ToolSet:
    """The tools SOURCE names: a ``.py`` file, ``module:attribute``, or a JSON/JSONL file."""
    path = Path(source)
    if path.suffix in (".json", ".jsonl"):
        if not path.is_file():
            raise SourceError(f"no such file: {source}")
        return _from_definitions(path)
    if path.suffix == ".py":
        if not path.is_file():
            raise SourceError(f"no such file: {source}")
        spec = importlib.util.spec_from_file_location(f"_toolwire_source_{path.stem}", path)
        if spec is None or spec.loader is None:
            raise SourceError(f"cannot load {source}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # so dataclasses and pydantic can resolve the module
        spec.loader.exec_module(module)
        return _from_module(module, source)
    module_name, _, attribute = source.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise SourceError(f"cannot import {module_name!r}: {exc}") from None
    if attribute:
        if not hasattr(module, attribute):
            raise SourceError(f"{module_name!r} has no attribute {attribute!r}")
        return _tools_in(getattr(module, attribute), source)
    return _from_module(module, source)


def _declare(args: argparse.Namespace) -> int:
    toolset = load_source(args.source)
    options: dict[str, Any] = {}
    if args.schema:
        options["schema"] = args.schema
    if args.backend:
        options["backend"] = args.backend
    fragment = get_provider(args.provider).declare(toolset, **options)
    json.dump(fragment, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


def _parser() -> argparse.ArgumentParser:
    from toolwire import __version__

    parser = argparse.ArgumentParser(
        prog="toolwire",
        description="One tool definition, every model's tool calling, governed execution.",
    )
    parser.add_argument("--version", action="version", version=f"toolwire {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    declare = commands.add_parser(
        "declare", help="print the request fragment declaring SOURCE's tools to a provider"
    )
    declare.add_argument("source", help="a .py file, module:attribute, or a .json/.jsonl file")
    declare.add_argument("--provider", default="gemini", choices=provider_names())
    declare.add_argument(
        "--schema",
        choices=["json", "openapi"],
        help="Gemini: parametersJsonSchema (json, default) or parameters",
    )
    declare.add_argument(
        "--backend",
        choices=["gemini", "vertex"],
        help="Gemini openapi mode: the Gemini API (default) or Vertex AI",
    )
    declare.set_defaults(run=_declare)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        status: int = args.run(args)
    except ToolwireError as exc:
        print(f"toolwire: error: {exc}", file=sys.stderr)
        return 1
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
