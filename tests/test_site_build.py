"""`mkdocs build --strict` builds the whole site from submissions/ (and from an empty one), with
galleries, downloads and failed entries shown as failed. Browser behaviour: test_site_browser.py;
escaping: test_site_escaping.py.
"""

from __future__ import annotations

import html
import io
import json

import markupsafe
import numpy as np
import pytest
from PIL import Image

from site_entries import build_site, evaluate_entry, make_key, submit_entry


pytestmark = pytest.mark.slow  # a minute or more of CPU: the slow set (make test-slow; benchmarks/bench_test_split.py)


def read(out, path):
    return (out / path).read_text(encoding="utf-8")


def test_empty_submissions_build(tmp_path):
    from reconbench.image.attacks import ATTACKS

    empty = tmp_path / "submissions"
    empty.mkdir()
    proc = build_site(empty, tmp_path / "public")
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = tmp_path / "public"
    assert "No ranked entries yet" in read(out, "index.html")
    assert "No entries yet." in read(out, "leaderboards/digits/index.html")
    assert "No entries to chart yet." in read(out, "charts/index.html")
    for name in ATTACKS:  # one page per registered attack, entries or not
        assert (out / "attacks" / name / "index.html").is_file()
        assert json.loads(read(out, f"downloads/badges/{name}.json"))["message"] == "no entries"
    from reconbench.core.catalogue import TEXT_BY_NAME

    index = read(out, "attacks/index.html")
    for name in TEXT_BY_NAME:  # the built-in text attacks are paged and indexed too (issue 24, point 3)
        page = read(out, f"attacks/{name}/index.html")
        assert "built into the toolkit" in page and "text (SoK App. B)" in page
        assert f'href="{name}/"' in index
    assert json.loads(read(out, "downloads/leaderboard.json"))["entries"] == []
    # issue 45: docs/sealed.md is on the site, linked from the home page and the methodology, and a
    # twin's page renders its table of draws as a table (it read as raw Markdown pipes)
    sealed = read(out, "sealed/index.html")
    assert "Sealed tracks" in sealed and "Try one" in sealed and "fashion-n100-sealed" in sealed
    assert 'href="sealed/"' in read(out, "index.html") and 'href="../sealed/"' in read(out, "methodology/index.html")
    twin = read(out, "leaderboards/fashion-n100-sealed/index.html")
    assert "<th>draw</th>" in twin and "| draw |" not in twin and "|---|" not in twin
    # the bundled plotly.js and the schema are there even without entries
    assert (out / "assets/javascripts/plotly.min.js").stat().st_size > 1_000_000
    from reconbench.image.results import result_json_schema

    assert json.loads(read(out, "downloads/result.schema.json")) == result_json_schema()
    from reconbench.text.metrics import TEXT_METRICS

    methodology = read(out, "methodology/index.html")  # the text-metric table fills its marker
    assert "rb:text-metric-table" not in methodology
    for name, m in TEXT_METRICS.items():
        assert f"<code>{name}</code>" in methodology and str(markupsafe.escape(m.definition)) in methodology


def test_missing_submissions_folder_is_empty_not_an_error(tmp_path):
    from reconbench.leaderboard.build import load_reports

    assert load_reports(tmp_path / "does-not-exist", rescore=True, device="cpu") == []


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    """One honest entry and one whose claimed SSIM was edited after signing."""
    work = tmp_path_factory.mktemp("board")
    subs = work / "submissions"
    key = make_key(work)
    run = evaluate_entry(work, key, seed=0, iterations=20)
    good = submit_entry(run, subs, "honest", key, name="Honest Lab", readme="# Method\n\nOur notes on the method.\n")
    bad_key = make_key(work, "mallory")
    # MI-Face starts from x0 = 0, so its output ignores the seed: a different iteration count keeps
    # the two reconstructions (and so the two entry ids) distinct even when both runs end in one second.
    bad_run = evaluate_entry(work, bad_key, seed=3, iterations=25)
    bad = submit_entry(bad_run, subs, "mallory", bad_key, name="Mallory")
    doc = json.loads((bad / "result.json").read_text())
    doc["payload"]["metrics"]["ssim"]["value"] = 0.99  # a better number, same signature
    (bad / "result.json").write_text(json.dumps(doc))
    out = work / "public"
    proc = build_site(subs, out, rescore=True)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out, good, bad, run


def test_entries_ranked_and_failed(board):
    out, good, bad, _ = board
    assert good.name != bad.name
    page = read(out, f"entries/honest/{good.name}/index.html")
    assert "rb-trust-re-scored" in page and "rescore.ssim" in page
    assert "<th>Sandbox</th>" in page  # provenance.sandbox (issue 23), "none (not recorded)" when absent
    bad_page = read(out, f"entries/mallory/{bad.name}/index.html")
    assert "rb-trust-failed" in bad_page and "signature does not match the payload" in bad_page
    digits = read(out, "leaderboards/digits/index.html")
    assert good.name in digits and bad.name not in digits  # a failed entry is never ranked
    combined = read(out, "leaderboards/index.html")
    assert "Entries that failed validation" in combined and bad.name in combined
    entries = {e["entry_id"]: e for e in json.loads(read(out, "downloads/leaderboard.json"))["entries"]}
    assert entries[good.name]["trust"] == "re-scored" and entries[bad.name]["trust"] == "failed"
    assert entries[bad.name]["ssim"] is None  # no claimed number of a failed entry is published as a result


def test_planned_tracks_share_one_page_and_boards_are_per_track(board):
    """Issue 15 item 12: unpublished tracks without entries are one "planned tracks" page (with the
    matrix), not 69 empty boards; "All tracks" shows one board per track; an entry's README comes
    right after its metrics, before the validation report."""
    from reconbench.core.tracks import all_tracks

    out, good, _, _ = board
    planned = [t for t in all_tracks() if t.status == "unpublished"]
    assert planned
    page = read(out, "leaderboards/planned/index.html")
    assert f"{len(planned)} tracks of the SoK's grid are planned" in page
    for t in planned:
        assert f"<code>{t.id}</code>" in page
        assert not (out / "leaderboards" / t.id).exists()  # no empty board of its own
    nav = read(out, "leaderboards/digits/index.html")
    assert "Planned tracks" in nav and planned[0].id not in nav  # the nav lists the planned page, not each track
    combined = read(out, "leaderboards/index.html")
    assert 'id="board-all-digits-static-white-box-none"' in combined and 'id="board-all"' not in combined
    entry = read(out, f"entries/honest/{good.name}/index.html")
    assert entry.index('id="metrics"') < entry.index("Our notes on the method.") < entry.index('id="validation-report"')


def test_board_puts_metrics_right_after_the_attack(board):
    out, *_ = board
    digits = read(out, "leaderboards/digits/index.html")
    head = digits[digits.index('id="board-digits-static-white-box-none"'):]
    head = head[:head.index("</thead>")]
    assert head.index("Attack") < head.index("SSIM") < head.index("PSNR") < head.index("Trust")
    assert "Taxonomy cell" not in head  # one table per cell: its heading names the cell


def test_board_says_what_it_ranks(board):
    """Issue 24, point 7: one ranking per taxonomy cell, a column no entry fills hidden with one line
    saying why, no path of the machine that built the site, a "not computed" reason once."""
    import os
    import re

    out, good, _, _ = board
    digits = read(out, "leaderboards/digits/index.html")
    assert '<h3 id="static-white-box-none">static / white-box / none' in digits
    assert "One ranking per taxonomy cell" in digits
    table = digits[digits.index('id="board-digits-static-white-box-none"'):]
    head = table[:table.index("</thead>")]
    assert "FID" not in head and "n/a" not in table[:table.index("</table>")]
    assert re.search(r"Not shown: FID[^<]*\(not computed: the pinned [^<]*InceptionV3 weights were not available", digits)
    cache = os.environ.get("RECONBENCH_CACHE") or str(__import__("pathlib").Path.home() / ".cache")
    for page in out.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert cache not in text and "/root/.cache" not in text, page
    entry = read(out, f"entries/honest/{good.name}/index.html")
    checks = re.findall(r'<li class="rb-check rb-check-not-run">.*?</li>', entry, re.S)
    fid = [c for c in checks if "rescore.fid" in c]
    assert len(fid) == 1 and "rescore.prdc_precision" in fid[0]  # one line for FID and the four PRDC values
    assert entry.count("Not computed:") == 2  # LPIPS (AlexNet) and FID/PRDC (InceptionV3): one line each
    assert "vision models" not in read(out, "index.html")


def test_ssim_convention_beside_every_ssim_header(board):
    from reconbench.image.metrics.info import ssim_convention

    out, good, _, _ = board
    note = str(markupsafe.escape(ssim_convention([(8, 8)])))  # as jinja escapes it: the digits images' window
    assert "valid window 7x7 on these 8x8 images" in note
    for path in ("leaderboards/digits/index.html", "leaderboards/index.html", "attacks/mi-face/index.html",
                 f"entries/honest/{good.name}/index.html"):
        page = read(out, path)
        assert f'title="{note}"' in page, path  # the header's tooltip
        assert f"<strong>SSIM</strong>: {note}</li>" in page, path  # and the footnote under the table
    assert "population (biased) covariance" in read(out, "methodology/index.html")


def test_ssim_footnote_names_the_window_of_the_tracks_images():
    """A 32x32 track's footnote gives its own window (11x11), not the 8x8 digits' (issue 37)."""
    from reconbench.leaderboard.pages import caveat_for

    fashion = caveat_for("ssim", ["fashion-n100"])
    assert "valid window 11x11 on these 32x32 images" in fashion and "8x8 images" not in fashion
    both = caveat_for("ssim", ["digits", "fashion-n100"])
    assert "7x7 on these 8x8 images, 11x11 on these 32x32 images" in both
    assert "7x7 on 8x8" in caveat_for("ssim")  # no track: the general rule


def test_gallery_shows_reconstructions_above_their_matched_targets(board):
    """The PNG's tiles are the first distinct reconstructions and, below each, the target that
    metrics.score() matches to it under SSIM (an independent path to the same matches)."""
    from reconbench.image.data.digits import digits_splits
    from reconbench.leaderboard.gallery import BLOCK_GAP, GAP, PER_ROW, TILE, distinct_first
    from reconbench.image.metrics import score
    from reconbench.image.results import load_reconstructions

    out, good, _, _ = board
    png = Image.open(io.BytesIO((out / "entries" / "honest" / good.name / "gallery.png").read_bytes()))
    grid = np.asarray(png)
    images, labels = load_reconstructions(good / "reconstructions.safetensors")
    target = digits_splits().target
    matches = score(images, labels, target.images, target.labels, lpips=False, fid=False).matches["ssim"]
    shown, distinct = distinct_first(images, labels, 16)
    assert len(shown) == min(16, distinct) and distinct >= 2
    scale = TILE // 8
    blocks = -(-len(shown) // PER_ROW)
    assert grid.shape == (blocks * (2 * TILE + GAP) + (blocks - 1) * BLOCK_GAP, PER_ROW * TILE + (PER_ROW - 1) * GAP)
    for k, i in enumerate(shown):
        b, col = divmod(k, PER_ROW)
        x, y = col * (TILE + GAP), b * (2 * TILE + GAP + BLOCK_GAP)
        rec_tile = grid[y:y + TILE, x:x + TILE][::scale, ::scale]
        tar_tile = grid[y + TILE + GAP:y + 2 * TILE + GAP, x:x + TILE][::scale, ::scale]
        assert np.array_equal(rec_tile, images[i, 0])
        assert np.array_equal(tar_tile, target.images[matches[i], 0])
    page = read(out, f"entries/honest/{good.name}/index.html")
    assert 'src="gallery.png"' in page  # in the entry's own folder: no other entry's name can collide


def test_downloads(board):
    out, good, bad, _ = board
    csv_lines = read(out, "downloads/leaderboard.csv").splitlines()
    assert csv_lines[0].startswith("team,team_name,entry_id,trust,track")
    assert len(csv_lines) == 3
    badge = json.loads(read(out, "downloads/badges/mi-face.json"))
    assert badge["schemaVersion"] == 1 and badge["label"] == "ReconBench mi-face"
    assert badge["message"].startswith("digits: SSIM ") and badge["message"].endswith("re-scored")
    assert badge["color"] == "green"


def test_charts_carry_the_data(board):
    out, good, _, _ = board
    page = read(out, "leaderboards/digits/index.html")
    figures = []
    for chunk in page.split('data-figure="')[1:]:
        figures.append(json.loads(html.unescape(chunk[:chunk.index('"')])))
    (quality,) = figures
    # one training-set size (digits: 500) is one x value: no memorization chart, and the page says why
    assert "has entries at one size only (500 images)" in page
    assert "↑ higher is better" in quality["layout"]["yaxis"]["title"]["text"]
    # FID is not computed here: the chart's title (page text above it, clear of the toolbar) says so
    assert quality["layout"]["title"]["text"] == ""
    assert "SSIM is shown instead" in page[page.index('<p class="rb-chart-title">'):page.index('data-figure="')]
    entry = json.loads(read(out, "downloads/leaderboard.json"))["entries"]
    ssim = [e for e in entry if e["entry_id"] == good.name][0]
    assert quality["data"][0]["y"] == [pytest.approx(ssim["ssim"])]
    assert quality["data"][0]["x"] == [pytest.approx(100 * ssim["ssim_coverage"])]


def test_rescore_setting_is_checked(monkeypatch, tmp_path):
    from reconbench.leaderboard.build import settings_from_env

    monkeypatch.setenv("RECONBENCH_SITE_RESCORE", "0")
    monkeypatch.setenv("RECONBENCH_SUBMISSIONS", str(tmp_path))
    assert settings_from_env(tmp_path / "default") == (tmp_path, False, "cpu")
    monkeypatch.setenv("RECONBENCH_SITE_RESCORE", "maybe")
    with pytest.raises(ValueError, match="RECONBENCH_SITE_RESCORE"):
        settings_from_env(tmp_path)


def test_findings_page_and_model_cards(board):
    """Issue 22: the SoK findings page and one model card per runnable track build with the site;
    with no Fashion-MNIST entry on this board every claim says it is not testable yet."""
    from reconbench.leaderboard.findings import CLAIMS
    from reconbench.core.tracks import all_tracks

    out, *_ = board
    page = read(out, "findings/index.html")
    for claim in CLAIMS:
        assert str(markupsafe.escape(claim.statement)) in page
    # every claim and the GAN-vs-aux-mean check: not testable without Fashion-MNIST entries, no verdict either way
    assert page.count("rb-verdict rb-verdict-not-testable-at-this-budget") == len(CLAIMS) + 1  # and the GAN-vs-aux-mean check
    assert "rb-verdict-holds" not in page and "rb-verdict-does-not-hold" not in page
    assert "no Fashion-MNIST entry yet" in page
    runnable = [t for t in all_tracks() if t.status != "unpublished"]
    assert any(t.id == "fashion-n100" for t in runnable)
    for track in runnable:
        assert (out / "tracks" / track.id / "index.html").is_file(), track.id
    card = read(out, "tracks/fashion-n100/index.html")
    assert get_track_sha("fashion-n100")[:16] in card and "dataset-fashion-mnist" in card
    assert "Model cards" in card  # the nav section


def get_track_sha(track_id):
    from reconbench.core.tracks import get_track

    return get_track(track_id).target_set_sha256
