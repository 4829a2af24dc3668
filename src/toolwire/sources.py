"""Tool sources: what the facade reads a changing source of tools through, and SOURCE strings
(as the ``toolwire`` command and [`toolwire.mcp.serve`][toolwire.mcp.serve] take them) loaded
into tools.

A SOURCE is a Python file (``tools.py``) or ``module:attribute`` holding tools, a JSON / JSON
Lines file of tool definitions (``name``, ``description``, ``inputSchema``) as MCP servers
publish them, an MCP server command (``stdio:CMD ARGS``), an MCP URL (``http://...``), or an
MCP config file (``mcpServers``, or VS Code's ``servers``).

A Python module's tools are its ``toolset`` or ``tools`` (a [`ToolSet`][toolwire.ToolSet], a
tool, or a list of tools or functions), else every [`Tool`][toolwire.Tool] it defines. Its own
[`Policy`][toolwire.Policy], named ``policy`` or ``POLICY``, comes with them
([`OpenedSource.policy`][]).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import shlex
import sys
import traceback
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeGuard, runtime_checkable

from toolwire import _jsonfile, _text
from toolwire._values import describe_exception
from toolwire.errors import AuthorizationRequired, MissingDependency, ToolwireError
from toolwire.policy import Policy
from toolwire.tool import Tool, clean_title, safe_icons
from toolwire.toolset import ToolSet

if TYPE_CHECKING:
    from toolwire.mcp.client import Hub, TokenStore

__all__ = [
    "OpenedSource",
    "SourceError",
    "ToolSource",
    "load_source",
    "open_source",
    "opened_source",
]


@runtime_checkable
class ToolSource(Protocol):
    """A source whose tools can change while it is used, such as an MCP
    [`Hub`][toolwire.mcp.Hub]: [`toolwire.tools`][toolwire.tools] and
    [`toolwire.execute_tool_calls`][toolwire.execute_tool_calls] take one wherever they take
    tools, and read it anew at each call."""

    def as_toolset(self) -> ToolSet:
        """The tools it offers now (the same object until they change)."""
        ...

    def unavailable_tools(self) -> dict[str, tuple[Tool, str]]:
        """The tools it offered before that it cannot run now, by exposed name: each as it was
        last offered, and why (a call to one is answered ``unavailable``)."""
        ...


def is_tool_source(value: Any) -> TypeGuard[ToolSource]:
    """Whether ``value`` is a [`ToolSource`][]: whether its class has the protocol's methods.
    Asked of the class, which Python remembers the answer for (the facade asks at every turn;
    ``isinstance`` walks the protocol each time)."""
    return issubclass(type(value), ToolSource)


def named_tools(toolset: ToolSet, source: Any = None) -> list[tuple[str | None, Tool]]:
    """``toolset``'s tools by exposed name, and those of ``source``'s servers that are down
    when it is a [`ToolSource`][] (still its tools, which a policy's rules are written for)."""
    named: list[tuple[str | None, Tool]] = list(zip(toolset.exposed_names, toolset, strict=True))
    if is_tool_source(source):
        named += [(name, tool) for name, (tool, _) in source.unavailable_tools().items()]
    return named


class SourceError(ToolwireError):
    """SOURCE could not be loaded."""


@dataclass(frozen=True, slots=True)
class OpenedSource:
    """A SOURCE opened by [`opened_source`][]: its tools, and what came with them."""

    toolset: ToolSet
    """The tools (for MCP servers, the hub's tools when it was opened)."""
    policy: Policy | None = None
    """The [`Policy`][toolwire.Policy] a Python module's SOURCE defines as ``policy`` (or
    ``POLICY``), None when it defines neither or SOURCE is no Python module."""
    hub: Hub | None = None
    """The [`Hub`][toolwire.mcp.Hub] of an MCP SOURCE, open while the source is."""
    left_out: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """Per MCP server, the tools its hub left out (see
    [`Hub.left_out`][toolwire.mcp.Hub.left_out]): name → why; only servers leaving some out."""


def load_source(source: str) -> ToolSet:
    """The tools SOURCE names: a ``.py`` file, ``module:attribute``, or a JSON/JSONL file.

    Raises:
        SourceError: for a SOURCE that cannot be loaded.
    """
    return _load(source)[0]


@asynccontextmanager
async def open_source(source: str, *, server_name: str | None = None) -> AsyncIterator[ToolSet]:
    """The tools SOURCE names, with any MCP servers connected while the context is open.

    A tool an MCP server lists but its hub leaves out is named on stderr with the reason.

    Raises:
        SourceError: for a SOURCE that cannot be loaded or servers that cannot be reached.
        MissingDependency: for an MCP source without the ``mcp`` extra.
    """
    async with opened_source(source, server_name=server_name) as opened:
        yield opened.toolset


@asynccontextmanager
async def opened_source(
    source: str,
    *,
    warn_left_out: bool = True,
    token_store: TokenStore | None = None,
    server_name: str | None = None,
    all_down: Literal["fail", "wait"] = "fail",
) -> AsyncIterator[OpenedSource]:
    """SOURCE opened: its tools, with any MCP servers connected while the context is open, and
    what came with them (a Python module's own policy, an MCP source's hub and the tools it
    left out). ``server_name`` names the server of a ``stdio:`` or URL SOURCE (its tools are
    exposed as ``NAME__tool``); by default the module, script or package it runs (``mcp``
    for a URL).

    An MCP server that is down while others are up is named on stderr with the reason, as is
    (with ``warn_left_out``) a tool a server lists but its hub leaves out. ``token_store`` is
    where an MCP source's hub keeps its OAuth tokens (None: the default file store).
    ``all_down="wait"`` opens an MCP source whose servers are all down, naming each on stderr
    (its hub goes on reconnecting them: what a gateway started before its upstreams wants),
    unless one waits for a person to log in; by default that is an error.

    Raises:
        SourceError: for a SOURCE that cannot be loaded, or whose servers cannot be reached.
        MissingDependency: for an MCP source without the ``mcp`` extra.
    """
    servers = _mcp_servers(source, server_name)
    if servers is None:
        if server_name is not None:
            raise SourceError(
                f"--name names the server of a stdio: or http(s):// SOURCE, not {source}"
            )
        # For a report (no warnings asked for), a definition the file holds that cannot be a
        # tool as it is, is left out with the reason, as a hub leaves out a server's.
        refused: dict[str, str] | None = {} if not warn_left_out else None
        toolset, policy = _load(source, refused)
        left_out = {Path(source).name: refused} if refused else {}
        yield OpenedSource(toolset, policy, left_out=left_out)
        return
    try:  # the SDK every hub needs, asked for before a config is read
        import mcp  # noqa: F401
        import mcp_types  # noqa: F401
    except ImportError:
        raise MissingDependency("mcp", "mcp") from None
    from toolwire.mcp.client import Hub

    if isinstance(servers, Path):
        hub = Hub.from_config(servers, token_store=token_store)
    else:
        hub = Hub(servers, token_store=token_store)
    async with hub:
        down = {name: why for name, why in hub.status.items() if why is not None}
        # A server waiting for a person's login does not come up by waiting: said at once.
        login = any(isinstance(e, AuthorizationRequired) for e in hub.authorization_errors.values())
        if len(down) == len(hub.status) and (all_down == "fail" or login):
            reasons = "; ".join(f"{name}: {why}" for name, why in down.items())
            raise SourceError(f"cannot reach the MCP server(s) of {source} ({reasons})")
        later = " (reconnecting: its tools are served once it is up)" if all_down == "wait" else ""
        for name, why in down.items():
            _warn(f"MCP server {name!r} is down: {_text.escaped(why)}{later}")
        left_out = {name: tools for name, tools in hub.left_out.items() if tools}
        if warn_left_out:
            for server, tools in left_out.items():
                for name, why in tools.items():
                    _warn(f"left out {server}/{_text.shown_name(name)}: {_text.escaped(why)}")
        yield OpenedSource(hub.as_toolset(), hub=hub, left_out=left_out)


def _warn(line: str) -> None:
    print(f"toolwire: warning: {line}", file=sys.stderr)


def _mcp_servers(source: str, name: str | None = None) -> Mapping[str, Any] | Path | None:
    """The MCP servers SOURCE names (a config file's path, or name → spec), or None when it
    names no server; ``name`` names a ``stdio:`` or URL SOURCE's one server."""
    if name is not None and not _SERVER_NAME.fullmatch(name):
        raise SourceError(f"--name is letters, digits, - and _ (up to 64), not {name!r}")
    if source.startswith("stdio:"):
        argv = shlex.split(source.removeprefix("stdio:"))
        if not argv:
            raise SourceError("stdio: needs a command, e.g. stdio:'python -m my_server'")
        from toolwire.mcp.client import StdioServer

        return {name or _server_name(argv): StdioServer(command=argv[0], args=argv[1:])}
    if source.startswith(("http://", "https://")):
        from toolwire.mcp.client import HttpServer, OAuth

        # With the tokens `toolwire mcp login URL` kept, if the server asks for them.
        return {name or "mcp": HttpServer(url=source, auth=OAuth())}
    path = Path(source)
    if path.suffix == ".json" and path.is_file():
        # Read as Hub.from_config reads it: mcpServers or VS Code's servers, comments allowed.
        from toolwire.mcp.client import is_mcp_config

        if is_mcp_config(path):
            return path
    return None


_SERVER_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")

_RUNNERS = {"npx": ("--package", "-p"), "pnpx": (), "bunx": (), "uvx": ("--from", "--with")}
"""Programs that run a package by its name, and their options that take a value."""


def _server_name(argv: Sequence[str]) -> str:
    """A name for a server given on the command line: its module, script or package (for
    ``npx``/``uvx``), or its program's name."""
    runner = Path(argv[0]).stem
    package = _package_run(argv) if runner in _RUNNERS else None
    if package is not None:
        # @scope/server-name@1.2 -> server-name; git-mcp==1.0 or git-mcp[cli] -> git-mcp
        bare = re.split(r"[=<>!~\[;@ ]", package.rsplit("/", 1)[-1], maxsplit=1)[0]
        name = bare.replace(".", "_")
    elif "-m" in argv[:-1]:
        name = argv[argv.index("-m") + 1]
    elif len(argv) > 1 and argv[1].endswith(".py"):  # `python server.py`: the script's
        name = Path(argv[1]).stem
    else:
        name = runner
    name = re.sub(r"[^A-Za-z0-9]+", "_", name.rsplit(".", 1)[-1]).strip("_")
    return name or "mcp"


def _package_run(argv: Sequence[str]) -> str | None:
    """The package ``npx``/``uvx`` runs: its first argument that is no option (or the
    value of ``--from``), or None."""
    valued = _RUNNERS[Path(argv[0]).stem]
    args = list(argv[1:])
    while args:
        arg = args.pop(0)
        if arg in ("--from",) and args:
            return args[0]
        if arg in valued:
            if args:
                args.pop(0)
            continue
        if not arg.startswith("-"):
            return arg
    return None


# -- Python modules and files of definitions ----------------------------------------------------


def _load(source: str, refused: dict[str, str] | None = None) -> tuple[ToolSet, Policy | None]:
    """The tools SOURCE names, and the policy of its Python module when it has one (see
    [`_module_policy`][]). With ``refused``, a definition of a JSON file that names another
    document is left out there (name → why) instead of failing the source."""
    path = Path(source)
    if path.suffix in (".json", ".jsonl"):
        if not path.is_file():
            raise SourceError(f"no such file: {source}")
        return _from_definitions(path, refused), None
    file, colon, attribute = source.rpartition(":")
    if colon and file.endswith(".py") and attribute.isidentifier():  # tools.py:toolset
        module, policy = _file_module(Path(file), file)
        if not hasattr(module, attribute):
            raise SourceError(f"{file} has no attribute {attribute!r}")
        return _tools_in(getattr(module, attribute), source), policy
    if path.suffix == ".py":
        module, policy = _file_module(path, source)
        return _from_module(module, source), policy
    return _from_import(source)


def _file_module(path: Path, source: str) -> tuple[Any, Policy | None]:
    """The module a ``.py`` file is, run, and its policy."""
    if not path.is_file():
        raise SourceError(f"no such file: {path}")
    spec = importlib.util.spec_from_file_location(f"_toolwire_source_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise SourceError(f"cannot load {source}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # so dataclasses and pydantic can resolve the module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the file's own code failed: say how and where, in one line
        raise SourceError(f"cannot load {source}: {_failure(exc)}") from None
    return module, _module_policy(module, source)


def _from_import(source: str) -> tuple[ToolSet, Policy | None]:
    """The tools of ``module`` or ``module:attribute``, imported."""
    module_name, _, attribute = source.partition(":")
    if not module_name:
        raise SourceError(f"not a SOURCE: {source!r}")
    # As `python -m` would: a module of the current directory is found (a console script's
    # own directory is first on the path instead).
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # not found, or its own code failed
        raise SourceError(f"cannot import {module_name!r}: {_failure(exc)}") from None
    policy = _module_policy(module, module_name)
    if attribute:
        if not hasattr(module, attribute):
            raise SourceError(f"{module_name!r} has no attribute {attribute!r}")
        return _tools_in(getattr(module, attribute), source), policy
    return _from_module(module, source), policy


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


_POLICY_NAMES = ("policy", "POLICY")
"""The names a SOURCE module's own [`Policy`][toolwire.Policy] goes by."""


def _module_policy(module: Any, where: str) -> Policy | None:
    """The [`Policy`][toolwire.Policy] ``module`` defines as ``policy`` (or ``POLICY``), or
    None when it defines neither.

    Raises:
        SourceError: the name holds something else, or the module has two different ones.
    """
    found = {
        name: value
        for name in _POLICY_NAMES
        # A package's submodule named policy is no policy of its own.
        if not isinstance(value := getattr(module, name, None), ModuleType | None)
    }
    if len({id(value) for value in found.values()}) > 1:
        raise SourceError(f"{where} defines both `policy` and `POLICY`: keep one")
    for name, value in found.items():
        if not isinstance(value, Policy):
            raise SourceError(
                f"{where}: `{name}` is not a toolwire.Policy but {type(value).__name__} "
                "(a policy file loads with toolwire.policy_file.load_policy)"
            )
        return value
    return None


def _failure(exc: Exception) -> str:
    """What went wrong running a source's code, with the line it went wrong at."""
    if isinstance(exc, ImportError):  # "No module named 'x'" says it all
        return str(exc)
    text = describe_exception(exc)
    frames = traceback.extract_tb(exc.__traceback__)
    if frames and not isinstance(exc, SyntaxError):  # a SyntaxError says where itself
        text += f" ({Path(frames[-1].filename).name}, line {frames[-1].lineno})"
    return text


def _from_definitions(path: Path, refused: dict[str, str] | None = None) -> ToolSet:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SourceError(f"cannot read {path}: {exc}") from None
    try:
        if path.suffix == ".jsonl":
            records = [_jsonfile.loads(line) for line in text.splitlines() if line.strip()]
        else:
            data = _jsonfile.loads(text)
            records = data.get("tools", data) if isinstance(data, dict) else data
    except _jsonfile.RepeatedKey as exc:  # a schema or annotation given twice: which holds?
        raise SourceError(f"{path}: {exc}") from None
    except (ValueError, RecursionError) as exc:  # malformed, too deep, an integer too long
        raise SourceError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(records, list):
        raise SourceError(f"{path}: expected a list of tool definitions")
    tools = []
    for i, record in enumerate(records):
        if not isinstance(record, dict) or not isinstance(record.get("name"), str):
            raise SourceError(f"{path}: entry {i} is not a tool definition with a name")
        schema = record.get("inputSchema", record.get("input_schema", {}))
        output_schema = record.get("outputSchema")
        annotations = record.get("annotations")
        description = record.get("description")
        if not isinstance(schema, dict) or not isinstance(output_schema, dict | None):
            raise SourceError(f"{path}: entry {i} ({record['name']!r}): a schema is not an object")
        try:
            tools.append(
                Tool(
                    name=record["name"],
                    description=description if isinstance(description, str) else None,
                    input_schema=schema,
                    output_schema=output_schema,
                    annotations=annotations if isinstance(annotations, dict) else None,
                    title=clean_title(record.get("title")) or _annotated_title(annotations),
                    icons=safe_icons(record.get("icons")),
                )
            )
        except ToolwireError as exc:
            if refused is not None and "another document, which is never fetched" in str(exc):
                refused[record["name"]] = str(exc).split(": ", 1)[-1]
                continue
            raise SourceError(f"{path}: entry {i}: {exc}") from None
    try:
        return ToolSet(tools)
    except ToolwireError as exc:
        raise SourceError(f"{path}: {exc}") from None


def _annotated_title(annotations: Any) -> str | None:
    """The title in a definition's annotations, the stand-in for a missing ``title``."""
    return clean_title(annotations.get("title")) if isinstance(annotations, dict) else None
