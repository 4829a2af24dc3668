"""How much of each sweep a run of the suite takes, by its kind.

A module of its own, not conftest, so that test helpers (``corpus.py``) can read it.

Kinds, chosen by TOOLWIRE_HYPOTHESIS (dev, ci or deep; by default ci where CI is set, dev
elsewhere): "dev" is the README's run, short; "ci" is CI's whole one, the same examples on every
run (a failure there is reproducible and never a coin toss; local runs keep exploring new
ones); "deep" goes further. Each property test's example budget (its own max_examples, or the
default 100) is scaled by its run's factor: a tenth in dev, the whole of it in ci, five times
it in deep. Tests marked deep get the deep budget in any run. The corpus sweeps (a test per
real tool definition) take every record in ci and deep, and a fixed share in dev.
"""

from __future__ import annotations

import os

BUDGETS = {"dev": 0.1, "ci": 1.0, "deep": 5.0}
MIN_EXAMPLES = 10
"""A scaled budget never falls below this (nor above the test's own when that is lower)."""
RUN_KIND = os.environ.get("TOOLWIRE_HYPOTHESIS") or ("ci" if os.environ.get("CI") else "dev")
SHORT_SWEEP = 4
"""The README's run sweeps one real tool in this many, from every server."""


def scaled(examples: int, kind: str) -> int:
    """A property test's budget of ``examples``, scaled to a run of ``kind``."""
    return max(round(examples * BUDGETS[kind]), min(MIN_EXAMPLES, examples))
