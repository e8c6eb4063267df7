"""ReconBench metrics (SoK §4.3): sample-level (S-Dis, coverage) for MSE, PSNR, SSIM, LPIPS;
dataset-level FID and Naeem et al.'s PRDC; the evaluation-classifier metrics of the MI literature
(acc_top1, acc_top5, knn_dist); Feldman-Zhang memorization.

    from reconbench.image.metrics import score, METRICS
    report = score(rec_images, rec_labels, tar_images, tar_labels, device="cpu")
    report.metrics["ssim"].format()   # 'value (coverage%)'

Where to look: score.py (the rules), pairwise.py (the N x M engine), pixel.py / ssim.py /
lpips_metric.py (the distances), fid.py / inception.py / feature_cache.py / prdc.py (dataset
level), classifier.py (evaluation classifier), memorization.py, weights.py / download.py (the pinned
backbones), info.py (METRICS table).
"""

from .info import METRICS, MetricInfo
from reconbench.core.report import GapResult, MetricResult, ScoreReport

import sys as _sys
import types as _types

# score() pulls in torch: it is imported on first use, so listing METRICS (`recon-submit metrics`,
# `schema`) stays fast. The function shares its name with the submodule score.py, and importing a
# submodule sets the package attribute of that name: _Package keeps the function there instead.
_LAZY = {"score": ".score", "Memorization": ".memorization", "estimate_memorization": ".memorization"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _Package(_types.ModuleType):
    def __setattr__(self, name: str, value: object) -> None:
        if name == "score" and isinstance(value, _types.ModuleType):
            return
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package

__all__ = ["METRICS", "MetricInfo", "MetricResult", "Memorization", "ScoreReport", "estimate_memorization", "score"]
