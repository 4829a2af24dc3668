"""The ``toolwire`` command: ``declare``, ``check``, ``call`` and ``demo``; ``pending``,
``decide`` and ``history`` over a run store; ``inbox`` (the approval console) and ``serve``
(a governed MCP gateway).

SOURCE is a Python file or ``module:attribute`` holding tools, a JSON / JSON Lines file of tool
definitions (``name``, ``description``, ``inputSchema``) as MCP servers publish them, an MCP
server command (``stdio:CMD ARGS``), an MCP URL (``http://...``), or an MCP config file
(``mcpServers``, or VS Code's ``servers``).

For an MCP source, a server's tool the hub leaves out (a bad name, a schema a provider cannot
take, a duplicate; see [`toolwire.mcp.Hub.left_out`][]) is a ``rejected`` row in ``check``
with the reason, and a warning on stderr for the other commands.

A stdio server's stderr goes to the command's stderr, never its stdout: what the commands print
on stdout stays clean JSON (or the table).

Exit status: 0 on success; 1 when ``check`` finds a tool a provider rejects (or one the hub left
out) or more tools than a provider takes in one request, or ``call``'s tool answers with an
error; 2 for a bad SOURCE, an unreachable server, a missing extra or bad usage. Errors and
warnings are one line each on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sys
import threading
import typing
import warnings
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from types import UnionType
from typing import Any, Literal, NoReturn, get_args, get_origin

import anyio
import anyio.from_thread

import toolwire
from toolwire import _text, ledger
from toolwire.approval import ApprovalRequest, Decision
from toolwire.errors import ConfigurationError, ToolNotFound, ToolwireError
from toolwire.policy import Policy, PolicyContext, Verdict, destructive_by_annotations
from toolwire.providers import get_provider, provider_names
from toolwire.sources import SourceError, load_source, open_source, opened_source
from toolwire.tool import Tool, ToolSet, exposed_name_for

LeftOut = Mapping[str, Mapping[str, str]]
"""Per MCP server, the tools its hub left out: name → why."""

__all__ = ["load_source", "main", "open_source"]


def _safe(text: str) -> str:
    """``text`` with each hidden character escaped (``\\u202e``, see ``toolwire._text``), so a
    server's names and schemas cannot drive or garble the terminal."""
    return _text.escaped(text)


def _colour(stream: Any) -> bool:
    """Colours only on a terminal, and never when NO_COLOR is set."""
    return bool(getattr(stream, "isatty", lambda: False)()) and not os.environ.get("NO_COLOR")


def _print_json(value: Any) -> None:
    # Hidden characters as JSON escapes: the same JSON, shown as it is on a terminal. Written
    # piece by piece (as json.dump does): a reader that stops early stops the writing.
    encoder = json.JSONEncoder(indent=2, ensure_ascii=False, default=str)
    for piece in encoder.iterencode(value):
        sys.stdout.write(_text.visible_json_text(piece))
    sys.stdout.write("\n")


# -- commands ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _OptionFlag:
    """A ``declare`` flag: one declaration option of the providers' ``Options`` dataclasses."""

    option: str
    """The field's name (``cache_control``)."""
    spelling: Any
    """``bool`` (``--x/--no-x``), ``str`` (any text), ``tuple`` (names, comma-separated), or
    the choices, a tuple of strings."""
    defaults: Mapping[str, Any]
    """Per provider taking the option (its ``Options`` has the field, spelled so), the default."""
    description: str | None = None
    """The field's ``help`` metadata, when its provider gives one."""

    @property
    def flag(self) -> str:
        return "--" + self.option.replace("_", "-")

    @property
    def shown(self) -> str:
        return f"{self.flag}/--no-{self.flag[2:]}" if self.spelling is bool else self.flag

    @property
    def dest(self) -> str:
        return f"option_{self.option}"

    @property
    def help(self) -> str:
        def shown(value: Any) -> str:
            if self.spelling is bool:
                return "on" if value else "off"
            if self.spelling is tuple:
                return ",".join(value) if isinstance(value, tuple) and value else "none"
            return "none" if value is None else str(value)

        labels = " and ".join(get_provider(name).PROFILE.label for name in self.defaults)
        defaults = {name: shown(value) for name, value in self.defaults.items()}
        if len(set(defaults.values())) == 1:
            default = next(iter(defaults.values()))
        else:
            default = ", ".join(f"{name}: {value}" for name, value in defaults.items())
        what = self.description or f"the {self.option!r} option"
        return f"{what} of {labels} (default: {default})".replace("%", "%%")  # argparse's %


def _spelling(hint: Any) -> Any:
    """How the command line spells an option of type ``hint`` (see [`_OptionFlag.spelling`][]),
    or None when it cannot (Gemini's tuple of native tools is for code only)."""
    if hint is bool or hint is str:
        return hint
    arms = get_args(hint) if get_origin(hint) in (typing.Union, UnionType) else (hint,)
    if any(get_origin(arm) is tuple and get_args(arm) == (str, ...) for arm in arms):
        return tuple  # names; a union's other arms (True for "all") are for code only
    values: list[Any] = []
    for arm in arms:
        if get_origin(arm) is Literal:
            values.extend(get_args(arm))
        elif arm is not type(None):
            return None
    choices = tuple(v for v in values if v is not None)
    return choices if choices and all(isinstance(v, str) for v in choices) else None


def _option_flags() -> list[_OptionFlag]:
    """A flag per declaration option (``PROFILE.declared_options``) of the registered providers
    that the command line can spell, read from their ``Options`` dataclasses, so a provider
    added to the registry brings its own. Providers with the same field share its flag (their
    choices pooled); a provider whose field is spelled differently is left out of it."""
    flags: dict[str, _OptionFlag] = {}
    for name in provider_names():
        provider = get_provider(name)
        kind: Any = provider.Options
        defaults, hints = kind(), typing.get_type_hints(kind)
        for field in dataclasses.fields(kind):
            spelling = _spelling(hints[field.name])
            if field.name not in provider.PROFILE.declared_options or spelling is None:
                continue
            known = flags.get(field.name)
            if known is not None:
                if isinstance(known.spelling, tuple) and isinstance(spelling, tuple):
                    spelling = known.spelling + tuple(
                        c for c in spelling if c not in known.spelling
                    )
                elif spelling != known.spelling:
                    continue  # the same name with another type: not this flag's to set
            flags[field.name] = _OptionFlag(
                field.name,
                spelling,
                {**(known.defaults if known else {}), name: getattr(defaults, field.name)},
                (known and known.description) or field.metadata.get("help"),
            )
    return list(flags.values())


def _given_options(args: argparse.Namespace) -> dict[str, Any]:
    """The declaration options given on the command line (only those).

    Raises:
        ConfigurationError: for a flag the chosen provider does not take, naming those it takes.
    """
    flags: list[_OptionFlag] = args.option_flags
    given = {flag.option: getattr(args, flag.dest) for flag in flags}
    for flag in flags:
        if given[flag.option] is not None and args.provider not in flag.defaults:
            takes = [f.shown for f in flags if args.provider in f.defaults]
            raise ConfigurationError(
                f"{flag.shown} is not an option of {args.provider}; "
                f"{args.provider} takes {', '.join(takes) if takes else 'none'}"
            )
    return {option: value for option, value in given.items() if value is not None}


def _options_by_provider(
    args: argparse.Namespace, providers: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """The declaration options given to ``check``, per chosen provider taking each.

    Raises:
        ConfigurationError: for a flag none of the chosen providers takes.
    """
    chosen: dict[str, dict[str, Any]] = {}
    for flag in args.option_flags:
        value = getattr(args, flag.dest)
        if value is None:
            continue
        takers = [name for name in providers if name in flag.defaults]
        if not takers:
            raise ConfigurationError(f"{flag.shown} is not an option of {', '.join(providers)}")
        for name in takers:
            chosen.setdefault(name, {})[flag.option] = value
    return chosen


async def _declare(args: argparse.Namespace) -> int:
    options = _given_options(args)
    async with open_source(args.source) as toolset:
        listing = toolwire.tools(toolset, args.provider, **options)
    if listing.tools is None:  # what the request's `tools` is: left out
        print(
            f"toolwire: warning: no tools to declare to {args.provider}: "
            "send the request without tools",
            file=sys.stderr,
        )
    _print_json(listing.tools)
    return 0


_STATUS_STYLE = {"accepted": "32", "converted": "33", "rejected": "31", "skipped": "2"}


async def _check(args: argparse.Namespace) -> int:
    from toolwire.compat import check, limits

    providers = list(dict.fromkeys(args.provider or provider_names()))
    options = _options_by_provider(args, providers)
    async with opened_source(args.source, warn_left_out=False) as opened:
        toolset = opened.toolset
        reports = check(toolset, providers, options=options) + _left_out_reports(
            opened.left_out, providers
        )
        over = limits(toolset, providers)
        renamed = _renamed(toolset)
    for provider, message in over.items():
        print(f"toolwire: warning: {provider}: {_safe(message)}", file=sys.stderr)
    if args.json:
        _print_json([_report_json(r, over) for r in reports])
    else:
        _print_table(reports, providers, renamed, over, colour=_colour(sys.stdout))
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
    """A rejected report per tool a hub left out, for every provider, with the reason; its
    ``exposed_name`` is ``server/name``, as the tool has none."""
    from toolwire.compat import ProviderVerdict, ToolReport

    return [
        ToolReport(
            name=name,
            exposed_name=f"{server}/{name}",
            verdicts=tuple(
                ProviderVerdict(provider, "rejected", (f"left out by the hub: {why}",))
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
                    print(f"    {verdict.provider}: {_safe(note)}")
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


class _Unpromised(Policy):
    """Approval for a tool whose annotations do not promise it is harmless (see
    [`destructive_by_annotations`][toolwire.policy.destructive_by_annotations]), after what
    every policy says. The MCP defaults apply to every tool, a Python function's included:
    the one running ``call`` may not be the one who wrote it."""

    def __init__(self) -> None:
        super().__init__()
        self.allows_everything = False

    def evaluate(self, context: PolicyContext) -> Verdict:
        verdict = super().evaluate(context)
        why = destructive_by_annotations(context.tool) if verdict.effect == "allow" else None
        return Verdict("ask", why) if why is not None else verdict

    def may_ask(
        self, tool: Tool, *, principal: Any = None, exposed_name: str | None = None
    ) -> str | None:
        asked = super().may_ask(tool, principal=principal, exposed_name=exposed_name)
        return asked or destructive_by_annotations(tool)


def _call_policy(policies: Sequence[Policy]) -> Policy:
    """What ``call`` runs a call under: every policy given at once (a deny of any denies, an
    ask of any asks), then approval for a tool whose annotations do not promise it is
    harmless."""
    return Policy.all_of(*policies, _Unpromised())


def _terminal_approver(yes: bool) -> Callable[[ApprovalRequest], Awaitable[Decision]]:
    """``call``'s approver: approves with ``yes``; else asks on the terminal (on stderr, so
    stdout stays the answer), or denies at once when stdin is not a terminal."""

    async def decide(request: ApprovalRequest) -> Decision:
        # Shown as the console shows what a human approves: hidden characters as escapes.
        text = json.dumps(dict(request.arguments), ensure_ascii=False, sort_keys=True, default=str)
        what = f"{_text.shown_name(request.exposed_name)}({_text.visible_json_text(text)})"
        why = f" ({request.reason})" if request.reason else ""
        if yes:
            print(_safe(f"toolwire: {what} needs approval{why}: approved (--yes)"), file=sys.stderr)
            return toolwire.allow()
        if not sys.stdin.isatty():
            print(
                _safe(f"toolwire: {what} needs approval{why}: denied, no terminal to ask on ")
                + "(pass --yes to approve)",
                file=sys.stderr,
            )
            return toolwire.deny("no one could approve it: no terminal to ask on")
        if _text.hides(request.exposed_name) or _text.hides(text) or _text.hides(why):
            print(
                "toolwire: careful: hidden characters, shown as escapes (\\u202e); the call "
                "gets the characters themselves",
                file=sys.stderr,
            )
        print(
            _safe(f"toolwire: {what} needs approval{why}. Run it? [y/N] "),
            end="",
            flush=True,
            file=sys.stderr,
        )
        answer = await _read_line()
        if answer.strip().lower() in ("y", "yes"):
            return toolwire.allow()
        return toolwire.deny("the user said no")

    return decide


async def _read_line() -> str:
    """A line of stdin, read in a daemon thread while the event loop goes on: Ctrl-C ends the
    command at once (a worker thread of the loop's pool would keep the process alive until
    the line came)."""
    line: list[str] = []
    read = anyio.Event()
    async with anyio.from_thread.BlockingPortal() as portal:

        def wait_for_it() -> None:
            line.append(sys.stdin.readline())
            with contextlib.suppress(RuntimeError):  # the command ended meanwhile
                portal.call(read.set)

        threading.Thread(target=wait_for_it, daemon=True).start()
        await read.wait()
    return line[0]


def _arguments_option(text: str, what: str = "--args") -> dict[str, Any]:
    """``--args`` (or ``what``): a JSON object.

    Raises:
        ConfigurationError: for anything else.
    """
    try:
        arguments = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"{what} is not valid JSON: {exc}") from None
    if not isinstance(arguments, dict):
        raise ConfigurationError(f"{what} must be a JSON object")
    return arguments


async def _call(args: argparse.Namespace) -> int:
    from toolwire.executor import Executor, make_call
    from toolwire.policy_file import load_policy

    arguments = _arguments_option(args.args)
    adapter = get_provider(args.provider)
    given = load_policy(args.policy) if args.policy is not None else None
    async with opened_source(args.source) as opened:
        toolset, own = opened.toolset, opened.policy
        try:
            call = make_call(toolset, args.tool, arguments, call_id="call_1")
        except ToolNotFound:
            known = ", ".join(toolset.exposed_names) or "none"
            raise SourceError(
                f"{args.source} has no tool {args.tool!r} (its tools: {known})"
            ) from None
        policies = [policy for policy in (own, given) if policy is not None]
        executor = Executor(
            toolset,
            policy=_call_policy(policies),
            approver=_terminal_approver(args.yes),
            timeout=args.timeout,
        )
        (outcome,) = await executor.run([call])
    answer = adapter.answer(call, outcome.result, None)
    if args.json:
        _print_json(
            {
                "ok": not outcome.result.is_error,
                "error_kind": outcome.result.error_kind,
                "answer": answer,
            }
        )
    else:
        _print_json(answer)
    return 1 if outcome.result.is_error else 0


async def _demo(args: argparse.Namespace) -> int:
    from toolwire.demo import run_demo

    return await run_demo(
        args.provider,
        with_mcp=args.mcp,
        yes=args.yes,
        model=args.model,
        scripted=args.scripted,
        colour=_colour(sys.stdout),
        inbox=args.inbox,
    )


async def _pending(args: argparse.Namespace) -> int:
    store = _store(args.store)
    try:
        found = await ledger.waiting(
            store, run_id=args.run_id, principal=_principal(args.principal), limit=args.limit
        )
    finally:
        await _close(store)
    requests = found.requests
    for damaged in found.damaged:  # named, so nothing that waits is lost from view
        print(
            _safe(f"damaged: {damaged.run_id}  {damaged.call_id}: {damaged.problem}"),
            file=sys.stderr,
        )
    status = 1 if found.damaged else 0
    if args.json:
        _print_json([request.to_dict() for request in requests])
        return status
    for request in requests:
        arguments = dict(request.arguments)
        shown = _text.visible_json(arguments)
        print(_safe(f"{request.run_id}  {request.call_id}  {request.exposed_name} {shown}"))
        if request.reason:
            print(_safe(f"    why: {request.reason}"))
        if (
            _text.hides(request.exposed_name)
            or _text.json_hides(arguments)
            or _text.hides(request.reason or "")
        ):
            print(
                "    careful: hidden characters, shown as escapes (\\u202e); the call gets the "
                "characters themselves"
            )
        for question in request.input:  # it waits for input: `toolwire respond` answers it
            print(_safe(f"    asks ({question.key}, round {question.round}): {question.message}"))
    if not requests and not found.damaged:
        print("nothing waits for a decision")
    return status


async def _decide(args: argparse.Namespace) -> int:
    if args.decision == "allow":
        edited = _arguments_option(args.args) if args.args is not None else None
        decision = toolwire.allow(arguments=edited)
    elif args.args is not None:
        raise ConfigurationError("only an allow takes --args")
    else:
        decision = (toolwire.deny if args.decision == "deny" else toolwire.halt)(args.reason)
    store = _store(args.store)
    try:
        await toolwire.decide(args.run_id, args.call_id, decision, store=store, by=args.by)
    finally:
        await _close(store)
    print(_safe(f"{args.decision}: {args.run_id} {args.call_id}"))
    return 0


async def _respond(args: argparse.Namespace) -> int:
    content = _arguments_option(args.content, "the answer") if args.content is not None else None
    store = _store(args.store)
    try:
        await toolwire.respond(
            args.run_id,
            args.call_id,
            content,
            action=args.action,
            key=args.key,
            round=args.round,
            store=store,
            by=args.by,
        )
    finally:
        await _close(store)
    print(_safe(f"{args.action}: {args.run_id} {args.call_id}"))
    return 0


async def _history(args: argparse.Namespace) -> int:
    store = _store(args.store)
    try:
        trails = await toolwire.history(args.run_id, store=store)
    finally:
        await _close(store)
    if not trails:  # a run is its calls: none kept, no run (or it expired)
        raise ToolwireError(f"no run {args.run_id!r} in {store!r} (or it expired)")
    _print_json([trail.to_dict() for trail in trails])
    return 0


async def _serve(args: argparse.Namespace) -> int:
    from toolwire.mcp._serve import serve

    transport: Literal["stdio", "http"] = "stdio"
    host, port = "127.0.0.1", 8000
    if args.http is not None:
        host, _, port_text = args.http.rpartition(":")
        if not host or not port_text.isdigit():
            raise ConfigurationError(f"--http is HOST:PORT, not {args.http!r}")
        transport, host, port = "http", host.strip("[]"), int(port_text)  # [::1] → ::1
    options: dict[str, Any] = {}
    if args.state_key_env is not None:
        secret = os.environ.get(args.state_key_env)
        if not secret:
            raise ConfigurationError(
                f"--state-key-env: the environment variable {args.state_key_env} is not set"
            )
        options["state_keys"] = [secret]
    await serve(
        args.source,
        policy=args.policy,
        store=args.store,
        transport=transport,
        host=host,
        port=port,
        principal=_principal(args.principal),
        timeout=args.timeout,
        elicit=not args.no_elicit,
        on_listening=_listening_on_stderr,
        **options,
    )
    return 0


def _listening_on_stderr(url: str) -> None:
    print(f"toolwire: serving MCP at {url}", file=sys.stderr, flush=True)


async def _inbox(args: argparse.Namespace) -> int:
    from toolwire.inbox._serve import serve

    store = _store(args.store, create=True)  # the console may open before the first run
    try:
        await serve(
            store,
            host=args.host,
            port=args.port,
            authorize=args.authorize,
            announce=lambda line: print(line, flush=True),
        )
    finally:
        await _close(store)
    return 0


def _store(url: str, *, create: bool = False) -> Any:
    """The store at ``url``. Without ``create``, only one that is already there: commands that
    look at runs made elsewhere refuse a mistyped SQLite path instead of making a new, empty
    database of it."""
    from toolwire.store import from_url

    return from_url(url, create=create)


async def _close(store: Any) -> None:
    if hasattr(store, "aclose"):
        await store.aclose()
    elif hasattr(store, "close"):
        store.close()


def _principal(text: str | None) -> Any:
    """A principal given on the command line: JSON, or else the text itself."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line on stderr, like every other error of the command."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"toolwire: error: {message} (see {self.prog} --help)\n")


def _provider_option(parser: argparse.ArgumentParser, *, several: bool = False) -> None:
    """``--provider``, one of the registered providers."""
    names = ", ".join(provider_names())
    if several:
        parser.add_argument(
            "--provider",
            action="append",
            choices=provider_names(),
            metavar="NAME",
            help=f"a provider to check, of {names} (repeat for several; default: all)",
        )
    else:
        parser.add_argument(
            "--provider",
            default="gemini",
            choices=provider_names(),
            metavar="NAME",
            help=f"the provider, one of {names} (default: %(default)s)",
        )


def _names(text: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in text.split(",") if name.strip())


def _add_option_flags(parser: argparse.ArgumentParser) -> None:
    """The declaration options' flags (see [`_option_flags`][]); each is None unless given."""
    flags = _option_flags()
    for flag in flags:
        if flag.spelling is bool:
            kind: dict[str, Any] = {"action": argparse.BooleanOptionalAction}
        elif flag.spelling is str:
            kind = {"metavar": "TEXT"}
        elif flag.spelling is tuple:
            kind = {"metavar": "NAME,...", "type": _names}
        else:
            kind = {"choices": flag.spelling}
        parser.add_argument(flag.flag, dest=flag.dest, default=None, help=flag.help, **kind)
    parser.set_defaults(option_flags=flags)


def _parser() -> argparse.ArgumentParser:
    from toolwire import __version__

    parser = _Parser(
        prog="toolwire",
        description="One tool definition, every model's tool calling, governed execution.",
    )
    parser.add_argument("--version", action="version", version=f"toolwire {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    source_help = (
        "a .py file, module:attribute, a .json/.jsonl file of tool definitions, "
        "stdio:'CMD ARGS', an http(s):// MCP URL, or an mcp.json file"
    )

    declare = commands.add_parser(
        "declare",
        help="print the request fragment declaring SOURCE's tools to a provider",
        description="Print the request's tools value (null when there are none). Each option "
        "applies to the providers it names; another provider refuses it.",
    )
    declare.add_argument("source", help=source_help)
    _provider_option(declare)
    _add_option_flags(declare)
    declare.set_defaults(run=_declare)

    check = commands.add_parser(
        "check",
        help="report, per tool and provider, whether it is accepted, converted or rejected",
    )
    check.add_argument("source", help=source_help)
    _provider_option(check, several=True)
    _add_option_flags(check)
    check.add_argument("--json", action="store_true", help="machine-readable output")
    check.set_defaults(run=_check)

    call = commands.add_parser(
        "call",
        help="run one tool through the governed pipeline and print the answer",
        description="Run one call through the governed pipeline (validation, policy, approval, "
        "timeout) and print the answer. The policy is the SOURCE module's own (a Policy named "
        "`policy` or `POLICY`) and --policy FILE, both applied when both are given. A tool "
        "whose annotations do not promise it is harmless (readOnlyHint, or destructiveHint "
        "false) needs approval, a Python function's as a server's: asked on the terminal, "
        "denied when there is none, approved with --yes.",
    )
    call.add_argument("source", help=source_help)
    call.add_argument("tool", help="the tool's exposed name (as `toolwire declare` shows it)")
    call.add_argument("--args", default="{}", help="the arguments, a JSON object")
    _provider_option(call)
    call.add_argument(
        "--policy",
        metavar="FILE",
        help="a policy file (.toml, or JSON); applied with the module's own `policy`, if any",
    )
    call.add_argument(
        "--yes",
        action="store_true",
        help="approve the call if it needs approval (otherwise asked on the terminal)",
    )
    call.add_argument("--timeout", type=float, default=60.0, help="seconds the call may take")
    call.add_argument("--json", action="store_true", help="the answer with its status")
    call.set_defaults(run=_call)

    demo = commands.add_parser(
        "demo", help="a whole tool-calling loop on bundled tools (scripted without an API key)"
    )
    _provider_option(demo)
    demo.add_argument("--mcp", action="store_true", help="also start the bundled MCP server")
    demo.add_argument("--yes", action="store_true", help="approve calls that need approval")
    demo.add_argument("--model", help="the model to use with a real provider")
    demo.add_argument(
        "--scripted", action="store_true", help="use the scripted model even with an API key"
    )
    demo.add_argument(
        "--inbox",
        action="store_true",
        help="calls that need approval wait for a decision in the approval console",
    )
    demo.set_defaults(run=_demo)

    store_help = "the run store: sqlite:///path, redis://..., postgresql://..."
    pending = commands.add_parser("pending", help="list the calls waiting for a decision")
    pending.add_argument("--store", required=True, help=store_help)
    pending.add_argument("--run-id", help="only this run's")
    pending.add_argument("--principal", help="only this principal's (JSON, or a plain string)")
    pending.add_argument("--limit", type=int, default=100)
    pending.add_argument("--json", action="store_true", help="the requests as JSON")
    pending.set_defaults(run=_pending)

    decide = commands.add_parser("decide", help="record a decision for a waiting call")
    decide.add_argument("run_id")
    decide.add_argument("call_id")
    decide.add_argument("decision", choices=["allow", "deny", "halt"])
    decide.add_argument("--store", required=True, help=store_help)
    decide.add_argument("--reason", help="what the model is told (deny, halt)")
    decide.add_argument("--args", help="allow: the arguments to run with instead, a JSON object")
    decide.add_argument("--by", help="who decides (kept in the run's history)")
    decide.set_defaults(run=_decide)

    respond = commands.add_parser(
        "respond", help="answer the question an MCP server asked during a waiting call"
    )
    respond.add_argument("run_id")
    respond.add_argument("call_id")
    respond.add_argument(
        "content", nargs="?", help="accept: the answer, a JSON object fitting what was asked"
    )
    respond.add_argument("--action", choices=["accept", "decline", "cancel"], default="accept")
    respond.add_argument("--key", help="which question, when the call waits on several")
    respond.add_argument(
        "--round", help="the round `toolwire pending` showed: never answer a question asked since"
    )
    respond.add_argument("--store", required=True, help=store_help)
    respond.add_argument("--by", help="who answers (kept in the run)")
    respond.set_defaults(run=_respond)

    history = commands.add_parser("history", help="each call of a run with its trail, as JSON")
    history.add_argument("run_id")
    history.add_argument("--store", required=True, help=store_help)
    history.set_defaults(run=_history)

    inbox = commands.add_parser(
        "inbox",
        help="serve the approval console (extra toolwire[inbox])",
        description="Serve the approval console. Without --authorize it listens on loopback "
        "only and lets in whoever opens the URL it prints (a random token, then a cookie).",
    )
    inbox.add_argument("--store", required=True, help=store_help)
    inbox.add_argument("--host", default="127.0.0.1", help="where to listen (default: %(default)s)")
    inbox.add_argument("--port", type=int, default=8765, help="0: any free port (default: 8765)")
    inbox.add_argument(
        "--authorize",
        metavar="MODULE:FUNCTION",
        help="request -> approver identity or None; required for a non-loopback --host",
    )
    inbox.set_defaults(run=_inbox)

    serve = commands.add_parser(
        "serve", help="serve SOURCE's tools as an MCP server, every call governed"
    )
    serve.add_argument("source", help=source_help)
    serve.add_argument(
        "--policy",
        metavar="FILE",
        help="a policy file (.toml, or JSON); applied with the module's own `policy`, if any",
    )
    serve.add_argument("--store", help=f"where calls wait for approval; {store_help}")
    serve.add_argument("--http", metavar="HOST:PORT", help="streamable HTTP (default: stdio)")
    serve.add_argument("--principal", help="who the calls run for (JSON, or a plain string)")
    serve.add_argument("--timeout", type=float, default=60.0, help="seconds a call may take")
    serve.add_argument(
        "--no-elicit", action="store_true", help="never ask the client; calls wait in the store"
    )
    serve.add_argument(
        "--state-key-env",
        metavar="NAME",
        help="the environment variable holding the secret that seals approval forms' state "
        "(gateways sharing it take each other's answers; default: a key of this process)",
    )
    serve.set_defaults(run=_serve)
    return parser


def _show_warning(message: Warning | str, *_: Any, **__: Any) -> None:
    """A warning as one line on stderr (``toolwire: warning: ...``), not Python's two."""
    print(f"toolwire: warning: {_safe(str(message))}", file=sys.stderr)


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    """The exceptions in ``group`` and the groups nested in it."""
    found: list[BaseException] = []
    for error in group.exceptions:
        found.extend(_leaves(error) if isinstance(error, BaseExceptionGroup) else [error])
    return found


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            status: int = anyio.run(args.run, args)
    except ToolwireError as exc:
        print(f"toolwire: error: {_safe(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BaseExceptionGroup as group:
        # Raised in a task (a server the command started, a console): the same one line.
        errors = _leaves(group)
        if all(isinstance(error, KeyboardInterrupt) for error in errors):
            return 130
        if not all(isinstance(error, ToolwireError) for error in errors):
            raise
        for message in dict.fromkeys(str(error) for error in errors):
            print(f"toolwire: error: {_safe(message)}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader stopped reading (`toolwire declare ... | head`): no traceback, and none at
        # exit either when Python flushes what is left; the status a tool killed by SIGPIPE has.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
