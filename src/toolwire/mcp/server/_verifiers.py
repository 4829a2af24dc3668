"""The token verifiers an authenticating gateway comes with: JWT access tokens checked against
their issuer's published keys (a JWKS), and static tokens listed in a file."""

from __future__ import annotations

import hashlib
import hmac
import logging
import math
import time
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio

from toolwire import _jsonfile
from toolwire.errors import ConfigurationError, InvalidToken, KeysUnavailable, MissingDependency
from toolwire.mcp.server._auth import MAX_TOKEN_CHARS, Identity, checked_url

__all__ = ["ALGORITHMS", "JwtVerifier", "StaticTokens"]

_log = logging.getLogger("toolwire")

ALGORITHMS = (
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA",
)  # fmt: skip
"""The algorithms a JWT may be signed with: asymmetric ones only. Never ``none``, never a
shared secret (``HS256``...): a JWKS publishes keys, and a public key must not verify as one."""
_REFETCH_SECONDS = 30.0
"""The least time between two fetches of a JWKS (a token signed by an unknown key, or a fetch
that failed, fetches again only this long after the last try)."""
_STALE_SECONDS = 3600.0
"""How long past its age a key set is still used while it cannot be fetched again."""


class JwtVerifier:
    """JWT access tokens (RFC 9068) signed by an issuer that publishes its public keys as a
    JSON Web Key Set.

    A token is accepted when it is a JWS of at most 8,192 characters signed with one of
    ``algorithms`` by a key of the set at ``jwks_url``, found by the token's ``kid`` (a token
    without one only when exactly one key fits), and its ``iss`` is ``issuer``, its ``aud``
    names ``audience``, its ``exp`` has not passed and its ``nbf`` and ``iat`` are not in the
    future (``leeway`` seconds of clock skew allowed). The keys come from ``jwks_url`` only,
    never from the token (its ``jku``, ``x5u``, ``jwk`` and ``x5c`` headers are ignored); a
    token with a ``crit`` header, or an RSA key shorter than 2,048 bits, is refused. The
    identity's scopes are the token's ``scope`` (space-separated) and ``scp`` claims.

    The set is fetched on first use and again once ``cache_seconds`` old; a token signed by a
    key it does not hold (the issuer rotated its keys) has it fetched again, at most every 30
    seconds. A fetch follows no redirect, reads at most ``max_jwks_bytes`` bytes and
    ``max_keys`` keys (keys for encryption, and private or symmetric keys, are left out), and
    takes at most ``timeout`` seconds. When a fetch fails, the set fetched before is used for
    up to an hour more; without one, tokens cannot be checked (the client gets 503).

    Args:
        jwks_url: the issuer's JWKS (``jwks_uri`` in its metadata): ``https``, or ``http``
            on a loopback host.
        issuer: the ``iss`` tokens must carry (also the authorization server the gateway's
            metadata names).
        audience: the ``aud`` tokens must name, usually the gateway's URL; several accept a
            token naming any of them.
        algorithms: those accepted, among the asymmetric ones (``ALGORITHMS``).
        leeway: seconds of clock skew allowed on ``exp``, ``nbf`` and ``iat``.
        cache_seconds: how long a fetched key set is used before it is fetched again.
        timeout: the most seconds a fetch of the set may take.
        max_jwks_bytes: the largest key set read.
        max_keys: the most keys a set may hold.

    Raises:
        ConfigurationError: an option that cannot work.
        MissingDependency: PyJWT (which the ``mcp`` extra brings) is missing.
    """

    def __init__(
        self,
        jwks_url: str,
        *,
        issuer: str,
        audience: str | Sequence[str],
        algorithms: Sequence[str] = ALGORITHMS,
        leeway: float = 30.0,
        cache_seconds: float = 300.0,
        timeout: float = 10.0,
        max_jwks_bytes: int = 256 * 1024,
        max_keys: int = 64,
    ) -> None:
        try:
            import jwt  # noqa: F401
        except ImportError:  # pragma: no cover - the mcp extra brings it
            raise MissingDependency("PyJWT", "mcp") from None
        if not isinstance(issuer, str) or not issuer:
            raise ConfigurationError("issuer is the tokens' iss, a non-empty string")
        audiences = [audience] if isinstance(audience, str) else list(audience)
        if not audiences or not all(isinstance(each, str) and each for each in audiences):
            raise ConfigurationError("audience is a non-empty string (or a list of them)")
        if isinstance(algorithms, str) or not algorithms:
            raise ConfigurationError("algorithms is a non-empty list of algorithms")
        for algorithm in algorithms:
            if algorithm not in ALGORITHMS:
                raise ConfigurationError(
                    f"algorithm {algorithm!r} is not accepted: only asymmetric ones are "
                    f"({', '.join(ALGORITHMS)})"
                )
        for name, value in (("leeway", leeway), ("cache_seconds", cache_seconds)):
            if not math.isfinite(value) or value < 0:
                raise ConfigurationError(f"{name} is a number of seconds, not {value!r}")
        if not math.isfinite(timeout) or timeout <= 0:
            raise ConfigurationError(f"timeout is a positive number of seconds, not {timeout!r}")
        if max_jwks_bytes < 1 or max_keys < 1:
            raise ConfigurationError("max_jwks_bytes and max_keys are positive")
        self.jwks_url = checked_url(jwks_url, "jwks_url")
        self.issuer = issuer
        self.audience = tuple(audiences)
        self.algorithms = tuple(dict.fromkeys(algorithms))
        self.leeway = leeway
        self._keys = _KeySet(
            self.jwks_url,
            max_age=cache_seconds,
            timeout=timeout,
            max_bytes=max_jwks_bytes,
            max_keys=max_keys,
        )

    async def verify(self, token: str) -> Identity:
        """The identity ``token`` proves (see the class docstring).

        Raises:
            InvalidToken: it proves none, saying why.
            KeysUnavailable: the issuer's keys cannot be had now.
        """
        import jwt

        if len(token) > MAX_TOKEN_CHARS:
            raise InvalidToken("the token is too long")
        try:
            header = jwt.get_unverified_header(token)
        except (jwt.PyJWTError, ValueError, TypeError):
            raise InvalidToken("the token is not a signed JWT") from None
        algorithm = header.get("alg")
        if not isinstance(algorithm, str) or algorithm not in self.algorithms:
            raise InvalidToken("the token's algorithm is not accepted")
        if "crit" in header:
            raise InvalidToken("the token has critical header parameters")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise InvalidToken("the token's key id is not a string")
        key = await self._keys.key(kid, algorithm)
        return _identity(self._claims(token, key, algorithm))

    def _claims(self, token: str, key: Any, algorithm: str) -> dict[str, Any]:
        import jwt

        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=[algorithm],
                audience=list(self.audience),
                issuer=self.issuer,
                leeway=self.leeway,
                options={
                    "verify_signature": True,
                    "require": ["exp", "iss", "aud"],
                    "enforce_minimum_key_length": True,
                },
            )
        except jwt.ExpiredSignatureError:
            raise InvalidToken("the token has expired") from None
        except jwt.ImmatureSignatureError:
            raise InvalidToken("the token is not valid yet") from None
        except jwt.InvalidAudienceError:
            raise InvalidToken("the token is for another audience") from None
        except jwt.InvalidIssuerError:
            raise InvalidToken("the token is from another issuer") from None
        except jwt.MissingRequiredClaimError as exc:
            raise InvalidToken(f"the token has no {exc.claim!r} claim") from None
        except jwt.InvalidSignatureError:
            raise InvalidToken("the token's signature does not verify") from None
        except (jwt.PyJWTError, ValueError, TypeError):
            raise InvalidToken("the token is malformed") from None
        return claims


def _identity(claims: Mapping[str, Any]) -> Identity:
    subject = claims.get("sub")
    client = claims.get("client_id", claims.get("azp"))
    expires = claims.get("exp")
    return Identity(
        subject=subject if isinstance(subject, str) and subject else None,
        scopes=_scopes(claims),
        claims=claims,
        client_id=client if isinstance(client, str) and client else None,
        issuer=str(claims.get("iss")),
        expires_at=float(expires) if isinstance(expires, int | float) else None,
    )


def _scopes(claims: Mapping[str, Any]) -> frozenset[str]:
    """The scopes of a token: its ``scope`` (space-separated, RFC 9068) and ``scp`` (a list
    or a string, as some issuers write them)."""
    found: set[str] = set()
    for name in ("scope", "scp"):
        value = claims.get(name)
        if isinstance(value, str):
            found.update(value.split())
        elif isinstance(value, list):
            found.update(item for item in value if isinstance(item, str) and item)
    return frozenset(found)


class _KeySet:
    """An issuer's public keys, fetched from its JWKS and cached (see ``JwtVerifier``)."""

    def __init__(
        self, url: str, *, max_age: float, timeout: float, max_bytes: int, max_keys: int
    ) -> None:
        self.url = url
        self.max_age = max_age
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.max_keys = max_keys
        self._jwks: list[dict[str, Any]] = []
        self._fetched: float | None = None  # when the set in use was fetched (monotonic)
        self._tried = -math.inf  # when a fetch was last tried
        self._failure: str | None = None  # why the last fetch failed, if it did
        self._parsed: dict[tuple[int, str], Any] = {}  # (index, algorithm) -> key, or None
        self._lock = anyio.Lock()

    async def key(self, kid: str | None, algorithm: str) -> Any:
        """The public key to verify a token of ``kid`` and ``algorithm`` with.

        Raises:
            InvalidToken: the issuer publishes no such key.
            KeysUnavailable: the keys cannot be had.
        """
        if self._age() >= self.max_age and (self._fetched is None or not self._lock.locked()):
            # Due: fetch, or wait for the first fetch under way (while a later one is under
            # way, the keys in hand serve).
            await self._refresh()
        if self._age() >= self.max_age + _STALE_SECONDS:
            raise KeysUnavailable(self._failure or f"the JWKS at {self.url} cannot be fetched")
        found = self._find(kid, algorithm)
        if found is None:  # a key the issuer published since, fetched at most every 30 s
            await self._refresh()
            found = self._find(kid, algorithm)
        if found is None:
            raise InvalidToken("the token is signed by a key the issuer does not publish")
        return found

    def _age(self) -> float:
        return math.inf if self._fetched is None else time.monotonic() - self._fetched

    def _may_fetch(self) -> bool:
        return time.monotonic() - self._tried >= _REFETCH_SECONDS

    async def _refresh(self) -> None:
        async with self._lock:
            if not self._may_fetch():  # fetched (or tried) while this waited for the lock
                return
            self._tried = time.monotonic()
            try:
                jwks = await self._fetch()
            except KeysUnavailable as exc:
                _log.warning("MCP gateway: %s", exc)
                self._failure = str(exc)
                return
            self._jwks, self._fetched, self._parsed = jwks, time.monotonic(), {}
            self._failure = None

    def _find(self, kid: str | None, algorithm: str) -> Any:
        usable = []
        for index, jwk in enumerate(self._jwks):
            if kid is not None and jwk.get("kid") != kid:
                continue
            if jwk.get("alg", algorithm) != algorithm:
                continue
            if (index, algorithm) not in self._parsed:
                self._parsed[index, algorithm] = _public_key(jwk, algorithm)
            key = self._parsed[index, algorithm]
            if key is not None:
                usable.append(key)
        if kid is None and len(usable) != 1:
            return None  # no kid: only the one key that fits, never a guess among several
        return usable[0] if usable else None

    async def _fetch(self) -> list[dict[str, Any]]:
        import httpx2

        body = bytearray()
        try:
            with anyio.fail_after(self.timeout):
                async with (
                    httpx2.AsyncClient(timeout=self.timeout, follow_redirects=False) as http,
                    http.stream("GET", self.url, headers={"accept": "application/json"}) as answer,
                ):
                    if answer.status_code != 200:
                        raise KeysUnavailable(
                            f"the JWKS at {self.url} answered HTTP {answer.status_code}"
                        )
                    async for chunk in answer.aiter_bytes():
                        body += chunk
                        if len(body) > self.max_bytes:
                            raise KeysUnavailable(
                                f"the JWKS at {self.url} is larger than {self.max_bytes} bytes"
                            )
        except TimeoutError:
            raise KeysUnavailable(
                f"the JWKS at {self.url} did not answer within {self.timeout:g} s"
            ) from None
        except httpx2.HTTPError as exc:
            raise KeysUnavailable(
                f"the JWKS at {self.url} cannot be fetched ({type(exc).__name__})"
            ) from None
        return _jwks_of(bytes(body), self.url, self.max_keys)


def _jwks_of(body: bytes, url: str, max_keys: int) -> list[dict[str, Any]]:
    """The signature keys of a JWKS document."""
    try:
        data = _jsonfile.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise KeysUnavailable(f"the JWKS at {url} is not JSON") from None
    keys = data.get("keys") if isinstance(data, dict) else None
    if not isinstance(keys, list):
        raise KeysUnavailable(f"the JWKS at {url} is not a JWK set (no 'keys' list)")
    if len(keys) > max_keys:
        raise KeysUnavailable(f"the JWKS at {url} holds {len(keys)} keys, more than {max_keys}")
    return [
        key
        for key in keys
        if isinstance(key, dict)
        and key.get("use", "sig") == "sig"
        and key.get("kty") in ("RSA", "EC", "OKP")  # public key types: no shared secret
        and "d" not in key  # a private key published by mistake is not used
    ]


def _public_key(jwk: dict[str, Any], algorithm: str) -> Any:
    """The public key ``jwk`` holds for ``algorithm``, or None when it holds none."""
    from jwt import PyJWK

    try:
        return PyJWK(jwk, algorithm=algorithm).key
    except Exception:  # a malformed key, or one of another type: not usable, never a crash
        return None


class StaticTokens:
    """Bearer tokens handed out in advance, each proving a given identity: for small setups
    without an authorization server.

    Only the tokens' SHA-256 digests are kept (and written in the file), and a presented
    token's digest is compared with every one of them in constant time. Use long random
    tokens (``python -c 'import secrets; print(secrets.token_urlsafe(32))'``): a digest
    does not protect a guessable one.

    Args:
        digests: each token's SHA-256 digest (hex, see [`digest`][toolwire.mcp.StaticTokens.digest])
            and the identity it proves.

    Raises:
        ConfigurationError: a digest that is not 64 hexadecimal digits, or a value that is
            not an [`Identity`][toolwire.mcp.Identity].
    """

    def __init__(self, digests: Mapping[str, Identity]) -> None:
        entries: list[tuple[bytes, Identity]] = []
        for digest, identity in digests.items():
            if not isinstance(identity, Identity):
                raise ConfigurationError("each digest proves an Identity")
            entries.append((_digest_bytes(digest, "a token's digest"), identity))
        self._entries = entries

    @staticmethod
    def digest(token: str) -> str:
        """The SHA-256 digest of ``token`` (hex), as the file and ``digests`` hold it; the same
        as ``printf %s TOKEN | sha256sum``."""
        return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()

    @classmethod
    def from_file(cls, path: str | Path) -> StaticTokens:
        """The tokens a TOML (``.toml``) or JSON file lists::

            [[tokens]]
            sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
            subject = "alice"          # the identity's subject: by default, the principal
            scopes = ["tools"]         # optional

        (JSON: ``{"tokens": [{"sha256": ..., "subject": ..., "scopes": [...]}]}``.)

        Raises:
            ConfigurationError: the file cannot be read or parsed; a key is unknown, repeated
                or missing; a value is wrong; a digest is listed twice (the message names the
                file and the entry).
        """
        path = Path(path)
        where = f"token file {path.name}"
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigurationError(f"cannot read {where}: {exc}") from None
        try:
            data: Any = tomllib.loads(text) if path.suffix == ".toml" else _jsonfile.loads(text)
        except _jsonfile.RepeatedKey as exc:
            raise exc.of(where) from None
        except (tomllib.TOMLDecodeError, ValueError, RecursionError) as exc:
            kind = "TOML" if path.suffix == ".toml" else "JSON"
            raise ConfigurationError(f"{where} is not valid {kind}: {exc}") from None
        if not isinstance(data, dict) or set(data) != {"tokens"}:
            raise ConfigurationError(f"{where}: the file holds 'tokens', a list of tokens")
        tokens = data["tokens"]
        if not isinstance(tokens, list) or not tokens:
            raise ConfigurationError(f"{where}: 'tokens' is a non-empty list of tokens")
        digests: dict[str, Identity] = {}
        for index, entry in enumerate(tokens):
            digest, identity = _entry(entry, f"{where}: tokens[{index}]")
            if digest in digests:
                raise ConfigurationError(f"{where}: tokens[{index}] lists a digest listed before")
            digests[digest] = identity
        return cls(digests)

    async def verify(self, token: str) -> Identity:
        """The identity ``token`` proves.

        Raises:
            InvalidToken: it is none of the tokens.
        """
        presented = hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()
        found = None
        for known, identity in self._entries:  # every entry, whichever matches
            if hmac.compare_digest(presented, known):
                found = identity
        if found is None:
            raise InvalidToken("the token is none of the static tokens")
        return found


_ENTRY_KEYS = frozenset({"sha256", "subject", "scopes"})


def _entry(entry: Any, where: str) -> tuple[str, Identity]:
    if not isinstance(entry, dict):
        raise ConfigurationError(f"{where}: a token is an object (a table)")
    unknown = sorted(set(entry) - _ENTRY_KEYS)
    if unknown:
        raise ConfigurationError(f"{where}: unknown key {unknown[0]!r}")
    for key in ("sha256", "subject"):
        if key not in entry:
            raise ConfigurationError(f"{where}: missing {key!r}")
    digest = entry["sha256"]
    _digest_bytes(digest, f"{where}: 'sha256'")
    subject = entry["subject"]
    if not isinstance(subject, str) or not subject.strip():
        raise ConfigurationError(f"{where}: 'subject' is a non-empty string")
    scopes = entry.get("scopes", [])
    if not isinstance(scopes, list) or not all(isinstance(s, str) and s for s in scopes):
        raise ConfigurationError(f"{where}: 'scopes' is a list of scopes")
    identity = Identity(subject=subject, scopes=frozenset(scopes), claims={"sub": subject})
    return digest.lower(), identity


def _digest_bytes(digest: Any, what: str) -> bytes:
    if not isinstance(digest, str) or len(digest) != 64:
        raise ConfigurationError(f"{what} is a SHA-256 digest: 64 hexadecimal digits")
    try:
        return bytes.fromhex(digest)
    except ValueError:
        raise ConfigurationError(f"{what} is a SHA-256 digest: 64 hexadecimal digits") from None
