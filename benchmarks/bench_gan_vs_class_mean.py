"""The GAN-prior attacks against uninformed and aux-data baselines on digits (issue 10's comparison).

    .venv/bin/python benchmarks/bench_gan_vs_class_mean.py                  # the test budgets
    .venv/bin/python benchmarks/bench_gan_vs_class_mean.py --budget default --device cuda
    .venv/bin/python benchmarks/bench_gan_vs_class_mean.py --attacks revealer --weights-dir DIR

One row per baseline (the board's reference rows, leaderboard/baselines.py: seeded uniform noise,
the per-class mean of the attacker's aux images, the aux images as they are) and per attack: FID on Inception (the SoK's and the papers' metric;
"n/c" with the reason below the table when its weights are not found: run `recon-submit weights
fetch` once online), the same Frechet distance on the eval CNN's features (fd_eval, the stand-in
tests/test_attacks_gan.py asserts on), Acc@1, KNN distance, SSIM with its coverage, and the wall
time of the attack (prior training included unless it was cached: the GAN priors are cached, so
point RECONBENCH_CACHE at an empty folder to time training). Ratios to the class mean are printed
for the two distances (below 1: the attack is closer to the target distribution than the mean).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "toolkit"))

from reconbench.image.attacks import ATTACKS, Progress  # noqa: E402
from reconbench.image.knowledge import build_knowledge  # noqa: E402
from reconbench.leaderboard.baselines import KINDS as BASELINE_KINDS, baseline_images  # noqa: E402
from reconbench.image.metrics import score  # noqa: E402
from reconbench.image.metrics.classifier import eval_feature_fid, track_evaluator  # noqa: E402
from reconbench.core.scenario import Scenario  # noqa: E402
from reconbench.image.track_files import load_splits  # noqa: E402
from reconbench.core.tracks import get_track  # noqa: E402

# The budgets of tests/test_attacks_gan.py (kept equal by hand: that file states the measured table).
TEST_BUDGETS = {
    "revealer": {"gan_epochs": 150, "iterations": 100, "restarts": 1},
    "kedmi": {"gan_epochs": 10, "iterations": 300},
    "plg-mi": {"gan_iterations": 40, "iterations": 40},
}


def row(name: str, images: np.ndarray, labels: np.ndarray, target, track, evaluator, device: str,
        weights_dir: str | None, seconds: float | None, notes: list[str]) -> dict:
    r = score(images, labels, target.images, target.labels, lpips=False, fid=True, track=track, device=device,
              weights_dir=weights_dir)
    fid = r.metrics["fid"]
    if fid.value is None and fid.note and fid.note not in notes:
        notes.append(fid.note)
    ssim = r.metrics["ssim"]
    return {"name": name, "fid": fid.value, "fd_eval": eval_feature_fid(evaluator, images, target.images, device),
            "acc": r.metrics["acc_top1"].value, "knn": r.metrics["knn_dist"].value,
            "ssim": f"{ssim.value:.3f} ({ssim.coverage:.1%})", "s": seconds}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--attacks", default="revealer,kedmi,plg-mi")
    ap.add_argument("--budget", choices=["test", "quick", "default", "paper"], default="test")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--weights-dir", default=None)
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (the test's measurements use 1)")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)

    track = get_track("digits")
    evaluator, why = track_evaluator(track)
    if evaluator is None:
        print(f"error: {why}", file=sys.stderr)
        return 1
    target = load_splits(track, ["target"]).target
    k = build_knowledge(track, Scenario.parse("static/white-box/same"), device=args.device)
    notes: list[str] = []
    rows = []
    for kind in ("noise", "aux-mean", "aux"):  # the board's reference rows (leaderboard/baselines.py)
        images, labels = baseline_images(kind, k.target_size, k.input_shape, k.num_classes, k.aux_data)
        rows.append(row(BASELINE_KINDS[kind], images, labels, target, track, evaluator, args.device, args.weights_dir,
                        None, notes))
    for name in [a.strip() for a in args.attacks.split(",") if a.strip()]:
        attack = ATTACKS[name](**TEST_BUDGETS[name]) if args.budget == "test" else ATTACKS[name](budget=args.budget)
        t0 = time.perf_counter()
        rec = attack.run(k, seed=args.seed, progress=Progress())
        seconds = time.perf_counter() - t0
        cached = "" if rec.provenance.get("prior_trained_in_this_run") else " (prior cached)"
        rows.append(row(f"{name} ({args.budget}){cached}", rec.to_uint8().numpy(), rec.labels.numpy(), target, track,
                        evaluator, args.device, args.weights_dir, seconds, notes))

    mean = rows[1]  # the per-class aux mean
    print(f"digits, static/white-box/same, seed {args.seed}, {args.device}, {torch.get_num_threads()} thread(s)\n")
    print("| | FID (Inception) | x mean | fd_eval | x mean | Acc@1 | KNN | SSIM (cov.) | s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        fid = "n/c" if r["fid"] is None else f"{r['fid']:.2f}"
        fid_ratio = "" if r["fid"] is None or mean["fid"] is None else f"{r['fid'] / mean['fid']:.2f}"
        secs = "" if r["s"] is None else f"{r['s']:.1f}"
        print(f"| {r['name']} | {fid} | {fid_ratio} | {r['fd_eval']:.2f} | {r['fd_eval'] / mean['fd_eval']:.2f} | "
              f"{r['acc']:.3f} | {r['knn']:.1f} | {r['ssim']} | {secs} |")
    for note in notes:
        print(f"\n{note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
