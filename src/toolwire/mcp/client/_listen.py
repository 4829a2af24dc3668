"""The ``subscriptions/listen`` stream the hub holds open to each 2026-07-28 server (where
change notifications come only that way): listing changes wake a re-listing, and updates of
the resources a gateway's clients subscribed to are passed on."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.abc

from toolwire.mcp.client._catalog import listened_changes
from toolwire.mcp.client._state import ServerState

__all__ = ["listen"]


async def listen(
    client: Any,
    server: ServerState,
    *,
    backoff: float,
    updated: Callable[[ServerState, str], Awaitable[None]],
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Listen on ``client`` (an ``mcp.Client``) for ``server``'s changes until the server
    closes the stream: a listing change wakes ``server`` (re-listing), a resource update is
    ``updated(server, uri)``. The stream is opened again, with the resources subscribed to,
    whenever ``server.relisten`` is set (``server.listened`` is set once it is), and after it
    is lost (backing off, at most ``backoff`` seconds). Started once the first stream is open
    (or the server refused it)."""
    from mcp.client.subscriptions import ResourceUpdated, SubscriptionLost
    from mcp.shared.exceptions import MCPError

    started = False
    lost = 0
    try:
        while True:
            server.relisten = anyio.Event()
            subscribed = tuple(sorted(server.subscriptions))
            try:
                async with (
                    client.listen(
                        **listened_changes(client), resource_subscriptions=subscribed
                    ) as events,
                    anyio.create_task_group() as stream,
                ):
                    server.listened.set()
                    if not started:
                        started = True
                        task_status.started()
                    stream.start_soon(_cancel_on, server.relisten, stream.cancel_scope)
                    async for event in events:
                        lost = 0
                        if isinstance(event, ResourceUpdated):
                            await updated(server, event.uri)
                        else:
                            server.wake.set()
                    stream.cancel_scope.cancel()
                    return  # closed by the server: no more events come
            except SubscriptionLost:
                # Events may have been missed: re-list, then listen again, backing off.
                server.wake.set()
                lost += 1
                await anyio.sleep(min(backoff, 0.1 * 2 ** min(lost, 16)))
    except MCPError:
        pass  # a server without subscriptions: its listing is read at each connection
    finally:
        if not started:
            task_status.started()


async def _cancel_on(event: anyio.Event, scope: anyio.CancelScope) -> None:
    await event.wait()
    scope.cancel()
