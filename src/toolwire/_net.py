"""Where toolwire's own servers (the approval console, the MCP gateway) may listen."""

from __future__ import annotations

import ipaddress
import socket

__all__ = ["is_loopback", "tcp_socket"]


def tcp_socket(host: str) -> socket.socket:
    """A TCP socket for a server listening on ``host`` (IPv6 for an address with a colon),
    with ``SO_REUSEADDR``, made with its protocol said: asyncio sets ``TCP_NODELAY`` on the
    connections a listener accepts only when its protocol is ``IPPROTO_TCP``. Without it, an
    answer written in two parts (an HTTP response's head, then its body) waits for the
    client's delayed acknowledgement: some 40 ms on Linux, on every request."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    return sock


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
