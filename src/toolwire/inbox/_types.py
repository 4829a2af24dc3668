"""What the console's routes and pages share: a refused request, and a page of waiting calls."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from toolwire.approval import ApprovalRequest
from toolwire.runs.store import DamagedRecord

__all__ = ["Listed", "Problem"]


class Problem(Exception):
    """A request the console refuses: its status, a code and a message (and, for edited
    arguments, the fields that failed)."""

    def __init__(
        self, status: int, code: str, message: str, fields: list[tuple[str, str]] | None = None
    ) -> None:
        self.status = status
        self.code = code
        self.message = message
        self.fields = fields or []
        super().__init__(message)

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.fields:
            body["fields"] = [{"path": path, "message": text} for path, text in self.fields]
        return {"error": body}


@dataclass(frozen=True, slots=True)
class Listed:
    """One page of the approval queue, newest first."""

    items: list[ApprovalRequest]
    limit: int
    after: str | None = None
    """The token of the place this page starts after (None: the newest)."""
    next: str | None = None
    """The token of the place the next (older) page starts after; None on the last page."""
    damaged: list[DamagedRecord] = field(default_factory=list)
    """Waiting calls whose stored record cannot be read (named, never listed to decide)."""
