"""The built leaderboard site in a real browser (headless Debian chromium over CDP).

Builds the site from three real MI-Face entries with `mkdocs build --strict`, serves it on
127.0.0.1 and checks what a reader sees: the Plotly chart drew points, a click on a column header
re-orders the board (better values first, then reversed), the taxonomy filter hides rows, and all
of it still works after material's instant navigation. A screenshot goes to test-output/.
"""

from __future__ import annotations


import pytest

from cdp import Browser, chromium_available
from site_entries import REPO, build_site, evaluate_entry, local_server, make_key, submit_entry

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not chromium_available(), reason="needs Debian's chromium at /usr/bin/chromium "
                                                        "(apt-get install -y chromium)"),
]

SCREENSHOT = REPO / "test-output" / "site-leaderboard.png"
BOARD = "#board-digits"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    work = tmp_path_factory.mktemp("site")
    subs = work / "submissions"
    key_a = make_key(work, "a")
    # Three entries with different quality (iterations) and two data-access values to filter on. One
    # team: MI-Face runs share many images across iteration counts, and another team's such run would be
    # refused as a near-duplicate of the first (checks/duplicates.py).
    for key, team, seed, iters, scenario in [
        (key_a, "alpha-lab", 0, 40, None),
        (key_a, "alpha-lab", 1, 3, "static/white-box/same"),
        (key_a, "alpha-lab", 2, 12, None),
    ]:
        run = evaluate_entry(work, key, seed=seed, iterations=iters, scenario=scenario)
        submit_entry(run, subs, team, key, name=f"Team {team}", links=[f"https://example.org/{team}"])
    out = work / "public"
    out.mkdir()
    with local_server(out) as url:
        # site_url must be where the copy is served: instant navigation matches sitemap URLs by port too
        proc = build_site(subs, out, rescore=True, site_url=url + "/")
        assert proc.returncode == 0, proc.stderr[-4000:]
        yield url


@pytest.fixture
def browser(tmp_path):
    with Browser(tmp_path / "chromium-profile") as b:
        yield b


def column_values(b: Browser, header: str) -> list[float]:
    """The data-value of one column, in the order the rows are shown."""
    return b.eval(f"""(() => {{
        const t = document.querySelector('{BOARD}');
        const i = [...t.tHead.rows[0].cells].findIndex(th => th.textContent.trim().startsWith('{header}'));
        return [...t.tBodies[0].rows].filter(r => !r.hidden).map(r => parseFloat(r.cells[i].dataset.value));
    }})()""")


def header_selector(b: Browser, header: str) -> str:
    index = b.eval(f"""[...document.querySelector('{BOARD}').tHead.rows[0].cells]
        .findIndex(th => th.textContent.trim().startsWith('{header}'))""")
    assert index >= 0, f"no {header} column"
    return f"{BOARD} thead th:nth-child({index + 1})"


def check_board(b: Browser) -> None:
    # Plotly drew the quality-vs-diversity and memorization charts as SVG with data points
    points = b.wait_for("document.querySelectorAll('.rb-chart .scatterlayer .point').length")
    assert points >= 3
    assert b.eval("document.querySelectorAll('.rb-chart .main-svg').length") >= 2

    initial = column_values(b, "SSIM")
    assert len(initial) == 3 and len(set(initial)) == 3, initial
    assert initial == sorted(initial, reverse=True), "the board starts best first (SSIM, higher is better)"
    assert b.eval(f"document.querySelector('{header_selector(b, 'SSIM')}').dataset.better") == "higher"

    ssim = header_selector(b, "SSIM")
    b.click(ssim)  # first click: better values first
    assert b.eval(f"document.querySelector('{ssim}').getAttribute('aria-sort')") == "descending"
    assert column_values(b, "SSIM") == sorted(initial, reverse=True)
    b.click(ssim)  # second click: reversed
    assert b.eval(f"document.querySelector('{ssim}').getAttribute('aria-sort')") == "ascending"
    after = column_values(b, "SSIM")
    assert after == sorted(initial) and after != initial

    mse = header_selector(b, "MSE")
    b.click(mse)  # MSE: lower is better, so the first click sorts ascending
    assert b.eval(f"document.querySelector('{mse}').getAttribute('aria-sort')") == "ascending"
    values = column_values(b, "MSE")
    assert values == sorted(values)

    # the taxonomy filter: one entry has same-distribution data access
    shown = b.eval(f"""(() => {{
        const s = document.querySelector('[data-rb-filter-for="board-digits"] select[data-axis="data"]');
        s.value = 'same'; s.dispatchEvent(new Event('change'));
        return [...document.querySelector('{BOARD}').tBodies[0].rows].filter(r => !r.hidden).length;
    }})()""")
    assert shown == 1
    shown = b.eval(f"""(() => {{
        const s = document.querySelector('[data-rb-filter-for="board-digits"] select[data-axis="data"]');
        s.value = ''; s.dispatchEvent(new Event('change'));
        return [...document.querySelector('{BOARD}').tBodies[0].rows].filter(r => !r.hidden).length;
    }})()""")
    assert shown == 3


def test_leaderboard_page_draws_sorts_and_filters(site, browser):
    browser.send("Emulation.setDeviceMetricsOverride", width=1400, height=1000, deviceScaleFactor=1, mobile=False)
    browser.navigate(f"{site}/leaderboards/digits/")
    assert "Leaderboard: digits" in browser.eval("document.querySelector('h1').textContent")
    check_board(browser)
    # restore the default view for the screenshot: best first
    browser.click(header_selector(browser, "#"))
    browser.eval("window.scrollTo(0, 0)")
    path = browser.screenshot(SCREENSHOT)
    assert path.stat().st_size > 20_000


def test_sort_and_charts_survive_instant_navigation(site, browser):
    browser.navigate(f"{site}/")
    browser.wait_for("typeof window.document$ !== 'undefined'")
    browser.eval("window.__rbNoReload = 1")
    # the Leaderboards tab goes to the combined board; from there, the digits board
    browser.click("a.md-tabs__link[href*='leaderboards']")
    browser.wait_for("location.pathname.endsWith('/leaderboards/')")
    browser.wait_for("document.querySelector(\".rb-track-list a[href$='digits/']\") !== null")
    browser.click(".rb-track-list a[href$='digits/']")
    browser.wait_for("location.pathname.endsWith('/leaderboards/digits/') && !!document.querySelector('#board-digits')")
    assert browser.eval("window.__rbNoReload") == 1, "navigation reloaded the page: instant navigation is off"
    check_board(browser)


def test_plotly_is_bundled_not_fetched(site):
    """plotly.min.js comes from the site itself (head of every page), never from a CDN."""
    import urllib.request

    with urllib.request.urlopen(f"{site}/leaderboards/digits/") as r:
        page = r.read().decode()
    assert 'src="../../assets/javascripts/plotly.min.js"' in page
    assert "cdn.plot.ly" not in page and "fonts.googleapis" not in page
    with urllib.request.urlopen(f"{site}/assets/javascripts/plotly.min.js") as r:
        assert r.status == 200 and len(r.read()) > 1_000_000
