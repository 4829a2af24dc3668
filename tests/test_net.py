"""The sockets toolwire's own servers listen on (the MCP gateway, the approval console)."""

from __future__ import annotations

import asyncio
import socket

import pytest

from toolwire._net import tcp_socket


@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
def test_connections_a_server_accepts_send_at_once(host: str) -> None:
    """Each accepted connection has TCP_NODELAY (asyncio sets it only for a listener made
    with IPPROTO_TCP): without it, an HTTP answer written head then body waited for the
    client's delayed acknowledgement, some 40 ms per request through the gateway."""
    if host == "::1" and not socket.has_ipv6:
        pytest.skip("no IPv6 here")
    try:
        listener = tcp_socket(host)
        listener.bind((host, 0))
    except OSError:
        pytest.skip(f"cannot bind {host} here")
    listener.listen(1)
    assert listener.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR)

    async def accepted_nodelay() -> int:
        seen: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            raw = writer.get_extra_info("socket")
            seen.set_result(raw.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(connected, sock=listener)
        async with server:
            _, writer = await asyncio.open_connection(host, listener.getsockname()[1])
            value = await asyncio.wait_for(seen, 10)
            writer.close()
        return value

    assert asyncio.run(accepted_nodelay()) != 0
