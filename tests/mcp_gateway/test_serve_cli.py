"""`toolwire serve`'s usage errors: one line on stderr, exit status 2, nothing served."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolwire.cli import main

HERE = Path(__file__).parent


def test_a_bad_http_address_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", str(HERE / "gateway_tools.py"), "--http", "8080"]) == 2
    assert "--http is HOST:PORT, not '8080'" in capsys.readouterr().err


def test_a_bad_policy_file_names_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('default = "allow"\n[[rules]]\ntool = "x"\nefect = "deny"\n')
    assert main(["serve", str(HERE / "gateway_tools.py"), "--policy", str(policy)]) == 2
    assert "policy.toml: rules[0]: unknown key 'efect'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--auth-issuer", "https://idp.example.com"], "--auth-issuer needs --auth-jwks URL"),
        (["--auth-scope", "tools"], "--auth-scope needs --auth-jwks URL or --auth-tokens FILE"),
        (["--principal-claim", "email"], "--principal-claim needs --auth-jwks URL"),
        (["--auth-jwks", "https://idp.example.com/jwks"], "needs --auth-issuer and --auth-aud"),
        (
            ["--auth-jwks", "https://idp.example.com/jwks", "--auth-tokens", "tokens.toml"],
            "give one verifier",
        ),
        (
            [
                "--auth-jwks", "http://idp.example.com/jwks", "--auth-issuer", "i",
                "--auth-audience", "a",
            ],
            "jwks_url 'http://idp.example.com/jwks' is http: only a loopback one may be",
        ),
        (["--auth-tokens", "no_such_tokens.toml"], "cannot read token file no_such_tokens.toml"),
        (["--auth-tokens", "TOKENS", "--principal", "alice"], "--principal and --auth-*"),
        (["--auth-tokens", "TOKENS", "--principal-claim", "email"], "names only its subject"),
        (["--auth-tokens", "TOKENS", "--auth-issuer", "i"], "go with --auth-jwks"),
        (["--auth-tokens", "TOKENS"], "auth is for HTTP"),  # stdio
        (
            [
                "--auth-jwks", "https://idp.example.com/jwks", "--auth-issuer", "https://i.example",
                "--auth-audience", "a", "--http", "0.0.0.0:0",
            ],
            "--auth-resource https://",
        ),
        (["--auth-tokens", "TOKENS", "--auth-scope", "a b", "--http", "127.0.0.1:0"], "scope"),
    ],
)  # fmt: skip
def test_authentication_options_that_cannot_work_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], says: str
) -> None:
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(f'[[tokens]]\nsha256 = "{"0" * 64}"\nsubject = "ci"\n', encoding="utf-8")
    flags = [str(tokens) if flag == "TOKENS" else flag for flag in flags]
    assert main(["serve", str(HERE / "gateway_tools.py"), *flags]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("toolwire: error: ")
    assert says in line
