"""Contributor text is shown as text: hostile strings in team.toml and an entry README come out
escaped in every built page, never as markup, script or link (jinja2 autoescape; the README
through markdown-it with raw HTML off; Python-Markdown never sees contributor text).

The hostile strings are ones the validator accepts (a team name may contain '<' and '>', a link
only has to be an ASCII https URL), so the site is the last line of defence.
"""

from __future__ import annotations

import html
import html.parser
import json
import re
from pathlib import Path

import pytest

from site_entries import build_site, evaluate_entry, make_key, submit_entry

NAME = "<script>alert('name')</script> & <b>Co</b>"
CONTACT = '"><img src=x onerror=alert("contact")>'
LINKS = ['https://example.org/"><script>alert("link")</script>', "https://example.org/ok?a=1&b=<i>"]
README = """# Method

<script>alert('readme')</script>

<img src=x onerror=alert('img')> <iframe src="https://evil.example"></iframe>

[click](javascript:alert('js-link')) [data](data:text/html;base64,PHNjcmlwdD4=)
![tracker](https://evil.example/pixel.png)

<!-- rb:home-best -->
--8<-- "/etc/passwd"

| a | b |
|---|---|
| <b>x</b> | `<script>` |
"""
MARKERS = ["alert('name')", 'alert("contact")', 'alert("link")', "alert('readme')", "alert('img')", "alert('js-link')"]


class PageScan(html.parser.HTMLParser):
    """What a browser would execute or follow: script text, event handlers, URLs."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.scripts: list[str] = []
        self.handlers: list[tuple[str, str]] = []
        self.urls: list[str] = []
        self.srcs: list[str] = []  # what the page loads by itself (images, frames, scripts)
        self.tags: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self._in_script = tag == "script"
        for name, value in attrs:
            if name.startswith("on"):
                self.handlers.append((name, value or ""))
            if name in ("href", "src", "action", "formaction") and value:
                self.urls.append(value)
            if name == "src" and value:
                self.srcs.append(value)
            if tag == "script" and name == "src":
                self.scripts.append(f"src={value}")

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts.append(data)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    work = tmp_path_factory.mktemp("escaping")
    key = make_key(work)
    run = evaluate_entry(work, key, seed=0, iterations=10)
    entry = submit_entry(run, work / "submissions", "hostile", key, name=NAME, links=LINKS, contact=CONTACT,
                         readme=README)
    out = work / "public"
    # re-scored: only verified values are charted, and the chart's hover text is tested below
    proc = build_site(work / "submissions", out, rescore=True)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out, entry


def scan(path: Path) -> PageScan:
    parser = PageScan()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def test_entry_was_accepted_with_its_hostile_strings(built):
    """Otherwise the test would prove nothing: the page must show the team and README."""
    out, entry = built
    page = (out / "entries" / "hostile" / entry.name / "index.html").read_text()
    assert "rb-trust-re-scored" in page
    assert "&lt;script&gt;alert(&#39;name&#39;)&lt;/script&gt; &amp; &lt;b&gt;Co&lt;/b&gt;" in page
    assert "&lt;script&gt;alert('readme')&lt;/script&gt;" in page  # README raw HTML shown as text
    assert "&lt;img src=x onerror=alert('img')&gt;" in page
    # ... while its Markdown still renders (tags may carry the search index's data-search-exclude)
    assert re.search(r"<table[ >]", page) and re.search(r"<h3[^>]*>Method</h3>", page)


def test_no_hostile_markup_anywhere(built):
    out, _ = built
    pages = sorted(out.rglob("*.html"))
    assert len(pages) > 10
    for path in pages:
        text = path.read_text(encoding="utf-8")
        page = scan(path)
        for marker in MARKERS:
            for script in page.scripts:
                assert marker not in script, f"{path}: contributor text inside a <script>"
            for name, value in page.handlers:
                assert marker not in value, f"{path}: contributor text in an {name} handler"
        for url in page.urls:
            assert not url.lower().startswith(("javascript:", "data:", "vbscript:")), f"{path}: unsafe URL {url}"
        for src in page.srcs:
            assert "evil.example" not in src, f"{path}: a README image or iframe loads a third-party URL"
        assert "iframe" not in page.tags, f"{path}: an iframe from a README"
        assert "root:x:0:0" not in text, f"{path}: a README included a local file (snippet syntax)"


def test_readme_cannot_pull_in_generated_fragments(built):
    out, entry = built
    page = (out / "entries" / "hostile" / entry.name / "index.html").read_text()
    readme = page[page.index('<div class="rb-readme">'):]
    assert "rb-best" not in readme  # the home page's fragment was not inserted for the README's placeholder
    assert "&lt;!-- rb:home-best --&gt;" in readme
    assert '--8&lt;-- &quot;/etc/passwd&quot;' in readme
    # README links are marked as user content (no endorsement, no opener access)
    assert 'href="https://evil.example/pixel.png" rel="nofollow ugc noopener"' in readme


def test_links_and_contact_are_inert(built):
    out, entry = built
    page = scan(out / "entries" / "hostile" / entry.name / "index.html")
    # the https links are links (escaped in the attribute), and nothing else became one
    assert any(u.startswith("https://example.org/\"><script>") for u in page.urls)
    assert "https://example.org/ok?a=1&b=<i>" in page.urls
    text = (out / "entries" / "hostile" / entry.name / "index.html").read_text()
    assert "&#34;&gt;&lt;img src=x onerror=alert(&#34;contact&#34;)&gt;" in text


def test_boards_and_charts_escape_the_team_name(built):
    out, _ = built
    board = (out / "leaderboards" / "digits" / "index.html").read_text()
    assert "&lt;script&gt;alert(&#39;name&#39;)&lt;/script&gt;" in board
    assert "<script>alert('name')" not in board
    # chart hover text: escaped twice (plotly decodes one level when it draws the label)
    start = board.index('data-figure="') + len('data-figure="')
    figure = json.loads(html.unescape(board[start:board.index('"', start)]))
    labels = json.dumps(figure["data"])
    assert "<script>" not in labels and "&lt;script&gt;alert" in labels


def test_downloads_keep_the_name_as_data(built):
    out, _ = built
    doc = json.loads((out / "downloads" / "leaderboard.json").read_text())
    assert doc["entries"][0]["team_name"] == NAME  # JSON is data: the exact string, for others to escape
    csv_text = (out / "downloads" / "leaderboard.csv").read_text()
    assert "<script>alert('name')</script>" in csv_text

