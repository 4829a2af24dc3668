"""What the gateway names: the run a call needing approval is kept in, and the one server
whose own names it serves."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from toolwire.calls import canonical_json
from toolwire.errors import ConfigurationError
from toolwire.runs import ledger
from toolwire.toolset import ToolSet

if TYPE_CHECKING:
    from toolwire.mcp.client import Hub
    from toolwire.runs.store import RunStore

__all__ = ["CALL_ID", "check_one_server", "run_base", "run_for"]

CALL_ID = "call"
"""The one call of a gateway run."""
_MAX_GENERATIONS = 10_000


def run_base(name: str, arguments: Mapping[str, Any], *, principal: Any = None) -> str:
    """The id of the first run a call of ``name`` with ``arguments`` needing approval is kept
    in (later generations add ``.2``, ``.3``...): the same for every connection and process."""
    key = canonical_json([ledger.principal_key(principal), name, dict(arguments)])
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"mcp-{digest}"


async def run_for(store: RunStore, name: str, arguments: Mapping[str, Any], principal: Any) -> str:
    """The run an identical call of ``principal`` needing approval belongs to: the first
    generation whose call has not been answered yet."""
    base = run_base(name, arguments, principal=principal)
    for generation in range(1, _MAX_GENERATIONS):
        run_id = base if generation == 1 else f"{base}.{generation}"
        record = await ledger.record(store, run_id, CALL_ID)
        if record is None or record.result is None:
            return run_id
    raise ConfigurationError(f"run {base!r} has more than {_MAX_GENERATIONS} generations")


def check_one_server(toolset: ToolSet, hub: Hub | None) -> None:
    """Refuse ``own_names`` for tools of several servers, whose names could clash.

    Raises:
        ConfigurationError: the toolset (or the hub) has more than one server.
    """
    servers = set(hub.status) if hub is not None else {t.server_id for t in toolset}
    if len(servers) > 1:
        shown = ", ".join(sorted(str(s) for s in servers))
        raise ConfigurationError(
            f"own names serve the tools of one server, and this source has several ({shown}): "
            "their tools could share a name"
        )
