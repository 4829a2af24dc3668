"""Full-page screenshots of a built docs site, to look at what the pages really show.

Serves the built site directory on 127.0.0.1 (an ephemeral port) and opens each page in the
machine's chromium, headless, driven by Playwright (no browser download), writing one PNG per
page::

    mkdocs build --strict --site-dir SITE
    python scripts/screenshot_docs.py --site SITE --out SHOTS [--page PATH ...]

PATH is a page's path in the site (``getting-started/``, ``security/``, ``index.html``); the
default pages are the home page, the getting-started guide and the security model (the pages
missing from the site are skipped with a warning). A PNG is named after its page:
``index.png``, ``getting-started.png``, ``reference-mcp.png``.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import shutil
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

DEFAULT_PAGES = ("", "getting-started/", "security/")
VIEWPORT = {"width": 1280, "height": 900}


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def serve(site: Path) -> Iterator[str]:
    """The site served on 127.0.0.1 in a thread; yields its base URL (ending with ``/``)."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def page_file(site: Path, page: str) -> Path | None:
    """The HTML file that serves ``page`` in the built site, if there is one."""
    target = site / page.lstrip("/")
    if page in ("", "/") or page.endswith("/"):
        target = target / "index.html"
    return target if target.is_file() else None


def png_name(page: str) -> str:
    stem = page.strip("/").removesuffix(".html").removesuffix("/index") or "index"
    return stem.replace("/", "-") + ".png"


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        raise RuntimeError("chromium is not installed (Debian: apt-get install chromium)")
    return found


def screenshot(site: Path, out: Path, pages: Sequence[str] = DEFAULT_PAGES) -> list[Path]:
    """Full-page PNGs of ``pages`` of the built ``site`` into ``out``; returns their paths."""
    from playwright.sync_api import sync_playwright

    site = site.resolve()
    out.mkdir(parents=True, exist_ok=True)
    present = []
    for page in pages:
        if page_file(site, page) is None:
            print(f"warning: {page or '/'} is not in the site; skipped", file=sys.stderr)
        else:
            present.append(page)
    written = []
    with serve(site) as base, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium(), headless=True)
        try:
            tab = browser.new_page(viewport=VIEWPORT)  # type: ignore[arg-type]
            tab.set_default_timeout(30_000)
            for page in present:
                response = tab.goto(base + page.lstrip("/"), wait_until="networkidle")
                if response is None or not response.ok:
                    status = None if response is None else response.status
                    raise RuntimeError(f"{page or '/'}: HTTP {status}")
                path = out / png_name(page)
                tab.screenshot(path=str(path), full_page=True)
                written.append(path)
        finally:
            browser.close()
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, required=True, help="the built site directory")
    parser.add_argument("--out", type=Path, required=True, help="where the PNGs go")
    parser.add_argument(
        "--page",
        action="append",
        dest="pages",
        metavar="PATH",
        help="a page's path in the site (repeatable); default: "
        + ", ".join(p or "/" for p in DEFAULT_PAGES),
    )
    options = parser.parse_args(argv)
    if not (options.site / "index.html").is_file():
        parser.error(f"{options.site} is not a built site (no index.html)")
    for path in screenshot(options.site, options.out, options.pages or DEFAULT_PAGES):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
