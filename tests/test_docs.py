"""Every ```python block of the guides (``docs/**/*.md``, not ``docs/reference/``: it holds
mkdocstrings directives) is run, one test per page. The convention the guides are written to:

- a page is one script: its python blocks run in order, in one namespace (a module named
  ``__main__`` while the page runs), in a fresh temporary working directory (also on
  ``sys.path``, so that a module the page writes can be imported);
- top-level ``await`` is allowed; all the blocks of a page share one event loop, closed at the
  end of the page;
- a block whose opening fence follows (blank lines allowed between)
  ``<!-- docs-test: skip: <reason> -->`` is not run; every skip gives a reason, and each is
  listed as a skipped test (``test_docs_block_skipped``) in the run's summary;
- no network: the SDKs (google-genai, openai, anthropic) are pointed by their environment
  variables at a scripted model on 127.0.0.1 (``docs_support.model``), with dummy keys. The
  model calls the first tool a request declares, then answers with a text quoting the tool
  results;
- a page that starts what a process holds once (DBOS, launched with its state in the working
  directory) runs in a Python process of its own (``OWN_PROCESS``), in the same way.

A failing block names its page and line: blocks are compiled with the page's path as their
file name and their line numbers in the page, so a traceback points into the ``.md`` file.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import json
import linecache
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from docs_support.model import MODEL_TEXT, environment, serve_model
from docs_support.model import UNSET as UNSET_VARIABLES
from integrations.interactions_server import ScriptedInteractions

REPOSITORY = Path(__file__).parent.parent
TESTS = Path(__file__).parent
DOCS = REPOSITORY / "docs"
NOT_RUN = ("reference",)  # folders of docs/ whose blocks are not Python to run

_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")
_DIRECTIVE = re.compile(r"^\s*<!--\s*docs-test:(?P<body>.*?)-->\s*$")
_SKIP = re.compile(r"^\s*skip\s*(?::(?P<reason>.*))?$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Block:
    """One fenced python block of a page."""

    page: str  # the page's path as shown: docs/guide.md
    line: int  # the line of the page (1-based) the block's code starts on
    code: str
    skip: str | None = None  # the reason, when the block is marked not to run ("" if none given)

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


class DocsTestError(Exception):
    """A page breaks the convention (an unknown docs-test directive, an unclosed fence)."""


def pages(root: Path = DOCS) -> list[Path]:
    """The pages under ``root`` whose python blocks run."""
    return sorted(
        path for path in root.rglob("*.md") if path.relative_to(root).parts[:-1][:1] != NOT_RUN
    )


def shown(path: Path, root: Path = DOCS) -> str:
    """How a page is named in test ids and tracebacks: ``docs/<path under the root>``."""
    return "docs/" + path.relative_to(root).as_posix()


def blocks(text: str, page: str) -> list[Block]:
    """The fenced python (or ``py``) blocks of a page's ``text``, in order."""
    lines = text.splitlines()
    found: list[Block] = []
    directives: set[int] = set()  # the lines of docs-test directives, outside code blocks
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:  # an indented fence counts: superfences nests them in lists
            if _DIRECTIVE.match(lines[index]):
                directives.add(index)
            index += 1
            continue
        fence, indent = opening["fence"], len(opening["indent"])
        info = opening["info"].strip().lstrip("{").lstrip(".")
        language = re.split(r"[\s{}]", info, maxsplit=1)[0].lower() if info else ""
        end = index + 1
        closing = re.compile(rf"^ *{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        while end < len(lines) and not closing.match(lines[end]):
            end += 1
        if end == len(lines):
            raise DocsTestError(f"{page}:{index + 1}: this fence is never closed")
        if language in ("python", "py"):
            body = [
                line[indent:] if line[:indent].strip() == "" else line
                for line in lines[index + 1 : end]
            ]
            skip, directive = _skip(lines, index, page)
            directives.discard(directive)
            found.append(Block(page, index + 2, "\n".join(body) + "\n", skip))
        index = end + 1
    if directives:
        stray = min(directives)
        raise DocsTestError(
            f"{page}:{stray + 1}: {lines[stray].strip()!r} is not just before a python block"
        )
    return found


def _skip(lines: list[str], fence: int, page: str) -> tuple[str | None, int]:
    """The skip reason given just before the fence at ``fence`` (or None), and its line."""
    before = fence - 1
    while before >= 0 and not lines[before].strip():
        before -= 1
    directive = _DIRECTIVE.match(lines[before]) if before >= 0 else None
    if directive is None:
        return None, -1
    skip = _SKIP.match(directive["body"])
    if skip is None:
        raise DocsTestError(
            f"{page}:{before + 1}: unknown directive {lines[before].strip()!r} "
            "(the one directive is <!-- docs-test: skip: <reason> -->)"
        )
    return (skip["reason"] or "").strip(), before


def run_page(path: Path, root: Path = DOCS) -> None:
    """Run the page's python blocks as one script (the working directory, ``sys.path`` and
    ``sys.modules`` are the caller's again afterwards; the caller provides a fresh working
    directory)."""
    __tracebackhide__ = True
    page = shown(path, root)
    text = path.read_text(encoding="utf-8")
    to_run = [block for block in blocks(text, page) if block.skip is None]
    if not to_run:
        return
    # Tracebacks show the page's own lines: the blocks' file name is the page's, whose lines
    # are kept here, the prose and the blocks not run blanked (pytest parses the "file").
    lines = ["\n"] * (len(text.splitlines()) + 1)
    for block in to_run:
        lines[block.line - 1 : block.line - 1 + block.code.count("\n")] = block.code.splitlines(
            keepends=True
        )
    linecache.cache[page] = (len(text), None, lines, page)
    module = types.ModuleType("__main__")
    module.__file__ = str(Path.cwd() / path.name)
    namespace = module.__dict__
    main, known = sys.modules.get("__main__"), set(sys.modules)
    cwd = str(Path.cwd())
    sys.modules["__main__"] = module
    sys.path.insert(0, cwd)
    runner = PageLoop()
    try:
        for block in to_run:
            _run_block(block, namespace, runner)
        linecache.cache.pop(page, None)  # kept when a block failed: its traceback shows it
    finally:
        try:
            runner.close()
        finally:
            sys.path.remove(cwd)
            if main is not None:
                sys.modules["__main__"] = main
            for name in set(sys.modules) - known:  # the page's own modules, written in cwd
                file = getattr(sys.modules[name], "__file__", None) or ""
                if file.startswith(cwd):
                    del sys.modules[name]


class PageLoop:
    """The event loop of a page, and one task on it that awaits every block's coroutine in
    turn: what one block enters (``async with`` a task group, through an ``AsyncExitStack``)
    a later one may leave, in the same task, as in a script. Between blocks the loop pauses
    (tasks started by a block carry on while a later block awaits)."""

    def __init__(self) -> None:
        self._runner = asyncio.Runner()
        self._blocks: asyncio.Queue[tuple[Any, asyncio.Future[Any]]] | None = None
        self._driver: asyncio.Task[None] | None = None

    async def _drive(self) -> None:
        assert self._blocks is not None
        while True:
            coroutine, done = await self._blocks.get()
            try:
                result = await coroutine
            except asyncio.CancelledError:
                done.cancel()
                raise  # the page's task itself was cancelled: the next block gets a new one
            except BaseException as error:
                done.set_exception(error)
            else:
                done.set_result(result)

    def run(self, coroutine: Any) -> Any:
        """Await ``coroutine`` in the page's task; its result (or its exception, raised)."""
        loop = self._runner.get_loop()
        if self._driver is None or self._driver.done():
            self._blocks = asyncio.Queue()
            self._driver = loop.create_task(self._drive())
        assert self._blocks is not None
        done: asyncio.Future[Any] = loop.create_future()
        self._blocks.put_nowait((coroutine, done))
        return loop.run_until_complete(done)

    def close(self) -> None:
        """Cancel the page's task and what the page left running, as ``asyncio.run`` does at
        the end of a program, and close the loop."""
        self._runner.close()


# A block still running after this long is stuck (a server it started, a prompt): it fails,
# rather than the run hanging. Generous: it is no measure of speed.
BLOCK_LIMIT = 300


@contextlib.contextmanager
def _limit(block: Block, seconds: int) -> Iterator[None]:
    """Raise TimeoutError in the block when it runs ``seconds`` (on the main thread, where
    signals arrive; elsewhere, no limit)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGALRM"):
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise TimeoutError(f"the block at {block.where} still runs after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _run_block(block: Block, namespace: dict[str, Any], runner: PageLoop) -> None:
    __tracebackhide__ = True
    try:
        # Blank lines before the code: its line numbers are the page's (SyntaxErrors too).
        code = compile(
            "\n" * (block.line - 1) + block.code,
            block.page,
            "exec",
            flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
            dont_inherit=True,
        )
        with _limit(block, BLOCK_LIMIT):
            result = eval(code, namespace)
            if asyncio.iscoroutine(result):
                runner.run(result)
    except BaseException as error:
        if isinstance(error, KeyboardInterrupt):
            raise
        error.add_note(f"in the python block at {block.where} (its first line)")
        # The traceback starts in the page: the event loop's frames above it are noise.
        tb = error.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != block.page:
            tb = tb.tb_next
        error.__traceback__ = tb or error.__traceback__
        raise


# -- the scripted model, and the SDKs pointed at it -------------------------------------------


@pytest.fixture(scope="module")
def model_server() -> Iterator[ScriptedInteractions]:
    yield from serve_model()


@pytest.fixture
def model_env(
    model_server: ScriptedInteractions, monkeypatch: pytest.MonkeyPatch
) -> ScriptedInteractions:
    """The SDKs' environment variables point at the scripted model, with dummy keys."""
    for name in UNSET_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in environment(model_server).items():
        monkeypatch.setenv(name, value)
    no_proxy = ",".join(filter(None, [os.environ.get("NO_PROXY"), "127.0.0.1", "localhost"]))
    monkeypatch.setenv("NO_PROXY", no_proxy)
    monkeypatch.setenv("no_proxy", no_proxy)
    return model_server


_LOOPBACK = {"127.0.0.1", "::1", "localhost", "0.0.0.0", "::"}


def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Refuse, loudly, any host but this machine's loopback (a page reaching the network would
    be slow, flaky, or need a real key): name lookups, and connections to IP addresses."""
    lookup, connect = socket.getaddrinfo, socket.socket.connect

    def local(host: object) -> bool:
        if isinstance(host, bytes):
            host = host.decode()
        return host is None or str(host) in _LOOPBACK or str(host).startswith("127.")

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not local(host):
            raise OSError(f"no network in the docs tests: {host!r} (only 127.0.0.1)")
        return lookup(host, *args, **kwargs)

    def guarded_connect(self: socket.socket, address: Any) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6) and not local(address[0]):
            raise OSError(f"no network in the docs tests: {address!r} (only 127.0.0.1)")
        connect(self, address)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket.socket, "connect", guarded_connect)


# -- the guides --------------------------------------------------------------------------------

PAGES = pages()


def _skipped(path: Path) -> list[Block]:
    try:
        found = blocks(path.read_text(encoding="utf-8"), shown(path))
    except DocsTestError:
        return []  # the page's test reports it
    return [block for block in found if block.skip is not None]


SKIPPED = [block for path in PAGES for block in _skipped(path)]


@pytest.mark.parametrize("path", PAGES, ids=[shown(path) for path in PAGES])
def test_docs_page(
    path: Path, model_env: ScriptedInteractions, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    __tracebackhide__ = True
    monkeypatch.chdir(tmp_path)
    if shown(path) in OWN_PROCESS:
        _run_in_own_process(path)
        return
    _no_network(monkeypatch)
    run_page(path)


OWN_PROCESS = {
    "docs/durable-execution.md": "it launches DBOS, whose state is one per process",
}
"""The pages run in a Python process of their own, and why."""

_RUN_ALONE = """
import sys
from pathlib import Path

import pytest

import test_docs

with pytest.MonkeyPatch.context() as patch:
    test_docs._no_network(patch)
    test_docs.run_page(Path(sys.argv[1]))
"""


def _run_in_own_process(path: Path) -> None:
    """Run the page as ``run_page`` does, in a new Python process (in the working directory,
    with this environment: the scripted model's variables included); a failure shows the
    page's traceback."""
    __tracebackhide__ = True
    paths = [str(TESTS), *filter(None, [os.environ.get("PYTHONPATH")])]
    done = subprocess.run(
        [sys.executable, "-c", _RUN_ALONE, str(path)],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)},
        capture_output=True,
        text=True,
        timeout=BLOCK_LIMIT,
    )
    if done.returncode != 0:
        pytest.fail(f"{shown(path)}, run in a process of its own:\n{done.stderr}", pytrace=False)


@pytest.mark.parametrize("block", SKIPPED, ids=[block.where for block in SKIPPED])
def test_docs_block_skipped(block: Block) -> None:
    """Each block not run is listed in the summary, with its reason (a reason is required)."""
    assert block.skip, f"{block.where}: a skip gives its reason: <!-- docs-test: skip: why -->"
    pytest.skip(f"{block.where} is not run: {block.skip}")


def test_the_guides_are_found() -> None:
    assert shown(DOCS / "index.md") in [shown(path) for path in PAGES]
    assert not [path for path in PAGES if path.relative_to(DOCS).parts[0] == "reference"]


def _needs_an_event_loop(code: str) -> bool:
    """True when ``code`` only compiles with top-level ``await`` allowed."""
    try:
        compile(code, "<block>", "exec")
    except SyntaxError:
        try:
            compile(code, "<block>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        except SyntaxError:
            return False
        return True
    return False


def test_a_page_with_top_level_await_says_how_to_run_it_before_its_first_block() -> None:
    """Pasted into a file, ``await`` at the top is a SyntaxError: a page using it says so, and
    how to run it, before its first block does."""
    silent = []
    for path in PAGES:
        text = path.read_text(encoding="utf-8")
        found = blocks(text, shown(path))
        waiting = [block for block in found if _needs_an_event_loop(block.code)]
        if not waiting:
            continue
        first = min(block.line for block in found)
        before = "\n".join(text.splitlines()[: first - 1])
        if "python -m asyncio" not in before or "asyncio.run(" not in before:
            silent.append(f"{shown(path)}:{waiting[0].line}")
    assert silent == []


# -- the harness itself, on pages of its own (written in a temporary folder) --------------------


def _write(root: Path, name: str, text: str) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _run_in(tmp_path: Path, page: Path, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    monkeypatch.chdir(work)
    run_page(page, root)


HARNESS_PAGE = """\
# A page

```python
import os
from pathlib import Path

Path("notes.txt").write_text("hello")
counter = 1
```

Some prose, then a block of another language, not run:

```console
$ rm -rf /
```

<!-- docs-test: skip: needs a real Redis -->

```python
raise RuntimeError("a skipped block never runs")
```

1. In a list, indented:

    ```python
    counter += 1
    ```

```python
import asyncio

loop = asyncio.get_running_loop()
await asyncio.sleep(0)
counter += 1
```

```py
await asyncio.sleep(0)
assert asyncio.get_running_loop() is loop  # one loop for the page
assert Path("notes.txt").read_text() == "hello"  # the same working directory
assert counter == 3
assert __name__ == "__main__"
Path("helper_mod.py").write_text("VALUE = 7\\n")
import helper_mod

assert helper_mod.VALUE == 7
RESULT.append(counter)
```
"""


def test_a_page_runs_as_one_script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "docs"
    page = _write(root, "guide.md", HARNESS_PAGE.replace("RESULT", "__import__('sys')._docs_r"))
    found = blocks(page.read_text(), shown(page, root))
    assert [(block.line, block.skip) for block in found] == [
        (4, None),
        (20, "needs a real Redis"),
        (26, None),
        (30, None),
        (38, None),
    ]
    assert found[2].code == "counter += 1\n"
    monkeypatch.setattr(sys, "_docs_r", [], raising=False)
    main, path = sys.modules["__main__"], list(sys.path)
    _run_in(tmp_path, page, root, monkeypatch)
    assert sys._docs_r == [3]  # type: ignore[attr-defined]
    assert (tmp_path / "work" / "notes.txt").read_text() == "hello"
    assert sys.modules["__main__"] is main
    assert sys.path == path
    assert "helper_mod" not in sys.modules


def test_a_failure_names_the_page_and_the_block_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "docs"
    page = _write(
        root,
        "guides/broken.md",
        "# Broken\n\n```python\nx = 1\n```\n\nText.\n\n"
        "```python\ny = 2\n\nraise ValueError(x + y)\n```\n",
    )
    with pytest.raises(ValueError, match="3") as raised:
        _run_in(tmp_path, page, root, monkeypatch)
    assert "in the python block at docs/guides/broken.md:10 (its first line)" in (
        raised.value.__notes__
    )
    frame = raised.traceback[-1]
    assert str(frame.path) == "docs/guides/broken.md"
    assert frame.lineno + 1 == 12  # pytest counts from 0: line 12 of the page
    assert "raise ValueError(x + y)" in str(frame.statement)


def test_a_syntax_error_points_into_the_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "docs"
    page = _write(root, "bad.md", "# Bad\n\n```python\nok = 1\nif ok\n    pass\n```\n")
    with pytest.raises(SyntaxError) as raised:
        _run_in(tmp_path, page, root, monkeypatch)
    assert (raised.value.filename, raised.value.lineno) == ("docs/bad.md", 5)


def test_an_await_failure_closes_the_loop_and_names_the_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "docs"
    page = _write(
        root,
        "async.md",
        "```python\nimport asyncio\n\nasync def boom():\n    raise KeyError('late')\n```\n\n"
        "```python\nawait boom()\n```\n",
    )
    with pytest.raises(KeyError) as raised:
        _run_in(tmp_path, page, root, monkeypatch)
    assert "in the python block at docs/async.md:9 (its first line)" in raised.value.__notes__
    with pytest.raises(RuntimeError, match="no running event loop"):
        asyncio.get_running_loop()


TASK_PAGE = """\
```python
import asyncio
from contextlib import AsyncExitStack

import anyio

ticks = []


async def tick():
    while True:
        ticks.append(len(ticks))
        await asyncio.sleep(0)


stack = AsyncExitStack()
group = await stack.enter_async_context(anyio.create_task_group())
group.start_soon(tick)
```

The task group stays open, its task paused, between blocks.

```python
before = len(ticks)
for _ in range(5):
    await asyncio.sleep(0)
assert len(ticks) > before
group.cancel_scope.cancel()
await stack.aclose()  # left in the task it was entered in
```

```python
async def answer():
    return 42


assert asyncio.run(answer()) == 42  # a block without await is plain code: asyncio.run works
```
"""


def test_what_a_block_enters_a_later_block_leaves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "docs"
    _run_in(tmp_path, _write(root, "tasks.md", TASK_PAGE), root, monkeypatch)


@pytest.mark.parametrize("stuck", ["await asyncio.sleep(3600)", "time.sleep(3600)"])
def test_a_stuck_block_fails_instead_of_hanging(
    stuck: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys.modules[__name__], "BLOCK_LIMIT", 1)
    root = tmp_path / "docs"
    page = _write(root, "stuck.md", f"```python\nimport asyncio, time\n\n{stuck}\n```\n")
    with pytest.raises(TimeoutError, match=r"the block at docs/stuck.md:2 still runs after 1 s"):
        _run_in(tmp_path, page, root, monkeypatch)


def test_a_skip_needs_a_reason_and_a_directive_must_be_known() -> None:
    text = "<!-- docs-test: skip -->\n```python\npass\n```\n"
    assert blocks(text, "docs/a.md") == [Block("docs/a.md", 3, "pass\n", "")]
    with pytest.raises(AssertionError, match="gives its reason"):
        test_docs_block_skipped(blocks(text, "docs/a.md")[0])
    with pytest.raises(DocsTestError, match=r"docs/a.md:1: unknown directive"):
        blocks("<!-- docs-test: skp: typo -->\n\n```python\npass\n```\n", "docs/a.md")
    with pytest.raises(DocsTestError, match=r"docs/a.md:2: this fence is never closed"):
        blocks("text\n```python\npass\n", "docs/a.md")
    # A directive further up, with prose between, is not the block's: an error, not ignored.
    with pytest.raises(DocsTestError, match=r"d:1: .* is not just before a python block"):
        blocks("<!-- docs-test: skip: x -->\nProse.\n```python\npass\n```\n", "d")
    # Nor is one before another language's block; one shown inside a code block is text.
    with pytest.raises(DocsTestError, match=r"d:1: .* is not just before a python block"):
        blocks("<!-- docs-test: skip: x -->\n```console\n$ ls\n```\n", "d")
    assert blocks("```markdown\n<!-- docs-test: skip: why -->\n```\n", "d") == []


def test_a_page_has_no_network(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "docs"
    page = _write(
        root,
        "net.md",
        "```python\nimport socket\n\nsocket.create_connection(('example.com', 443))\n```\n",
    )
    _no_network(monkeypatch)
    with pytest.raises(OSError, match=r"no network in the docs tests: 'example\.com'"):
        _run_in(tmp_path, page, root, monkeypatch)
    with pytest.raises(OSError, match="no network"), socket.socket() as raw:
        raw.connect(("192.0.2.1", 80))


def test_pages_leave_out_the_reference(tmp_path: Path) -> None:
    for name in ("index.md", "guides/a.md", "reference/api.md", "providers/gemini.md"):
        _write(tmp_path, name, "# x\n")
    assert [shown(path, tmp_path) for path in pages(tmp_path)] == [
        "docs/guides/a.md",
        "docs/index.md",
        "docs/providers/gemini.md",
    ]


SDK_PAGE = """\
# Every SDK, through its environment variables only

```python
import anthropic
import openai
from google import genai

import toolwire

def get_weather(city: str, days: int = 1) -> dict:
    \"\"\"The forecast.\"\"\"
    return {"city": city, "forecast": ["sunny"] * days}

toolset = toolwire.ToolSet([toolwire.tool(get_weather)])
texts = {}
```

```python
client = genai.Client()
listing = toolwire.tools(toolset, "gemini")
contents = [{"role": "user", "parts": [{"text": "Weather?"}]}]
while True:
    response = await client.aio.models.generate_content(
        model="gemini-2.5-flash", contents=contents, config={"tools": listing.tools}
    )
    outcome = await toolwire.execute_tool_calls(listing, response)
    if not outcome.results:
        texts["gemini"] = response.text
        break
    contents += outcome.followup(response)
```

```python
client = anthropic.Anthropic()
listing = toolwire.tools(toolset, "anthropic")
messages = [{"role": "user", "content": "Weather?"}]
while True:
    response = client.messages.create(
        model="claude-sonnet-4-6", max_tokens=512, tools=listing.tools, messages=messages
    )
    outcome = await toolwire.execute_tool_calls(listing, response)
    if not outcome.results:
        texts["anthropic"] = response.content[0].text
        break
    messages += outcome.followup(response)
```

```python
client = openai.AsyncOpenAI()
listing = toolwire.tools(toolset, "openai-chat")
messages = [{"role": "user", "content": "Weather?"}]
while True:
    response = await client.chat.completions.create(
        model="gpt-4.1-mini", messages=messages, tools=listing.tools
    )
    outcome = await toolwire.execute_tool_calls(listing, response)
    if not outcome.results:
        texts["openai-chat"] = response.choices[0].message.content
        break
    messages += outcome.followup(response)

listing = toolwire.tools(toolset, "openai-responses")
items = [{"role": "user", "content": "Weather?"}]
while True:
    response = await client.responses.create(model="gpt-4.1-mini", input=items, tools=listing.tools)
    outcome = await toolwire.execute_tool_calls(listing, response)
    if not outcome.results:
        texts["openai-responses"] = response.output_text
        break
    items += outcome.followup(response)
```

```python
RESULT.update(texts)
```
"""


def test_a_page_reaches_every_sdk_through_the_environment(
    model_env: ScriptedInteractions, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "docs"
    page = _write(root, "sdks.md", SDK_PAGE.replace("RESULT", "__import__('sys')._docs_r"))
    monkeypatch.setattr(sys, "_docs_r", {}, raising=False)
    before = len(model_env.requests)
    _run_in(tmp_path, page, root, monkeypatch)
    quoted = json.dumps({"city": "Lisbon", "forecast": ["sunny"]}, sort_keys=True)
    texts = sys._docs_r  # type: ignore[attr-defined]
    assert sorted(texts) == ["anthropic", "gemini", "openai-chat", "openai-responses"]
    for provider, text in texts.items():
        assert text.startswith("The tools answered: "), provider
        assert json.loads(text.removeprefix("The tools answered: ")) == json.loads(quoted)
    assert len(model_env.requests) - before == 8  # a call, then the answer, for each


# -- the scripted model: what it answers, in each API's types ------------------------------------


def test_the_model_makes_arguments_from_the_schema() -> None:
    from docs_support.arguments import arguments_for

    schema = {
        "type": "object",
        "$defs": {"Units": {"enum": ["celsius", "fahrenheit"], "type": "string"}},
        "properties": {
            "city": {"type": "string"},
            "units": {"$ref": "#/$defs/Units"},
            "days": {"type": "integer", "minimum": 2, "maximum": 7},
            "when": {"type": "string", "format": "date"},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
            "strict_optional": {"type": ["integer", "null"]},
            "level": {"anyOf": [{"type": "number"}, {"type": "boolean"}]},
            "flag": {"type": "BOOLEAN"},
            "mode": {"type": "string", "default": "fast"},
            "left_out": {"type": "string"},
        },
        "required": [
            "city", "units", "days", "when", "tags", "strict_optional", "level", "flag", "mode",
        ],
    }  # fmt: skip
    assert arguments_for(schema) == {
        "city": "Lisbon",
        "units": "celsius",
        "days": 2,
        "when": "2026-01-01",
        "tags": ["example", "example"],
        "strict_optional": None,
        "level": 1.0,
        "flag": True,
        "mode": "fast",
    }
    assert arguments_for(None) == {}


def _unknown_keys(value: Any, path: str = "") -> list[str]:
    """Keys of a parsed SDK object its type does not know (they would be misspelt)."""
    import pydantic

    if isinstance(value, pydantic.BaseModel):
        found = [f"{path}.{key}" for key in value.model_extra or {}]
        if type(value).__name__.startswith("Unknown"):
            found.append(f"{path}: {type(value).__name__}")
        for name, item in vars(value).items():  # not getattr: deprecated fields warn
            found += _unknown_keys(item, f"{path}.{name}")
        return found
    if isinstance(value, list | tuple):
        return [key for n, item in enumerate(value) for key in _unknown_keys(item, f"{path}[{n}]")]
    if isinstance(value, dict):
        return [key for k, item in value.items() for key in _unknown_keys(item, f"{path}.{k}")]
    return []


def _post(server: ScriptedInteractions, path: str, body: dict[str, Any]) -> tuple[str, bytes]:
    import httpx

    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        response = client.post(path, json=body)
    assert response.status_code == 200, response.text
    return response.headers["content-type"], response.content


def _events(payload: bytes) -> list[tuple[str | None, Any]]:
    """A Server-Sent Events stream's ``(event, data)`` pairs (``data: [DONE]`` left out)."""
    found = []
    for block in payload.decode().split("\n\n"):
        if not block.strip():
            continue
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        if fields["data"] != "[DONE]":
            found.append((fields.get("event"), json.loads(fields["data"])))
    return found


def _declared(provider: str) -> list[Any]:
    import toolwire

    def get_weather(city: str, days: int = 1) -> str:
        """The forecast."""
        return "sunny"

    return list(toolwire.tools(toolwire.ToolSet([toolwire.tool(get_weather)]), provider).tools)


RESULT = "Lisbon: sunny"
CALLED = {"city": "Lisbon"}  # the arguments the model makes up for get_weather(city, days=1)


def _gemini(server: ScriptedInteractions) -> None:
    from google.genai import types

    question = {"role": "user", "parts": [{"text": "Weather?"}]}
    call_body = {"contents": [question], "tools": _declared("gemini")}
    path = "/v1beta/models/m:generateContent"
    reply = types.GenerateContentResponse.model_validate_json(_post(server, path, call_body)[1])
    assert reply.function_calls is not None
    assert [(c.name, c.args) for c in reply.function_calls] == [("get_weather", {"city": "Lisbon"})]
    answer = {"functionResponse": {"name": "get_weather", "response": {"output": RESULT}}}
    turns = [question, reply.candidates[0].content.model_dump(mode="json", exclude_none=True)]  # type: ignore[index, union-attr]
    result_body = {"contents": [*turns, {"role": "user", "parts": [answer]}]}
    reply = types.GenerateContentResponse.model_validate_json(_post(server, path, result_body)[1])
    assert reply.text == "The tools answered: " + RESULT
    stream = "/v1beta/models/m:streamGenerateContent?alt=sse"
    for body, expected in ((call_body, None), (result_body, "The tools answered: " + RESULT)):
        kind, payload = _post(server, stream, body)
        assert kind == "text/event-stream"
        chunks = [types.GenerateContentResponse.model_validate(d) for _, d in _events(payload)]
        if expected is None:
            assert chunks[-1].function_calls[0].args == {"city": "Lisbon"}  # type: ignore[index]
        else:
            assert len(chunks) == 2
            assert "".join(chunk.text or "" for chunk in chunks) == expected


def _interactions(server: ScriptedInteractions) -> None:
    import pydantic
    from google.genai import interactions as ix

    path = "/v1beta/interactions"
    call_body = {"model": "m", "input": "Weather?", "tools": _declared("gemini-interactions")}
    reply = ix.Interaction.model_validate_json(_post(server, path, call_body)[1])
    assert not _unknown_keys(reply)
    assert reply.status == "requires_action"
    step: Any = reply.steps[0]  # type: ignore[index]
    assert (step.type, step.name, step.arguments) == ("function_call", "get_weather", CALLED)
    answer = {
        "type": "function_result",
        "call_id": step.id,
        "name": "get_weather",
        "result": RESULT,
    }
    result_body = {"model": "m", "previous_interaction_id": reply.id, "input": [answer]}
    reply = ix.Interaction.model_validate_json(_post(server, path, result_body)[1])
    assert not _unknown_keys(reply)
    assert reply.status == "completed"
    assert reply.steps[0].content[0].text == "The tools answered: " + RESULT  # type: ignore[index, union-attr]
    events = pydantic.TypeAdapter(list[ix.InteractionSSEEvent])
    for body in (call_body, result_body):
        kind, payload = _post(server, path, body | {"stream": True})
        pairs = _events(payload)
        assert kind == "text/event-stream"
        assert [name for name, _ in pairs] == [data["event_type"] for _, data in pairs]
        assert not _unknown_keys(events.validate_python([data for _, data in pairs]))


def _anthropic(server: ScriptedInteractions) -> None:
    import anthropic.types as types
    import pydantic

    messages: list[dict[str, Any]] = [{"role": "user", "content": "Weather?"}]
    call_body = {
        "model": "m",
        "max_tokens": 64,
        "messages": messages,
        "tools": _declared("anthropic"),
    }
    reply = types.Message.model_validate_json(_post(server, "/v1/messages", call_body)[1])
    assert not _unknown_keys(reply)
    block = reply.content[0]
    assert isinstance(block, types.ToolUseBlock)
    assert (block.name, block.input, reply.stop_reason) == (
        "get_weather",
        {"city": "Lisbon"},
        "tool_use",
    )
    answer = {"type": "tool_result", "tool_use_id": block.id, "content": RESULT}
    messages += [
        {"role": "assistant", "content": [block.model_dump()]},
        {"role": "user", "content": [answer]},
    ]
    result_body = call_body | {"messages": messages}
    reply = types.Message.model_validate_json(_post(server, "/v1/messages", result_body)[1])
    assert not _unknown_keys(reply)
    assert reply.content[0].text == "The tools answered: " + RESULT  # type: ignore[union-attr]
    events = pydantic.TypeAdapter(list[types.RawMessageStreamEvent])
    for body in (call_body, result_body):
        pairs = _events(_post(server, "/v1/messages", body | {"stream": True})[1])
        assert [name for name, _ in pairs] == [data["type"] for _, data in pairs]
        assert not _unknown_keys(events.validate_python([data for _, data in pairs]))


def _chat(server: ScriptedInteractions) -> None:
    from openai.types.chat import ChatCompletion, ChatCompletionChunk

    path = "/v1/chat/completions"
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Weather?"}]
    call_body = {"model": "m", "messages": messages, "tools": _declared("openai-chat")}
    reply = ChatCompletion.model_validate_json(_post(server, path, call_body)[1])
    assert not _unknown_keys(reply)
    call = reply.choices[0].message.tool_calls[0]  # type: ignore[index]
    assert json.loads(call.function.arguments) == {"city": "Lisbon", "days": None}  # type: ignore[union-attr]
    messages += [
        reply.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": RESULT},
    ]
    result_body = call_body | {"messages": messages}
    reply = ChatCompletion.model_validate_json(_post(server, path, result_body)[1])
    assert not _unknown_keys(reply)
    assert reply.choices[0].message.content == "The tools answered: " + RESULT
    for body in (call_body, result_body):
        stream = body | {"stream": True, "stream_options": {"include_usage": True}}
        chunks = [
            ChatCompletionChunk.model_validate(d)
            for _, d in _events(_post(server, path, stream)[1])
        ]
        assert not _unknown_keys(chunks)
        assert chunks[-1].usage is not None


def _responses(server: ScriptedInteractions) -> None:
    import pydantic
    from openai.types.responses import Response, ResponseStreamEvent

    items: list[dict[str, Any]] = [{"role": "user", "content": "Weather?"}]
    call_body = {"model": "m", "input": items, "tools": _declared("openai-responses")}
    reply = Response.model_validate_json(_post(server, "/v1/responses", call_body)[1])
    assert not _unknown_keys(reply)
    call = reply.output[0]
    assert call.type == "function_call"
    assert json.loads(call.arguments) == {"city": "Lisbon", "days": None}
    items += [
        call.model_dump(exclude_none=True),
        {"type": "function_call_output", "call_id": call.call_id, "output": RESULT},
    ]
    result_body = call_body | {"input": items}
    reply = Response.model_validate_json(_post(server, "/v1/responses", result_body)[1])
    assert not _unknown_keys(reply)
    assert reply.output_text == "The tools answered: " + RESULT
    events = pydantic.TypeAdapter(list[ResponseStreamEvent])
    for body in (call_body, result_body):
        pairs = _events(_post(server, "/v1/responses", body | {"stream": True})[1])
        assert [name for name, _ in pairs] == [data["type"] for _, data in pairs]
        parsed = events.validate_python([data for _, data in pairs])
        assert not _unknown_keys(parsed)
        assert [event.sequence_number for event in parsed] == list(range(len(parsed)))


@pytest.mark.parametrize(
    "api", [_gemini, _interactions, _anthropic, _chat, _responses], ids=lambda f: f.__name__[1:]
)
def test_the_model_answers_in_the_sdk_types(api: Any, model_server: ScriptedInteractions) -> None:
    """A call of the first tool, then a text quoting the result, JSON and streamed: each parsed
    by the SDK's own types, none with a key they do not know."""
    api(model_server)


def test_the_model_without_tools_says_hello(model_server: ScriptedInteractions) -> None:
    from openai.types.chat import ChatCompletion

    body = {"model": "m", "messages": [{"role": "user", "content": "Hi"}]}
    reply = ChatCompletion.model_validate_json(_post(model_server, "/v1/chat/completions", body)[1])
    assert reply.choices[0].message.content == MODEL_TEXT


def test_the_sdks_read_the_models_streams(model_env: ScriptedInteractions) -> None:
    """Each SDK's own stream helper, pointed at the model by the environment alone."""
    import anthropic
    import openai
    from google import genai

    answer = "The tools answered: " + RESULT
    gemini = genai.Client()
    question = [{"role": "user", "parts": [{"text": "Weather?"}]}]
    config: Any = {"tools": _declared("gemini")}
    chunks = list(
        gemini.models.generate_content_stream(model="m", contents=question, config=config)
    )
    assert chunks[-1].function_calls[0].args == {"city": "Lisbon"}  # type: ignore[index]
    interactions = list(
        gemini.interactions.create(
            model="m", input="Weather?", tools=_declared("gemini-interactions"), stream=True
        )
    )
    assert interactions[-1].event_type == "interaction.completed"

    claude = anthropic.Anthropic()
    tools: Any = _declared("anthropic")
    with claude.messages.stream(
        model="m", max_tokens=64, messages=[{"role": "user", "content": "Weather?"}], tools=tools
    ) as stream:
        message = stream.get_final_message()
    assert message.content[0].input == {"city": "Lisbon"}  # type: ignore[union-attr]

    gpt = openai.OpenAI()
    tools = _declared("openai-chat")
    with gpt.chat.completions.stream(
        model="m", messages=[{"role": "user", "content": "Weather?"}], tools=tools
    ) as chat:
        completion = chat.get_final_completion()
    call: Any = completion.choices[0].message.tool_calls[0]  # type: ignore[index]
    assert json.loads(call.function.arguments) == {"city": "Lisbon", "days": None}
    messages: Any = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "tool_calls": [call.model_dump()]},
        {"role": "tool", "tool_call_id": call.id, "content": RESULT},
    ]
    with gpt.chat.completions.stream(model="m", messages=messages, tools=tools) as chat:
        assert chat.get_final_completion().choices[0].message.content == answer

    tools = _declared("openai-responses")
    with gpt.responses.stream(model="m", input="Weather?", tools=tools) as responses:
        response = responses.get_final_response()
    assert response.output[0].type == "function_call"
    items: Any = [
        response.output[0].model_dump(exclude_none=True),
        {"type": "function_call_output", "call_id": response.output[0].call_id, "output": RESULT},
    ]
    with gpt.responses.stream(model="m", input=items, tools=tools) as responses:
        assert responses.get_final_response().output_text == answer
