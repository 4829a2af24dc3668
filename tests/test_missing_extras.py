"""Each optional extra's absence is one clear line naming its ``pip install``, never a foreign
traceback: for the ``toolwire`` command, one ``toolwire: error:`` line and exit status 2; for
the library, a [`MissingDependency`][toolwire.errors.MissingDependency] naming the extra, the
only exception Python shows.

This file runs twice. In the development environment, where every extra is installed, each
case hides its extra's modules from the import system (a finder put first on
``sys.meta_path`` in a child process of its own) and checks the same. ``.ci/run`` runs it again in a
virtual environment holding only ``toolwire[cli]`` (``TOOLWIRE_BARE_VENV=1``), where the extras
are really absent, so a module-level import that runs before its guard cannot come back.

Only the standard library and pytest here: the bare environment has nothing else.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
BARE = os.environ.get("TOOLWIRE_BARE_VENV") == "1"

# The top-level modules each extra brings; hiding them is the extra's absence.
MODULES = {
    "genai": ("google.genai",),
    "openai": ("openai",),
    "anthropic": ("anthropic",),
    "mcp": ("mcp", "mcp_types"),
    "lark": ("llguidance",),
    "redis": ("redis",),
    "postgres": ("psycopg", "psycopg_pool"),
    "otel": ("opentelemetry",),
    "inbox": ("starlette", "uvicorn"),
    "dbos": ("dbos",),
}
NOT_RUNTIME = {"cli", "dev", "docs", "bench"}
"""Extras that are not a feature's dependency (``cli`` has none; the rest are for developers)."""

# Runs in the subprocess: hides the modules named, then runs the command line or the code.
BOOT = """
import importlib.abc, json, sys
hidden, argv, code = json.loads(sys.argv[1])
sys.argv[1:] = []

def is_hidden(name):
    return any(name == h or name.startswith(h + ".") for h in hidden)

class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if is_hidden(name):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

for name in [name for name in sys.modules if is_hidden(name)]:
    del sys.modules[name]
sys.meta_path.insert(0, Hide())
if argv is not None:
    from toolwire.cli import main
    sys.exit(main(argv))
exec(compile(code, "<case>", "exec"))
"""

# Runs once per test worker: toolwire imported once, then each case run by BOOT in a child
# forked from it, which spares each case an interpreter's start and toolwire's import. Its
# first line out: the extras' modules importing toolwire brought (a case hiding one of them
# needs a fresh interpreter, BOOT alone); then a line in per case, and its exit status out.
FORKING = """
import json, os, sys, traceback
import toolwire, toolwire.cli

boot, every = json.loads(sys.argv[1])
print(json.dumps(sorted(n for n in every if n in sys.modules)), flush=True)
for line in sys.stdin:
    case = json.loads(line)
    child = os.fork()
    if child == 0:
        os.chdir(case["cwd"])
        os.environ.update(case["env"])
        for fd, path in ((1, case["out"]), (2, case["err"])):
            os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
        sys.argv = ["-c", case["payload"]]
        try:
            exec(compile(boot, "<string>", "exec"), {"__name__": "__main__"})
            status = 0
        except SystemExit as exit_:
            status = exit_.code if isinstance(exit_.code, int) else 1
            if isinstance(exit_.code, str):
                print(exit_.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
            status = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    _, waited = os.waitpid(child, 0)
    print(os.waitstatus_to_exitcode(waited), flush=True)
"""

GRAMMAR_TOOL = '''
import toolwire

@toolwire.tool(custom=toolwire.Grammar.lark('start: "a"+'))
def shout(text: str) -> str:
    """Shout."""
    return text
'''
PLAIN_TOOL = '''
import toolwire

@toolwire.tool
def echo(text: str) -> str:
    """Echo."""
    return text
'''
FILES = {
    "mcp.json": json.dumps({"mcpServers": {"notes": {"command": "python", "args": ["-m", "x"]}}}),
    "tools.json": json.dumps([{"name": "echo", "inputSchema": {"type": "object"}}]),
    "grammar_tools.py": GRAMMAR_TOOL,
    "plain_tools.py": PLAIN_TOOL,
}
UNUSED = "127.0.0.1:9"
"""The discard port: never reached, as the extra's absence is found first."""


@dataclass(frozen=True)
class Case:
    extra: str
    argv: tuple[str, ...] | None = None
    """The command line, or None for library code."""
    code: str | None = None
    env: dict[str, str] = field(default_factory=dict)

    @property
    def id(self) -> str:
        shown = " ".join(self.argv) if self.argv is not None else self.code or ""
        return f"{self.extra}: {shown.splitlines()[0][:60]}"


COMMANDS = [
    Case("genai", ("demo",), env={"GEMINI_API_KEY": "not-a-key"}),
    Case("genai", ("demo", "--provider", "gemini-interactions"), env={"GEMINI_API_KEY": "k"}),
    Case("openai", ("demo", "--provider", "openai-chat"), env={"OPENAI_API_KEY": "k"}),
    Case("openai", ("demo", "--provider", "openai-responses"), env={"OPENAI_API_KEY": "k"}),
    Case("anthropic", ("demo", "--provider", "anthropic"), env={"ANTHROPIC_API_KEY": "k"}),
    Case("mcp", ("check", "mcp.json")),
    Case("mcp", ("declare", "stdio:python -m notes")),
    Case("mcp", ("declare", f"http://{UNUSED}/mcp")),
    Case("mcp", ("call", "stdio:python -m notes", "read_note")),
    Case("mcp", ("serve", "plain_tools.py")),
    Case("mcp", ("demo", "--mcp", "--scripted")),
    Case("mcp", ("mcp", "login", f"http://{UNUSED}/mcp")),
    Case("mcp", ("mcp", "login", "notes", "--config", "mcp.json", "--no-browser")),
    Case("mcp", ("mcp", "logout", f"http://{UNUSED}/mcp")),
    Case("mcp", ("mcp", "logout", "notes", "--config", "mcp.json")),
    Case("lark", ("check", "grammar_tools.py")),
    Case("redis", ("pending", "--store", f"redis://{UNUSED}/0")),
    Case("redis", ("history", "run_1", "--store", f"redis://{UNUSED}/0")),
    Case("postgres", ("pending", "--store", f"postgresql://{UNUSED}/runs")),
    Case("postgres", ("decide", "run_1", "call_1", "allow", "--store", f"postgres://{UNUSED}/r")),
    Case("inbox", ("inbox", "--store", "sqlite:///runs.db", "--port", "0")),
    Case("inbox", ("demo", "--inbox", "--scripted")),
]
LIBRARY = [
    Case("genai", code="import toolwire.integrations.genai as g\ng.genai_tool([])"),
    Case("mcp", code="from toolwire.mcp import Hub"),
    Case("mcp", code="import toolwire.mcp\ntoolwire.mcp.Gateway"),
    Case("mcp", code="from toolwire.mcp import serve"),
    Case("mcp", code="import toolwire.mcp\ntoolwire.mcp.logout"),
    Case("lark", code="import toolwire\ntoolwire.Grammar.lark('start: \"a\"')"),
    Case("redis", code="from toolwire.store import RedisStore"),
    Case("redis", code=f"import toolwire.store\ntoolwire.store.from_url('redis://{UNUSED}')"),
    Case("postgres", code="from toolwire.store import PostgresStore"),
    Case("postgres", code=f"import toolwire.store\ntoolwire.store.from_url('postgres://{UNUSED}')"),
    Case("otel", code="import toolwire\ntoolwire.Executor([], tracer_provider=object())"),
    Case("dbos", code="from toolwire.integrations.dbos import DurableTools"),
    Case(
        "inbox",
        code="import toolwire, toolwire.inbox\n"
        "toolwire.inbox.app(toolwire.MemoryStore(), authorize=lambda request: 'me')",
    ),
]


def _environment(extra: dict[str, str]) -> dict[str, str]:
    env = {**os.environ, "NO_COLOR": "1", **extra}
    if env.get("PYTHONPATH"):  # the same code as this process imports, from another directory
        entries = env["PYTHONPATH"].split(os.pathsep)
        env["PYTHONPATH"] = os.pathsep.join(str(Path(entry).resolve()) for entry in entries)
    return env


class Cases:
    """Runs each case as BOOT does in a fresh interpreter: forked from a process that has
    imported toolwire (see FORKING), or, when the case hides a module that import brought,
    in an interpreter of its own."""

    def __init__(self) -> None:
        every = sorted({name.split(".")[0] for names in MODULES.values() for name in names})
        self.forking = subprocess.Popen(
            [sys.executable, "-c", FORKING, json.dumps([BOOT, every])],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=_environment({}),
        )
        self.preloaded = set(json.loads(self._line()))

    def _line(self) -> str:
        assert self.forking.stdout is not None
        line = self.forking.stdout.readline()
        assert line, f"the process running the cases ended: {self.forking.wait()}"
        return line

    def run(
        self, case: Case, cwd: Path, *, hide: tuple[str, ...] | None = None
    ) -> subprocess.CompletedProcess[str]:
        for name, text in FILES.items():
            (cwd / name).write_text(text, encoding="utf-8")
        hidden = MODULES[case.extra] if hide is None else hide
        payload = json.dumps([list(hidden), list(case.argv) if case.argv else None, case.code])
        if self.preloaded & {name.split(".")[0] for name in hidden}:
            return subprocess.run(
                [sys.executable, "-c", BOOT, payload],
                capture_output=True,
                text=True,
                check=False,
                cwd=cwd,
                env=_environment(case.env),
                timeout=120,
                stdin=subprocess.DEVNULL,
            )
        out, err = cwd / "stdout.txt", cwd / "stderr.txt"
        asked = {"payload": payload, "cwd": str(cwd), "out": str(out), "err": str(err)}
        asked["env"] = {"NO_COLOR": "1", **case.env}
        assert self.forking.stdin is not None
        self.forking.stdin.write(json.dumps(asked) + "\n")
        self.forking.stdin.flush()
        status = int(self._line())
        return subprocess.CompletedProcess(case.argv, status, out.read_text(), err.read_text())

    def close(self) -> None:
        assert self.forking.stdin is not None
        self.forking.stdin.close()
        self.forking.wait(timeout=60)


@pytest.fixture(scope="module")
def cases() -> Iterator[Cases]:
    running = Cases()
    yield running
    running.close()


def install_line(extra: str) -> str:
    return f"pip install 'toolwire[{extra}]'"


def test_every_runtime_extra_has_cases() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    runtime = set(extras) - NOT_RUNTIME
    assert set(MODULES) == runtime
    assert {case.extra for case in COMMANDS + LIBRARY} == runtime
    assert extras["cli"] == []  # so the bare environment with [cli] is the package alone


@pytest.mark.parametrize("case", COMMANDS, ids=lambda case: case.id)
def test_a_command_without_its_extra_says_which_to_install_in_one_line(
    case: Case, tmp_path: Path, cases: Cases
) -> None:
    result = cases.run(case, tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("toolwire: error:"), result.stderr
    assert install_line(case.extra) in lines[0]
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("case", LIBRARY, ids=lambda case: case.id)
def test_the_library_without_an_extra_raises_missing_dependency_alone(
    case: Case, tmp_path: Path, cases: Cases
) -> None:
    result = cases.run(case, tmp_path)
    assert result.returncode == 1, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("toolwire.errors.MissingDependency: "), result.stderr
    assert install_line(case.extra) in last
    # The only exception Python shows: no foreign one it was raised from or while handling.
    assert result.stderr.count("Traceback (most recent call last)") == 1, result.stderr
    assert "ModuleNotFoundError" not in result.stderr


@pytest.mark.parametrize(
    "argv",
    [("check", "tools.json"), ("declare", "plain_tools.py"), ("demo", "--scripted")],
    ids=" ".join,
)
def test_what_needs_no_extra_works_without_any(
    argv: tuple[str, ...], tmp_path: Path, cases: Cases
) -> None:
    every = tuple(name for names in MODULES.values() for name in names)
    result = cases.run(Case("cli", argv), tmp_path, hide=every)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.skipif(not BARE, reason="only in the environment without extras")
def test_the_bare_environment_really_lacks_every_extra() -> None:
    import importlib.util

    present = [
        name
        for names in MODULES.values()
        for name in names
        if importlib.util.find_spec(name.split(".")[0]) is not None
        and (name.count(".") == 0 or importlib.util.find_spec(name) is not None)
    ]
    assert present == []
