"""A sealed draw's numbers, scored at validation with the key (image/sealed.py has the pool and members).

- the carried-data rule: a reconstruction within the extraction threshold of a Fashion-MNIST image that
  is not a member of the draw (the count's threshold) can only have been carried into the run;
- the membership gap of the draw (members against the pool's other half: core/membership.py's test);
- the extraction count of the draw (issue 33's per-sample count, at the dataset's calibration), with its
  membership-relabelling strata (issue 43, item 4; core/relabel.py): per class, how many candidates the
  reconstructions come within the threshold of, and how many of those are members. The candidates are
  every image that was equally likely to be a member: a v2 draw's caller passes the whole sealed block,
  a draw of the public pool (the default) its pool. A burned season's records (2026-s1, signed before
  the block existed) carry none, so they keep validating unchanged;
- sealed.json, the record validate writes and `recon-submit seal verify` recomputes after the reveal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from reconbench.core.seal import SCHEME, SealError
from reconbench.core.tracks import Track
from reconbench.image.sealed import seal_of, member_set, members, pool

if TYPE_CHECKING:
    from reconbench.image.data.arrays import ArraySet

GAP_METRICS = ("mse", "psnr", "ssim")
COPY_MSE = 1e-4  # an exact member copy (shown as a count): about one grey level of rounding per pixel
POOL_CHUNK = 8192  # candidate images per block of nearest_mse (64 MB of float64 at 32x32)


def nearest_mse(rec: np.ndarray, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per reconstruction, the smallest per-pixel MSE (pixels in [0, 1]) to a candidate and its index:
    ||x||^2 + ||c||^2 - 2 x.c in float64, blocks of POOL_CHUNK candidates."""
    import torch

    x = torch.from_numpy(rec.reshape(len(rec), -1)).double() / 255.0
    best = torch.full((len(rec),), float("inf"), dtype=torch.float64)
    where = torch.zeros(len(rec), dtype=torch.int64)
    for lo in range(0, len(candidates), POOL_CHUNK):
        c = torch.from_numpy(candidates[lo:lo + POOL_CHUNK].reshape(-1, x.shape[1])).double() / 255.0
        d = ((x * x).sum(1, keepdim=True) + (c * c).sum(1)[None, :] - 2.0 * x @ c.T).clamp_min_(0) / x.shape[1]
        value, index = d.min(dim=1)
        better = value < best
        best, where = torch.where(better, value, best), torch.where(better, index + lo, where)
    return best.numpy(), where.numpy()


def carried(track: Track, key: bytes, images: np.ndarray, search) -> tuple[np.ndarray, np.ndarray]:
    """(reconstructions that exactly copy a member, reconstructions within the extraction threshold of a
    public image that is not a member of this draw and of no member): the second can only be data carried
    into the run. The threshold is the count's (core/tracks.extraction_calibration), so nothing the count
    would credit as extracted can be a non-member's copy (issue 43: an exact-copy rule here let a member
    pick moved by a few grey levels through while the count credited it). `search(images, members, threshold)`
    is the open tracks' search (submissions/publiccopy.py: the whole public dataset, exact per-pixel MSE),
    handed in by the board's check: this modality module sits below the board and imports none of it."""
    cal = calibration(track)
    if cal is None:
        raise SealError(f"track '{track.id}': no extraction calibration for dataset '{track.dataset}' in the registry, "
                        "so the copy rule of a sealed draw has no threshold")
    mine = member_set(track, key).images
    to_member, _ = nearest_mse(images, mine)
    copies_member = np.flatnonzero(to_member <= COPY_MSE)
    found = search(images, mine, cal.threshold)
    return copies_member, np.array(sorted(h.reconstruction for h in found), dtype=np.int64)


def calibration(track: Track):
    """The extraction threshold and pair rate: calibrated on the whole public dataset (issue 33), so a
    sealed draw takes its dataset's (core/tracks.extraction_calibration, which the copy rule uses too)."""
    from reconbench.core.tracks import extraction_calibration

    return extraction_calibration(track)


Candidates = tuple["ArraySet", np.ndarray]  # (the images every member was drawn from, which of them are members)


def relabel_strata(images: np.ndarray, labels: np.ndarray, candidates: Candidates, threshold: float) -> list:
    """The draw's relabelling strata (core/relabel.strata_of): per class, each candidate's smallest per-pixel
    MSE to a reconstruction of its class, by the count's own exact pairwise search (metrics/extraction.mse_matrix)."""
    from reconbench.core.relabel import strata_of
    from reconbench.image.metrics.extraction import mse_matrix

    pool_set, inside = candidates
    labels, cand_y = np.asarray(labels, dtype=np.int64), np.asarray(pool_set.labels, dtype=np.int64)
    nearest = np.full(len(cand_y), np.inf)
    for c in np.unique(cand_y):
        r, where = np.flatnonzero(labels == c), np.flatnonzero(cand_y == c)
        if len(r):
            nearest[where] = mse_matrix(images[r], pool_set.images[where]).min(axis=0)
    return strata_of("", nearest, np.asarray(inside, dtype=bool), cand_y, threshold)


def extraction_count(track: Track, images: np.ndarray, labels: np.ndarray, member_images: ArraySet,
                     non_member_images: ArraySet, candidates: Candidates | None = None,
                     relabel: bool = True) -> dict | None:
    """The per-sample extraction count of the draw (core/extraction.py through image_extraction):
    members within the dataset's extraction threshold of some reconstruction, against the pool's
    other half. None where the dataset has no calibration. With `relabel`, its `relabel` block (strata
    and p, core/relabel.py) over `candidates` (default: the pool, members then non-members), and
    "extracts" is then the relabelling test's (k > j, p < ALPHA); `p` stays the natural null's, as context."""
    from reconbench.image.metrics.extraction import image_extraction

    cal = calibration(track)
    if cal is None:
        return None
    e = image_extraction(images, labels, member_images.images, member_images.labels, non_member_images.images,
                         non_member_images.labels, cal.threshold, cal.pair_rate)
    out = {"members": e.members, "n_members": e.n_members, "holdout": e.holdout, "n_holdout": e.n_holdout,
           "threshold": e.threshold, "p": e.p, "p_relabel": e.p_relabel, "extracts": e.extracts,
           # the natural null's expected counts: what pools the count across draws (core/draws.py)
           "expected_members": e.expected_members, "expected_holdout": e.expected_holdout, "text": e.sentence()}
    if relabel:
        from reconbench.core import relabel as rl
        from reconbench.image.data.arrays import ArraySet

        if candidates is None:
            candidates = (ArraySet(np.concatenate([member_images.images, non_member_images.images]),
                                   np.concatenate([member_images.labels, non_member_images.labels])),
                          np.r_[np.ones(len(member_images.labels), bool), np.zeros(len(non_member_images.labels), bool)])
        block = rl.record(relabel_strata(images, labels, candidates, cal.threshold))
        out["relabel"] = block
        out["extracts"] = rl.extracts(e.members, e.holdout, block["p"])
    return out


def block_candidates(track: Track, key: bytes | None = None) -> Candidates:
    """A v2 draw's relabelling candidates: the whole sealed block, with its members marked. Every block image of a
    class was equally likely to be drawn a member (core/seal.block_draw), so this is the null core/relabel.py
    tests against; with the pool's other half alone one member per draw could never reach ALPHA over K = 5."""
    from reconbench.image.sealed import block, opened_draw

    indices, inside, _ = opened_draw(track, key)
    candidates = block(track)
    mask = np.zeros(len(candidates.labels), dtype=bool)
    mask[indices[inside]] = True
    return candidates, mask


def sealed_numbers(track: Track, key: bytes, images: np.ndarray, labels: np.ndarray, device: str = "cpu",
                   candidates: Candidates | None = None) -> dict:
    """What validate publishes for one sealed entry: the draw's membership gap per metric (members vs
    the pool's other half, the permutation test of core/membership.py) and the extraction count, with its
    relabelling block over `candidates` (default: a v2 draw's whole sealed block, block_candidates; a v1 draw's
    pool) unless the draw's season is burned."""
    from reconbench.core.seasons import burned

    import torch

    from reconbench.image.metrics.leakage import _result, kernel_gap, mse_and_psnr_gaps
    from reconbench.image.metrics.pixel import MSEKernel
    from reconbench.image.metrics.ssim import SSIMKernel

    whole, inside = pool(track, key), members(track, key)
    mem, non = whole.subset(np.flatnonzero(inside)), whole.subset(np.flatnonzero(~inside))
    if candidates is None and seal_of(track).scheme == "v2":
        candidates = block_candidates(track, key)
    rec = torch.from_numpy(np.ascontiguousarray(images))
    shape = tuple(track.input_shape)
    tar, hold = torch.from_numpy(mem.images), torch.from_numpy(non.images)
    mse, psnr = mse_and_psnr_gaps(MSEKernel(shape), rec, labels, tar, mem.labels, hold, non.labels, device)
    ssim = kernel_gap(SSIMKernel(shape, device=device), rec, labels, tar, mem.labels, hold, non.labels, device)
    gaps = {"mse": mse, "psnr": psnr, "ssim": ssim}
    return {
        "membership": {name: _result(gaps[name]).model_dump(mode="json") for name in GAP_METRICS},
        "extraction": extraction_count(track, images, labels, mem, non, candidates,
                                       relabel=not burned(seal_of(track).season)),
    }


def record(track: Track, key: bytes, entry_id: str, payload_sha256: str, images: np.ndarray, labels: np.ndarray,
           device: str = "cpu", candidates: Candidates | None = None) -> dict:
    """sealed.json: the numbers with what they were computed for (entry, payload, draw, commitment).
    Nothing in it is derived from the key but these numbers and the already public commitment."""
    from reconbench.core.membership import PERMUTATIONS, SEED

    seal = seal_of(track)
    return {"scheme": SCHEME, "entry_id": entry_id, "payload_sha256": payload_sha256, "track": track.id,
            "group": seal.group, "draw": seal.draw, "season": seal.season, "commitment": seal.commitment,
            "permutations": PERMUTATIONS, "seed": SEED,
            **sealed_numbers(track, key, images, labels, device, candidates)}


def observation_matches(track: Track, key: bytes, tolerance: float = 1e-4) -> bool:
    """An update twin's published observation equals image/dynamic.py's recipe on the members the key
    opens (what `seal verify` checks after the reveal: the board published the update of its commitment)."""
    import torch

    from reconbench.image.dynamic import fine_tune, observed_gradients, observed_update
    from reconbench.image.track_files import load_target_model

    before = load_target_model(track)
    seen, after = observed_update(track, before)
    mine = member_set(track, key)
    fresh = observed_gradients(before, mine, batch_size=track.gradient_batch_size or len(mine))
    redone = fine_tune(before, mine)
    # Within `tolerance` of each tensor's largest entry: float32 sums reorder with the thread count (5e-6
    # of the scale between 1 and 2 threads), while another member set moves the update by far more.
    close = lambda a, b: bool((a - b).abs().max() <= tolerance * b.abs().max() + 1e-12)  # noqa: E731
    return seen.batch_sizes == fresh.batch_sizes and all(
        close(a, b) for batch, again in zip(seen.gradients, fresh.gradients) for a, b in zip(batch, again)) and all(
        close(a, b) for a, b in zip(after.state_dict().values(), redone.state_dict().values()))


def same_numbers(a: dict, b: dict, tolerance: float = 1e-9) -> bool:
    """Two records agree: every field equal, numbers within `tolerance` (float reductions may reorder)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_numbers(a[k], b[k], tolerance) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_numbers(x, y, tolerance) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return abs(float(a) - float(b)) <= tolerance * max(1.0, abs(float(a)))
    return a == b
