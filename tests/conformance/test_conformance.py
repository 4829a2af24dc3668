"""The official MCP conformance suite against toolwire, both roles (see ``conformance_suite``).

Marked ``conformance`` and deselected by default (it installs Node 22 and the suite from npm,
and takes a few minutes): ``pytest -m conformance tests/conformance -s`` runs it and prints the
result tables. ``TOOLWIRE_CONFORMANCE_CACHE`` keeps the install between runs.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("mcp")
pytest.importorskip("uvicorn")

import conformance_suite as suite

pytestmark = pytest.mark.conformance


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> suite.Suite:
    try:
        return suite.install(suite.cache_dir(tmp_path_factory.mktemp("conformance-cache")))
    except (RuntimeError, OSError) as exc:
        if os.environ.get("CI"):
            pytest.fail(f"the conformance suite could not be installed: {exc}")
        pytest.skip(f"the conformance suite could not be installed: {exc}")


@pytest.fixture(scope="session")
def baseline() -> suite.Baseline:
    return suite.Baseline.read()


def test_the_gateway_passes_every_scenario_its_upstream_passes(
    installed: suite.Suite, baseline: suite.Baseline, tmp_path: Path
) -> None:
    with suite.upstream() as upstream:
        alone = suite.run_server(installed, upstream.url, tmp_path / "upstream")
        with suite.gateway(upstream.url) as gateway:
            through = suite.run_server(installed, gateway.url, tmp_path / "gateway", tasks=True)
    roles = {"upstream alone": "upstream", "through the gateway": "gateway"}
    shown = suite.table({"upstream alone": alone, "through the gateway": through}, baseline, roles)
    print("\n" + shown)
    rows = shown.split("\n\n", 1)[0]
    assert suite.documented(rows.split("\n", 1)[0]) == rows, (
        "docs/conformance.md's server table is not this run's: put the table above in it"
    )
    tasks = {(name, suite.EXTENSION) for name in suite.TASK_SCENARIOS}
    assert set(alone) == set(through) - tasks
    assert baseline.surprises("upstream", alone) == []
    assert baseline.surprises("gateway", through) == []
    worse = [
        key
        for key, seen in through.items()
        if key in alone and alone[key].passed and not seen.passed
    ]
    assert worse == []  # the gateway loses nothing its upstream passes


def test_the_hub_as_a_client(
    installed: suite.Suite, baseline: suite.Baseline, tmp_path: Path
) -> None:
    hub = suite.run_client(installed, tmp_path / "hub")
    print("\n" + suite.table({"hub": hub}, baseline, {"hub": "hub"}))
    assert baseline.surprises("hub", hub) == []


def test_a_scenario_that_passes_with_an_unknown_tool_is_a_failure() -> None:
    checks = [
        {"id": "tools-call-x", "status": "SUCCESS", "details": {"text": "Unknown tool 'x'."}},
    ]
    seen = suite.verdict("tools-call-x", "2026-07-28", checks, "")
    assert seen.passed is False
    assert seen.failures == ("tools-call-x: passed, but the tool was unknown",)


def test_a_run_that_wrote_no_checks_is_a_failure() -> None:
    assert suite.verdict("ping", "2025-11-25", [], "crashed").passed is False
