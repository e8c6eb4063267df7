"""The rows of benchmarks/device_check.sh, one per process: `python benchmarks/device_rows.py ROW --device D [--dry]`.

Each row prints one line of JSON, {"row", "device", "result", "status"}, with status ok or skipped;
an exception is the shell script's to report (it prints the error line and goes on). Only what the
repository and the carried virtualenv hold is used: stand-in (seeded random) Inception and AlexNet
weights when the real files are absent (the GPU machine has no network), the embedded digits track,
random images for the zoo's training step. --dry: tiny sizes, so that the CPU test runs every row.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "toolkit"))
NO_WEIGHTS = Path(tempfile.mkdtemp(prefix="reconbench-no-weights-"))  # empty: FID/LPIPS "not computed" (offline)
GAN_ATTACKS = ("plg-mi", "kedmi", "gmi", "revealer")  # the first registered one is timed


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed(device: str, fn):
    sync(device)
    t0 = time.perf_counter()
    out = fn()
    sync(device)
    return out, time.perf_counter() - t0


def images(n: int, size: int = 32, seed: int = 0):
    from reconbench.image.metrics.testdata import photo_patches

    return photo_patches(n, size=size, seed=seed)  # real photo patches, class = source photo


def row_pairwise(device: str, dry: bool) -> str:
    """MSE/PSNR/SSIM through the pairwise engine (metrics.score) on the device vs the CPU."""
    from reconbench.image.metrics import score

    n = 60 if dry else 2000
    rec, rec_y = images(n, seed=1)
    tar, tar_y = images(n, seed=2)
    run = lambda d: score(rec, rec_y, tar, tar_y, device=d, fid=False, lpips=False, weights_dir=NO_WEIGHTS)  # noqa: E731
    cpu, t_cpu = timed("cpu", lambda: run("cpu"))
    dev, t_dev = timed(device, lambda: run(device))
    diff = max(abs(cpu.metrics[m].value - dev.metrics[m].value) for m in ("mse", "psnr", "ssim"))
    cov = max(abs(cpu.metrics[m].coverage - dev.metrics[m].coverage) for m in ("mse", "psnr", "ssim"))
    return (f"N=M={n} 32x32x3: cpu {t_cpu:.2f} s, {device} {t_dev:.2f} s, speed-up {t_cpu / t_dev:.1f}x; "
            f"max |diff| value {diff:.1e}, coverage {cov:.1e}")


def row_lpips(device: str, dry: bool) -> str:
    """LPIPS (stand-in AlexNet backbone unless the real file is there) on the device vs the CPU."""
    from reconbench.image.metrics.lpips_metric import LPIPSExtractor, lpips_pairwise, standin_alexnet_state_dict

    n = 16 if dry else 1000
    x, _ = images(n, seed=3)
    y, _ = images(n, seed=4)
    real = LPIPSExtractor.from_weights(None, device="cpu") is not None
    state = standin_alexnet_state_dict()
    run = lambda d: lpips_pairwise(LPIPSExtractor(state, device=d), torch.from_numpy(x), torch.from_numpy(y)).cpu()  # noqa: E731
    cpu, t_cpu = timed("cpu", lambda: run("cpu"))
    dev, t_dev = timed(device, lambda: run(device))
    return (f"{n}x{n} pairs ({'stand-in' if not real else 'stand-in; real weights present'} AlexNet): cpu {t_cpu:.2f} s, "
            f"{device} {t_dev:.2f} s; max |diff| {float((cpu - dev).abs().max()):.1e}")


def row_fid(device: str, dry: bool) -> str:
    """FID on the device: Inception features of two image sets (stand-in weights offline) and the distance."""
    from reconbench.image.metrics.fid import fid_from_features
    from reconbench.image.metrics.inception import InceptionExtractor, standin_inception_state_dict

    n = 8 if dry else 2000
    extractor = InceptionExtractor.from_weights(None, device=device)
    kind = "real"
    if extractor is None:
        extractor, kind = InceptionExtractor(standin_inception_state_dict(), device=device), "stand-in"
    a, _ = images(n, seed=5)
    b, _ = images(n, seed=6)
    (fa, fb), t_feat = timed(device, lambda: (extractor.features(torch.from_numpy(a)), extractor.features(torch.from_numpy(b))))
    value, t_fid = timed(device, lambda: fid_from_features(fa, fb, device=device))
    return f"{n} vs {n} images, {kind} Inception: features {t_feat:.2f} s, Frechet distance {t_fid:.2f} s, FID {value:.2f}"


def _attack_seconds_per_iteration(name: str, device: str, config: dict, budget: str = "default") -> str:
    """The attack as `evaluate` runs it (its own process, reconbench.pipeline.isolation); the time includes that start."""
    from reconbench.image.attacks import Progress
    from reconbench.image.evaluation import attack_run
    from reconbench.core.tracks import get_track

    run, seconds = timed(device, lambda: attack_run(get_track("digits"), name, None, config=config, seed=0,
                                                    device=torch.device(device), progress=Progress(), budget=budget))
    iterations = run.config.get("iterations")
    per = f", {1000 * seconds / iterations:.1f} ms per iteration (process start included)" if iterations else ""
    return f"digits, {iterations or '?'} iterations, {len(run.reconstruction.images)} images: {seconds:.2f} s{per}"


def row_deepinversion(device: str, dry: bool) -> str:
    return _attack_seconds_per_iteration("deepinversion", device, {"iterations": 3 if dry else 200})


def row_gan(device: str, dry: bool) -> str:
    from reconbench.image.attacks import ATTACKS

    name = next((a for a in GAN_ATTACKS if a in ATTACKS), None)
    if name is None:
        raise LookupError(f"skipped: no GAN-prior attack ({', '.join(GAN_ATTACKS)}) is registered in this checkout")
    return f"{name} (quick budget) " + _attack_seconds_per_iteration(name, device, {}, budget="quick")


def row_zoo(device: str, dry: bool) -> str:
    """The zoo's training code (zoo.targets.train_model) on a CIFAR-10-shaped VGG16 for one short epoch."""
    from reconbench.image.data.arrays import ArraySet
    from reconbench.zoo.targets import Overrides, plan, train_model

    spec, recipe, kwargs = plan("cifar10-vgg16-n1000", Overrides(epochs=1, width_div=8 if dry else None))
    n = 128 if dry else 64 * 50
    rng = np.random.default_rng(0)
    data = ArraySet(rng.integers(0, 256, (n, 3, 32, 32), dtype=np.uint8), rng.integers(0, 10, n).astype(np.int64))
    _, seconds = timed(device, lambda: train_model(spec.architecture, kwargs, recipe, target=data, aux=None,
                                                   device=torch.device(device), log=lambda record: None))
    steps = -(-n // recipe.batch_size)
    return f"cifar10-vgg16 recipe{' (width/8)' if dry else ''}, {steps} steps of batch {recipe.batch_size}: {1000 * seconds / steps:.1f} ms per step"


def row_sweep(device: str, dry: bool) -> str:
    """Two MI-Face jobs (quick budget) through `sweep` on a local Ray instance, on the device."""
    from reconbench.image.results import verify_result_dir
    from reconbench.core.signing import generate_key
    from reconbench.sweep import Job, run_sweep

    jobs = [Job("digits", "mi-face", "static/white-box/none", seed, "quick", {"init": "uniform"}) for seed in (0, 1)]
    with tempfile.TemporaryDirectory() as tmp:
        key, _ = generate_key(Path(tmp) / "k.pem")
        summary, seconds = timed(device, lambda: run_sweep(jobs, out=Path(tmp) / "out", key_path=key, device=device,
                                                           num_cpus=2, gpus_per_job=0.5, weights_dir=NO_WEIGHTS))
        if summary.counts()["done"] != 2:
            raise RuntimeError("; ".join(o.error or o.status for o in summary.outcomes))
        for o in summary.outcomes:
            verify_result_dir(Path(tmp) / "out" / "results" / o.job.id)
    return f"2 jobs done and verified in {seconds:.1f} s (Ray start included), {device}, 0.5 GPU each"


def row_findings(device: str, dry: bool) -> str:
    """docs/grids/findings-gpu.toml: the findings page's runs at the papers' default budgets (official GAN
    widths), one after another on the device until FINDINGS_SECONDS (default 480) have gone; the signed
    results stay in FINDINGS_OUT (default sweep-results/findings-gpu) for `recon-submit submit`. --dry:
    the grid is expanded and checked (every job's attack, cell and options), nothing runs."""
    import os

    from reconbench.core.signing import generate_key
    from reconbench.sweep import load_grid, run_sweep

    grid = load_grid(REPO / "docs" / "grids" / "findings-gpu.toml", budget="default")
    seeds = sorted({j.seed for j in grid.jobs})
    if dry:
        return (f"{len(grid.jobs)} jobs at the default budget, seeds {seeds}, {grid.not_applicable} not applicable "
                f"(dry: none run)")
    out = Path(os.environ.get("FINDINGS_OUT", "sweep-results/findings-gpu"))
    limit = float(os.environ.get("FINDINGS_SECONDS", "480"))
    key, _ = generate_key(Path(tempfile.mkdtemp()) / "k.pem")
    t0, done, failed, per_attack = time.perf_counter(), 0, [], {}
    for job in grid.jobs:
        if time.perf_counter() - t0 > limit:
            break
        summary = run_sweep([job], out=out, key_path=key, device=device, backend="local", weights_dir=NO_WEIGHTS,
                            grid=grid.name)
        outcome = summary.outcomes[0]
        if outcome.status in ("done", "skipped"):
            done += 1
            per_attack.setdefault(f"{job.track}/{job.attack}", []).append(outcome.seconds or 0.0)
        else:
            failed.append(f"{job.id}: {outcome.error or outcome.status}")
    timing = "; ".join(f"{k} {sum(v) / len(v):.0f} s" for k, v in per_attack.items())
    return (f"{done} of {len(grid.jobs)} jobs done in {time.perf_counter() - t0:.0f} s, {len(failed)} failed"
            + (f" ({failed[0]})" if failed else "") + (f"; mean per job: {timing}" if timing else "") + f"; results in {out}")


ROWS = {"pairwise": row_pairwise, "lpips": row_lpips, "fid": row_fid, "deepinversion": row_deepinversion,
        "gan": row_gan, "zoo": row_zoo, "sweep": row_sweep, "findings": row_findings}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("row", choices=sorted(ROWS))
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dry", action="store_true")
    args = parser.parse_args(argv)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError("CUDA is not available to torch here")
    torch.manual_seed(0)
    try:
        result, status = ROWS[args.row](args.device, args.dry), "ok"
    except LookupError as exc:
        if not str(exc).startswith("skipped"):
            raise
        result, status = str(exc).removeprefix("skipped: "), "skipped"
    print(json.dumps({"row": args.row, "device": args.device, "result": result, "status": status}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
