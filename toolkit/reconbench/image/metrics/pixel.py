"""MSE and PSNR on pixels in [0, 1] (SoK Def. 4.2 with d = MSE or PSNR).

Pairwise MSE by the expansion ||x - t||^2 = ||x||^2 + ||t||^2 - 2 x.t, on the raw uint8
values shifted to -128..127 (the shift cancels in x - t). The sum of squared differences is
*exact*, whatever the summation order; the only rounding is the final division by D * 255^2.
The product x.t is formed in one of three exact ways (`matmul_mode`):

- "int8" (CPU, where its GEMM is exact): torch's int8 x int8 -> int32 GEMM, over slices of 65,536
  pixels (each partial sum <= 65,536 * 128^2 = 2^30 < 2^31); the slices are added in int64. The
  fastest here, ~2.5x a float32 matmul at digits/CIFAR sizes (benchmarks/bench_metrics_pairwise.py).
  It is exact only where oneDNN has a VNNI kernel: on x86 CPUs without AVX-VNNI or AVX512-VNNI
  (Haswell to Skylake, Zen 1-3; or ONEDNN_MAX_CPU_ISA=AVX2) its u8 x s8 pairs saturate at int16 and
  the products come back wrong by up to 1e5 (issue 47: re-scoring failed under another kernel setting).
  `int8_gemm_is_exact` probes this machine once; where it fails, the CPU takes "float32".
- "float32" (CUDA with true float32 matmuls): slices of 1,024 pixels, so every partial sum a BLAS
  kernel can form is an integer of magnitude <= 1,024 * 2^14 = 2^24, which float32 holds
  exactly; the slices are added in float64.
- "float64" otherwise (e.g. TF32 or bf16 allowed for float32 matmuls): integers below 2^53.

(A plain float32 expansion would lose digits to cancellation once D * 255^2 > 2^24.)

PSNR = 10 log10(1 / MSE) per image (peak 1), then averaged over reconstructions. PSNR is
monotone in MSE, so its nearest-neighbour map and coverage are those of MSE (as in the SoK's
tables). MSE = 0 (an exact copy) would give +inf and poison the mean, so MSE is clamped at
1e-10 first: PSNR is capped at 100 dB.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import torch

MSE_FLOOR = 1e-10  # -> PSNR cap of 100 dB
PSNR_CAP = 10.0 * np.log10(1.0 / MSE_FLOOR)


def psnr_from_mse(mse):
    """PSNR (dB, peak 1) of each MSE, capped at 100 dB."""
    mse = np.maximum(np.asarray(mse, dtype=np.float64), MSE_FLOOR)
    return 10.0 * np.log10(1.0 / mse)


INT8_SLICE = 1 << 16  # pixels per int8 GEMM: 2^16 * 128^2 = 2^30, inside int32
FLOAT32_SLICE = 1 << 10  # pixels per float32 matmul: 2^10 * 128^2 = 2^24, float32's exact-integer limit


@lru_cache(maxsize=1)
def int8_gemm_is_exact() -> bool:
    """Whether torch's CPU int8 GEMM gives the exact products here: seeded random values and the extremes
    (127 and -128, where an int16 intermediate saturates first), in shapes that reach its main and edge
    kernels, against int64 arithmetic. Kernels and their choice are fixed per process, so once suffices."""
    if not hasattr(torch, "_int_mm"):
        return False
    g = torch.Generator().manual_seed(47)
    for rows, cols, width in ((33, 17, 1024), (64, 48, 64), (8, 8, 4096)):
        x = torch.randint(-128, 128, (rows, width), generator=g, dtype=torch.int8)
        t = torch.randint(-128, 128, (cols, width), generator=g, dtype=torch.int8)
        x[0], t[0], t[1] = 127, 127, -128
        try:
            got = torch._int_mm(x, t.T).to(torch.int64)
        except RuntimeError:  # a build without the CPU kernel, or shapes it refuses
            return False
        if not torch.equal(got, x.to(torch.int64) @ t.to(torch.int64).T):
            return False
    return True


def matmul_mode(device: torch.device) -> str:
    """How MSEKernel forms x.t exactly on `device`: "int8", "float32" or "float64"."""
    if device.type == "cpu" and int8_gemm_is_exact():
        return "int8"
    if torch.get_float32_matmul_precision() == "highest" and not (
        device.type == "cuda" and torch.backends.cuda.matmul.allow_tf32
    ):
        return "float32"
    return "float64"


def _sliced_dot(x: torch.Tensor, t: torch.Tensor, width: int, matmul, acc: torch.dtype) -> torch.Tensor:
    out = None
    for lo in range(0, x.shape[1], width):
        part = matmul(x[:, lo : lo + width], t[:, lo : lo + width].T).to(acc)
        out = part if out is None else out + part
    return out


class MSEKernel:
    """d = mean_p (x_p/255 - t_p/255)^2 over the C*H*W pixels."""

    larger_is_better = False
    worst = 1.0  # the largest possible MSE of [0, 1] images (black vs white)

    def __init__(self, shape: tuple[int, int, int], mode: str | None = None):
        self.dim = int(np.prod(shape))
        self.scale = float(self.dim) * 255.0**2
        self.mode = mode  # None: matmul_mode(device of the images); fixed for tests and benchmarks

    def state_bytes(self) -> int:
        return 8 * (self.dim + 1)  # the float64 mode's; the others' are smaller

    def pair_bytes(self) -> int:
        return 8 * 3  # the product, the float64/int64 sum, the result

    def prepare(self, images: torch.Tensor) -> dict[str, torch.Tensor]:
        if images.dtype != torch.uint8:
            raise TypeError(f"MSEKernel.prepare needs uint8 images, got {images.dtype}")
        mode = self.mode or matmul_mode(images.device)
        # u - 128 for u in 0..255 is u with its top bit flipped, read as two's complement int8
        shifted = torch.bitwise_xor(images.reshape(images.shape[0], -1), 128).view(torch.int8)
        x = shifted if mode == "int8" else shifted.to(torch.float32 if mode == "float32" else torch.float64)
        return {"x": x, "sq": self._squared_norms(shifted)}

    def _squared_norms(self, shifted: torch.Tensor) -> torch.Tensor:
        """||x||^2 per image: float32 sums over slices of <= 1,024 pixels (exact integers <= 2^24),
        added in float64. (Measured faster than torch's integer reductions.)"""
        width = min(self.dim, FLOAT32_SLICE)
        f = shifted.to(torch.float32)
        if self.dim % width:
            f = torch.nn.functional.pad(f, (0, width - self.dim % width))
        return f.view(f.shape[0], -1, width).square_().sum(2).to(torch.float64).sum(1)

    def block(self, rec, tar) -> torch.Tensor:
        x, t = rec["x"], tar["x"]
        if x.dtype == torch.int8:
            dot = _sliced_dot(x, t, INT8_SLICE, torch._int_mm, torch.int64).to(torch.float64)
        elif x.dtype == torch.float32:
            dot = _sliced_dot(x, t, FLOAT32_SLICE, torch.matmul, torch.float64)
        else:
            dot = x @ t.T
        sse = rec["sq"][:, None] + tar["sq"][None, :] - 2.0 * dot  # exact integers
        return sse / self.scale
