"""Evaluation-classifier metrics of the model-inversion literature: attack accuracy and KNN distance.

An evaluation classifier E (the track's `evaluation_model`: another architecture than the target,
trained on data of the same distribution) labels each reconstruction x_i of intended class y_i:

    acc_top1 = mean_i 1[argmax_c E(x_i)_c = y_i]            (GMI, KEDMI, PLG-MI "Acc@1")
    acc_top5 = mean_i 1[y_i among E's 5 largest logits]     ("Acc@5"; top-min(5, classes))
    knn_dist = mean_i min_{t in D_tar, y_t = y_i} ||phi(x_i) - phi(t)||^2

phi is E's penultimate feature (the input of its last linear layer). The distance is the squared
L2 distance, as in KEDMI's `calc_knn` and PLG-MI's `evaluation.py` (both square it). A
reconstruction whose class has no target scores its largest squared distance to any target (it
can never gain from a label outside the target classes), and the note counts them.

Caveat (SoK §4.1): these numbers reward whatever E finds class-like; noise-like MI-Face images
reach confidence above 0.9 for their classes, so a high accuracy alone is no evidence of a
faithful reconstruction.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from reconbench.core.report import MetricResult

NAMES = ("acc_top1", "acc_top5", "knn_dist")
TOP_K = 5


@dataclass(frozen=True)
class Evaluator:
    model: nn.Module  # eval mode; input pixels in [0, 1], (N, C, H, W)
    sha256: str  # of its weight file (pinned in the registry), for provenance
    batch_size: int = 256


def not_computed(why: str) -> dict[str, MetricResult]:
    return {name: MetricResult.not_computed(f"{name}: not computed ({why})") for name in NAMES}


def logits_and_features(evaluator: Evaluator, images: np.ndarray, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """E's logits and penultimate features (float64, on the CPU) of uint8 images."""
    model = evaluator.model.to(device).eval()
    last = [m for m in model.modules() if isinstance(m, nn.Linear)][-1]
    captured: list[torch.Tensor] = []
    hook = last.register_forward_hook(lambda _m, inputs, _out: captured.append(inputs[0].flatten(1)))
    logits = []
    try:
        with torch.inference_mode():
            for lo in range(0, len(images), evaluator.batch_size):
                x = torch.from_numpy(images[lo : lo + evaluator.batch_size]).to(device=device, dtype=torch.float32) / 255.0
                logits.append(model(x).double().cpu())
    finally:
        hook.remove()
    return torch.cat(logits), torch.cat([f.double().cpu() for f in captured])


_OUTPUTS: dict[tuple, tuple[torch.Tensor, torch.Tensor]] = {}


def cached_outputs(evaluator: Evaluator, images: np.ndarray, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """logits_and_features of a set of images, computed once per process and kept (LRU, 16 sets) by the
    model's and the images' content: validation re-scores every entry of a track against the same targets
    and holdout, and an entry's reconstructions are read by its metrics and again by its gap."""
    import hashlib

    key = (id(evaluator.model), evaluator.sha256, hashlib.sha256(np.ascontiguousarray(images).tobytes()).hexdigest(),
           images.shape, str(device))
    if key in _OUTPUTS:
        _OUTPUTS[key] = _OUTPUTS.pop(key)  # least recently used goes first
    else:
        if len(_OUTPUTS) >= 16:
            _OUTPUTS.pop(next(iter(_OUTPUTS)))
        _OUTPUTS[key] = logits_and_features(evaluator, images, device)
    return _OUTPUTS[key]


def target_features(evaluator: Evaluator, tar: np.ndarray, device: str) -> torch.Tensor:
    """E's penultimate features of a set of images (targets, holdout, reconstructions), kept per content."""
    return cached_outputs(evaluator, tar, device)[1]


def classifier_metrics(evaluator: Evaluator, rec: np.ndarray, rec_y: np.ndarray, tar: np.ndarray, tar_y: np.ndarray,
                       device: str = "cpu") -> dict[str, MetricResult]:
    rec_logits, rec_f = cached_outputs(evaluator, rec, device)
    tar_f = target_features(evaluator, tar, device)
    labels = torch.from_numpy(np.asarray(rec_y, dtype=np.int64))
    k = min(TOP_K, rec_logits.shape[1])
    known = labels < rec_logits.shape[1]  # a label E does not know is never "correct"
    top = rec_logits.topk(k, dim=1).indices
    top1 = float(((top[:, 0] == labels) & known).double().mean())
    topk = float(((top == labels[:, None]).any(dim=1) & known).double().mean())
    # squared L2 distances, reconstructions x targets (|D_rec| x |D_tar| float64: 2 MB at 500 x 500)
    d = (rec_f.pow(2).sum(1)[:, None] + tar_f.pow(2).sum(1)[None, :] - 2.0 * rec_f @ tar_f.T).clamp_min(0.0)
    same = labels[:, None] == torch.from_numpy(np.asarray(tar_y, dtype=np.int64))[None, :]
    has = same.any(dim=1)
    nearest = torch.where(same, d, torch.full_like(d, torch.inf)).min(dim=1).values
    nearest = torch.where(has, nearest, d.max(dim=1).values)  # no target of its class: the worst it could get
    missing = int((~has).sum())
    note = (f"{missing} of {len(labels)} reconstructions have no target of their class: scored at their "
            "farthest target") if missing else None
    return {
        "acc_top1": MetricResult(status="computed", value=top1),
        "acc_top5": MetricResult(status="computed", value=topk, note=None if k == TOP_K else f"top-{k}: E has {k} classes"),
        "knn_dist": MetricResult(status="computed", value=float(nearest.mean()), note=note),
    }


def eval_feature_fid(evaluator: Evaluator, rec: np.ndarray, tar: np.ndarray, device: str = "cpu") -> float:
    """The Frechet distance of FID (metrics/fid.py) on E's penultimate features instead of Inception's.

    Not the SoK's FID and not on the board: a stand-in where Inception's weights are unavailable,
    in the feature space of the papers' KNN distance. Lower is better; the GAN-attack test and
    benchmarks/bench_gan_vs_class_mean.py compare attacks with the per-class aux mean on it.
    """
    from .fid import fid_from_features

    _, rec_f = logits_and_features(evaluator, rec, device)
    _, tar_f = logits_and_features(evaluator, tar, device)
    return max(0.0, fid_from_features(rec_f.numpy(), tar_f.numpy()))


_LOADED: dict[tuple, Evaluator] = {}


def track_evaluator(track, spec=None) -> tuple[Evaluator | None, str | None]:
    """(the track's pinned evaluation classifier, None), or (None, why it is unavailable). spec: one of
    the track's retired_evaluation_models instead of its current one."""
    spec = spec or track.evaluation_model
    if spec is None:
        return None, f"track '{track.id}' has no evaluation model"
    key = (track.id, spec.file, spec.sha256)
    if key not in _LOADED:
        from reconbench.core.hub import HubError
        from reconbench.core.io import FileFormatError, sha256_file
        from reconbench.image.models import load_model
        from reconbench.image.track_files import embedded_file

        try:
            if track.source is not None and track.source.kind == "hub":  # published with the zoo's target
                from reconbench.core.hub import download_pinned

                path = download_pinned(track.source.model_repo, spec.file, revision=track.source.model_revision,
                                       sha256=spec.sha256, repo_type="model")
            else:
                path = embedded_file(spec.file)
            if not path.is_file():
                return None, f"{path}: evaluation model file missing"
            digest = sha256_file(path)
            if digest != spec.sha256:
                return None, f"{path}: sha256 {digest} is not the registry's {spec.sha256}"
            model = load_model(spec.architecture, path, **spec.arch_kwargs)
        except (HubError, FileFormatError, KeyError) as exc:
            return None, f"evaluation model unavailable: {exc}"
        _LOADED[key] = Evaluator(model=model, sha256=spec.sha256)
    return _LOADED[key], None
