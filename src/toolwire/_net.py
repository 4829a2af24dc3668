"""Where toolwire's own servers (the approval console, the MCP gateway) may listen."""

from __future__ import annotations

import ipaddress

__all__ = ["is_loopback"]


def is_loopback(host: str) -> bool:
    """True when ``host`` is a loopback address (``127.0.0.0/8``, ``::1``, also written in
    brackets) or ``localhost`` (in any case); every other host, including a name that would
    resolve to a loopback address, is False: no name is looked up, so a resolver cannot
    change the answer.
    """
    if host.isascii() and host.lower() == "localhost":
        return True
    if host.startswith("[") and host.endswith("]"):  # [::1], as a URL writes it
        host = host[1:-1]
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
