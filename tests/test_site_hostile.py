"""One `mkdocs build --strict` with every hostile case at once (issue 12, item 5): the build never
breaks, failing entries add no nav item or attack page, unregistered attack names stay on their
entries' pages, claimed values never rank, near-copies are held with their evidence, reference
baselines stand beside the board, and the honest entries are still ranked."""

from __future__ import annotations

import json
import os
import re
import shutil

import numpy as np
import pytest

from reconbench.core.tracks import get_track
from reconbench.image.data.digits import digits_splits
from reconbench.core.io import save_arrays, sha256_file
from reconbench.image.metrics import score
from reconbench.image.results import RECONSTRUCTIONS_FILE, RESULT_FILE
from reconbench.core.signing import load_private_key, sign_payload
from site_entries import build_site, evaluate_entry, make_key, submit_entry
from submission_helpers import git, with_seed
from text_results_helpers import HOSTILE_TEXTS, hostile_texts, submitted_text_entry, text_parts_landed

OWN_ATTACK = "zz-own-attack-name"
FAILED_ATTACK = "zz-failed-attack-name"


pytestmark = pytest.mark.slow  # a minute or more of CPU: the slow set (make test-slow; benchmarks/bench_test_split.py)


def derive(template, root, team, key, entry_id, *, images=None, labels=None, edit=None, rescore_metrics=True):
    """A new entry from a real one: other reconstructions (scored honestly), a payload edit, signed by `key`."""
    folder = root / team / entry_id
    folder.mkdir(parents=True)
    data = json.loads((template / RESULT_FILE).read_text())
    p = data["payload"]
    if images is None:
        shutil.copyfile(template / RECONSTRUCTIONS_FILE, folder / RECONSTRUCTIONS_FILE)
    else:
        save_arrays(folder / RECONSTRUCTIONS_FILE, {"images": np.ascontiguousarray(images), "labels": labels})
        target = digits_splits().target
        if rescore_metrics:
            p["metrics"] = {k: v.model_dump(mode="json") for k, v in
                            score(images, labels, target.images, target.labels, track=get_track("digits")).metrics.items()}
            p.pop("membership", None)  # the template's gap is of other reconstructions: validate computes it
    p["entry_id"] = entry_id
    p["reconstructions"]["sha256"] = sha256_file(folder / RECONSTRUCTIONS_FILE)
    if edit:
        edit(p)
    data["signature"] = sign_payload(p, load_private_key(key))
    (folder / RESULT_FILE).write_text(json.dumps(data, indent=1))
    return folder


def own_attack(name):
    """An edit: the entry restated as a user's own attack, with the command that ran it."""
    return lambda p: (p["attack"].update(name=name, code="mine.py:Mine"),
                      p["provenance"].update(command="recon-submit evaluate --attack mine.py:Mine"))


def noise(seed, n=500):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (n, 1, 8, 8), dtype=np.uint8), (np.arange(n) % 10).astype(np.int64)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    work = tmp_path_factory.mktemp("hostile-site")
    subs = work / "submissions"
    key, other = make_key(work, "honest"), make_key(work, "mallory")
    honest_run = evaluate_entry(work, key, seed=0, iterations=20)
    honest = submit_entry(honest_run, subs, "honest", key, name="Honest Lab")
    git(subs, "init", "-q")  # main: the honest entry was there first
    git(subs, "add", "-A")
    git(subs, "commit", "-q", "-m", "honest entry")
    mal_pub = (work / "mallory.pem.pub").read_text().split()[-1]
    honest_pub = (work / "honest.pem.pub").read_text().split()[-1]
    (subs / "mallory").mkdir()
    (subs / "mallory" / "team.toml").write_text(f'name = "<img src=x onerror=alert(1)>"\nkeys = ["{mal_pub}"]\n')
    mal = honest  # every hostile entry below is derived from the honest one, re-signed by mallory

    # 1. a fabricated FID on an otherwise valid entry (CI cannot recompute FID here); a seed of its own: the
    # honest entry's setting with other images would be a replicate of it, held (issue 45). Seed 1, below the
    # x entries' 10-12: with them it is a seed group, whose row shows its lowest seed's claims
    fabricated = derive(mal, subs, "mallory", other, "digits-fabricated-fid", images=noise(1)[0], labels=noise(1)[1],
                        edit=lambda p: (p["metrics"].update(fid={"status": "computed", "value": 0.5, "coverage": None,
                                                                 "note": None}), with_seed(p, 1)))
    # 2. X and X.png (and X.md, and 'index') in one team: their site files used to collide
    # each its own seed: the same settings and seed with metrics within tolerance would be a re-run of the
    # first (checks/duplicates.py, submissions/reproduces.py), and noise scores alike
    x_entries = [derive(mal, subs, "mallory", other, name, images=noise(seed)[0], labels=noise(seed)[1],
                        edit=lambda p, seed=seed: with_seed(p, seed))
                 for seed, name in enumerate(["digits-x", "digits-x.png", "index"], start=10)]
    # 3. an unregistered attack name on a valid entry, and on a failing one
    own = derive(mal, subs, "mallory", other, "digits-own", images=noise(20)[0], labels=noise(20)[1],
                 edit=own_attack(OWN_ATTACK))
    failing = derive(mal, subs, "mallory", other, "digits-own-failing", images=noise(21)[0], labels=noise(21)[1],
                     edit=own_attack(FAILED_ATTACK))
    (failing / RESULT_FILE).write_text((failing / RESULT_FILE).read_text().replace('"seed": 0', '"seed": 1'))
    # 4. near-copies: target images with one pixel changed, honestly scored
    target = digits_splits().target
    near = np.ascontiguousarray(target.images).copy()
    flat = near.reshape(len(near), -1)
    rows, idx = np.arange(len(near)), np.random.default_rng(0).integers(0, 64, len(near))
    flat[rows, idx] = np.where(flat[rows, idx] > 127, 0, 255)
    held = derive(mal, subs, "mallory", other, "digits-near-copies", images=near, labels=target.labels.copy())
    # 5. a replay of the honest entry by a team that lists the honest key, and a one-pixel copy
    (subs / "aaa-replay").mkdir()
    (subs / "aaa-replay" / "team.toml").write_text(f'name = "Replay"\nkeys = ["{honest_pub}", "{mal_pub}"]\n')
    replay = subs / "aaa-replay" / honest.name
    shutil.copytree(honest, replay)
    os.utime(replay / RESULT_FILE)
    # 6. broken files: duplicate JSON keys, 1e400, a hard-linked README, a symlinked entry, bad names
    dup = derive(mal, subs, "mallory", other, "digits-dup-keys", images=noise(30)[0], labels=noise(30)[1])
    (dup / RESULT_FILE).write_text((dup / RESULT_FILE).read_text().replace('"value":', '"value": 0.001, "value":', 1))
    inf = derive(mal, subs, "mallory", other, "digits-inf", images=noise(31)[0], labels=noise(31)[1])
    (inf / RESULT_FILE).write_text((inf / RESULT_FILE).read_text().replace('"seed": 0', '"seed": 1e400', 1))
    linked = derive(mal, subs, "mallory", other, "digits-hardlink", images=noise(32)[0], labels=noise(32)[1])
    (work / "secret.md").write_text("the maintainer's private notes\n")
    os.link(work / "secret.md", linked / "README.md")
    (subs / "mallory" / "digits-symlink").symlink_to(honest)
    future = derive(mal, subs, "mallory", other, "digits-future", images=noise(33)[0], labels=noise(33)[1],
                    edit=lambda p: p["provenance"].update(finished="9999-12-31T00:00:00Z"))
    (subs / "Evil.png").mkdir()
    (subs / "Evil.png" / "team.toml").write_text(f'name = "Evil"\nkeys = ["{mal_pub}"]\n')
    # 7. text entries (issue 16): markup, a CSV formula and a bidi override in the texts; a changed byte
    text = tampered = None
    if text_parts_landed():
        text = submitted_text_entry(work, subs, "mallory", other, hostile_texts)
        tampered = submitted_text_entry(work, subs, "mallory", other, lambda ts: [t.split()[0] for t in ts], score=False)
        data = bytearray((tampered / "reconstructions.jsonl").read_bytes())
        data[-3] ^= 1
        (tampered / "reconstructions.jsonl").write_bytes(bytes(data))
    git(subs, "add", "-A")  # the pull request: everything hostile arrives after the honest entry
    git(subs, "commit", "-q", "-m", "hostile entries", "--date", "2000-01-01T00:00:00")
    out = work / "public"
    proc = build_site(subs, out, rescore=True)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return dict(out=out, honest=honest, mal=mal, fabricated=fabricated, x=x_entries, own=own, failing=failing,
                held=held, replay=replay, broken=[dup, inf, linked, future], text=text, tampered=tampered)


def entries(out):
    return {(e["team"], e["entry_id"]): e for e in json.loads((out / "downloads/leaderboard.json").read_text())["entries"]}


def test_honest_entries_still_rank_and_copies_fail(site):
    e = entries(site["out"])
    honest = e[("honest", site["honest"].name)]
    assert honest["trust"] == "re-scored" and honest["position"] is not None
    replay = e[("aaa-replay", site["honest"].name)]
    assert replay["trust"] == "failed"
    for entry in site["broken"]:
        assert e[("mallory", entry.name)]["trust"] == "failed", entry.name
    page = (site["out"] / "entries" / "aaa-replay" / site["honest"].name / "index.html").read_text()
    assert "which came first" in page and f"honest/{site['honest'].name}" in page


def test_claimed_values_never_rank(site):
    out = site["out"]
    fab = entries(out)[("mallory", "digits-fabricated-fid")]
    assert fab["trust"] == "signed" and fab["fid"] is None and fab["fid_claimed"] == 0.5
    board = (out / "leaderboards/digits/index.html").read_text()
    # no verified FID anywhere: FID cannot break a tie (the order is by evidence first: issue 45)
    assert re.search(r"ranked by evidence: verdict tier(, then the [\w ]+ gap's lower bound)?, then SSIM", board)
    assert "claimed, unverified" in board and "rb-claimed" in board
    csv = (out / "downloads/leaderboard.csv").read_text().splitlines()
    assert "fid_claimed" in csv[0].split(",")
    home = (out / "index.html").read_text()
    assert "0.500" not in home  # never in a best-of


def test_near_copies_are_held_with_evidence(site):
    out = site["out"]
    held = entries(out)[("mallory", "digits-near-copies")]
    assert held["trust"] == "held" and held["position"] is None and "near-copies" in held["held_reason"]
    folder = out / "entries" / "mallory" / "digits-near-copies"
    assert (folder / "near-copies.png").stat().st_size > 100
    page = (folder / "index.html").read_text()
    assert "Near-copies of public images" in page and 'src="near-copies.png"' in page


def test_each_entry_has_its_own_folder_and_no_collision(site):
    out = site["out"]
    for entry in site["x"]:
        folder = out / "entries" / "mallory" / entry.name
        assert (folder / "index.html").is_file() and (folder / "gallery.png").is_file(), entry.name
    assert entries(out)[("mallory", "digits-x.png")]["trust"] == "re-scored"


def test_unregistered_attack_names_stay_on_their_entry_pages(site):
    out = site["out"]
    assert not (out / "attacks" / OWN_ATTACK).exists() and not (out / "attacks" / FAILED_ATTACK).exists()
    own_page = out / "entries" / "mallory" / "digits-own" / "index.html"
    failing_page = out / "entries" / "mallory" / "digits-own-failing" / "index.html"
    for page in out.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        if page not in (own_page, failing_page):
            assert OWN_ATTACK not in text and FAILED_ATTACK not in text, page
    assert OWN_ATTACK in own_page.read_text()


def test_reference_baselines_beside_the_board(site):
    out = site["out"]
    board = (out / "leaderboards/digits/index.html").read_text()
    assert "Reference baselines (not entries)" in board and "auxiliary images returned as they are" in board
    refs = json.loads((out / "downloads/leaderboard.json").read_text())["references"]["digits"]
    kinds = {(r["kind"], r["cell"]) for r in refs}
    assert ("noise", "static/*/*") in kinds and ("aux", "static/*/same") in kinds and ("aux-mean", "static/*/same") in kinds
    aux = next(r for r in refs if r["kind"] == "aux" and r["cell"] == "static/*/same")
    assert 0.85 < aux["metrics"]["ssim"]["value"] < 0.95  # returning public data scores high on digits
    assert "reference: " in board  # the chart's horizontal lines carry their labels
    attack = (out / "attacks/mi-face/index.html").read_text()  # an attack page: its cells' references, labelled
    assert "Reference baselines (not entries)" in attack and "uniform noise: not an entry" in attack


def test_text_entries_are_escaped_everywhere(site):
    if site["text"] is None:
        pytest.skip("the text attacks or lee-news' target models are not on this checkout yet")
    out, text = site["out"], site["text"]
    rows = {e["entry_id"]: e for e in json.loads((out / "downloads/text-leaderboard.json").read_text())["entries"]}
    assert rows[text.name]["trust"] == "re-scored" and rows[text.name]["position"] == 1
    assert rows[site["tampered"].name]["trust"] == "failed" and rows[site["tampered"].name]["position"] is None
    page = (out / "entries" / "mallory" / text.name / "index.html").read_text(encoding="utf-8")
    board = (out / "leaderboards/lee-news/index.html").read_text(encoding="utf-8")
    assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in page and "Targets and reconstructions" in page
    assert "\\u202e" in page  # the bidi override is shown as an escape, not applied
    search = (out / "search/search_index.json").read_text(encoding="utf-8")
    for where in (page, board, search):
        assert "<script>window.__xss" not in where and "<img src=x onerror" not in where
        assert "\u202e" not in where and 'href="javascript:' not in where
    assert (out / "entries" / "mallory" / text.name / "reconstructions.jsonl").read_bytes() == \
        (text / "reconstructions.jsonl").read_bytes()
    csv = (out / "downloads/text-leaderboard.csv").read_text(encoding="utf-8")
    assert all(not cell.startswith(("=", "+", "@")) for line in csv.splitlines() for cell in line.split(","))
    assert not (out / "entries" / "mallory" / site["tampered"].name / "reconstructions.jsonl").exists()
    assert HOSTILE_TEXTS[2] not in csv  # reconstructions are not exported as cells
