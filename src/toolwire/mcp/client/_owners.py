"""Whose calls a handshake-era connection carries, once its server asks for roots: one
client's at a time.

On the handshake revisions a server knows its client by its session: the roots it was given
(``roots/list``) belong to the session, and a server may keep them for the session's later
calls. The hub's one session to a server carries the calls of every client of a gateway in
front of it, so such a server would answer one client's call with another's roots. So, on a
handshake-era connection whose server asked for roots:

- calls of different owners (a gateway client's principal and session, see
  ``_relay.owner_of``; the hub's own calls are one owner) never run at once: a call of another
  owner waits until those in flight end, first come first served (an owner's new calls do not
  overtake a call of another owner that waits);
- once the server was given an owner's roots, it is told ``notifications/roots/list_changed``
  before the first call of any other owner, so that it asks again (within that call, of that
  call's client) rather than keep the roots it had;
- the roots request that shows the server asks for them, if it comes while calls of other
  owners are in flight, is refused (see ``_input``): they could be given those roots.

A server that never asks for roots is given none to keep: calls of any owners run on its
session at once. A 2026-07-28 connection has no session: each request carries what its client
can answer, and the server asks within the request it answers, so calls run there at once.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio

__all__ = ["HUB", "Owners"]

HUB = "hub"
"""The owner of the hub's own calls (no gateway client's)."""


@dataclass(eq=False)
class Owners:
    """The owners whose calls one handshake-era connection carries, and those waiting."""

    exclusive: bool = False
    """Its server asked for roots: one owner's calls at a time from now on."""
    running: Counter[str] = field(default_factory=Counter)
    """The calls in flight, by owner."""
    waiting: deque[tuple[str, anyio.Event]] = field(default_factory=deque)
    roots_of: str | None = None
    """The owner whose roots the server was given since it was last told they changed."""
    telling: anyio.Lock = field(default_factory=anyio.Lock)

    @asynccontextmanager
    async def turn(
        self, owner: str, roots_changed: Callable[[], Awaitable[None]]
    ) -> AsyncIterator[None]:
        """While ``owner``'s call runs (no other owner's does, once the server asked for
        roots). ``roots_changed()`` tells the server its client's roots changed; it raises when
        it cannot (the call must not run)."""
        await self._enter(owner)
        try:
            if self.roots_of not in (None, owner):
                async with self.telling:  # told once, before any of this owner's calls runs
                    if self.roots_of not in (None, owner):
                        await roots_changed()
                        self.roots_of = None
            yield
        finally:
            self._leave(owner)

    def others_running(self, owner: str) -> bool:
        """Whether calls of owners other than ``owner`` are in flight."""
        return any(other != owner for other in self.running)

    def gave_roots(self, owner: str) -> None:
        """The server was given ``owner``'s roots (within one of its calls)."""
        self.roots_of = owner

    def reset(self) -> None:
        """A new session: its server asked for nothing yet, and was given no roots."""
        self.exclusive, self.roots_of = False, None

    async def _enter(self, owner: str) -> None:
        alone = not self.waiting and set(self.running) <= {owner}
        if not self.exclusive or alone:
            self.running[owner] += 1
            return
        entry = (owner, anyio.Event())
        self.waiting.append(entry)
        try:
            await entry[1].wait()
        except anyio.get_cancelled_exc_class():
            if entry in self.waiting:
                self.waiting.remove(entry)
            else:  # let in, but cancelled before it ran: its place is given back
                self._leave(owner)
            raise

    def _leave(self, owner: str) -> None:
        self.running[owner] -= 1
        if self.running[owner] <= 0:
            del self.running[owner]
        if self.running or not self.waiting:
            return
        # The owner waiting longest goes next, with all of its calls that wait.
        first = self.waiting[0][0]
        for entry in [entry for entry in self.waiting if entry[0] == first]:
            self.waiting.remove(entry)
            self.running[first] += 1
            entry[1].set()
