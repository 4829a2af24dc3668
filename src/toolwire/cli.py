"""The ``toolwire`` command: ``declare``, ``check``, ``call`` and ``demo``; ``pending``,
``decide`` and ``history`` over a run store; ``inbox`` (the approval console) and ``serve``
(a governed MCP gateway); ``mcp login`` and ``mcp logout`` (a remote server's OAuth tokens).

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
import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any, NoReturn

import anyio

from toolwire._cli.authorizing import run_login, run_logout
from toolwire._cli.calling import run_call
from toolwire._cli.common import safe
from toolwire._cli.declaring import run_check, run_declare
from toolwire._cli.options import add_option_flags
from toolwire._cli.runs import run_decide, run_history, run_pending, run_respond
from toolwire._cli.serving import run_demo, run_inbox, run_serve
from toolwire.errors import ToolwireError
from toolwire.providers import provider_names
from toolwire.sources import load_source, open_source

__all__ = ["load_source", "main", "open_source"]


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


def _name_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--name",
        metavar="NAME",
        help="the server's name for a stdio: or http(s):// SOURCE (its tools are exposed as "
        "NAME__tool; default: the module, script or package it runs, or mcp for a URL)",
    )


def _described(parser: argparse.ArgumentParser) -> None:
    """Every command's --help opens with what it does: its one-line help, where it has no
    description of its own."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                if sub.description is None and helps.get(name):
                    said = str(helps[name])
                    sub.description = said[0].upper() + said[1:] + "."
                _described(sub)


def _parser() -> argparse.ArgumentParser:
    from toolwire import __version__

    parser = _Parser(
        prog="toolwire",
        description="One tool definition, every model's tool calling, governed execution.",
    )
    parser.add_argument("--version", action="version", version=f"toolwire {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    source_help = (
        "a .py file (or file.py:attribute), module:attribute, a .json/.jsonl file of tool "
        "definitions, stdio:'CMD ARGS', an http(s):// MCP URL, or an mcp.json file"
    )

    declare = commands.add_parser(
        "declare",
        help="print the request fragment declaring SOURCE's tools to a provider",
        description="Print the request's tools value (null when there are none). Each option "
        "applies to the providers it names; another provider refuses it.",
    )
    declare.add_argument("source", help=source_help)
    _name_option(declare)
    _provider_option(declare)
    add_option_flags(declare)
    declare.set_defaults(run=run_declare)

    check = commands.add_parser(
        "check",
        help="report, per tool and provider, whether it is accepted, converted or rejected",
    )
    check.add_argument("source", help=source_help)
    _name_option(check)
    _provider_option(check, several=True)
    add_option_flags(check)
    check.add_argument("--json", action="store_true", help="machine-readable output")
    check.set_defaults(run=run_check)

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
    _name_option(call)
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
    call.set_defaults(run=run_call)

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
    demo.set_defaults(run=run_demo)

    store_help = "the run store: sqlite:///path, redis://..., postgresql://..."
    pending = commands.add_parser("pending", help="list the calls waiting for a decision")
    pending.add_argument("--store", required=True, help=store_help)
    pending.add_argument("--run-id", help="only this run's")
    pending.add_argument("--principal", help="only this principal's (JSON, or a plain string)")
    pending.add_argument(
        "--limit", type=int, default=100, help="list at most this many (default: %(default)s)"
    )
    pending.add_argument("--json", action="store_true", help="the requests as JSON")
    pending.set_defaults(run=run_pending)

    decide = commands.add_parser("decide", help="record a decision for a waiting call")
    decide.add_argument("run_id", help="the run the call waits in (`toolwire pending` shows it)")
    decide.add_argument("call_id", help="the waiting call's id (`toolwire pending` shows it)")
    decide.add_argument(
        "decision",
        choices=["allow", "deny", "halt"],
        help="allow runs the call; deny answers it denied; halt denies it and stops the loop",
    )
    decide.add_argument("--store", required=True, help=store_help)
    decide.add_argument("--reason", help="what the model is told (deny, halt)")
    decide.add_argument("--args", help="allow: the arguments to run with instead, a JSON object")
    decide.add_argument("--by", help="who decides (kept in the run's history)")
    decide.set_defaults(run=run_decide)

    respond = commands.add_parser(
        "respond", help="answer the question an MCP server asked during a waiting call"
    )
    respond.add_argument("run_id", help="the run the call waits in (`toolwire pending` shows it)")
    respond.add_argument("call_id", help="the waiting call's id (`toolwire pending` shows it)")
    respond.add_argument(
        "content", nargs="?", help="accept: the answer, a JSON object fitting what was asked"
    )
    respond.add_argument(
        "--action",
        choices=["accept", "decline", "cancel"],
        default="accept",
        help="accept with CONTENT, or decline or cancel the question (default: %(default)s)",
    )
    respond.add_argument("--key", help="which question, when the call waits on several")
    respond.add_argument(
        "--round", help="the round `toolwire pending` showed: never answer a question asked since"
    )
    respond.add_argument("--store", required=True, help=store_help)
    respond.add_argument("--by", help="who answers (kept in the run)")
    respond.set_defaults(run=run_respond)

    history = commands.add_parser("history", help="each call of a run with its trail, as JSON")
    history.add_argument("run_id", help="the run whose calls to show")
    history.add_argument("--store", required=True, help=store_help)
    history.set_defaults(run=run_history)

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
    inbox.set_defaults(run=run_inbox)

    serve = commands.add_parser(
        "serve",
        help="serve SOURCE's tools as an MCP server, every call governed",
        description="Serve SOURCE's tools as an MCP server, every call governed (validation, "
        "policy, approval, timeouts). In front of MCP servers (an mcp.json, a URL, stdio:CMD), "
        "their resources, resource templates, prompts and completions are served too, each "
        "read and get governed as a call (policy rules with resource = or prompt =).",
    )
    serve.add_argument("source", help=source_help)
    _name_option(serve)
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
        "--approve-by",
        choices=("ledger", "client"),
        default="ledger",
        help="who decides a call the policy asks about: a person through the store "
        "(`toolwire decide`, the inbox), or also the client that made it, in a form "
        "(default: %(default)s)",
    )
    serve.add_argument(
        "--own-names",
        action="store_true",
        help="serve the tools and prompts of SOURCE's one MCP server under their own names, "
        "without the server__ prefix",
    )
    serve.add_argument(
        "--console",
        metavar="URL",
        help="the approval console (toolwire inbox) on --store: a waiting call's answer is sent "
        "its page there (by URL-mode elicitation to clients that take them)",
    )
    serve.add_argument(
        "--state-key-env",
        metavar="NAME",
        help="the environment variable holding the secret that seals approval forms' state "
        "(gateways sharing it take each other's answers; default: a key of this process)",
    )
    _auth_options(serve)
    serve.set_defaults(run=run_serve)
    _mcp_commands(commands, store_help)
    _described(parser)
    return parser


def _mcp_commands(commands: Any, store_help: str) -> None:
    """``toolwire mcp login`` and ``logout``."""
    mcp = commands.add_parser("mcp", help="remote MCP servers' OAuth: log in, log out")
    actions = mcp.add_subparsers(dest="mcp_command", required=True)
    server_help = "an http(s):// MCP URL, or the name of a server of --config"
    login = actions.add_parser(
        "login",
        help="authorize toolwire for a server once (the browser flow); the tokens are kept",
        description="Authorize toolwire for SERVER: listen on 127.0.0.1 for the answer, print "
        "the authorization URL (and open it in a browser when run from a terminal, outside "
        "CI), exchange the code (PKCE) and keep the tokens. Hubs then use and refresh them.",
    )
    login.add_argument("server", help=server_help)
    login.add_argument("--config", metavar="FILE", help="the MCP config SERVER is named in")
    login.add_argument(
        "--store",
        help=f"keep the tokens in this run store's database (sealed with TOOLWIRE_TOKEN_KEY); "
        f"{store_help} (default: a file under the user's config directory)",
    )
    login.add_argument("--scope", help="scopes to ask for besides the server's (space-separated)")
    login.add_argument(
        "--no-browser", action="store_true", help="print the URL, never open a browser"
    )
    login.add_argument(
        "--timeout", type=float, default=300.0, help="seconds to wait (default: %(default)s)"
    )
    login.set_defaults(run=run_login)
    logout = actions.add_parser("logout", help="forget the tokens kept for a server")
    logout.add_argument("server", help=server_help)
    logout.add_argument("--config", metavar="FILE", help="the MCP config SERVER is named in")
    logout.add_argument("--store", help=f"the run store keeping the tokens; {store_help}")
    logout.set_defaults(run=run_logout)


def _auth_options(serve: argparse.ArgumentParser) -> None:
    """``toolwire serve``'s options for authenticating HTTP clients."""
    auth = serve.add_argument_group(
        "authentication (HTTP)",
        "Each request needs a bearer token, and its calls run for the principal it names. "
        "Required to listen beyond loopback.",
    )
    auth.add_argument(
        "--auth-jwks",
        metavar="URL",
        help="check JWT access tokens against the issuer's keys at URL (https; with "
        "--auth-issuer and --auth-audience)",
    )
    auth.add_argument("--auth-issuer", metavar="ISSUER", help="the iss the tokens must carry")
    auth.add_argument(
        "--auth-audience",
        metavar="AUDIENCE",
        help="the aud the tokens must name (usually the gateway's public URL)",
    )
    auth.add_argument(
        "--auth-tokens",
        metavar="FILE",
        help="static tokens instead: a TOML or JSON file of SHA-256 digests and subjects",
    )
    auth.add_argument(
        "--auth-scope",
        metavar="SCOPE",
        action="append",
        help="a scope every token must grant (repeatable)",
    )
    auth.add_argument(
        "--auth-resource",
        metavar="URL",
        help="the gateway's public URL, named in its protected-resource metadata "
        "(default: the URL it listens on)",
    )
    auth.add_argument(
        "--principal-claim",
        metavar="CLAIM",
        help="the token claim naming the principal (default: sub)",
    )


def _show_warning(message: Warning | str, *_: Any, **__: Any) -> None:
    """A warning as one line on stderr (``toolwire: warning: ...``), not Python's two."""
    print(f"toolwire: warning: {safe(str(message))}", file=sys.stderr)


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
        print(f"toolwire: error: {safe(str(exc))}", file=sys.stderr)
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
            print(f"toolwire: error: {safe(message)}", file=sys.stderr)
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
