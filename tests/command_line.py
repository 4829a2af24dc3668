"""Running the ``toolwire`` command line from tests: in this process, or as its own process.

Most command-line tests are about what a command prints and the status it ends with, which
``toolwire.cli.main`` decides whole: :func:`run_cli` runs it here, as a child process would
see it (its own arguments, environment, working directory, empty standard input, Python's
default warning filters, and a module it imports forgotten afterwards), and answers as
:func:`subprocess.run` does. Starting an interpreter for each costs most of a second of CPU, and
the suite runs some hundred of them. :func:`console_script` is the installed command, for the
tests of what only a process shows: the entry point itself, a terminal, signals, a closed
pipe.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import traceback
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Literal

ROOT = Path(__file__).parent.parent

# What a fresh interpreter starts with (the `warnings` module's documented defaults), in place of
# the filters pytest sets for the tests themselves.
_DEFAULT_FILTERS: list[tuple[Literal["default", "ignore"], type[Warning], str | None]] = [
    ("default", DeprecationWarning, "__main__"),
    ("ignore", DeprecationWarning, None),
    ("ignore", PendingDeprecationWarning, None),
    ("ignore", ImportWarning, None),
    ("ignore", ResourceWarning, None),
]

# The environment every test's command runs in: no key that would reach a real model, and
# colour decided by the test.
_QUIET = {"GEMINI_API_KEY": "", "GOOGLE_API_KEY": "", "NO_COLOR": ""}


def console_script() -> list[str]:
    """The installed ``toolwire`` console script, or the module where none is installed."""
    exe = shutil.which("toolwire", path=str(Path(sys.executable).parent)) or shutil.which(
        "toolwire"
    )
    return [exe] if exe else [sys.executable, "-m", "toolwire.cli"]


def run_cli(
    *args: str, cwd: Path = ROOT, env: Mapping[str, str | None] | None = None
) -> subprocess.CompletedProcess[str]:
    """``toolwire ARGS`` run by ``toolwire.cli.main`` in this process; what it printed and its
    status, with a traceback on stderr and status 1 where an exception escaped, as Python's
    own would be. ``env`` adds to this process's environment; a variable set to None is
    removed."""
    from toolwire.cli import main

    # Files rather than strings: a stdio server the command starts writes its stderr to ours.
    with (
        tempfile.TemporaryFile("w+", encoding="utf-8") as out,
        tempfile.TemporaryFile("w+", encoding="utf-8") as err,
    ):
        with (
            _as_a_process(cwd, {**_QUIET, **(env or {})}),
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
        ):
            try:
                status = main(list(args))
            except SystemExit as exit_:  # argparse's usage errors and --help
                status = _status(exit_.code)
            except Exception:
                traceback.print_exc()
                status = 1
        return subprocess.CompletedProcess(["toolwire", *args], status, _read(out), _read(err))


def _status(code: str | int | None) -> int:
    """The exit status ``sys.exit(code)`` gives a process."""
    if isinstance(code, str):
        print(code, file=sys.stderr)
    return code if isinstance(code, int) else (0 if code is None else 1)


def _read(stream: IO[str]) -> str:
    stream.flush()
    stream.seek(0)
    return stream.read()


@contextlib.contextmanager
def _as_a_process(cwd: Path, env: Mapping[str, str | None]) -> Iterator[None]:
    """This process as a child would find it, and as it was afterwards."""
    environ, here, path, modules = dict(os.environ), os.getcwd(), list(sys.path), set(sys.modules)
    stdin = sys.stdin
    for name, value in env.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    os.chdir(cwd)
    sys.stdin = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")  # closed, as DEVNULL is
    try:
        with warnings.catch_warnings():
            warnings.resetwarnings()
            for action, category, module in reversed(_DEFAULT_FILTERS):
                warnings.filterwarnings(action, category=category, module=module or "")
            yield
    finally:
        sys.stdin = stdin
        os.chdir(here)
        os.environ.clear()
        os.environ.update(environ)
        sys.path[:] = path
        # A SOURCE the command imported (`toolwire declare tools:toolset`) is imported afresh by
        # the next command, as a new process would: two tests' `tools` are different modules.
        for name in set(sys.modules) - modules:
            if _is_a_source(name):
                del sys.modules[name]


def _is_a_source(name: str) -> bool:
    """Whether module ``name`` came from the tests' files rather than toolwire or a library."""
    if name.partition(".")[0] == "toolwire":
        return False
    file = getattr(sys.modules.get(name), "__file__", None)
    if not file:
        return name.startswith("_toolwire_source_")
    return not file.startswith((sys.prefix, sys.base_prefix))
