"""``toolwire mcp login`` and ``logout``: a server's OAuth tokens, had once and kept."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from toolwire._cli.common import safe
from toolwire.errors import ConfigurationError

__all__ = ["run_login", "run_logout"]


async def run_login(args: argparse.Namespace) -> int:
    from toolwire._scrub import shown_url
    from toolwire.mcp import login  # the package's names say which extra is missing

    label, spec = _server(args.server, args.config)
    if args.scope:
        auth = spec.auth
        extra = " ".join(part for part in (getattr(auth, "scope", None), args.scope) if part)
        spec = dataclasses.replace(spec, auth=dataclasses.replace(auth, scope=extra))
    store = _token_store(args.store)
    asked = await login(
        spec,
        label=label,
        token_store=store,
        announce=lambda line: print(safe(line), file=sys.stderr, flush=True),
        open_browser=False if args.no_browser else None,
        timeout=args.timeout,
    )
    where = getattr(spec.auth, "store", None) or store
    if asked:
        kept = f" (kept in {where!r})" if where is not None else ""
        print(f"toolwire: logged in to {safe(label)}{kept}", file=sys.stderr)
    else:
        print(
            f"toolwire: {safe(shown_url(spec.url))} did not ask for authorization; "
            "nothing was kept",
            file=sys.stderr,
        )
    return 0


async def run_logout(args: argparse.Namespace) -> int:
    from toolwire.mcp import logout  # the package's names say which extra is missing

    label, spec = _server(args.server, args.config)
    await logout(spec, token_store=_token_store(args.store))
    print(
        f"toolwire: forgot the tokens kept for {safe(label)} (revoke them at the authorization "
        "server too if they may have leaked)",
        file=sys.stderr,
    )
    return 0


def _server(server: str, config: str | None) -> tuple[str, Any]:
    """SERVER as a label and a spec: a URL, or a name in ``--config``.

    Raises:
        ConfigurationError: no such server, or one that OAuth does not apply to.
    """
    from toolwire.mcp.client import HttpServer, OAuth, SseServer

    if server.startswith(("http://", "https://")):
        if config is not None:
            raise ConfigurationError("give a server's URL, or its name with --config, not both")
        return server, HttpServer(url=server, auth=OAuth())
    if config is None:
        raise ConfigurationError(
            f"SERVER is an http(s):// URL, or the name of a server of --config FILE, not {server!r}"
        )
    from toolwire.mcp.client import read_config

    specs = read_config(Path(config))
    spec = specs.get(server)
    if spec is None:
        names = ", ".join(sorted(specs)) or "none"
        raise ConfigurationError(f"{config} has no server {server!r} (it has: {names})")
    if not isinstance(spec, HttpServer | SseServer):
        raise ConfigurationError(f"server {server!r} is not a remote server: it needs no login")
    if spec.auth is None:
        raise ConfigurationError(
            f"server {server!r} does not use OAuth (its entry sends an Authorization header, "
            'or says "oauth": false)'
        )
    return server, spec


def _token_store(url: str | None) -> Any:
    """The token store in the database of the run store at ``url``, or None (the default)."""
    if url is None:
        return None
    from toolwire.mcp.client import MemoryTokenStore, token_store_for

    store = token_store_for(url)
    if isinstance(store, MemoryTokenStore):
        raise ConfigurationError(
            "--store: a memory store ends with this command; give a SQLite store's URL"
        )
    return store
