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
