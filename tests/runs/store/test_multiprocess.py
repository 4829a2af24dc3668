"""Several processes resuming the same runs, on a SQLite file and on a real Redis server.

Worker processes (``workers.py serve``) race to run the same turn, 200 runs per store (the
README's run races 48 runs on SQLite; the deep run, every store), with random jitter and tool
durations; in some runs the worker that runs a chosen call dies right after the call takes
effect (between "running" and "completed"), and is replaced. A ledger written by the tool
itself counts every execution, whichever process ran it.
"""

from __future__ import annotations

import json
import random
import selectors
import subprocess
import sys
import time
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest

from toolwire import allow, decide, deny

WORKERS = Path(__file__).parent / "workers.py"
sys.path.insert(0, str(Path(__file__).parent))
from workers import ledger_counts, open_store  # noqa: E402

ROUNDS = 200
SHORT_ROUNDS = 48
"""The README's run races on one store, in fewer rounds (six workers killed); the deep run
races on every store."""
N_WORKERS = 3
KILL_EVERY = 8
INTERRUPTED = "it is not run again, so whether it took effect is unknown."
"""How every answer to a call whose worker died ends."""
DEADLINE = 120.0
"""Seconds any worker may take to answer one command before the test fails (a hang)."""


def _spec(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """The store's URL, as a worker opens it with ``toolwire.store.from_url``."""
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'runs.db'}"
    return request.getfixturevalue(f"{kind}_url")


class Worker:
    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(WORKERS), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )

    def send(self, command: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()

    def stop(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=30)


def gather(workers: list[Worker]) -> dict[int, dict[str, Any] | None]:
    """Each worker's answer to the last command; None for a worker that died (reaped at once,
    so the others see it gone)."""
    answers: dict[int, dict[str, Any] | None] = {}
    with selectors.DefaultSelector() as selector:
        for slot, worker in enumerate(workers):
            assert worker.process.stdout is not None
            selector.register(worker.process.stdout, selectors.EVENT_READ, slot)
        deadline = time.monotonic() + DEADLINE
        while len(answers) < len(workers):
            ready = selector.select(timeout=max(0.0, deadline - time.monotonic()))
            assert ready, f"workers {set(range(len(workers))) - set(answers)} hang"
            for key, _ in ready:
                slot = key.data
                line = key.fileobj.readline()  # type: ignore[union-attr]
                if line:
                    answers[slot] = json.loads(line)
                else:
                    workers[slot].process.wait(timeout=30)
                    assert workers[slot].process.returncode == 17, "a worker died unplanned"
                    answers[slot] = None
                selector.unregister(key.fileobj)
    return answers


@pytest.mark.parametrize(
    ("kind", "rounds"),
    [
        pytest.param("sqlite", SHORT_ROUNDS, id="sqlite-short"),
        pytest.param("sqlite", ROUNDS, marks=pytest.mark.deep, id="sqlite"),
        pytest.param("redis", ROUNDS, marks=pytest.mark.deep, id="redis"),
        pytest.param("postgres", ROUNDS, marks=pytest.mark.deep, id="postgres"),
    ],
)
def test_racing_workers_never_run_a_call_twice_and_answer_every_call(
    kind: str, rounds: int, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    spec = _spec(kind, tmp_path, request)
    ledger = str(tmp_path / "ledger.db")
    ledger_counts(ledger)  # creates it
    rng = random.Random(8)
    store = open_store(spec)
    workers = [Worker("serve", spec, ledger) for _ in range(N_WORKERS)]
    killed: set[str] = set()
    denied: set[str] = set()
    answers_by_tag: dict[str, list[tuple[str | None, str]]] = {}
    try:
        for round_ in range(rounds):
            run_id = f"race-{round_}"
            calls = [
                ["effect", f"{round_}/a", "a"],
                ["guarded", f"{round_}/g", "g"],
                ["effect", f"{round_}/b", "b"],
                ["effect", f"{round_}/c", "c"],
            ]
            kill = None
            if round_ % KILL_EVERY == 0:
                kill = rng.choice([f"{round_}/a", f"{round_}/b", f"{round_}/g"])
                killed.add(kill)
            for phase in ("first", "resume"):
                if phase == "resume":  # this process decides; the workers resume
                    verdict = rng.choice([allow(), allow(), deny("not today")])
                    if kill == f"{round_}/g":
                        verdict = allow()  # it is to run, and its worker to die
                    if not verdict.allowed:
                        denied.add(f"{round_}/g")
                    anyio.run(partial(decide, run_id, "g", verdict, store=store))
                for worker in workers:
                    worker.send(
                        {
                            "run_id": run_id,
                            "calls": calls,
                            "kill": kill,
                            "jitter": rng.random() * 0.003,
                        }
                    )
                answers = gather(workers)
                for slot, answer in answers.items():
                    if answer is None:  # died on the kill call: replace it
                        workers[slot] = Worker("serve", spec, ledger)
                    elif phase == "first":
                        assert answer == {"pending": ["g"]}
                    else:
                        outcomes = answer["outcomes"]
                        assert [o[0] for o in outcomes] == ["a", "g", "b", "c"]
                        for (call_id, kind_, text, _), (_, tag, _) in zip(
                            outcomes, calls, strict=True
                        ):
                            assert call_id
                            answers_by_tag.setdefault(tag, []).append((kind_, text))
    finally:
        for worker in workers:
            worker.stop()

    counts = ledger_counts(ledger)
    tags = [f"{r}/{c}" for r in range(rounds) for c in "agbc"]
    assert max(counts.values()) == 1, Counter(counts.values())  # never twice
    assert len(killed) == rounds // KILL_EVERY
    interrupted: set[str] = set()
    for tag in tags:
        answered = set(answers_by_tag.get(tag, []))
        assert answered, f"{tag} was never answered"
        if tag in denied:
            assert answered == {("approval_denied", "Denied: not today.")}
            assert tag not in counts
        elif any(kind_ == "interrupted" for kind_, _ in answered):
            # claimed by a worker that died: every answer says so, in the same words (the run
            # keeps the verdict), and none pretends it ran
            [(_, text)] = answered
            assert text.endswith(INTERRUPTED), text
            interrupted.add(tag)
        else:
            # every worker gave the one answer the call had: the result of its one execution
            [(kind_, text)] = answered
            assert kind_ is None
            assert text.startswith(f"{tag} ")
            assert counts[tag] == 1
    # the calls that took effect just before their worker died are among them; calls that
    # dying worker had claimed but not started may be too, and nothing else
    assert killed <= interrupted
    killed_rounds = {tag.split("/")[0] for tag in killed}
    assert {tag.split("/")[0] for tag in interrupted} <= killed_rounds
    assert all(counts[tag] == 1 for tag in killed)
    # and it was a race: in some runs, calls of the one turn ran in different processes
    runners: dict[str, set[str]] = {}
    for tag, answered in answers_by_tag.items():
        for kind_, text in answered:
            if kind_ is None:
                runners.setdefault(tag.split("/")[0], set()).add(text.rsplit(" ", 1)[-1])
    assert any(len(pids) > 1 for pids in runners.values())


@pytest.mark.parametrize("kind", ["sqlite", "redis", "postgres"])
def test_a_turn_pending_in_one_process_decided_in_another_completes_in_a_third(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    spec = _spec(kind, tmp_path, request)
    ledger = str(tmp_path / "ledger.db")
    ledger_counts(ledger)

    def run(*args: str) -> dict[str, Any]:
        done = subprocess.run(
            [sys.executable, str(WORKERS), *args],
            capture_output=True,
            text=True,
            timeout=DEADLINE,
            check=True,
        )
        return json.loads(done.stdout)  # type: ignore[no-any-return]

    run_id = f"turn-{kind}"
    first = run("turn", spec, ledger, run_id)  # process A: two calls run, one waits
    [pending] = first["pending"]
    assert run("decide", spec, run_id, pending, "allow") == {"decided": pending}  # process B
    third = run("turn", spec, ledger, run_id)  # process C completes the turn
    texts = [r["functionResponse"]["response"] for r in third["results"]]
    assert [next(iter(t.values())).split(" ")[0] for t in texts] == [
        f"{run_id}/a",
        f"{run_id}/g",
        f"{run_id}/b",
    ]
    assert ledger_counts(ledger) == {f"{run_id}/a": 1, f"{run_id}/g": 1, f"{run_id}/b": 1}
    # a fourth process answers everything from the store
    assert run("turn", spec, ledger, run_id) == third
    assert ledger_counts(ledger) == {f"{run_id}/a": 1, f"{run_id}/g": 1, f"{run_id}/b": 1}
