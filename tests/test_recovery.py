"""The recovery count (core/recovery.py, image/metrics/recovery.py): its statistic against independent
brute-force computations (numpy loops over small arrays, every relabelling enumerated, a Monte Carlo
relabelling), its guarantee against public look-alikes, and hostile inputs."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from reconbench.core import verdict
from reconbench.core.recovery import (TAU, RecoveryGroup, RecoveryResult, hypergeometric_pmf, recovery_count,
                                      relabel_p)
from reconbench.image.metrics.recovery import (image_recovery, l2_matrix, public_nearest, shifted,
                                               shifted_public_nearest)


def brute_relative(rec, rec_y, pool, pool_y, public):
    """rel(x) by loops: nearest same-class reconstruction over nearest other public image (any class)."""
    out = []
    for x, c in zip(pool, pool_y):
        xf = x.astype(np.float64).ravel()
        near = min((math.sqrt(((r.astype(np.float64).ravel() - xf) ** 2).sum()) for r, rc in zip(rec, rec_y) if rc == c),
                   default=math.inf)
        dists = sorted(math.sqrt(((y.astype(np.float64).ravel() - xf) ** 2).sum()) for y in public)
        if dists and dists[0] == 0:
            dists = dists[1:]  # x itself, once
        nn = dists[0] if dists else math.inf
        out.append(math.inf if nn == 0 else near / nn)
    return np.array(out)


def loop_shift(img, dy, dx):
    """img (C, H, W) moved by (dy, dx), vacated pixels 0, by loops over the pixels."""
    out = np.zeros_like(img)
    _, h, w = img.shape
    for i in range(h):
        for j in range(w):
            if 0 <= i - dy < h and 0 <= j - dx < w:
                out[:, i, j] = img[:, i - dy, j - dx]
    return out


def brute_shift_relative(rec, rec_y, pool, pool_y, public):
    """rel(x) with shifts by loops: min over r, s of ||r - s(x)|| over min over y != x, s of ||y - s(x)||."""
    def dist(a, b):
        return math.sqrt(((a.astype(np.float64) - b.astype(np.float64)) ** 2).sum())

    out = []
    for x, c in zip(pool, pool_y):
        moved = [loop_shift(x, dy, dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1)]
        near = min((dist(r, m) for r, rc in zip(rec, rec_y) if rc == c for m in moved), default=math.inf)
        skipped, nn = False, math.inf
        for y in public:
            if not skipped and dist(y, x) == 0:
                skipped = True  # x itself, once (all its shifts)
                continue
            nn = min(nn, min(dist(y, m) for m in moved))
        out.append(math.inf if nn == 0 else near / nn)
    return np.array(out)


def enumerated_p(groups, hits, k):
    """P(K >= k) over every relabelling of every group (each equally likely), by enumeration."""
    per_group = []
    for g, h in zip(groups, hits):
        m, size = int(g.members.sum()), len(g.members)
        counts = [int(h[list(c)].sum()) for c in itertools.combinations(range(size), m)]
        per_group.append(np.bincount(counts, minlength=size + 1) / len(counts))
    dist = np.ones(1)
    for d in per_group:
        dist = np.convolve(dist, d)
    return float(dist[k:].sum())


def random_case(seed, classes=3, per_class=4, n_rec=7, size=5):
    rng = np.random.default_rng(seed)
    public = rng.integers(0, 256, (40, 1, size, size), dtype=np.uint8)
    pool_idx = rng.choice(len(public), classes * per_class * 2, replace=False)
    pool = public[pool_idx]
    pool_y = np.repeat(np.arange(classes), per_class * 2)
    tar, hold = pool[0::2], pool[1::2]
    tar_y, hold_y = pool_y[0::2], pool_y[1::2]
    rec_y = rng.integers(0, classes, n_rec)
    rec = rng.integers(0, 256, (n_rec, 1, size, size), dtype=np.uint8)
    # a few reconstructions are noisy copies of targets (so that some items are recovered)
    for i in range(min(3, n_rec)):
        t = rng.integers(len(tar))
        rec[i] = np.clip(tar[t].astype(int) + rng.integers(-3, 4, tar[t].shape), 0, 255).astype(np.uint8)
        rec_y[i] = tar_y[t]
    return public, tar, tar_y, hold, hold_y, rec, rec_y


@pytest.mark.parametrize("seed", range(6))
def test_the_image_statistic_matches_loops_over_the_pixels(seed):
    public, tar, tar_y, hold, hold_y, rec, rec_y = random_case(seed)
    nn_t, nn_h = public_nearest(tar, public), public_nearest(hold, public)
    r = image_recovery(rec, rec_y, tar, tar_y, hold, hold_y, nn_t, nn_h)
    k = j = 0
    for g in r.groups:
        c = int(g.key)
        t, h = np.flatnonzero(tar_y == c), np.flatnonzero(hold_y == c)
        pool = np.concatenate([tar[t], hold[h]])
        expected = brute_relative(rec, rec_y, pool, np.full(len(pool), c), public)
        np.testing.assert_allclose(g.relative, expected, rtol=1e-12)
        k += int((expected[:len(t)] < TAU).sum())
        j += int((expected[len(t):] < TAU).sum())
        np.testing.assert_array_equal(g.index, np.r_[t, h])
    assert (r.members, r.holdout) == (k, j) and k >= 1  # the noisy copies are recovered
    hits = [g.relative < TAU for g in r.groups]
    assert r.p == pytest.approx(enumerated_p(r.groups, hits, k), abs=1e-12)


def test_relabelling_p_matches_a_monte_carlo_relabelling():
    rng = np.random.default_rng(5)
    groups, hits = [], []
    for c, size in enumerate((30, 24, 16)):
        members = np.zeros(size, bool)
        members[rng.choice(size, size // 2, replace=False)] = True
        hit = rng.random(size) < 0.3
        hit[members] |= rng.random(members.sum()) < 0.3  # more hits among the members
        near = np.where(hit, 0.5, 2.0)
        groups.append(RecoveryGroup(str(c), near, np.ones(size), members))
        hits.append(hit)
    r = recovery_count(groups)
    k = r.members
    draws = 40_000
    reached = 0
    for _ in range(draws):
        got = 0
        for g, h in zip(groups, hits):
            perm = rng.permutation(g.members)
            got += int((h & perm).sum())
        reached += got >= k
    mc = reached / draws
    assert abs(mc - r.p) < 4 * math.sqrt(r.p * (1 - r.p) / draws) + 1e-9, (mc, r.p)
    assert 0.0 < r.p < 0.5


def test_hypergeometric_pmf_against_the_binomial_formula():
    for n, m, d in [(10, 5, 3), (7, 0, 2), (7, 7, 4), (12, 4, 12), (5, 2, 0)]:
        expected = [math.comb(m, k) * math.comb(n - m, d - k) / math.comb(n, d) if k <= m and d - k <= n - m else 0.0
                    for k in range(d + 1)]
        np.testing.assert_allclose(hypergeometric_pmf(n, m, d), expected, atol=1e-13)


def test_public_images_never_count_whatever_was_known():
    """Each member's own nearest public neighbour (chosen knowing the members) is never closer than nn(x)."""
    from reconbench.image.data.digits import load_digits_arrays

    full = load_digits_arrays()
    rng = np.random.default_rng(0)
    idx = rng.choice(len(full.images), 80, replace=False)
    tar, hold = full.images[idx[:40]], full.images[idx[40:]]
    tar_y, hold_y = full.labels[idx[:40]], full.labels[idx[40:]]
    d = l2_matrix(tar, full.images)
    d[d == 0] = np.inf  # skip each target itself
    rec, rec_y = full.images[d.argmin(1)], tar_y  # the look-alike of every member, labelled as the member
    r = image_recovery(rec, rec_y, tar, tar_y, hold, hold_y, public_nearest(tar, full.images),
                       public_nearest(hold, full.images))
    # no member is credited; a look-alike that is itself a holdout item credits that item (a copy of a
    # non-member), which only counts against the entry
    copied_holdout = sum(any((h == x).all() for x in rec) for h in hold)
    assert r.members == 0 and r.holdout == copied_holdout and not r.recovers
    assert min(float(np.nanmin(g.relative[g.members])) for g in r.groups) == pytest.approx(1.0)  # exactly nn(x)
    # the members themselves (copies) are recovered, all of them, and the verdict fires
    r = image_recovery(tar, tar_y, tar, tar_y, hold, hold_y, public_nearest(tar, full.images),
                       public_nearest(hold, full.images))
    assert r.members == 40 and r.holdout == 0 and r.recovers and r.p < 1e-6


def test_a_public_duplicate_makes_an_item_unrecoverable():
    """nn(x) = 0 when the public data hold x twice: an exact copy of x is then a copy of a public image too."""
    rng = np.random.default_rng(1)
    x = rng.integers(0, 256, (1, 1, 4, 4), dtype=np.uint8)
    other = rng.integers(0, 256, (5, 1, 4, 4), dtype=np.uint8)
    assert public_nearest(x, np.concatenate([x, other]))[0] > 0  # x once: skipped
    assert public_nearest(x, np.concatenate([x, x, other]))[0] == 0  # x twice: a duplicate
    g = RecoveryGroup("0", np.array([0.0, 1.0]), np.array([0.0, 10.0]), np.array([True, False]))
    assert np.isinf(g.relative[0]) and g.relative[1] == pytest.approx(0.1)


def test_one_recovered_member_cannot_decide_and_seven_can():
    members = np.r_[np.ones(50, bool), np.zeros(50, bool)]
    public = np.ones(100)
    for k, fires in ((1, False), (5, False), (7, True)):
        near = np.full(100, 5.0)
        near[:k] = 0.5
        r = recovery_count([RecoveryGroup("all", near, public, members)])
        assert r.members == k and r.recovers is fires, (k, r.p)
    near = np.full(100, 0.5)  # everything recovered, members and holdout alike: no verdict
    r = recovery_count([RecoveryGroup("all", near, public, members)])
    assert r.members == 50 and r.holdout == 50 and r.p == pytest.approx(1.0) and not r.recovers


def test_the_tier_and_its_words():
    members = np.r_[np.ones(20, bool), np.zeros(20, bool)]
    near = np.r_[np.full(10, 0.2), np.full(30, 3.0)]
    r = RecoveryResult.of(recovery_count([RecoveryGroup("3", near, np.ones(40), members,
                                                        ssim=np.linspace(0, 1, 40), best=np.arange(40))]))
    assert r.recovers and r.members == 10
    t = verdict.tier(False, None, r)
    assert t is verdict.RECOVERS and verdict.label(t, verdict.count_of(t, None, r)) == "recovers 10"
    assert verdict.tier(True, type("E", (), {"extracts": True, "members": 2})(), r) is verdict.EXTRACTS  # verbatim first
    assert r.sentence().startswith("10 of 20 members recovered against 0 holdout items, p ")
    curves = r.curves()
    assert len(curves["members"]) == 20 and len(curves["holdout"]) == 20
    assert [c[0] for c in curves["members"]] == sorted((c[0] for c in curves["members"]), reverse=True)
    assert sum(c[2] for c in curves["members"]) == 10 and not any(c[2] for c in curves["holdout"])
    best = r.best_recovered(3)
    assert len(best) == 3 and all(b[3] == pytest.approx(0.2) for b in best)
    # round trip through JSON (the validation cache and the board's frame carry it so)
    assert RecoveryResult.model_validate_json(r.model_dump_json()) == r


def test_hostile_inputs_are_refused_with_a_message():
    with pytest.raises(ValueError, match="non-negative"):
        RecoveryGroup("0", np.array([np.nan]), np.array([1.0]), np.array([True]))
    with pytest.raises(ValueError, match="non-negative"):
        RecoveryGroup("0", np.array([1.0]), np.array([-1.0]), np.array([True]))
    with pytest.raises(ValueError, match="shape"):
        RecoveryGroup("0", np.array([1.0, 2.0]), np.array([1.0]), np.array([True]))
    r = RecoveryResult.of(recovery_count([RecoveryGroup("0", np.array([0.1]), np.array([1.0]), np.array([True]))]))
    data = r.model_dump(mode="json")
    # a forged cache record: indices beyond the pool, infinities, a huge group key
    with pytest.raises(ValueError):
        RecoveryResult.model_validate({**data, "p": float("nan")})
    with pytest.raises(ValueError):
        RecoveryResult.model_validate({**data, "recovered": {"x" * 41: [0]}})
    forged = RecoveryResult.model_validate({**data, "recovered": {"0": [0, 5, -1], "9": [0]}})
    assert [b[:2] for b in forged.best_recovered()] == [("0", 0)]  # out-of-range and unknown groups are skipped
    with pytest.raises(ValueError, match="nn given"):
        image_recovery(np.zeros((1, 1, 2, 2), np.uint8), np.zeros(1), np.zeros((2, 1, 2, 2), np.uint8), np.zeros(2),
                       np.zeros((2, 1, 2, 2), np.uint8), np.zeros(2), np.ones(1), np.ones(2))


def test_relabel_p_of_no_hit_is_one():
    g = RecoveryGroup("0", np.full(4, 9.0), np.ones(4), np.array([True, False, True, False]))
    assert relabel_p([g], [g.relative < TAU], 0) == 1.0


def test_shift_matches_a_loop_over_the_pixels():
    rng = np.random.default_rng(3)
    img = rng.integers(0, 256, (2, 1, 4, 5), dtype=np.uint8)
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            np.testing.assert_array_equal(shifted(img, dy, dx), np.stack([loop_shift(i, dy, dx) for i in img]))


@pytest.mark.parametrize("seed", range(3))
def test_the_shift_tolerant_statistic_matches_loops(seed):
    public, tar, tar_y, hold, hold_y, rec, rec_y = random_case(seed, classes=2, per_class=3, n_rec=6, size=4)
    rec[3] = shifted(tar[1:2], 1, 0)[0]  # a shifted member copy
    rec_y[3] = tar_y[1]
    public = np.concatenate([public, public[:1]])  # a duplicate: its item (if in the pool) is unrecoverable
    r = image_recovery(rec, rec_y, tar, tar_y, hold, hold_y, public_nearest(tar, public), public_nearest(hold, public),
                       public=lambda: public, public_key=f"loops-{seed}")
    for g in r.groups:
        c = int(g.key)
        t, h = np.flatnonzero(tar_y == c), np.flatnonzero(hold_y == c)
        pool = np.concatenate([tar[t], hold[h]])
        expected = brute_shift_relative(rec, rec_y, pool, np.full(len(pool), c), public)
        decided = expected < TAU  # where the count computed nn exactly; elsewhere it keeps a lower bound >= TAU
        assert np.array_equal(g.relative < TAU, decided)
        np.testing.assert_allclose(g.relative[decided], expected[decided], rtol=1e-12)
        assert (g.relative[~decided] <= expected[~decided] + 1e-12).all() and (g.relative[~decided] >= TAU).all()
    assert (str(int(tar_y[1])), 1) in {(g.key, int(i)) for g in r.groups for i in g.index[(g.relative < TAU) & g.members]}
    np.testing.assert_allclose(shifted_public_nearest(tar, public), [_nn_loop(x, public) for x in tar], rtol=1e-12)


def _nn_loop(x, public):
    moved = [loop_shift(x, dy, dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1)]
    skipped, nn = False, math.inf
    for y in public:
        if not skipped and (y == x).all():
            skipped = True
            continue
        nn = min(nn, min(math.sqrt(((y.astype(float) - m.astype(float)) ** 2).sum()) for m in moved))
    return nn


def test_shifted_copies_count_and_shifted_look_alikes_do_not():
    """On Fashion-MNIST (the track's public images): members moved by a pixel are recovered; each member's
    nearest public neighbour under shifts, moved so that it is nearest, is not."""
    from reconbench.core.tracks import get_track
    from reconbench.image.track_files import load_splits, public_dataset

    track = get_track("fashion-n100")
    s = load_splits(track)
    public, _ = public_dataset(track)
    tar, tar_y, hold, hold_y = s.target.images[:30], s.target.labels[:30], s.holdout.images[:30], s.holdout.labels[:30]
    nn_t, nn_h = public_nearest(tar, public), public_nearest(hold, public)
    rec = shifted(tar, 0, 1)
    r = image_recovery(rec, tar_y, tar, tar_y, hold, hold_y, nn_t, nn_h, public=lambda: public, public_key="test")
    assert r.members == 30 and r.holdout == 0 and r.recovers
    # look-alikes: for each member, the public image (not itself) and shift nearest to it, moved by that shift
    import torch

    y = torch.from_numpy(public.reshape(len(public), -1)).double()
    y_sq = (y * y).sum(1)

    def dists(q):  # (n, 70000) squared distances
        q = torch.from_numpy(np.ascontiguousarray(q).reshape(len(q), -1)).double()
        return ((q * q).sum(1)[:, None] + y_sq[None, :] - 2.0 * q @ y.T).clamp_min_(0).round_().numpy()

    own = dists(tar) == 0
    per_shift = []
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            d = dists(shifted(tar, dy, dx))
            d[own] = np.inf
            per_shift.append(d)
    per_shift = np.stack(per_shift)  # (9, 30, 70000)
    flat = per_shift.transpose(1, 0, 2).reshape(len(tar), -1).argmin(1)
    shift_of, image_of = np.divmod(flat, len(public))
    moves = [(dy, dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1)]
    # d_S(y, x) = ||y - s(x)||: the look-alike y itself, at its best shift against x, is what an attacker returns
    looks = [public[j] for j in image_of]
    assert len(set(shift_of.tolist())) >= 1 and all(0 <= k < len(moves) for k in shift_of)
    r = image_recovery(np.stack(looks), tar_y, tar, tar_y, hold, hold_y, nn_t, nn_h, public=lambda: public,
                       public_key="test")
    assert r.members == 0


def test_a_result_cannot_claim_a_recovery_count():
    """The count is validation's (checks/recovery.py), never signed: a result whose membership block carries one
    is refused by the schema (a forged "recovers 50" cannot ride in on a signature)."""
    from pydantic import ValidationError

    from reconbench.core.envelope import MembershipInfo

    ok = MembershipInfo.of("0" * 64, {}).model_dump(mode="json")
    forged = {**ok, "recovery": {"members": 50, "n_members": 100, "holdout": 0, "n_holdout": 100, "tau": 1.0, "p": 1e-9}}
    with pytest.raises(ValidationError, match="recovery"):
        MembershipInfo.model_validate(forged)


def test_the_check_leaves_sealed_draws_and_tracks_without_holdout_alone():
    from types import SimpleNamespace

    from reconbench.submissions.checks import recovery as check

    ctx = SimpleNamespace(track=SimpleNamespace(seal=object(), dataset="fashion-mnist"), recovery="stale")
    (c,) = check.check(ctx, None, None, object())
    assert c.status == "not-run" and "sealed" in c.message and ctx.recovery is None
    ctx = SimpleNamespace(track=SimpleNamespace(seal=None, dataset="fashion-mnist"), recovery="stale")
    (c,) = check.check(ctx, None, None, None)
    assert c.status == "not-run" and "holdout" in c.message and ctx.recovery is None


def test_the_entry_page_strip_draws_the_recovered_pairs(tmp_path):
    """recovery_view.strip_png: each recovered member below the reconstruction nearest it, from the real files
    (a reconstruction file, the target set), one tile per pair; a forged count that does not fit them draws nothing."""
    import io
    from types import SimpleNamespace

    from PIL import Image

    from reconbench.core.io import save_arrays
    from reconbench.leaderboard.gallery import TILE, TargetIndex
    from reconbench.leaderboard.recovery_view import curves_figure, strip_png

    rng = np.random.default_rng(2)
    tar = rng.integers(0, 256, (6, 1, 8, 8), dtype=np.uint8)
    tar_y = np.array([0, 0, 0, 1, 1, 1])
    rec = np.concatenate([tar[[1, 4]], rng.integers(0, 256, (4, 1, 8, 8), dtype=np.uint8)])
    rec_y = np.array([0, 1, 0, 0, 1, 1])
    save_arrays(tmp_path / "reconstructions.safetensors", {"images": rec, "labels": rec_y.astype(np.int64)})
    members = np.r_[np.ones(3, bool), np.zeros(3, bool)]
    groups = []
    for c in (0, 1):
        t = np.flatnonzero(tar_y == c)
        d = l2_matrix(rec[rec_y == c], tar[t])
        near = np.r_[d.min(0), np.full(3, 50.0)]
        best = np.r_[np.flatnonzero(rec_y == c)[d.argmin(0)], np.full(3, -1)]
        groups.append(RecoveryGroup(str(c), near, np.full(6, 100.0), members, ssim=np.linspace(1, 0, 6), best=best,
                                    index=np.r_[t, np.arange(3)]))
    r = RecoveryResult.of(recovery_count(groups))
    assert r.members == 2
    payload = SimpleNamespace(reconstructions=SimpleNamespace(file="reconstructions.safetensors", hub=None),
                              track="t", scenario="static/white-box/none")
    targets = SimpleNamespace(get=lambda track, training: TargetIndex(tar, tar_y))
    png, rows, recovered = strip_png(r, tmp_path, payload, targets)
    assert recovered and [(x["member"], x["reconstruction"]) for x in rows] == [(1, 0), (4, 1)]
    image = np.asarray(Image.open(io.BytesIO(png)))
    scale = TILE // 8
    assert image.shape[1] == 2 * 8 * scale + 3  # two tiles and the gap between them
    np.testing.assert_array_equal(image[:8 * scale:scale, :8 * scale:scale], rec[0, 0])  # the reconstruction above
    np.testing.assert_array_equal(image[8 * scale + 3::scale, :8 * scale:scale][:8], tar[1, 0])  # its member below
    forged = RecoveryResult.model_validate({**r.model_dump(), "items": {k: {**v.model_dump(), "best": [99] * 6}
                                                                       for k, v in r.items.items()}})
    assert strip_png(forged, tmp_path, payload, targets) is None  # reconstruction 99 does not exist: nothing drawn
    figure = curves_figure(r)
    assert [len(t["x"]) for t in figure["data"]] == [6, 2, 6]  # members, the recovered marks, holdout (two classes)
