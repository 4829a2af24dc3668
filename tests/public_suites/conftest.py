from __future__ import annotations

import pytest

from .bfcl_suite import BfclSuite, Unavailable, install, load, suite_run
from .fetch import unavailable
from .suite_checks import SuiteRun


@pytest.fixture(scope="session")
def bfcl() -> BfclSuite:
    """BFCL's functions and ground-truth calls (bfcl-eval installed into the suites' cache by
    pip the first time; skipped without a package index, failed in CI)."""
    try:
        target = install()
    except Unavailable as exc:
        unavailable(str(exc))
    return load(target)


@pytest.fixture(scope="session")
def bfcl_run(bfcl: BfclSuite) -> SuiteRun:
    """BFCL's functions declared, and its distinct calls validated, in each mode (each once,
    whichever test asks first)."""
    return suite_run(bfcl)
