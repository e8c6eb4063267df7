"""Gradient inversion against the batch size: Deep Leakage on the control tracks fashion-lenet-u{1,2,4,8}.

    nice -n 10 .venv/bin/python benchmarks/bench_gradient_inversion_batch.py [--batches 1 2 4 8] [--restarts 1 4]
        [--seeds 0] [--iterations 300]      (OMP_NUM_THREADS=1: one torch thread, as the entries ran)
    .venv/bin/python benchmarks/bench_gradient_inversion_batch.py --entries   # the committed entries, scored alike

Issue 44, item 1: DLG's own setting (Zhu et al., NeurIPS'19: the untrained Sigmoid LeNet of
mit-han-lab/dlg, the gradient of one batch) on Fashion-MNIST, one track per batch size. Each row is
one run of the registered attack `deep-leakage` through the harness (`evaluate()`: sandboxed, scored
as an entry is), with the iDLG label for one-image batches (label=idlg) and DLG's L-BFGS budget
(300 steps), once with one random start and once with several (Geiping et al.'s restarts).
--entries scores the committed Deep Leakage entries of these tracks (submissions/reconbench-baselines/
fashion-lenet-u*) with the same function instead of running anything: their reconstructions, their signed
extraction count and their recorded wall time.

Printed per (batch, restarts): per member of the update, its best reconstruction's per-pixel MSE and
SSIM (the reconstruction nearest to it, whatever its label; median and worst over the batch), the
label accuracy (the share of members whose nearest reconstruction carries their class), the board's
extraction count (members within the track's extraction threshold, p of the natural-data null,
core/extraction.py) and the attack's wall seconds. The data for the claim "the batch size limits
gradient inversion" (issue 44, item 4). FID/LPIPS are not computed (no backbone weights offline).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "toolkit"))

NO_WEIGHTS = Path(tempfile.mkdtemp(prefix="reconbench-no-weights-"))  # empty: FID/LPIPS "not computed" (offline)


def per_member(images: np.ndarray, labels: np.ndarray, members: np.ndarray, member_labels: np.ndarray) -> dict:
    """Per member: the nearest reconstruction (per-pixel MSE on [0, 1]), its SSIM and whether its label is right."""
    from skimage.metrics import structural_similarity

    rec = images.astype(np.float64) / 255.0
    tar = members.astype(np.float64) / 255.0
    mse = ((rec[:, None] - tar[None]) ** 2).reshape(len(rec), len(tar), -1).mean(-1)  # (n_rec, n_members)
    best = mse.argmin(0)
    ssim = [structural_similarity(rec[b, 0], tar[m, 0], gaussian_weights=True, sigma=1.5, use_sample_covariance=False,
                                  data_range=1.0) for m, b in enumerate(best)]
    return {"mse": mse.min(0), "ssim": np.asarray(ssim), "label_ok": labels[best] == member_labels}


def run(batch: int, restarts: int, seed: int, iterations: int, key: Path, out: Path) -> dict:
    from reconbench.image.evaluation import evaluate
    from reconbench.image.track_files import load_splits
    from reconbench.core.tracks import get_track

    track_id = f"fashion-lenet-u{batch}"
    config = {"iterations": iterations, "label": "idlg", "restarts": restarts}
    started = time.perf_counter()
    done = evaluate(track_id=track_id, attack_spec="deep-leakage", scenario="dynamic/white-box/none", seed=seed,
                    out=out / f"{track_id}-r{restarts}-s{seed}", key_path=key, config=config, weights_dir=NO_WEIGHTS)
    seconds = time.perf_counter() - started
    from reconbench.core.io import load_arrays

    arrays = load_arrays(done.folder / "reconstructions.safetensors")
    update = load_splits(get_track(track_id), ["update"]).update
    got = per_member(arrays["images"], arrays["labels"], update.images, update.labels)
    extraction = done.result.payload.membership.extraction
    return {"batch": batch, "restarts": restarts, "mse_median": float(np.median(got["mse"])), "mse_worst": float(got["mse"].max()),
            "ssim_median": float(np.median(got["ssim"])), "ssim_worst": float(got["ssim"].min()),
            "label_acc": float(got["label_ok"].mean()), "extracted": extraction.members, "p": extraction.p,
            "threshold": extraction.threshold, "attack_s": done.result.payload.provenance.wall_seconds, "total_s": seconds}


def from_entries() -> list[dict]:
    """The committed entries' rows: their reconstructions scored by per_member, their signed count."""
    from reconbench.core.io import load_arrays
    from reconbench.core.tracks import get_track
    from reconbench.image.track_files import load_splits
    from reconbench.text.results import parse_any_result

    rows = []
    for result in sorted((REPO / "submissions" / "reconbench-baselines").glob("fashion-lenet-u*/result.json")):
        payload = parse_any_result(result).payload
        if payload.attack.name != "deep-leakage":
            continue
        arrays = load_arrays(result.parent / "reconstructions.safetensors")
        update = load_splits(get_track(payload.track), ["update"]).update
        got = per_member(arrays["images"], arrays["labels"], update.images, update.labels)
        extraction = payload.membership.extraction
        rows.append({"batch": len(update), "restarts": payload.attack.config["restarts"], "seed": payload.provenance.seed,
                     "mse_median": float(np.median(got["mse"])), "mse_worst": float(got["mse"].max()),
                     "ssim_median": float(np.median(got["ssim"])), "ssim_worst": float(got["ssim"].min()),
                     "label_acc": float(got["label_ok"].mean()), "extracted": extraction.members, "p": extraction.p,
                     "threshold": extraction.threshold, "attack_s": payload.provenance.wall_seconds})
    return sorted(rows, key=lambda r: r["batch"])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--restarts", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="attack seeds: one row each")
    parser.add_argument("--iterations", type=int, default=300, help="L-BFGS steps (DLG main.py: 300)")
    parser.add_argument("--entries", action="store_true", help="score the committed entries instead of running")
    args = parser.parse_args(argv)
    if args.entries:
        return table(from_entries(), "the committed Deep Leakage entries (label=idlg, 300 L-BFGS steps)")

    from reconbench.core.signing import generate_key

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        key, _ = generate_key(Path(tmp) / "bench.pem")
        for batch in args.batches:
            for restarts in args.restarts:
                for seed in args.seeds:
                    row = run(batch, restarts, seed, args.iterations, key, Path(tmp)) | {"seed": seed}
                    rows.append(row)
                    print(f"# u{batch} restarts {restarts} seed {seed}: {row}", flush=True)
    return table(rows, f"Deep Leakage (label=idlg, {args.iterations} L-BFGS steps)")


def table(rows: list[dict], what: str) -> int:
    from reconbench.core.verdict import held_to

    if not rows:
        print("no rows")
        return 1
    print(f"\n{what} on fashion-lenet-u*; extraction threshold {rows[0]['threshold']:.3g} (per-pixel MSE)\n")
    print("| batch | restarts | seed | MSE median | MSE worst | SSIM median | SSIM worst | label acc | extracted | count's p | attack s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['batch']} | {r['restarts']} | {r['seed']} | {r['mse_median']:.2g} | {r['mse_worst']:.2g} | {r['ssim_median']:.3f} | "
              f"{r['ssim_worst']:.3f} | {r['label_acc']:.2f} | {r['extracted']} of {r['batch']} | "
              f"{held_to(r['p'])} | {r['attack_s']:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
