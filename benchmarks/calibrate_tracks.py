"""Per-track calibration of the board's two tests (issue 33), written as data the site reads.

    nice -n 10 python benchmarks/calibrate_tracks.py [--quick] [TRACK ...]
    python benchmarks/calibrate_tracks.py --table      # benchmarks/README.md's table, from the file
    -> toolkit/reconbench/data/calibration.json (each track's board shows it: leaderboard.md.j2)

For each published image track, on the cell its board ranks first (static when the track has a
static scenario, else dynamic: D_tar is then the update set and the holdout the update holdout):

- knowledge-only p-values: the membership gap's p (SSIM and MSE, 1,000 permutations: the
  board's reference rows' count) and the extraction count of sets an attacker makes without the
  model: DRAWS random draws of |D_tar| images from the aux and test splits, the per-class aux mean, NOISE_SEEDS noisy aux
  means. Under a valid test on a fresh draw of the track their p would be uniform; the track has
  one draw, so their distribution here is what an entry's p means on THIS draw.
- the injected-copy power curve: aux draws with c exact member copies, REPLICATES each, the share
  that reaches the mean gap's verdict (min p of SSIM and MSE, times 2, below 0.01, gap > 0) and the
  count's badge (core/extraction.py).
- the smallest detectable SSIM gap (median over the aux draws of the 99th percentile of the
  permutation null: a gap above it has p < 0.01) and the smallest detectable count (the fewest
  extracted members whose p < 0.01 with no holdout item extracted).
- the target model's own membership baseline: accuracy on D_tar and on the holdout, and the AUC of
  a loss-threshold membership inference (members: D_tar; non-members: the holdout).
- whether a verdict is possible: the smallest p any relabelling test of the gap can reach
  (1 / prod_c C(m_c + h_c, m_c)) against 0.01 / 4 (the four tested gaps of an entry), and the
  count's p for one extracted member.

Fewer draws on the big tracks (|D_tar| >= 500: DRAWS_BIG, REPLICATES_BIG), stated in the output.
CPU seconds per track are recorded; the whole run on a shared 2-core machine: see benchmarks/README.md.
"""

from __future__ import annotations

import json
import math
import sys
import time
from importlib import resources
from pathlib import Path

import numpy as np
import torch

from reconbench.core.extraction import skellam_sf
from reconbench.core.membership import ALPHA, _null
from reconbench.core.tracks import all_tracks, get_track
from reconbench.image.metrics.extraction import image_extraction
from reconbench.image.metrics.leakage import image_groups, kernel_gap, kernel_matrix
from reconbench.image.metrics.pixel import MSEKernel
from reconbench.image.metrics.ssim import SSIMKernel
from reconbench.image.track_files import load_splits, load_target_model

OUT = Path(str(resources.files("reconbench") / "data" / "calibration.json"))
DRAWS, DRAWS_BIG = 100, 30
NOISE_SEEDS = 20
REPLICATES, REPLICATES_BIG = 20, 6
COPIES = (1, 2, 3, 5, 10, 20)
PERMUTATIONS = 1000
TESTED_GAPS = 4  # an entry's gaps tested for the verdict (MSE, PSNR, SSIM, KNN distance)
WEAK_AUC = 0.6  # below: the model barely separates its members from the holdout


def _cell(track) -> str:
    return "static" if any(s.startswith("static/") for s in track.scenarios) else "dynamic"


def _sets(track):
    s = load_splits(track)
    dynamic = _cell(track) == "dynamic"
    target = s.update if dynamic else s.target
    holdout = s.update_holdout if dynamic else s.holdout
    # the natural data drawn from: aux and test (public, never trained on; digits' aux alone is |D_tar|)
    from reconbench.image.data.arrays import ArraySet

    parts = [p for p in (s.aux_same, s.test) if p is not None]
    aux = ArraySet(np.concatenate([p.images for p in parts]), np.concatenate([p.labels for p in parts]))
    return target, holdout, aux


def _gaps(rec, rec_y, target, holdout, shape):
    r, t, h = (torch.from_numpy(np.ascontiguousarray(x)) for x in (rec, target.images, holdout.images))
    out = {}
    for name, kernel in (("ssim", SSIMKernel(shape)), ("mse", MSEKernel(shape))):
        g = kernel_gap(kernel, r, rec_y, t, target.labels, h, holdout.labels, permutations=PERMUTATIONS)
        out[name] = None if g is None else (g.gap, g.p)
    return out


def _verdict(gaps) -> bool:
    tested = [v for v in gaps.values() if v is not None]
    return any(p * len(tested) < ALPHA and gap > 0 for gap, p in tested)


def _ssim_q99(rec, rec_y, target, holdout, shape) -> float | None:
    """The 99th percentile of the SSIM gap's permutation null for these reconstructions."""
    kernel = SSIMKernel(shape)
    r, t, h = (torch.from_numpy(np.ascontiguousarray(x)) for x in (rec, target.images, holdout.images))

    def matrix(ri, ti, hi):
        pool = torch.cat([t[torch.from_numpy(ti)], h[torch.from_numpy(hi)]])
        return kernel_matrix(kernel, r[torch.from_numpy(ri)], pool, "cpu")

    groups = image_groups(matrix, rec_y, target.labels, holdout.labels, True)
    if not groups:
        return None
    null = _null(groups, 1.0, np.random.default_rng(0), PERMUTATIONS) / len(rec_y)
    return float(np.quantile(null, 1 - ALPHA))


def _knowledge_sets(target, aux, draws, rng):
    n = len(target)
    means = {int(c): aux.images[aux.labels == c].astype(float).mean(0) for c in np.unique(aux.labels) if c >= 0}
    labels = np.array([c if c in means else next(iter(means)) for c in target.labels.tolist()], dtype=np.int64)
    for _ in range(draws):
        pick = rng.choice(len(aux), n, replace=len(aux) < n)
        yield "aux draw", aux.images[pick], aux.labels[pick]
    mean = np.stack([means[int(c)] for c in labels])
    yield "aux mean", mean.round().astype(np.uint8), labels
    for seed in range(NOISE_SEEDS):
        noisy = mean + np.random.default_rng(1000 + seed).normal(0, 20, mean.shape)
        yield "noise seed", np.clip(noisy, 0, 255).round().astype(np.uint8), labels


def _summary(ps: list[float]) -> dict:
    from scipy.stats import kstest

    ps = [p for p in ps if p is not None]
    if not ps:
        return {}
    return {"n": len(ps), "median": float(np.median(ps)), "below_alpha": float(np.mean(np.array(ps) < ALPHA)),
            "ks_uniform_p": float(kstest(ps, "uniform").pvalue) if len(ps) >= 5 else None,
            "quantiles": [float(q) for q in np.quantile(ps, [0.1, 0.25, 0.5, 0.75, 0.9])]}


def _mia(track, target, holdout) -> dict:
    model = load_target_model(track)
    model.eval()

    def losses(part):
        with torch.no_grad():
            logits = model(part.as_float("cpu"))
            y = torch.from_numpy(part.labels)
            if logits.shape[1] == 1:  # one logit: binary cross-entropy
                loss = torch.nn.functional.binary_cross_entropy_with_logits(logits[:, 0], y.float(), reduction="none")
                pred = (logits[:, 0] > 0).long()
            else:
                loss = torch.nn.functional.cross_entropy(logits, y, reduction="none")
                pred = logits.argmax(1)
        return loss.numpy(), float((pred == y).float().mean())

    lt, acc_t = losses(target)
    lh, acc_h = losses(holdout)
    # AUC of "lower loss = member": the Mann-Whitney U of the two samples over their product
    from scipy.stats import mannwhitneyu

    auc = float(mannwhitneyu(-lt, -lh, alternative="two-sided").statistic / (len(lt) * len(lh)))
    return {"member_accuracy": acc_t, "holdout_accuracy": acc_h, "loss_mia_auc": auc,
            "barely_separates": auc < WEAK_AUC, "model": "the static target model" if _cell(track) == "static"
            else "the model before the update (the update's own members are the dynamic cell's)"}


def _possible(track, target, holdout, shape) -> dict:
    counts = [(int((target.labels == c).sum()), int((holdout.labels == c).sum())) for c in np.unique(target.labels)]
    log_rel = sum(math.lgamma(m + h + 1) - math.lgamma(m + 1) - math.lgamma(h + 1) for m, h in counts if m and h)
    min_p = math.exp(-log_rel)
    cal = track.extraction
    n = len(target)
    count_p = None
    if cal is not None:  # |D_rec| = |D_tar| reconstructions, one extracted member, none of the holdout
        per_class = {c: (m, h) for c, (m, h) in zip(np.unique(target.labels).tolist(), counts)}
        lam_m = cal.pair_rate * sum(m * m for m, _ in per_class.values())  # n_rec per class = m (the size rule)
        lam_h = cal.pair_rate * sum(m * h for m, h in per_class.values())
        count_p = skellam_sf(1, lam_m, lam_h)
        smallest = next((k for k in range(1, n + 1) if skellam_sf(k, lam_m, lam_h) < ALPHA), None)
    else:
        smallest = None
    return {"gap_min_p": min_p, "gap_level": ALPHA / TESTED_GAPS, "gap_verdict_possible": min_p < ALPHA / TESTED_GAPS,
            "count_p_one_member": count_p, "count_verdict_possible": count_p is not None and count_p < ALPHA,
            "smallest_detectable_count": smallest}


def calibrate(track, quick: bool = False) -> dict:
    started = time.process_time()
    target, holdout, aux = _sets(track)
    shape = tuple(target.images.shape[1:])
    big = len(target) >= 500
    draws = 10 if quick else DRAWS_BIG if big else DRAWS
    replicates = 2 if quick else REPLICATES_BIG if big else REPLICATES
    cal = track.extraction
    rng = np.random.default_rng(0)
    kinds: dict[str, dict] = {}
    q99 = []
    for kind, rec, rec_y in _knowledge_sets(target, aux, draws, rng):
        gaps = _gaps(rec, rec_y, target, holdout, shape)
        e = image_extraction(rec, rec_y, target.images, target.labels, holdout.images, holdout.labels,
                             cal.threshold, cal.pair_rate)
        k = kinds.setdefault(kind, {"ssim_p": [], "mse_p": [], "verdicts": 0, "extracted": [], "extracts": 0})
        for m in ("ssim", "mse"):
            k[f"{m}_p"].append(None if gaps[m] is None else gaps[m][1])
        k["verdicts"] += int(_verdict(gaps))
        k["extracted"].append(e.members)
        k["extracts"] += int(e.extracts)
        if kind == "aux draw" and len(q99) < 20:
            q = _ssim_q99(rec, rec_y, target, holdout, shape)
            if q is not None:
                q99.append(q)
    knowledge = {kind: {"sets": len(k["extracted"]), "ssim_p": _summary(k["ssim_p"]), "mse_p": _summary(k["mse_p"]),
                        "gap_verdicts": k["verdicts"], "max_extracted": int(max(k["extracted"])),
                        "count_badges": k["extracts"]} for kind, k in kinds.items()}
    power = []
    for c in [c for c in COPIES if c <= len(target)]:
        gap_hits = count_hits = 0
        for _ in range(replicates):
            pick = rng.choice(len(aux), len(target) - c, replace=len(aux) < len(target))
            members = rng.choice(len(target), c, replace=False)
            rec = np.concatenate([aux.images[pick], target.images[members]])
            rec_y = np.concatenate([aux.labels[pick], target.labels[members]])
            gap_hits += int(_verdict(_gaps(rec, rec_y, target, holdout, shape)))
            count_hits += int(image_extraction(rec, rec_y, target.images, target.labels, holdout.images,
                                               holdout.labels, cal.threshold, cal.pair_rate).extracts)
        power.append({"copies": c, "of": len(target), "replicates": replicates,
                      "mean_gap": gap_hits / replicates, "count": count_hits / replicates})
    return {"track": track.id, "cell": _cell(track), "d_tar": len(target), "draws": draws, "noise_seeds": NOISE_SEEDS,
            "replicates": replicates, "permutations": PERMUTATIONS, "knowledge_only": knowledge, "power": power,
            "smallest_ssim_gap": float(np.median(q99)) if q99 else None, "membership_baseline": _mia(track, target, holdout),
            "verdict": _possible(track, target, holdout, shape), "cpu_seconds": round(time.process_time() - started, 1)}


def table() -> str:
    """The README's tables, from the committed calibration.json."""
    data = json.loads(OUT.read_text())["tracks"]
    lines = ["| track | cell | D_tar | power: copies -> mean gap / count | smallest SSIM gap | smallest count "
             "| count p, one member | gap verdict possible | loss-MIA AUC | knowledge-only SSIM p median (aux draws) "
             "| gap verdicts / count badges (knowledge-only) | CPU s |", "|" + "---|" * 12]
    for tid in sorted(data):
        c = data[tid]
        v, b, k = c["verdict"], c["membership_baseline"], c["knowledge_only"]
        power = ", ".join(f"{r['copies']}: {r['mean_gap']:.2f} / {r['count']:.2f}" for r in c["power"])
        draws = k.get("aux draw", {})
        med = draws.get("ssim_p", {}).get("median")
        verdicts = sum(x["gap_verdicts"] for x in k.values())
        badges = sum(x["count_badges"] for x in k.values())
        sets = sum(x["sets"] for x in k.values())
        lines.append(f"| {tid} | {c['cell']} | {c['d_tar']} | {power} ({c['replicates']} replicates) | "
                     f"{c['smallest_ssim_gap']:.4f} | {v['smallest_detectable_count']} | {v['count_p_one_member']:.2g} | "
                     f"{'yes' if v['gap_verdict_possible'] else 'no (min p %.2g)' % v['gap_min_p']} | "
                     f"{b['loss_mia_auc']:.3f} | {med if med is None else round(med, 3)} ({c['draws']} draws) | "
                     f"{verdicts} / {badges} of {sets} | {c['cpu_seconds']} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if "--table" in argv:
        print(table())
        return 0
    quick = "--quick" in argv
    wanted = [a for a in argv if not a.startswith("--")]
    tracks = [get_track(t) for t in wanted] if wanted else \
        [t for t in all_tracks() if t.status != "unpublished" and t.extraction is not None]
    out = json.loads(OUT.read_text()) if OUT.is_file() else {"tracks": {}}
    for track in tracks:
        result = calibrate(track, quick)
        out["tracks"][track.id] = result
        print(f"{track.id}: {result['cpu_seconds']} CPU s; power {result['power']}", flush=True)
        OUT.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
