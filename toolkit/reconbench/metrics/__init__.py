"""ReconBench metrics (SoK §4.3): sample-level (S-Dis, coverage) for MSE, PSNR, SSIM, LPIPS;
dataset-level FID and Naeem et al.'s PRDC; Feldman-Zhang memorization.

    from reconbench.metrics import score, METRICS
    report = score(rec_images, rec_labels, tar_images, tar_labels, device="cpu")
    report.metrics["ssim"].format()   # 'value (coverage%)'

Where to look: score.py (the rules), pairwise.py (the N x M engine), pixel.py / ssim.py /
lpips_metric.py (the distances), fid.py / inception.py / feature_cache.py / prdc.py (dataset
level), memorization.py, weights.py (finding backbone files offline), info.py (METRICS table).
"""

from .info import METRICS, MetricInfo
from .memorization import Memorization, estimate_memorization
from .report import MetricResult, ScoreReport
from .score import score

__all__ = ["METRICS", "MetricInfo", "MetricResult", "Memorization", "ScoreReport", "estimate_memorization", "score"]
