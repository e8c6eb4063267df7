"""Seed groups (mean ± std, error bars, per-seed exports) and the attack x variant matrix pages.

One `mkdocs build --strict` from real signed MI-Face entries (re-scored): alpha's three seeds of
one configuration form a group; alpha's other configuration, beta's run of the same configuration
and a forged fourth seed of alpha (claimed SSIM raised after signing) do not join it. The browser
test checks that the digits board shows the group's mean ± std and that Plotly draws its error bars.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from reconbench.image.evaluation import evaluate
from reconbench.core.tracks import all_tracks
from site_entries import NO_WEIGHTS, build_site, local_server, make_key, submit_entry


pytestmark = pytest.mark.slow  # a minute or more of CPU: the slow set (make test-slow; benchmarks/bench_test_split.py)


def run(work, key, seed, *, iterations=15, init="uniform"):
    out = work / f"run-{seed}-{iterations}-{init}-{key.stem}"
    evaluate(attack_spec="mi-face", key_path=key, out=out, seed=seed, config={"iterations": iterations, "init": init},
             weights_dir=NO_WEIGHTS)  # it records the evaluate line of these arguments (core/run_command.py)
    return out


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    work = tmp_path_factory.mktemp("seeds")
    subs = work / "submissions"
    alpha, beta = make_key(work, "alpha"), make_key(work, "beta")
    for seed in (0, 1, 2):  # alpha's group: same config, three seeds
        submit_entry(run(work, alpha, seed), subs, "alpha", alpha)
    submit_entry(run(work, alpha, 3, iterations=5), subs, "alpha", alpha)  # other config: a single run
    submit_entry(run(work, beta, 4), subs, "beta", beta)  # same config, other team: not alpha's group
    forged = submit_entry(run(work, alpha, 5), subs, "alpha", alpha)
    doc = json.loads((forged / "result.json").read_text())
    doc["payload"]["metrics"]["ssim"]["value"] = 0.99  # a claim that fails validation: never in a group
    (forged / "result.json").write_text(json.dumps(doc))
    out = work / "public"
    out.mkdir()
    with local_server(out) as url:
        proc = build_site(subs, out, rescore=True, site_url=url + "/")
        assert proc.returncode == 0, proc.stderr[-4000:]
        yield out, url


def page(out, path):
    return (out / path / "index.html").read_text(encoding="utf-8")


def export(out):
    return json.loads((out / "downloads" / "leaderboard.json").read_text())


def group_members(out):
    return [e for e in export(out)["entries"] if e["seed_group"]]


def test_board_shows_the_group_as_mean_and_std_and_single_runs_unchanged(site):
    out, _ = site
    members = group_members(out)
    assert sorted(e["seed"] for e in members) == [0, 1, 2] and {e["team"] for e in members} == {"alpha"}
    board = page(out, "leaderboards/digits")
    rows = re.findall(r'<tr [^>]*data-seeds="(\d+)"[^>]*>(.*?)</tr>', board, re.S)
    assert [n for n, _ in rows] == ["3"]
    ssim = [e["ssim"] for e in members]
    mean = sum(ssim) / 3
    std = (sum((v - mean) ** 2 for v in ssim) / 2) ** 0.5
    assert std > 0  # seeded starts: the seeds differ
    assert f"{mean:.3f} ± {std:.3f}" in rows[0][1] and "3 seeds" in rows[0][1]
    assert all(f">seed {s}</a>" in rows[0][1] for s in (0, 1, 2))
    table = board[board.index('id="board-digits-static-white-box-none"'):]
    assert table[:table.index("</table>")].count(" data-training=") == 3  # group + 2 single runs


def test_failed_entry_and_other_team_stay_out_of_the_group(site):
    out, _ = site
    entries = export(out)["entries"]
    failed = [e for e in entries if e["trust"] == "failed"]
    assert len(failed) == 1 and failed[0]["team"] == "alpha" and failed[0]["seed_group"] is None
    assert all(e["seed_group"] is None for e in entries if e["team"] == "beta")


def test_chart_error_bars_and_exports_carry_per_seed_values(site):
    out, _ = site
    board = page(out, "leaderboards/digits")
    figures = [json.loads(html.unescape(m)) for m in re.findall(r'data-figure="([^"]*)"', board)]
    bars = [t["error_y"]["array"] for f in figures for t in f["data"] if t.get("error_y")]
    members = group_members(out)
    ssim = [e["ssim"] for e in members]
    std = (sum((v - sum(ssim) / 3) ** 2 for v in ssim) / 2) ** 0.5
    assert any(max(a) == pytest.approx(std) and min(a) == 0.0 for a in bars), bars
    groups = export(out)["seed_groups"]
    assert len(groups) == 1 and groups[0]["n_seeds"] == 3 and groups[0]["seeds"] == [0, 1, 2]
    by_id = {e["entry_id"]: e for e in members}
    assert {s["entry_id"] for s in groups[0]["per_seed"]} == set(by_id)
    for s in groups[0]["per_seed"]:
        assert s["metrics"]["ssim"] == by_id[s["entry_id"]]["ssim"]
    assert groups[0]["std"]["ssim"] == pytest.approx(std)
    assert "seed_group" in (out / "downloads" / "leaderboard.csv").read_text().splitlines()[0]


def test_exported_positions_are_the_board_s(site):
    """Issue 24, point 9: leaderboard.json carries each entry's place in its table of the board (a
    seed group's place on each member), no place for a failed entry."""
    out, _ = site
    entries = export(out)["entries"]
    by_id = {e["entry_id"]: e for e in entries}
    assert all(e["position"] is None for e in entries if e["trust"] == "failed")
    board = page(out, "leaderboards/digits")
    table = board[board.index('id="board-digits-static-white-box-none"'):]
    table = table[:table.index("</table>")]
    rows = re.findall(r'<tr class="rb-ranked"(.*?)</tr>', table, re.S)
    assert len(rows) == 3
    for row in rows:
        place = int(re.search(r'<td data-value="(\d+)">', row).group(1))
        ids = re.findall(r'title="(digits-mi-face-[^"]+)"', row)
        assert ids and all(by_id[i]["position"] == place for i in ids), (place, ids)
    import csv

    with open(out / "downloads" / "leaderboard.csv", newline="", encoding="utf-8") as f:
        for cells in csv.DictReader(f):
            expected = by_id[cells["entry_id"]]["position"]
            assert cells["position"] == ("" if expected is None else str(expected)), cells["entry_id"]


def test_matrix_page_per_zoo_family_and_digits(site):
    out, _ = site
    for dataset, arch in {(t.dataset, t.architecture) for t in all_tracks()}:
        assert (out / "matrix" / f"{dataset}-{arch}" / "index.html").is_file(), (dataset, arch)
    celeba = page(out, "matrix/celeba-vgg16")
    for title in ("plain", "pre-trained", "BN-frozen", "bottleneck 512", "DP-SGD", "pruned", "backdoor"):
        assert f">{title}</th>" in celeba
    # a matrix without entries is the plan of its tracks, not a table of "no entry yet" (issue 24, point 7)
    assert "No entry yet on any of its" in celeba and "rb-matrix-empty" not in celeba
    digits = page(out, "matrix/sklearn-digits-small-cnn")
    cell = re.search(r'<td class="rb-num" data-track="digits"[^>]*>(.*?)</td>', digits, re.S).group(1)
    entries = [e for e in export(out)["entries"] if e["track"] == "digits" and e["trust"] != "failed"]
    group = [e["ssim"] for e in entries if e["seed_group"]]
    best = max([e["ssim"] for e in entries if not e["seed_group"]] + [sum(group) / len(group)])
    assert f"SSIM {best:.3f}" in cell and "re-scored" in cell
    assert "no entry yet" in digits  # the other attacks have no digits entry
    assert 'href="../matrix/celeba-vgg16/"' in page(out, "matrix") or "celeba-vgg16/" in page(out, "matrix")


@pytest.mark.browser
@pytest.mark.skipif(not Path("/usr/bin/chromium").exists(), reason="needs Debian's chromium at /usr/bin/chromium")
def test_browser_shows_mean_std_and_error_bars(site, browser):
    """Playwright (pytest-playwright's `browser`, launched with /usr/bin/chromium: tests/conftest.py)."""
    _, url = site
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        b = context.new_page()
        b.goto(f"{url}/leaderboards/digits/")
        b.wait_for_selector('#board-digits-static-white-box-none tr[data-seeds="3"]', state="attached")
        text = b.text_content('#board-digits-static-white-box-none tr[data-seeds="3"]')
        assert re.search(r"\d\.\d{3} ± \d\.\d{3}", text) and "3 seeds" in text
        # Plotly drew error bars (one per point of the trace that carries them) in both charts
        b.wait_for_function("document.querySelectorAll('.rb-chart .scatterlayer .errorbar').length >= 3")
        assert b.evaluate("[...document.querySelectorAll('.rb-chart .errorbar path')].some(p => p.getBBox().height > 1)")
    finally:
        context.close()
