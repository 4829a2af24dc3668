"""The hypothesis budget of each kind of run of the suite.

A module of its own, not conftest, so that test helpers (the state machines') can read it.

Kinds, chosen by TOOLWIRE_HYPOTHESIS (dev, ci or deep; by default ci where CI is set, dev
elsewhere): "dev" is the README's run, short; "ci" is CI's whole one, the same examples on every
run (a failure there is reproducible and never a coin toss; local runs keep exploring new
ones); "deep" goes further. Each property test's example budget (its own max_examples, or the
default 100) is scaled by its run's factor: a tenth in dev, the whole of it in ci, five times
it in deep. Tests marked deep get the deep budget in any run.
"""

from __future__ import annotations

import os

BUDGETS = {"dev": 0.1, "ci": 1.0, "deep": 5.0}
MIN_EXAMPLES = 10
"""A scaled budget never falls below this (nor above the test's own when that is lower)."""
RUN_KIND = os.environ.get("TOOLWIRE_HYPOTHESIS") or ("ci" if os.environ.get("CI") else "dev")


def scaled(examples: int, kind: str) -> int:
    """A property test's budget of ``examples``, scaled to a run of ``kind``."""
    return max(round(examples * BUDGETS[kind]), min(MIN_EXAMPLES, examples))
