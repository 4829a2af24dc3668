"""Dispatch and run-ledger cost in instructions, before and after a change, counted by
valgrind's callgrind (far steadier than wall-clock time on a shared machine).

Two families of workloads, the ones ``dispatch.py`` and ``store.py`` time:

- ``dispatch``: ``execute_tool_calls`` on a response of each provider (Anthropic, OpenAI Chat
  Completions, OpenAI Responses, Gemini) holding four calls of a trivial async tool, under the
  default policy (everything allowed) with an in-memory store: without a run id, and with a
  fresh run id per turn (every call claimed, run and its answer kept in the run ledger);
- ``ledger``: what a named turn does on a ``MemoryStore`` and on a ``SQLiteStore``: ``run``, a
  turn of four calls with a fresh run id and the same turn again (answered from the store);
  ``ask``, a turn whose policy asks about two of its four calls (a deferred approver), so it
  pauses with ``ApprovalPending``, then ``toolwire.decide`` allows each waiting call and the
  turn is resumed with the same run id.

Each workload runs in its own process under callgrind: warm-up turns (first-call caches, the
in-memory store filling to its bound), then ``--iterations`` counted turns. Right before and
right after the counted turns the workload calls ``sys.call_tracing``, a C function nothing
else calls, as a marker: with ``--dump-before=sys_call_tracing`` callgrind writes out its counts
at each marker and starts again from zero, so the part between the two markers holds the
counted turns alone, interpreter start-up, imports and warm-up left out. A dump holds every
thread's work (the SQLite store runs its queries on worker threads), which is why this is used
rather than collecting only inside a function (``--toggle-collect``): callgrind keeps that
state per thread and would leave the workers out. The marker needs an interpreter whose symbol
table names ``sys_call_tracing`` (CPython built from source, as pyenv and the official images
do); for a stripped one, ``--difference`` counts whole processes of N and 2N turns instead and
takes the difference, which cancels start-up just as well at twice the processes. The
processes run with a fixed ``PYTHONHASHSEED`` and the tools are async (no worker thread per
call), so counts repeat closely from run to run.

    python benchmarks/instructions.py BEFORE [--after TREE] [--iterations 100] [--warmup 20]
        [--only WORKLOAD ...] [--difference] [--profiles DIR] [--json FILE]

``BEFORE`` (and ``--after``, by default this checkout) is a source tree (a directory holding
``src/toolwire``) or a git revision of this repository, exported to a temporary directory.
``--profiles DIR`` keeps each run's callgrind output there (``callgrind_annotate
--inclusive=yes`` on the counted part, the files ending in ``.2``, shows where a difference
comes from). With ``--json
FILE`` the figures are also written to FILE as JSON.

Needs ``valgrind`` (Debian's package); one process per tree and workload (12 per tree), about a
minute each, most of it the interpreter's start-up.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PROVIDERS = ("anthropic", "openai-chat", "openai-responses", "gemini")
WORKLOADS: dict[str, tuple[str, ...]] = {
    "dispatch": (
        *(f"dispatch:{provider}" for provider in PROVIDERS),
        *(f"dispatch:{provider}+run_id" for provider in PROVIDERS),
    ),
    "ledger": ("ledger:memory:run", "ledger:memory:ask", "ledger:sqlite:run", "ledger:sqlite:ask"),
}
ALL = tuple(name for names in WORKLOADS.values() for name in names)
CALLS = 4  # calls per response


# --- the workloads (what callgrind counts, in the child process) ------------------------------


def _response(provider: str, calls: list[tuple[str, str, dict[str, Any]]]) -> Any:
    from toolwire.providers import anthropic, gemini, openai_chat, openai_responses

    modules = {
        "anthropic": anthropic,
        "openai-chat": openai_chat,
        "openai-responses": openai_responses,
        "gemini": gemini,
    }
    return modules[provider].response_for(calls)


def _turn(workload: str, folder: Path) -> Callable[[int], Awaitable[Any]]:
    """One turn of ``workload``, given the turn's number (its run id's suffix)."""
    import toolwire

    @toolwire.tool
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @toolwire.tool
    async def transfer(account: str, amount: int) -> str:
        """Move money out of an account."""
        return f"sent {amount} from {account}"

    family, *rest = workload.split(":")
    adds = [(f"c{k}", "add", {"a": k, "b": 1}) for k in range(CALLS)]
    # A small bound, so the warm-up fills the store and every counted turn finds it full.
    memory = toolwire.MemoryStore(max_runs=8)
    if family == "dispatch":
        provider, _, named = rest[0].partition("+")
        executor = toolwire.Executor([add], store=memory)
        listing = toolwire.tools(executor.toolset, provider)
        response = _response(provider, adds)

        async def dispatch(i: int) -> Any:
            run_id = f"turn-{i}" if named else None
            outcome = await toolwire.execute_tool_calls(
                listing, response, executor=executor, run_id=run_id
            )
            return outcome.calls

        return dispatch

    kind, what = rest
    store = memory if kind == "memory" else toolwire.SQLiteStore(folder / "runs.db")
    if what == "run":
        executor = toolwire.Executor([add], store=store)
        listing = toolwire.tools(executor.toolset, "gemini")
        response = _response("gemini", adds)

        async def run_and_retry(i: int) -> Any:
            first = await toolwire.execute_tool_calls(
                listing, response, executor=executor, run_id=f"turn-{i}"
            )
            again = await toolwire.execute_tool_calls(
                listing, response, executor=executor, run_id=f"turn-{i}"
            )
            return [*first.calls, *again.calls]

        return run_and_retry

    executor = toolwire.Executor(
        [add, transfer],
        store=store,
        policy=toolwire.Policy(toolwire.Rule("ask", "transfer", reason="moves money")),
        approver=toolwire.DeferredApproval(),
    )
    listing = toolwire.tools(executor.toolset, "gemini")
    asked = [(f"t{k}", "transfer", {"account": "ops", "amount": k}) for k in range(CALLS // 2)]
    response = _response("gemini", [*adds[: CALLS - len(asked)], *asked])

    async def ask_decide_resume(i: int) -> Any:
        run_id = f"turn-{i}"
        try:
            await toolwire.execute_tool_calls(
                listing, response, executor=executor, run_id=run_id, principal="dana"
            )
        except toolwire.ApprovalPending as paused:
            for request in paused.pending:
                await toolwire.decide(
                    run_id, request.call_id, toolwire.allow(), store=store, by="bench"
                )
        else:
            raise AssertionError("the turn did not pause for its approvals")
        resumed = await toolwire.execute_tool_calls(
            listing, response, executor=executor, run_id=run_id, principal="dana"
        )
        return resumed.calls

    return ask_decide_resume


def _mark() -> None:
    """Where callgrind writes out its counts (it dumps on entering ``sys.call_tracing``)."""
    sys.call_tracing(lambda: None, ())


def run_workload(workload: str, turns: int, warmup: int) -> None:
    """``warmup`` turns, checked, then ``turns`` more between two markers (in this process:
    what callgrind counts)."""
    import anyio

    import toolwire

    tree = Path(os.environ["PYTHONPATH"].split(os.pathsep)[0]).resolve()
    if not Path(toolwire.__file__).resolve().is_relative_to(tree):
        raise SystemExit(f"toolwire was imported from {toolwire.__file__}, not from {tree}")

    async def main(folder: Path) -> None:
        turn = _turn(workload, folder)
        for i in range(warmup):
            calls = await turn(i)
            failed = [c for c in calls if c.result.is_error]
            if not calls or failed:
                raise SystemExit(f"{workload}: a call failed: {failed[0].result}")
        _mark()
        for i in range(warmup, warmup + turns):
            await turn(i)
        _mark()

    with tempfile.TemporaryDirectory() as folder:
        anyio.run(main, Path(folder))


# --- counting (the parent process) -------------------------------------------------------------


@contextmanager
def source_tree(spec: str) -> Iterator[Path]:
    """The tree ``spec`` names: a directory holding ``src/toolwire``, or a git revision of this
    repository exported to a temporary directory."""
    if (Path(spec) / "src" / "toolwire").is_dir():
        yield Path(spec).resolve()
        return
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", spec, "src"],
        capture_output=True,
        check=False,
    )
    if archive.returncode != 0:
        raise SystemExit(
            f"{spec!r} is neither a source tree nor a revision of this repository: "
            + archive.stderr.decode(errors="replace").strip()
        )
    with tempfile.TemporaryDirectory(prefix="toolwire-tree-") as folder:
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(folder, filter="data")
        yield Path(folder)


def _callgrind(
    tree: Path, workload: str, turns: int, warmup: int, out: str, *flags: str
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree / "src"), "PYTHONHASHSEED": "0"}
    command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *flags]
    command += [sys.executable, __file__, "--run", workload, str(turns), str(warmup)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{workload} on {tree} failed:\n{done.stderr[-3000:]}")
    return done


def _totals(path: Path) -> int:
    found = re.search(r"^totals: (\d+)", path.read_text(encoding="utf-8"), re.MULTILINE)
    if found is None:
        raise RuntimeError(f"{path} holds no totals")
    return int(found.group(1))


def marked(tree: Path, workload: str, turns: int, warmup: int, profiles: Path | None) -> float:
    """Instructions per turn: the part of one process between its two markers."""
    with tempfile.TemporaryDirectory() as folder:
        out = (profiles or Path(folder)) / f"callgrind.{_name(tree, workload)}"
        _callgrind(tree, workload, turns, warmup, str(out), "--dump-before=sys_call_tracing")
        counted = out.with_name(out.name + ".2")
        if not counted.exists():
            raise RuntimeError(
                "callgrind never met the marker: this interpreter's symbol table does not name "
                "sys_call_tracing (a stripped build); use --difference"
            )
        return _totals(counted) / turns


def difference(tree: Path, workload: str, turns: int, warmup: int, profiles: Path | None) -> float:
    """Instructions per turn: whole processes of ``turns`` and twice as many, subtracted."""

    def collected(n: int) -> int:
        out = (
            os.devnull
            if profiles is None
            else str(profiles / f"callgrind.{_name(tree, workload)}.{n}")
        )
        found = re.search(r"Collected : (\d+)", _callgrind(tree, workload, n, warmup, out).stderr)
        if found is None:
            raise RuntimeError(f"callgrind printed no count for {workload} on {tree}")
        return int(found.group(1))

    return (collected(2 * turns) - collected(turns)) / turns


_SIDES: dict[Path, str] = {}


def _name(tree: Path, workload: str) -> str:
    return f"{_SIDES.get(tree, tree.name)}.{re.sub(r'[^a-z0-9]+', '-', workload)}"


def per_turn(
    trees: dict[str, Path], workloads: list[str], options: argparse.Namespace
) -> dict[str, dict[str, float]]:
    """Instructions per turn of each workload in each tree."""
    _SIDES.update({tree: side for side, tree in trees.items()})
    way = difference if options.difference else marked
    profiles = None if options.profiles is None else Path(options.profiles)
    jobs = [(side, w) for side in trees for w in workloads]

    def job(side: str, workload: str) -> float:
        return way(trees[side], workload, options.iterations, options.warmup, profiles)

    with ThreadPoolExecutor(max_workers=options.jobs) as pool:
        counts = dict(zip(jobs, pool.map(lambda j: job(*j), jobs), strict=True))
    return {side: {w: counts[side, w] for w in workloads} for side in trees}


def report(figures: dict[str, dict[str, float]], workloads: list[str]) -> list[str]:
    before, after = figures["before"], figures["after"]
    lines = [f"{'workload':30} {'before':>10} {'after':>10} {'after/before':>13}"]
    for family, names in WORKLOADS.items():
        chosen = [w for w in names if w in workloads]
        for w in chosen:
            lines.append(
                f"{w:30} {before[w]:10,.0f} {after[w]:10,.0f} {after[w] / before[w]:13.4f}"
            )
        if len(chosen) > 1:
            b, a = sum(before[w] for w in chosen), sum(after[w] for w in chosen)
            lines.append(f"{family + ' (all of the above)':30} {b:10,.0f} {a:10,.0f} {a / b:13.4f}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", nargs="?", help="a source tree or a git revision")
    parser.add_argument("--after", default=str(ROOT), help="a source tree or a git revision")
    parser.add_argument("--iterations", type=int, default=100, help="turns of the shorter run")
    parser.add_argument("--warmup", type=int, default=20, help="turns before either run counts")
    parser.add_argument("--only", nargs="+", choices=ALL, help="just these workloads")
    parser.add_argument("--jobs", type=int, default=2, help="processes at once")
    parser.add_argument(
        "--difference",
        action="store_true",
        help="count N and 2N turns in whole processes and subtract (no marker needed)",
    )
    parser.add_argument("--profiles", metavar="DIR", help="keep callgrind's output files here")
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE as JSON")
    parser.add_argument("--run", nargs=3, help=argparse.SUPPRESS)  # WORKLOAD TURNS WARMUP
    options = parser.parse_args()
    if options.run:
        run_workload(options.run[0], int(options.run[1]), int(options.run[2]))
        return
    if options.before is None:
        parser.error("give the tree to compare with (a directory or a git revision)")
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (Debian: apt-get install valgrind)")
    if options.profiles is not None:
        Path(options.profiles).mkdir(parents=True, exist_ok=True)
    workloads = list(options.only or ALL)
    with source_tree(options.before) as before, source_tree(options.after) as after:
        figures = per_turn({"before": before, "after": after}, workloads, options)
    how = "N and 2N turns subtracted" if options.difference else "between markers"
    print(
        f"instructions per turn ({CALLS} calls a turn; {options.iterations} turns counted "
        f"{how}, after {options.warmup} of warm-up)\n"
    )
    print("\n".join(report(figures, workloads)))
    if options.json is not None:
        result = {
            "before": options.before,
            "after": "this checkout" if options.after == str(ROOT) else options.after,
            "calls_per_turn": CALLS,
            "iterations": options.iterations,
            "warmup": options.warmup,
            "method": "difference" if options.difference else "markers",
            "families": {f: [w for w in ws if w in workloads] for f, ws in WORKLOADS.items()},
            "instructions_per_turn": figures,
        }
        with open(options.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
