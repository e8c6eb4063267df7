"""Screenshots of a built site, for a person to read: the digits board, an entry page and the
lee-news board, at a desktop width (1280 px) and a phone width (390 px), full page.

    python scripts/site_screenshots.py public/ OUT_DIR [--page leaderboards/digits/ ...]

Serves the built folder on 127.0.0.1 and drives Debian's /usr/bin/chromium through Playwright (as
tests/test_site_browser.py does: no browser download). Charts are given a moment to draw.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from site_entries import local_server  # noqa: E402

WIDTHS = (1280, 390)
DEFAULT_PAGES = ("leaderboards/digits/", "leaderboards/lee-news/")


def first_entry_page(site: Path) -> str | None:
    """The first image entry page of the digits board (its link in the board's first row)."""
    for page in sorted((site / "entries").glob("*/*/index.html")):
        if "digits-deepinversion" in str(page):
            return str(page.parent.relative_to(site)) + "/"
    return None


def shoot(site: Path, out: Path, pages: list[str]) -> list[Path]:
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    shots = []
    with local_server(site) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"])
        for width in WIDTHS:
            context = browser.new_context(viewport={"width": width, "height": 900})
            page = context.new_page()
            for path in pages:
                page.goto(f"{url}/{path}")
                page.wait_for_timeout(3000)  # Plotly draws after load, and the tab row fades in
                name = path.strip("/").replace("/", "_") or "home"
                file = out / f"{name}-{width}.png"
                page.screenshot(path=str(file), full_page=True)
                shots.append(file)
            context.close()
        browser.close()
    return shots


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--page", action="append", default=None, help="a page path under the site (repeatable)")
    args = parser.parse_args(argv)
    pages = args.page or [DEFAULT_PAGES[0], first_entry_page(args.site), DEFAULT_PAGES[1]]
    # "" is the home page (only a page that could not be found, None, is left out)
    for file in shoot(args.site, args.out, [p for p in pages if p is not None]):
        print(file)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
