"""What the site's search index holds of the pages that grow with the board (issue 26: at 10,000
entries the index stays under 5 MB).

- An entry page is indexed by its title and a one-line summary (team, attack, track, taxonomy cell,
  trust): its tables, gallery, evidence, provenance and validation report are marked
  `data-search-exclude` (MkDocs Material's search plugin skips such elements and sections).
- The entry tables of the boards and attack pages are left out the same way: rows of numbers are
  what the boards and the downloads are for; an entry is found by its id through its own page.
Measured by benchmarks/bench_site_build.py (search index size per entry).
"""

from __future__ import annotations

import html as html_lib
import re

ENTRY_PREFIX = "entries/"
TABLE_PAGES = ("leaderboards/", "attacks/")
_TABLE = re.compile(r"<table(?=[\s>])")
_SUBHEADING = re.compile(r"<h([2-6])(?=[\s>])")
_H1_END = re.compile(r"</h1>")


def summaries(frame) -> dict[str, str]:
    """docs path of each entry page -> its one-line summary (escaped HTML)."""
    out = {}
    for row in frame.to_dict("records"):
        page = row.get("page")
        if not page:
            continue
        parts = [f"{row.get('team_name') or row.get('team')} ({row.get('team')})"]
        parts += [str(row[k]) for k in ("attack", "track", "scenario") if isinstance(row.get(k), str) and row.get(k)]
        parts.append(f"trust: {row.get('trust')}")
        out[page] = html_lib.escape(" · ".join(parts))
    return out


def for_search(html: str, src_uri: str, summary: str | None = None) -> str:
    """The page's HTML with what search should not index marked data-search-exclude."""
    if src_uri.startswith(ENTRY_PREFIX):
        html = _SUBHEADING.sub(r"<h\1 data-search-exclude", _TABLE.sub("<table data-search-exclude", html))
        if summary:
            html = _H1_END.sub(f'</h1>\n<p class="rb-summary">{summary}</p>', html, count=1)
        return html
    if src_uri.startswith(TABLE_PAGES):
        return _TABLE.sub("<table data-search-exclude", html)
    return html
