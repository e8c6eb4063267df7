"""`score()`: every metric of the suite for one set of reconstructions against its target set.

Sample level (SoK Def. 4.2), for d in MSE, PSNR, SSIM, LPIPS: each reconstruction is mapped to
its nearest target of the same class (many-to-one), S-Dis is the mean of the best values and
coverage alpha = |distinct matched targets| / |D_tar|.

Rule for a reconstruction whose label has no target of that class: it is matched to nothing
(match -1), adds nothing to coverage, and counts in S-Dis with the worst value of the metric's
range (MSE 1, PSNR 0 dB, SSIM -1, LPIPS its upper bound 2 * sum_l max_c w_lc); the result's note
says how many there were. Labels outside the target classes therefore cost, never help.

Dataset level: FID (SoK Def. 4.1) and Naeem et al.'s PRDC on InceptionV3 pool3 features.

Weights: LPIPS and FID need pretrained backbones that are not shipped; they are fetched into the
cache on first need (pinned size and sha256, download.py) unless offline. Without their files the
metrics come back as status "not_computed" with a note naming the missing file and the command
that fetches it (never numbers from other or random weights).
Tests inject stand-in extractors through `lpips_extractor=` / `inception_extractor=`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import numpy as np

from .classifier import Evaluator, classifier_metrics, track_evaluator
from .classifier import not_computed as classifier_not_computed
from .fid import fid_result, inception_features
from .images import check_pair
from .pairwise import Budget, Nearest, nearest_same_class
from .pixel import MSEKernel, psnr_from_mse
from .prdc import NAMES as PRDC_NAMES
from .prdc import prdc_results
from reconbench.core.report import MetricResult, ScoreReport
from .ssim import RADIUS, SIGMA, SSIMKernel
from .weights import candidate_paths, downloads_allowed, hub_checkpoint_dir, missing_note, pinned, weights_cache_dir

if TYPE_CHECKING:
    from .inception import InceptionExtractor
    from .lpips_metric import LPIPSExtractor


def sample_level(best: np.ndarray, match: np.ndarray, n_targets: int, worst: float, note: str | None = None) -> MetricResult:
    """S-Dis = mean of the per-reconstruction best values; alpha = distinct matched targets / |D_tar|."""
    hit = match[match >= 0]
    coverage = len(np.unique(hit)) / n_targets
    missing = int((match < 0).sum())
    if missing:
        extra = f"{missing} of {len(match)} reconstructions have no target of their class: scored {worst:g}, no coverage"
        note = f"{note}; {extra}" if note else extra
    return MetricResult(status="computed", value=float(np.mean(best)), coverage=coverage, note=note)


def score(
    rec_images,
    rec_labels,
    tar_images,
    tar_labels,
    *,
    device: str = "cpu",
    lpips: bool = True,
    fid: bool = True,
    weights_dir: str | os.PathLike | None = None,
    cache_dir: str | os.PathLike | None = None,
    budget: Budget | None = None,
    lpips_extractor: LPIPSExtractor | None = None,
    inception_extractor: InceptionExtractor | None = None,
    download: bool | None = None,
    track=None,
    evaluator: Evaluator | None = None,
    holdout_images=None,
    holdout_labels=None,
    permutations: int | None = None,
) -> ScoreReport:
    """Score reconstructions against targets. Images: uint8 (N, C, H, W), C in {1, 3}; labels int64 (N,).

    cache_dir: where target Inception features are cached (default $RECONBENCH_CACHE/features or
    ~/.cache/reconbench/features). budget: memory budget of the pairwise engine (see pairwise.py).
    download: fetch a missing backbone into the cache on first need (download.py); default: yes
    unless HF_HUB_OFFLINE=1 (`--offline`).
    track / evaluator: the evaluation classifier of acc_top1, acc_top5, knn_dist (classifier.py): the
    given one, else the track's pinned `evaluation_model`; neither: not computed.
    holdout_images / holdout_labels: the holdout matched to the targets (track_files.load_holdout):
    every metric is then also scored against it, and report.membership holds each metric's gap
    (metrics/leakage.py, core/membership.py); permutations: of its test (default
    membership.PERMUTATIONS, what results record; the board's reference rows use fewer).
    """
    download = downloads_allowed() if download is None else download
    rec, rec_y, tar, tar_y = check_pair(rec_images, rec_labels, tar_images, tar_labels)
    shape = tuple(rec.shape[1:])
    m = tar.shape[0]
    metrics: dict[str, MetricResult] = {}
    matches: dict[str, np.ndarray] = {}

    def nearest(kernel) -> Nearest:
        return nearest_same_class(kernel, rec, rec_y, tar, tar_y, device=device, budget=budget)

    # With a holdout, the gap needs each class's reconstructions against its targets and holdout images;
    # S-Dis is read from those matrices' target columns (leakage.nearest_from) instead of a second pass.
    hold = hold_y = None
    shared: dict = {}
    if holdout_images is not None:
        from .leakage import class_matrices, nearest_from

        hold, hold_y = check_pair(holdout_images, holdout_labels, tar_images, tar_labels)[:2]
        ry, ty, hy = (np.asarray(y.numpy(), dtype=np.int64) for y in (rec_y, tar_y, hold_y))

    def nearest_of(name: str, kernel) -> Nearest:
        if hold is not None:
            shared[name] = class_matrices(kernel, rec, ry, tar, ty, hold, hy, device)
            found = nearest_from(shared[name], ry, ty, kernel.larger_is_better, kernel.worst)
            if found is not None:
                return found
        return nearest(kernel)

    provenance: dict[str, str] = {}
    mse = nearest_of("mse", MSEKernel(shape))
    metrics["mse"] = sample_level(mse.best, mse.match, m, MSEKernel.worst)
    # PSNR is monotone in MSE: same map, same coverage; averaged per image (capped at 100 dB)
    metrics["psnr"] = sample_level(psnr_from_mse(mse.best), mse.match, m, float(psnr_from_mse(MSEKernel.worst)))
    matches["mse"] = matches["psnr"] = mse.match

    ssim_kernel = SSIMKernel(shape, device=device)
    ssim = nearest_of("ssim", ssim_kernel)
    metrics["ssim"] = sample_level(ssim.best, ssim.match, m, SSIMKernel.worst)
    matches["ssim"] = ssim.match
    provenance["ssim_window"] = f"gaussian sigma={SIGMA}, {2 * RADIUS + 1} taps, valid window {ssim_kernel.win}"

    lpips_kernel = None  # kept for the membership gap
    if not lpips:
        metrics["lpips"] = MetricResult.not_computed("LPIPS: not computed (disabled)")
    else:
        extractor, missing = (lpips_extractor, None) if lpips_extractor else _backbone(
            "alexnet", "LPIPS", weights_dir, device, download)
        if extractor is None:
            metrics["lpips"] = MetricResult.not_computed(missing)
        else:
            from .lpips_metric import LINEAR_SHA256, MIN_SIDE, RESIZE_TO, LPIPSKernel

            kernel = lpips_kernel = LPIPSKernel(extractor, shape)
            res = nearest(kernel)
            metrics["lpips"] = sample_level(res.best, res.match, m, kernel.worst, _caller_note(extractor))
            matches["lpips"] = res.match
            provenance["lpips_backbone_sha256"] = extractor.weights_sha256 or "caller-supplied"
            provenance["lpips_linear_sha256"] = LINEAR_SHA256
            if min(shape[1:]) < MIN_SIDE:
                provenance["lpips_input"] = f"resized to {RESIZE_TO[0]}x{RESIZE_TO[1]} (bilinear)"

    if not fid:
        metrics["fid"] = MetricResult.not_computed("FID: not computed (disabled)")
        metrics.update({n: MetricResult.not_computed("PRDC: not computed (disabled)") for n in PRDC_NAMES})
    else:
        extractor, missing = (inception_extractor, None) if inception_extractor else _backbone(
            "inception", "FID", weights_dir, device, download)
        if extractor is None:
            metrics["fid"] = MetricResult.not_computed(missing)
            metrics.update({n: MetricResult.not_computed(missing.replace("FID:", "PRDC:", 1)) for n in PRDC_NAMES})
        else:
            rec_f, tar_f, _ = inception_features(extractor, rec, tar, cache_dir)
            result = fid_result(rec_f, tar_f, device)
            if result.status == "computed" and _caller_note(extractor):
                result = result.model_copy(update={"note": _caller_note(extractor)})
            metrics["fid"] = result
            metrics.update(prdc_results(tar_f, rec_f, device=device))
            provenance["fid_inception_sha256"] = extractor.weights_sha256 or "caller-supplied"
            provenance["fid_features"] = f"pytorch-fid InceptionV3, {extractor.dims}-d"
    if evaluator is None and track is not None:
        evaluator, why = track_evaluator(track)
    else:
        why = "no evaluation model given"
    if evaluator is None:
        metrics.update(classifier_not_computed(why))
    else:
        metrics.update(classifier_metrics(evaluator, rec.numpy(), rec_y.numpy(), tar.numpy(), tar_y.numpy(), device))
        provenance["evaluation_model_sha256"] = evaluator.sha256
    gaps: dict = {}
    if holdout_images is not None:
        from .leakage import membership_report

        gaps = membership_report(metrics, rec, rec_y, tar, tar_y, hold, hold_y, device=device, shape=shape,
                                 lpips_kernel=lpips_kernel, matrices=shared,
                                 evaluator=evaluator, inception=_fid_extractor(metrics, inception_extractor, weights_dir, device),
                                 cache_dir=cache_dir, **({} if permutations is None else {"permutations": permutations}))
    extraction = None
    calibration = getattr(track, "extraction", None)
    if holdout_images is not None and calibration is not None:
        from reconbench.core.extraction import ExtractionResult
        from .extraction import image_extraction

        extraction = ExtractionResult.of(image_extraction(
            rec.numpy(), rec_y.numpy(), tar.numpy(), tar_y.numpy(), hold.numpy(), np.asarray(hold_y), calibration.threshold,
            calibration.pair_rate))
    return ScoreReport(metrics=metrics, matches=matches, provenance=provenance,
                       membership={n: g for n, (g, _) in gaps.items()}, gaps={n: raw for n, (_, raw) in gaps.items() if raw is not None},
                       extraction=extraction, matrices=shared)


def _fid_extractor(metrics, given, weights_dir, device):
    """The Inception extractor FID used (None when FID was not computed)."""
    if metrics["fid"].status != "computed":
        return None
    return given or _loaded("inception", weights_dir, device)


_EXTRACTORS: dict[tuple, object] = {}
_FETCH_FAILED: dict[str, str | None] = {}  # pinned sha256 -> why its download failed in this process


def _extractor_class(key: str):
    """The backbone's extractor class, imported on first need: torchvision, pytorch-fid and lpips
    (with torch._dynamo behind torchvision) cost seconds and are loaded only when a backbone is used."""
    if key == "inception":
        from .inception import InceptionExtractor

        return InceptionExtractor
    from .lpips_metric import LPIPSExtractor

    return LPIPSExtractor


def _backbone(key: str, metric: str, weights_dir, device, download: bool):
    """(extractor, None), or (None, the not-computed note naming the missing file and the command)."""
    extractor = _loaded(key, weights_dir, device)
    if extractor is not None:
        return extractor, None
    spec = pinned(key)
    if not download:
        return None, missing_note(metric, spec)
    from reconbench.core.console import rich_task

    from .download import ensure

    if spec.sha256 not in _FETCH_FAILED:  # one try per process: re-scoring many entries must not retry
        _FETCH_FAILED[spec.sha256] = ensure(spec, progress=rich_task)  # first need: fetch into the cache
    reason = _FETCH_FAILED[spec.sha256]
    if reason is None:
        del _FETCH_FAILED[spec.sha256]  # fetched: nothing to remember
    extractor = None if reason else _loaded(key, weights_dir, device)
    return extractor, (None if extractor else missing_note(metric, spec, reason))


def _loaded(backbone: str, weights_dir, device):
    """The extractor's from_weights, kept for the process once found (hashing and loading a backbone
    takes seconds). No candidate file at all: None without importing the extractor's libraries."""
    pins = tuple(s.sha256 for s in (pinned("inception"), pinned("alexnet")))
    key = (backbone, str(weights_dir), str(weights_cache_dir()), str(hub_checkpoint_dir()), str(device), pins)
    if key not in _EXTRACTORS:
        if not any(p.is_file() for p in candidate_paths(pinned(backbone), weights_dir)):
            return None
        extractor = _extractor_class(backbone).from_weights(weights_dir, device)
        if extractor is None:
            return None  # not cached: a file put in place later is found on the next call
        _EXTRACTORS[key] = extractor
    return _EXTRACTORS[key]


def _caller_note(extractor) -> str | None:
    return None if extractor.weights_sha256 else "backbone weights supplied by the caller (not a pinned file)"
