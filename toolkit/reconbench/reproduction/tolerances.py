"""How close a re-run must come to the claim for each metric.

A re-run is not bitwise reproducible across machines: float reductions are ordered differently on
another device, another CPU (vector width) or another thread count, so an optimisation's iterates
part ways after a few hundred steps, and a trained decoder ends at another point. (On the same
machine, with the same thread count, a CPU re-run is bit-identical: tests/test_reproduce.py.) What
must hold is the aggregate over |D_tar| reconstructions, so the tolerances are absolute on bounded
metrics and relative on unbounded ones, set well above float noise and well below the gaps that
separate attacks on the board (e.g. digits SSIM: 0.23 MI-Face, 0.52 DeepDream, 0.76 DeepInversion):
- SSIM and LPIPS (both within [0, 1] in practice): 0.02 absolute;
- PSNR: 0.5 dB absolute (per-image PSNR averaged; 0.5 dB is ~12% in MSE);
- MSE (pixels in [0, 1]): 0.005 absolute;
- coverage alpha: 0.05 absolute (5 percentage points of D_tar);
- FID and the KNN distance: 5% relative (dataset-level statistics of a few hundred samples);
- the text metrics (BLEU, ROUGE-L, similarity, exact match; all in [0, 1]): 0.01 absolute. Greedy
  decoding is deterministic up to arg-max ties, so a re-run elsewhere differs in a few texts at most,
  while 0.05 would let a forger paste the targets of the 4.6% of prompts Complete misses on lee-news
  over an honest run and still be "reproduced";
- any other metric (accuracies, PRDC): 0.05 absolute.

Metrics that need downloaded backbone weights (BACKBONE: FID and PRDC on Inception features, LPIPS
on AlexNet's) may be missing from a re-run made without those weights; every other claimed metric
must be re-computed (reproduction/compare.py).

Query counts (provenance.queries, and a surrogate's stealing queries) must be EQUAL: every
registered black-box attack spends a number of queries fixed by its configuration and |D_tar|
(iterations x batch, the auxiliary set's size, the surrogate's query budget), never by the float
path of the run, so another machine gives the same count; there is no slack to grant. (A
bring-your-own attack that stops on a data-dependent criterion is held to the same rule: its count
is part of what it claims.) The scenario must be equal too.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Tolerance:
    absolute: float | None = None
    relative: float | None = None

    def allows(self, claimed: float, obtained: float) -> bool:
        diff = abs(obtained - claimed)
        if self.absolute is not None and diff <= self.absolute:
            return True
        return self.relative is not None and diff <= self.relative * max(abs(claimed), 1e-12)

    def __str__(self) -> str:
        return f"±{self.absolute:g}" if self.absolute is not None else f"±{self.relative:.0%}"


VALUE = {"ssim": Tolerance(0.02), "lpips": Tolerance(0.02), "psnr": Tolerance(0.5), "mse": Tolerance(0.005),
         "fid": Tolerance(relative=0.05), "knn_dist": Tolerance(relative=0.05),
         "bleu": Tolerance(0.01), "rouge_l": Tolerance(0.01), "similarity": Tolerance(0.01), "exact_match": Tolerance(0.01)}
DEFAULT = Tolerance(0.05)
COVERAGE = Tolerance(0.05)
QUERIES = Tolerance(0)
BACKBONE = frozenset({"fid", "lpips", "prdc_precision", "prdc_recall", "prdc_density", "prdc_coverage"})


def for_metric(name: str) -> Tolerance:
    return VALUE.get(name, DEFAULT)
