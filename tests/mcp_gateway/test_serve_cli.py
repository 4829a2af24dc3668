"""`toolwire serve`'s usage errors, and a store it cannot reach: one line on stderr, exit
status 2, nothing served."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from command_line import run_cli
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


@pytest.fixture
def refusing_port() -> Iterator[int]:
    """A loopback port bound by no listener: a connection to it is refused at once."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]


@pytest.mark.parametrize(
    "url",
    [
        "redis://ops:hunter2@127.0.0.1:{port}/0",
        "redis://127.0.0.1:{port}/0?password=hunter2",
        "postgresql://ops:hunter2@127.0.0.1:{port}/runs",
        "postgresql://ops@127.0.0.1:{port}/runs?password=hunter2",
    ],
)
@pytest.mark.parametrize("transport", [[], ["--http", "127.0.0.1:0"]], ids=["stdio", "http"])
def test_a_store_that_cannot_be_reached_is_a_one_line_refusal_to_start(
    refusing_port: int, url: str, transport: list[str]
) -> None:
    store = url.format(port=refusing_port)
    ran = run_cli(
        "serve", str(HERE / "gateway_tools.py"), "--policy", str(HERE / "policy.toml"),
        "--store", store, *transport,
    )  # fmt: skip
    assert ran.returncode == 2, ran.stderr
    (line,) = ran.stderr.splitlines()
    assert line.startswith("toolwire: error: the gateway does not start: its run store: ")
    assert f"127.0.0.1:{refusing_port}" in line  # the store is named...
    assert "hunter2" not in line  # ...without its password
    assert "serving MCP" not in ran.stderr
