"""SSIM (Wang et al. 2004) for all pairs of a block, matching scikit-image exactly.

Per pair and channel, on pixels in [0, 1] (data range 1):

    SSIM map = (2 mu_x mu_t + C1)(2 s_xt + C2) / ((mu_x^2 + mu_t^2 + C1)(s_x^2 + s_t^2 + C2))
    C1 = (0.01)^2, C2 = (0.03)^2
    mu = G * x,  s_x^2 = G * x^2 - mu_x^2,  s_xt = G * (x t) - mu_x mu_t   (population moments)

with G the Gaussian of sigma 1.5 truncated at 3.5 sigma (11 taps) and scipy's 'reflect'
(edge-repeating) border. The value of the pair is the mean of the map over the valid window
centres (a border of (win - 1) / 2 pixels is dropped) and over the channels. This is
`skimage.metrics.structural_similarity(gaussian_weights=True, sigma=1.5,
use_sample_covariance=False, data_range=1, channel_axis=...)`.

Window. win = 11 when both sides are >= 11 px; smaller images use the largest odd
win <= min(H, W) (7 for the 8x8 `digits` track), i.e. skimage's `win_size=7`. As in skimage,
`win` only sets the dropped border: the filter stays the 11-tap Gaussian, so on 8x8 images the
reflected border enters the means and the valid region is the central 2x2.

How it is fast. mu, s^2 of every image are computed once (per super-chunk, see pairwise.py);
per pair only the cross term G * (x t) is needed: elementwise product of the two (cropped,
reflect-padded) images, then the separable Gaussian as two banded matmuls.

Precision. The block runs in float32 on mean-centred images: s_xt = G*((x-a)(t-b)) -
(mu_x-a)(mu_t-b) holds exactly for any constants a, b because the taps sum to 1, and centring
on each image's mean keeps the cancellation small. Per-image statistics are computed in
float64 and then rounded. Agreement with skimage (float64) is better than 1e-5 on the test
images (tests/test_metrics_pairwise.py asserts 1e-4); pass dtype=torch.float64 for more.
"""

from __future__ import annotations

import math

import numpy as np
import torch

K1, K2, SIGMA, TRUNCATE = 0.01, 0.03, 1.5, 3.5
C1, C2 = K1**2, K2**2  # data range 1
RADIUS = int(TRUNCATE * SIGMA + 0.5)  # 5, as scipy.ndimage computes it -> 11 taps


def window_size(height: int, width: int) -> int:
    """11, or the largest odd size that fits the smaller side (skimage's win_size)."""
    side = min(height, width)
    return 2 * RADIUS + 1 if side >= 2 * RADIUS + 1 else side - (1 - side % 2)


def gaussian_taps() -> np.ndarray:
    x = np.arange(-RADIUS, RADIUS + 1, dtype=np.float64)
    g = np.exp(-0.5 * (x / SIGMA) ** 2)
    return g / g.sum()


def _reflect(idx: np.ndarray, n: int) -> np.ndarray:
    """scipy.ndimage 'reflect' (d c b a | a b c d | d c b a): period 2n, edge repeated."""
    k = np.mod(idx, 2 * n)
    return np.where(k < n, k, 2 * n - 1 - k)


def _band(n_out: int) -> np.ndarray:
    """(n_out, n_out + 2r) matrix whose row i holds the taps at i..i+2r: 'valid' filtering."""
    g = gaussian_taps()
    a = np.zeros((n_out, n_out + 2 * RADIUS))
    for i in range(n_out):
        a[i, i : i + 2 * RADIUS + 1] = g
    return a


class SSIMKernel:
    """Pairwise SSIM for images of one shape (C, H, W)."""

    larger_is_better = True
    worst = -1.0  # the lower end of SSIM's range

    def __init__(self, shape: tuple[int, int, int], device="cpu", dtype=torch.float32):
        c, h, w = shape
        self.channels, self.dtype, self.device = c, dtype, torch.device(device)
        self.win = window_size(h, w)
        pad = (self.win - 1) // 2
        self.out_h, self.out_w = h - 2 * pad, w - 2 * pad  # valid window centres
        # input rows/cols the valid outputs read, in original coordinates (reflected at the edge)
        self.rows = torch.as_tensor(_reflect(np.arange(pad - RADIUS, h - pad + RADIUS), h))
        self.cols = torch.as_tensor(_reflect(np.arange(pad - RADIUS, w - pad + RADIUS), w))
        self.in_h, self.in_w = self.rows.numel(), self.cols.numel()
        a64, b64 = torch.as_tensor(_band(self.out_h)), torch.as_tensor(_band(self.out_w))
        self.a64, self.bt64 = a64.to(self.device), b64.T.contiguous().to(self.device)
        # block filters carry sqrt(2) each, so the block's filter output is 2 G*(x t) directly
        self.a2 = (a64 * math.sqrt(2)).to(self.device, dtype)
        self.bt2 = (b64.T * math.sqrt(2)).contiguous().to(self.device, dtype)
        self.c1 = torch.tensor(C1, device=self.device, dtype=dtype)
        self.c2 = torch.tensor(C2, device=self.device, dtype=dtype)

    def _filter64(self, x: torch.Tensor) -> torch.Tensor:
        return torch.matmul(self.a64, torch.matmul(x, self.bt64))

    def state_bytes(self) -> int:
        item = torch.empty((), dtype=self.dtype).element_size()
        return item * self.channels * (self.in_h * self.in_w + 4 * self.out_h * self.out_w)

    def pair_bytes(self) -> int:
        item = torch.empty((), dtype=self.dtype).element_size()
        c = self.channels
        return item * c * (self.in_h * self.in_w + self.in_h * self.out_w + 4 * self.out_h * self.out_w)

    def prepare(self, images: torch.Tensor, batch: int = 64) -> dict[str, torch.Tensor]:
        # float64 work happens `batch` images at a time (temporaries of a few MB), written into
        # preallocated float32 state (no second copy from a final concatenation)
        state = None
        for lo in range(0, images.shape[0], batch):
            part = self._prepare(images[lo : lo + batch])
            if state is None:
                state = {k: v.new_empty((images.shape[0], *v.shape[1:])) for k, v in part.items()}
            for k, v in part.items():
                state[k][lo : lo + v.shape[0]] = v
        return state

    def _prepare(self, images: torch.Tensor) -> dict[str, torch.Tensor]:
        x = images.to(torch.float64) / 255.0
        x = x[:, :, self.rows.to(x.device)][:, :, :, self.cols.to(x.device)]  # crop + reflect
        shift = x.mean(dim=(2, 3), keepdim=True)  # centring constant per image and channel
        xc = x - shift
        mu = self._filter64(x)
        mu_c = mu - shift
        var = self._filter64(xc * xc) - mu_c * mu_c
        d = self.dtype
        return {
            "xc": xc.to(d),
            "mu": mu.to(d),  # for 2 mu_x mu_t + C1
            "mu_sq": (mu * mu + C1 / 2).to(d),  # halves of mu_x^2 + mu_t^2 + C1
            "mu_c": mu_c.to(d),  # for s_xt = G*(xc tc) - mu_c,x mu_c,t
            "var": (var + C2 / 2).to(d),  # halves of s_x^2 + s_t^2 + C2
        }

    def block(self, rec, tar) -> torch.Tensor:
        bn, bm = rec["xc"].shape[0], tar["xc"].shape[0]
        c, ih, iw, oh, ow = self.channels, self.in_h, self.in_w, self.out_h, self.out_w
        prod = rec["xc"][:, None] * tar["xc"][None, :]  # (bn, bm, C, ih, iw)
        z = (prod.reshape(-1, iw) @ self.bt2).reshape(-1, ih, ow)  # filter along W
        del prod
        # filter along H, adding C2 on the way: 2 G*(xc tc) + C2, shape (bn*bm*C, oh, ow)
        cs_num = torch.baddbmm(self.c2, self.a2.expand(z.shape[0], oh, ih), z).view(bn, bm, c, oh, ow)
        del z
        cs_num.addcmul_(rec["mu_c"][:, None], tar["mu_c"][None, :], value=-2.0)  # 2 s_xt + C2
        cs_den = rec["var"][:, None] + tar["var"][None, :]  # s_x^2 + s_t^2 + C2
        lum_num = torch.addcmul(self.c1, rec["mu"][:, None], tar["mu"][None, :], value=2.0)  # 2 mu_x mu_t + C1
        lum_den = rec["mu_sq"][:, None] + tar["mu_sq"][None, :]  # mu_x^2 + mu_t^2 + C1
        ssim_map = lum_num.mul_(cs_num).div_(lum_den.mul_(cs_den))
        # SSIM lies in [-1, 1]; identical images give 1 + round-off (1.0000000079870224 was seen),
        # which the result schema would refuse as "outside its range": clamp the round-off only.
        return ssim_map.view(bn, bm, c * oh * ow).mean(dim=2).clamp_(-1.0, 1.0)
