"""``toolwire serve``, ``inbox`` and ``demo``: what runs until it is stopped."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Literal

from toolwire._cli.common import close_store, colour, principal_option, store_at
from toolwire.errors import ConfigurationError

__all__ = ["run_demo", "run_inbox", "run_serve"]


async def run_serve(args: argparse.Namespace) -> int:
    from toolwire.mcp import serve

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
    auth = authentication(args)
    if auth is not None:
        options["auth"] = auth
    await serve(
        args.source,
        policy=args.policy,
        store=args.store,
        transport=transport,
        host=host,
        port=port,
        principal=principal_option(args.principal),
        timeout=args.timeout,
        approve_by=args.approve_by,
        own_names=args.own_names,
        console=args.console,
        server_name=args.name,
        on_listening=_listening_on_stderr,
        **options,
    )
    return 0


_AUTH_OPTIONS = ("auth_scope", "auth_resource", "principal_claim")
"""The options that say how clients are authenticated, not by what."""


def authentication(args: argparse.Namespace) -> Any:
    """The ``toolwire.mcp.Authentication`` the ``--auth-*`` options describe; None without
    them.

    Raises:
        ConfigurationError: options that do not go together, or are missing.
    """
    jwt = (args.auth_jwks, args.auth_issuer, args.auth_audience)
    if args.auth_jwks is None and args.auth_tokens is None:
        given = [
            name for name in ("auth_issuer", "auth_audience", *_AUTH_OPTIONS) if getattr(args, name)
        ]
        if given:
            flag = "--" + given[0].replace("_", "-")
            raise ConfigurationError(f"{flag} needs --auth-jwks URL or --auth-tokens FILE")
        return None
    if args.auth_jwks is not None and args.auth_tokens is not None:
        raise ConfigurationError("--auth-jwks and --auth-tokens: give one verifier")
    from toolwire.mcp import Authentication, JwtVerifier, StaticTokens

    if args.principal is not None:
        raise ConfigurationError(
            "--principal and --auth-*: with authentication, each client's token names the "
            "principal (--principal-claim says which claim)"
        )
    if args.auth_tokens is not None:
        if any(jwt[1:]):
            raise ConfigurationError("--auth-issuer and --auth-audience go with --auth-jwks")
        if args.principal_claim not in (None, "sub"):
            raise ConfigurationError("--principal-claim: a static token names only its subject")
        verifier: Any = StaticTokens.from_file(args.auth_tokens)
    else:
        if None in jwt:
            raise ConfigurationError("--auth-jwks needs --auth-issuer and --auth-audience")
        verifier = JwtVerifier(args.auth_jwks, issuer=args.auth_issuer, audience=args.auth_audience)
    return Authentication(
        verifier,
        resource=args.auth_resource,
        scopes=args.auth_scope or (),
        principal=args.principal_claim or "sub",
    )


def _listening_on_stderr(url: str) -> None:
    print(f"toolwire: serving MCP at {url}", file=sys.stderr, flush=True)


async def run_inbox(args: argparse.Namespace) -> int:
    from toolwire.inbox import serve

    store = store_at(args.store, create=True)  # the console may open before the first run
    try:
        _check_shared(store)
        await serve(
            store,
            host=args.host,
            port=args.port,
            authorize=args.authorize,
            announce=lambda line: print(line, flush=True),
        )
    finally:
        await close_store(store)
    return 0


def _check_shared(store: Any) -> None:
    """Refuse a store of the console's own process: nothing another process runs could ever
    wait in it, so the console would stay empty.

    Raises:
        ConfigurationError: saying so.
    """
    from toolwire.runs.store import in_process

    if in_process(store):
        raise ConfigurationError(
            "--store: a store in the console's own memory (memory://, sqlite:///:memory:) "
            "holds no run of any other process, so nothing would ever wait in it: give the "
            "store the runs are kept in (sqlite:///runs.db, redis://..., postgresql://...)"
        )


async def run_demo(args: argparse.Namespace) -> int:
    from toolwire.demo import run_demo

    return await run_demo(
        args.provider,
        with_mcp=args.mcp,
        yes=args.yes,
        model=args.model,
        scripted=args.scripted,
        colour=colour(sys.stdout),
        inbox=args.inbox,
    )
