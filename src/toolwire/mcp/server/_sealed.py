"""A task's own arguments, kept sealed in its run when the run keeps them redacted.

A gateway's task runs again, after its decision (or its server's answered questions), from
what its run keeps, on whichever worker reads it next: the run must keep the arguments the
call was made with, since the client does not send them again. With ``redact=``, what the run
keeps of a waiting call's arguments is what a human may see, not what the call runs with; the
gateway then keeps the call's own arguments beside them, sealed (AES-256-GCM, the ``mcp``
SDK's request-state codec, under keys derived from the gateway's ``state_keys`` for this use
only): the store, the console and ``toolwire pending`` see none of their values, and the
gateways given the same keys open them. Without keys, a key of this process only: a task
waiting when its gateway stops cannot be run by another, and is answered so.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Mapping, Sequence
from typing import Any

from mcp.server.request_state import AESGCMRequestStateCodec, InvalidRequestState

from toolwire._json import load_json
from toolwire.calls import canonical_json, principal_json

__all__ = ["SEALED_KEY", "ArgumentSeal"]

SEALED_KEY = "toolwire_task_arguments"
"""Where a task's kept request keeps its sealed arguments."""
_PURPOSE = b"toolwire/mcp/task-arguments/v1"
"""What the keys are derived for: a sealed argument set is no request state, nor the reverse."""


class ArgumentSeal:
    """Seals a task's arguments for its run, and opens them again (see the module docstring).

    Args:
        keys: the gateway's ``state_keys`` (the first seals, every one opens); None: a key of
            this process only.
    """

    def __init__(self, keys: Sequence[str | bytes] | None) -> None:
        secrets = list(keys) if keys is not None else [os.urandom(32)]
        self.shared = keys is not None
        self._codec = AESGCMRequestStateCodec([_derived(secret) for secret in secrets])

    def close(self, task_id: str, arguments: Mapping[str, Any]) -> str:
        """``arguments`` sealed for the task ``task_id`` (and no other)."""
        payload = canonical_json({"task": task_id, "arguments": principal_json(arguments)})
        return self._codec.seal(payload.encode("utf-8", "surrogatepass"))

    def open(self, task_id: str, sealed: Any) -> dict[str, Any] | None:
        """The arguments ``sealed`` keeps for ``task_id``; None when they cannot be opened
        here (sealed by a gateway with other keys, for another task, or no seal at all)."""
        if not isinstance(sealed, str):
            return None
        try:
            found = load_json(self._codec.unseal(sealed))
        except InvalidRequestState:
            return None
        if not isinstance(found, dict) or found.get("task") != task_id:
            return None
        arguments = found.get("arguments")
        return arguments if isinstance(arguments, dict) else None


def _derived(secret: str | bytes) -> bytes:
    """The key of this use from an operator's secret (32 bytes, whatever the secret's
    length: the SDK checks the secret's own length where it seals request state)."""
    material = secret.encode("utf-8") if isinstance(secret, str) else bytes(secret)
    return hmac.new(material, _PURPOSE, hashlib.sha256).digest()
