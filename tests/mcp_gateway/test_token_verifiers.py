"""The verifiers an authenticating gateway comes with: `JwtVerifier` against a JWKS served over
HTTP on 127.0.0.1 (keys generated here), and `StaticTokens` from a file."""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from auth_support import AUDIENCE, BOUND, Issuer, ec_key, ed_key, issuer, public_jwk, rsa_key

from toolwire.errors import ConfigurationError, InvalidToken, KeysUnavailable
from toolwire.mcp import (
    Authentication,
    Identity,
    JwtVerifier,
    StaticTokens,
    TokenVerifier,
)
from toolwire.mcp.server import _verifiers

pytestmark = pytest.mark.anyio


@pytest.fixture
def idp() -> Iterator[Issuer]:
    with issuer() as made:
        yield made


async def test_a_good_token_proves_its_subject_scopes_client_and_expiry(idp: Issuer) -> None:
    token = idp.token("alice", scope="tools read", scp=["write"], azp="ignored-when-client-id")
    with anyio.fail_after(BOUND):
        identity = await idp.verifier().verify(token)
    claims = idp.claims("alice")
    assert identity.subject == "alice"
    assert identity.scopes == {"tools", "read", "write"}
    assert (identity.client_id, identity.issuer) == ("test-client", idp.url)
    assert identity.expires_at == pytest.approx(claims["exp"], abs=5)
    assert identity.claims["aud"] == AUDIENCE
    assert isinstance(idp.verifier(), TokenVerifier)


@pytest.mark.parametrize(
    ("kid", "key", "algorithm"),
    [("ec-1", ec_key(), "ES256"), ("ed-1", ed_key(), "EdDSA"), ("ps-1", rsa_key(), "PS256")],
)
async def test_tokens_signed_with_each_asymmetric_family_are_accepted(
    idp: Issuer, kid: str, key: Any, algorithm: str
) -> None:
    idp.publish(kid, key, algorithm)
    with anyio.fail_after(BOUND):
        identity = await idp.verifier().verify(idp.token("bob", kid=kid))
    assert identity.subject == "bob"


async def test_an_audience_among_several_is_accepted(idp: Issuer) -> None:
    verifier = JwtVerifier(
        idp.jwks.url, issuer=idp.url, audience=["https://a.example.com", AUDIENCE]
    )
    token = idp.token(aud=["https://other.example.com", AUDIENCE])
    with anyio.fail_after(BOUND):
        assert (await verifier.verify(token)).subject == "alice"


async def test_the_key_set_is_fetched_once_for_many_tokens(idp: Issuer) -> None:
    verifier = idp.verifier()
    with anyio.fail_after(BOUND):
        for who in ("a", "b", "c", "d"):
            await verifier.verify(idp.token(who))
    assert idp.jwks.fetches == 1


async def test_tokens_checked_at_once_before_the_keys_are_known_fetch_them_once(
    idp: Issuer,
) -> None:
    verifier = idp.verifier()
    identities = []

    async def check(who: str) -> None:
        identities.append(await verifier.verify(idp.token(who)))

    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tasks:
            for index in range(20):
                tasks.start_soon(check, f"user-{index}")
    assert len(identities) == 20
    assert idp.jwks.fetches == 1


async def test_a_token_checked_while_the_first_fetch_is_under_way_waits_for_it(
    idp: Issuer,
) -> None:
    idp.jwks.gate = threading.Event()
    verifier = idp.verifier()
    identities = []

    async def check(who: str) -> None:
        identities.append(await verifier.verify(idp.token(who)))

    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(check, "first")
            await anyio.to_thread.run_sync(idp.jwks.fetching.wait)
            tasks.start_soon(check, "second")  # the keys are being fetched
            await anyio.wait_all_tasks_blocked()
            idp.jwks.gate.set()
    assert sorted(identity.subject or "" for identity in identities) == ["first", "second"]
    assert idp.jwks.fetches == 1


async def test_a_key_the_issuer_published_since_is_fetched(
    idp: Issuer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_verifiers, "_REFETCH_SECONDS", 0.0)
    verifier = idp.verifier()
    with anyio.fail_after(BOUND):
        await verifier.verify(idp.token())
        idp.publish("rsa-2", rsa_key(2048, 2), "RS256")  # rotated in
        identity = await verifier.verify(idp.token("carol", kid="rsa-2"))
    assert identity.subject == "carol"
    assert idp.jwks.fetches == 2


async def test_a_key_set_that_cannot_be_fetched_again_is_used_for_a_while_then_not(
    idp: Issuer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_verifiers, "_REFETCH_SECONDS", 0.0)
    verifier = idp.verifier(cache_seconds=0)
    with anyio.fail_after(BOUND):
        await verifier.verify(idp.token())
        idp.jwks.answer = lambda: (503, {}, b"down")
        assert (await verifier.verify(idp.token("dave"))).subject == "dave"  # the set kept
        monkeypatch.setattr(_verifiers, "_STALE_SECONDS", 0.0)
        with pytest.raises(KeysUnavailable, match="answered HTTP 503"):
            await verifier.verify(idp.token("dave"))


async def test_a_token_without_a_kid_is_checked_with_the_only_key_that_fits(
    idp: Issuer,
) -> None:
    idp.jwks.keys[:] = [public_jwk(rsa_key(), None)]
    with anyio.fail_after(BOUND):
        assert (await idp.verifier().verify(idp.token(kid=None, key=rsa_key()))).subject
        # Two keys that fit: no guess between them.
        idp.jwks.keys.append(public_jwk(rsa_key(2048, 1), None))
        with pytest.raises(InvalidToken, match="does not publish"):
            await idp.verifier().verify(idp.token(kid=None, key=rsa_key()))


async def test_keys_for_encryption_and_private_keys_are_not_used(idp: Issuer) -> None:
    private = public_jwk(rsa_key(), "rsa-1")
    private["d"] = "AQAB"  # published by mistake: never used
    idp.jwks.keys[:] = [public_jwk(rsa_key(), "rsa-1", use="enc"), private]
    with anyio.fail_after(BOUND), pytest.raises(InvalidToken, match="does not publish"):
        await idp.verifier().verify(idp.token())


async def test_a_key_restricted_to_another_algorithm_is_not_used_for_this_one(
    idp: Issuer,
) -> None:
    idp.jwks.keys[:] = [public_jwk(rsa_key(), "rsa-1", alg="PS256")]
    with anyio.fail_after(BOUND), pytest.raises(InvalidToken, match="does not publish"):
        await idp.verifier().verify(idp.token(algorithm="RS256"))


async def test_an_algorithm_left_out_of_the_verifier_is_refused(idp: Issuer) -> None:
    with anyio.fail_after(BOUND), pytest.raises(InvalidToken, match="algorithm"):
        await idp.verifier(algorithms=["ES256"]).verify(idp.token())


# -- static tokens ----------------------------------------------------------------------------


def test_a_digest_is_what_sha256sum_prints() -> None:
    assert StaticTokens.digest("token") == hashlib.sha256(b"token").hexdigest()


async def test_static_tokens_prove_their_identities_and_nothing_else(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.write_text(
        json.dumps(
            {
                "tokens": [
                    {"sha256": StaticTokens.digest("t-alice"), "subject": "alice"},
                    {
                        "sha256": StaticTokens.digest("t-bob").upper(),
                        "subject": "bob",
                        "scopes": ["tools"],
                    },
                ]
            }
        ),
        encoding="utf-8",
    )
    tokens = StaticTokens.from_file(path)
    alice, bob = await tokens.verify("t-alice"), await tokens.verify("t-bob")
    assert (alice.subject, alice.scopes, dict(alice.claims)) == ("alice", set(), {"sub": "alice"})
    assert (bob.subject, bob.scopes) == ("bob", {"tools"})
    for wrong in ("t-carol", "", "t-alice ", "T-ALICE", StaticTokens.digest("t-alice")):
        with pytest.raises(InvalidToken):
            await tokens.verify(wrong)


GOOD = StaticTokens.digest("x")
BAD_FILES: dict[str, tuple[str, str]] = {
    "not TOML": ("tokens = [", "not valid TOML"),
    "no tokens": ("other = 1", "holds 'tokens'"),
    "an empty list": ("tokens = []", "non-empty list"),
    "an unknown key": (f'[[tokens]]\nsha256 = "{GOOD}"\nsubject = "a"\nrole = "x"', "'role'"),
    "no subject": (f'[[tokens]]\nsha256 = "{GOOD}"', "missing 'subject'"),
    "a blank subject": (f'[[tokens]]\nsha256 = "{GOOD}"\nsubject = " "', "'subject'"),
    "a plain token": ('[[tokens]]\nsha256 = "hunter2"\nsubject = "a"', "SHA-256 digest"),
    "a digest not hex": (f'[[tokens]]\nsha256 = "{"z" * 64}"\nsubject = "a"', "SHA-256 digest"),
    "scopes not a list": (
        f'[[tokens]]\nsha256 = "{GOOD}"\nsubject = "a"\nscopes = "tools"',
        "'scopes'",
    ),
    "a digest listed twice": (
        f'[[tokens]]\nsha256 = "{GOOD}"\nsubject = "a"\n'
        f'[[tokens]]\nsha256 = "{GOOD.upper()}"\nsubject = "b"',
        "tokens[1] lists a digest listed before",
    ),
}


@pytest.mark.parametrize("kind", list(BAD_FILES))
def test_a_token_file_that_is_wrong_is_refused_naming_the_entry(tmp_path: Path, kind: str) -> None:
    text, says = BAD_FILES[kind]
    path = tmp_path / "tokens.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigurationError, match=re.escape(says)) as refused:
        StaticTokens.from_file(path)
    assert str(refused.value).startswith("token file tokens.toml")


def test_a_json_token_file_with_a_repeated_key_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.write_text(
        f'{{"tokens": [{{"sha256": "{GOOD}", "subject": "a", "subject": "admin"}}]}}',
        encoding="utf-8",
    )
    with pytest.raises(ConfigurationError, match="subject"):
        StaticTokens.from_file(path)


# -- how a gateway is told to authenticate -----------------------------------------------------


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"scopes": "tools"}, "list of scopes"),
        ({"scopes": ["two words"]}, "not a scope"),
        ({"scopes": ['quo"te']}, "not a scope"),
        ({"resource": "http://tools.example.com/mcp"}, "only a loopback one may be"),
        ({"resource": "https://tools.example.com/mcp?x=1"}, "query"),
        ({"authorization_servers": "https://idp.example.com"}, "list of URLs"),
        ({"authorization_servers": ["http://idp.example.com"]}, "only a loopback"),
        ({"principal": ""}, "claim's name or a function"),
    ],
)
def test_an_authentication_that_cannot_work_is_refused(options: dict[str, Any], says: str) -> None:
    with pytest.raises(ConfigurationError, match=says):
        Authentication(StaticTokens({GOOD: Identity("a")}), **options)


def test_the_authorization_server_defaults_to_the_jwt_verifiers_issuer() -> None:
    verifier = JwtVerifier(
        "https://idp.example.com/jwks", issuer="https://idp.example.com", audience="a"
    )
    assert Authentication(verifier).authorization_servers == ("https://idp.example.com",)
    assert Authentication(StaticTokens({})).authorization_servers == ()


@pytest.mark.parametrize(
    ("principal", "claims"),
    [
        ("sub", {}),
        ("email", {"sub": "alice"}),
        ("email", {"email": ""}),
        ("email", {"email": "  "}),
        ("email", {"email": None}),
        ("email", {"email": {"user": None}}),
        ("email", {"email": False}),
        ("email", {"email": 0}),
    ],
)
def test_a_token_naming_nobody_is_refused(principal: str, claims: dict[str, Any]) -> None:
    auth = Authentication(StaticTokens({}), principal=principal)
    with pytest.raises(InvalidToken, match="names no principal"):
        auth.principal_of(Identity(None, claims=claims))
