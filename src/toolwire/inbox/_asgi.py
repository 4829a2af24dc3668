"""The console as an ASGI application: what ``toolwire.inbox`` exports as ``app``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from toolwire.errors import MissingDependency

if TYPE_CHECKING:
    from toolwire.runs.store import RunStore

__all__ = ["Authorize", "app"]

Authorize = Callable[[Any], "Any | Awaitable[Any]"]
"""``authorize(request) -> identity | None`` (sync or async): who makes the request, given
Starlette's ``Request``; None, or any identity that names nobody (``""``, ``0``, ``{}``...,
see [`ledger.identity_json`][toolwire.ledger.identity_json]), refuses it (401)."""


def app(
    store: RunStore,
    *,
    authorize: Authorize,
    secret: bytes | None = None,
    title: str = "toolwire inbox",
    poll_seconds: float = 3.0,
    page_size: int = 50,
) -> Any:
    """The approval console over ``store``, as an ASGI application (a Starlette app).

    Args:
        store: the run store the turns run with.
        authorize: who makes each request (see [`Authorize`][]); required: there is no default
            that lets anyone in.
        secret: the key CSRF tokens are signed with; random per app when None (give one
            when several processes serve the same console).
        title: the pages' title.
        poll_seconds: how often the list page refreshes itself.
        page_size: requests per page when the query gives no ``limit`` (at most 200).

    Raises:
        MissingDependency: Starlette is not installed (extra ``toolwire[inbox]``).
        ConfigurationError: ``authorize`` is not callable, or a bad option.
    """
    try:
        from toolwire.inbox._app import build
    except ImportError as exc:
        if exc.name is not None and exc.name.split(".")[0] == "starlette":
            raise MissingDependency("starlette", "inbox") from None
        raise
    return build(
        store,
        authorize=authorize,
        secret=secret,
        title=title,
        poll_seconds=poll_seconds,
        page_size=page_size,
    )
