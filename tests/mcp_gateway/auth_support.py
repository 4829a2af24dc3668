"""An OAuth issuer for the tests of the authenticating gateway: keys generated here, its JWKS
served over real HTTP on 127.0.0.1 by a small server of its own, tokens minted here; and a
gateway served by ``toolwire.mcp.serve`` on 127.0.0.1, reached by the ``mcp`` SDK's client
with a bearer token (imported by the gateway tests and the hostile ones)."""

from __future__ import annotations

import functools
import http.server
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
import httpx2
import jwt
import mcp
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm
from mcp.client.streamable_http import streamable_http_client

import toolwire.mcp

AUDIENCE = "https://tools.example.com/mcp"
"""The audience the tests' gateways accept (their public URL, as a deployment would say)."""
BOUND = 30.0
"""The most seconds a test step may take: a hang fails, never blocks the suite."""

Answer = tuple[int, dict[str, str], bytes]


@functools.cache
def rsa_key(bits: int = 2048, which: int = 0) -> rsa.RSAPrivateKey:
    """An RSA key made once per test session (``which`` tells several apart)."""
    return rsa.generate_private_key(public_exponent=65537, key_size=bits)


@functools.cache
def ec_key(which: int = 0) -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


@functools.cache
def ed_key() -> ed25519.Ed25519PrivateKey:
    return ed25519.Ed25519PrivateKey.generate()


def public_jwk(key: Any, kid: str | None, **extra: Any) -> dict[str, Any]:
    """The public JWK of a private ``key``."""
    public = key.public_key()
    if isinstance(key, rsa.RSAPrivateKey):
        data = RSAAlgorithm.to_jwk(public, as_dict=True)
    elif isinstance(key, ec.EllipticCurvePrivateKey):
        data = ECAlgorithm.to_jwk(public, as_dict=True)
    else:
        data = OKPAlgorithm.to_jwk(public, as_dict=True)
    if kid is not None:
        data["kid"] = kid
    return {**data, "use": "sig", **extra}


class JwksServer:
    """A JWKS served over HTTP on 127.0.0.1, in a thread. ``answer`` says what each GET gets
    (a status, headers and a body); ``hang`` makes it answer nothing until closed; ``fetches``
    counts the GETs."""

    def __init__(self) -> None:
        self.keys: list[dict[str, Any]] = []
        self.answer: Callable[[], Answer] | None = None
        self.hang = False
        self.fetches = 0
        self.closed = threading.Event()
        self.fetching = threading.Event()  # set on each GET
        self.gate: threading.Event | None = None  # when set, a GET is answered once it is
        served = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                served.fetches += 1
                served.fetching.set()
                if served.gate is not None:
                    served.gate.wait(BOUND)
                if served.hang:
                    served.closed.wait(BOUND)
                    return
                status, headers, body = (served.answer or served.default)()
                self.send_response(status)
                for name, value in {"content-type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.url = f"{self.base}/jwks.json"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def default(self) -> Answer:
        return 200, {}, json.dumps({"keys": self.keys}).encode()

    def close(self) -> None:
        self.closed.set()
        self.server.shutdown()
        self.server.server_close()


class Issuer:
    """An authorization server's signing side: its keys (an RSA one, ``rsa-1``, published),
    its JWKS server, and tokens it mints. Its identifier is its JWKS server's address."""

    def __init__(self, jwks: JwksServer) -> None:
        self.jwks = jwks
        self.url = jwks.base
        self.signing: dict[str, tuple[Any, str]] = {}
        self.publish("rsa-1", rsa_key(), "RS256")

    def publish(self, kid: str | None, key: Any, algorithm: str, **extra: Any) -> None:
        """Sign with ``key`` as ``kid`` from now on, and publish it in the JWKS."""
        self.signing[kid or ""] = (key, algorithm)
        self.jwks.keys.append(public_jwk(key, kid, **extra))

    def claims(self, subject: str | None = "alice", **changes: Any) -> dict[str, Any]:
        """Good claims for ``subject``, changed by ``changes`` (a None value drops a claim)."""
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": self.url,
            "aud": AUDIENCE,
            "sub": subject,
            "exp": now + 300,
            "iat": now,
            "scope": "tools",
            "client_id": "test-client",
        }
        claims.update(changes)
        return {name: value for name, value in claims.items() if value is not None}

    def token(
        self,
        subject: str | None = "alice",
        *,
        kid: str | None = "rsa-1",
        key: Any = None,
        algorithm: str | None = None,
        headers: dict[str, Any] | None = None,
        **changes: Any,
    ) -> str:
        """A token for ``subject`` signed with ``kid``'s key (or ``key``, with ``kid`` in its
        header all the same)."""
        known_key, known_algorithm = self.signing.get(kid or "", (None, "RS256"))
        header = {"kid": kid} if kid is not None else {}
        return jwt.encode(
            self.claims(subject, **changes),
            key if key is not None else known_key,
            algorithm=algorithm or known_algorithm,
            headers={**header, **(headers or {})},
        )

    def verifier(self, **options: Any) -> toolwire.mcp.JwtVerifier:
        return toolwire.mcp.JwtVerifier(
            self.jwks.url, issuer=self.url, audience=AUDIENCE, **options
        )


@contextmanager
def issuer() -> Iterator[Issuer]:
    server = JwksServer()
    try:
        yield Issuer(server)
    finally:
        server.close()


@asynccontextmanager
async def served(source: Any, **options: Any) -> AsyncIterator[str]:
    """``source`` served over HTTP on 127.0.0.1 by ``toolwire.mcp.serve(**options)`` while
    open; yields its URL."""
    urls: list[str] = []
    listening = anyio.Event()

    def on_listening(url: str) -> None:
        urls.append(url)
        listening.set()

    options.setdefault("host", "127.0.0.1")
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(
            functools.partial(
                toolwire.mcp.serve,
                source,
                transport="http",
                port=0,
                on_listening=on_listening,
                **options,
            )
        )
        with anyio.fail_after(BOUND):
            await listening.wait()
        try:
            yield urls[0]
        finally:
            tasks.cancel_scope.cancel()


@contextmanager
def served_in_thread(source: Any, **options: Any) -> Iterator[str]:
    """``source`` served as ``served`` does, by an event loop in a thread of its own (so that
    a hypothesis test, or a test without a loop, drives one gateway with many requests);
    yields its URL."""
    urls: list[str] = []
    listening, stop = threading.Event(), threading.Event()
    failed: list[BaseException] = []

    async def serve() -> None:
        async with served(source, **options) as url:
            urls.append(url)
            listening.set()
            await anyio.to_thread.run_sync(stop.wait)

    def run() -> None:
        try:
            anyio.run(serve)
        except BaseException as exc:  # told to the test, which would wait otherwise
            failed.append(exc)
            listening.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    listening.wait(BOUND)
    if failed or not urls:
        raise RuntimeError(f"the gateway did not start: {failed}")
    try:
        yield urls[0]
    finally:
        stop.set()
        thread.join(BOUND)


@contextmanager
def served_app(app: Any, listener: socket.socket | None = None) -> Iterator[str]:
    """An ASGI app (an MCP server's ``streamable_http_app()``) served on 127.0.0.1 by uvicorn
    in a thread while open, on ``listener`` (a socket bound, not yet listening: its port
    refuses connections until then) or a port of its own; yields its ``/mcp`` URL."""
    import uvicorn

    if listener is None:
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=5)
    runner = uvicorn.Server(config)
    thread = threading.Thread(target=runner.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        runner.should_exit = True
        thread.join(timeout=BOUND)
        listener.close()


@asynccontextmanager
async def client(url: str, token: str | None, **options: Any) -> AsyncIterator[mcp.Client]:
    """The ``mcp`` SDK's client of ``url``, sending ``token`` as its bearer token."""
    headers = {"authorization": f"Bearer {token}"} if token is not None else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=BOUND) as http,
        mcp.Client(streamable_http_client(url, http_client=http), **options) as connected,
    ):
        yield connected


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
