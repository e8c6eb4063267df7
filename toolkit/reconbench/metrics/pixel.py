"""MSE and PSNR on pixels in [0, 1] (SoK Def. 4.2 with d = MSE or PSNR).

Pairwise MSE by the expansion ||x - t||^2 = ||x||^2 + ||t||^2 - 2 x.t, one matmul per block.
It is computed on the raw uint8 values (0..255) in float64: every term is an integer below
2^53, so the sum of squared differences is *exact* whatever the summation order, and the only
rounding is the final division by D * 255^2. (A float32 expansion would lose digits to
cancellation once D * 255^2 > 2^24, i.e. beyond 258 pixels.)

PSNR = 10 log10(1 / MSE) per image (peak 1), then averaged over reconstructions. PSNR is
monotone in MSE, so its nearest-neighbour map and coverage are those of MSE (as in the SoK's
tables). MSE = 0 (an exact copy) would give +inf and poison the mean, so MSE is clamped at
1e-10 first: PSNR is capped at 100 dB.
"""

from __future__ import annotations

import numpy as np
import torch

MSE_FLOOR = 1e-10  # -> PSNR cap of 100 dB
PSNR_CAP = 10.0 * np.log10(1.0 / MSE_FLOOR)


def psnr_from_mse(mse):
    """PSNR (dB, peak 1) of each MSE, capped at 100 dB."""
    mse = np.maximum(np.asarray(mse, dtype=np.float64), MSE_FLOOR)
    return 10.0 * np.log10(1.0 / mse)


class MSEKernel:
    """d = mean_p (x_p/255 - t_p/255)^2 over the C*H*W pixels."""

    larger_is_better = False
    worst = 1.0  # the largest possible MSE of [0, 1] images (black vs white)

    def __init__(self, shape: tuple[int, int, int]):
        self.dim = int(np.prod(shape))
        self.scale = float(self.dim) * 255.0**2

    def state_bytes(self) -> int:
        return 8 * (self.dim + 1)

    def pair_bytes(self) -> int:
        return 8 * 3  # the float64 product, the sum, the result

    def prepare(self, images: torch.Tensor) -> dict[str, torch.Tensor]:
        x = images.reshape(images.shape[0], -1).to(torch.float64)  # integers 0..255, exact
        sq = torch.cat([(b * b).sum(1) for b in x.split(64)])  # exact integer sums; small temporaries
        return {"x": x, "sq": sq}

    def block(self, rec, tar) -> torch.Tensor:
        sse = rec["sq"][:, None] + tar["sq"][None, :] - 2.0 * (rec["x"] @ tar["x"].T)  # exact integers
        return sse / self.scale
