"""Debian's chromium for the tests that drive a browser with Playwright (no browser download)."""

from __future__ import annotations

import os
import shutil

import pytest


def chromium() -> str:
    """The chromium executable; the test is skipped without one, and fails in CI (``CI`` set),
    where ``.ci/run`` installs it."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (.ci/run installs Debian's)")
        pytest.skip("chromium is not installed")
    return found
