"""The nine shifted structure feature sets of a public pool (nearcopy.structure_features(images, s)
for s in SHIFTS), bit for bit, for 0.4 of their CPU (issue 37: the site build computes them
for ~51,000 pool images; benchmarks/bench_struct_projection.py).

structure_features rolls the image, takes a 3x3 median and a 3x3 binomial blur (both with replicate
padding), then centres and normalises. Both filters are local, so away from the borders the rolled
image's filters are the rolled filters of the image with circular padding: the median and the blur
are computed once per image with wrap padding and rolled per shift; only the frame that sees the
replicate padding (1 pixel for the median, 2 for the blur) is recomputed per shift, from strips.
- median: one of its nine inputs, exact whatever the arithmetic;
- blur: F.conv2d (im2col + MKL gemm, float64) sums the nine terms w * m / 255, each exact (w is
  1/16, 1/8 or 1/4), in kernel order, one after the other, at every output position of the track
  image shapes (measured). Here the same sum is written out elementwise: IEEE additions in the same
  order give the same doubles, at any position, rolled or not. BLAS may pick another order on another
  machine or shape, so `exact(shape)` compares this with structure_features on random probe images
  once per shape and process, and callers use structure_features where it does not match.
- centring and normalising: the same torch calls (nearcopy.unit_rows) on rows of the same length.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch
import torch.nn.functional as F

from reconbench.submissions.nearcopy import SHIFTS, median3x3_padded, structure_features, unit_rows

_WEIGHTS = [(a, b, (1 << ((a == 1) + (b == 1))) / 16.0) for a in range(3) for b in range(3)]  # conv2d's order
MIN_SIDE = 16  # smaller images (8x8 digits) go through structure_features: mostly frame, no faster here
PROBE = 64  # random images each shape is checked on (every output position, each of 64 images)
_EXACT: dict[tuple[int, ...], bool] = {}


def _wrapped(x: torch.Tensor) -> torch.Tensor:
    """N x C x (H+2) x (W+2): one pixel of circular padding (uint8: F.pad wants floats)."""
    x = torch.cat([x[..., -1:, :], x, x[..., :1, :]], dim=-2)
    return torch.cat([x[..., -1:], x, x[..., :1]], dim=-1)


def _blur(grey: torch.Tensor, mode: str = "replicate", transposed: bool = False) -> torch.Tensor:
    """3x3 binomial blur of uint8 grey levels / 255, summed in F.conv2d's order (module docstring);
    `transposed`: grey is an image transposed, and so is the blur, summed in the order of the image's
    terms. add_ with alpha rounds once, like a product and a sum: the product by 2^-k is exact."""
    p = F.pad(grey.double() / 255.0, (1, 1, 1, 1), mode=mode)
    h, w = grey.shape[-2:]
    terms = [(b, a, weight) if transposed else (a, b, weight) for a, b, weight in _WEIGHTS]
    y = p[..., :h, :w] * terms[0][2]
    for a, b, weight in terms[1:]:
        y.add_(p[..., a:a + h, b:b + w], alpha=weight)
    return y


def _rolled(x: torch.Tensor) -> torch.Tensor:
    """9N x C x H x W: x rolled by each shift of SHIFTS, shift-major."""
    return torch.cat([torch.roll(x, shifts=s, dims=(2, 3)) for s in SHIFTS])


def _frame_medians(xs: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Top, bottom, left and right rows/columns of median3x3(xs), each as a row (N x C x W or H), from
    3-row strips padded as median3x3 pads. A median ignores the order of its inputs, so the bottom
    strip is flipped and the columns transposed: one call on wide rows."""
    n, (h, w) = len(xs), xs.shape[-2:]
    tall = xs.transpose(-1, -2)
    strips = [xs[..., [0, 0, 1], :], xs[..., [h - 1, h - 1, h - 2], :],
              tall[..., [0, 0, 1], :], tall[..., [w - 1, w - 1, w - 2], :]]
    if h != w:  # rows and columns of different lengths: one call each
        return tuple(median3x3_padded(_wide(s))[..., 0, :] for s in strips)
    out = median3x3_padded(_wide(torch.cat(strips)))[..., 0, :]
    return out[:n], out[n:2 * n], out[2 * n:3 * n], out[3 * n:]


def _wide(strip: torch.Tensor) -> torch.Tensor:
    """The strip with one replicated column each side (a cat: quicker than a gather on the last axis)."""
    return torch.cat([strip[..., :1], strip, strip[..., -1:]], dim=-1)


def _shifted(images: np.ndarray) -> Iterator[tuple[tuple[int, int], torch.Tensor]]:
    x = torch.from_numpy(np.ascontiguousarray(images))
    n = len(x)
    wrapped_median = median3x3_padded(_wrapped(x))
    wrapped_blur = _blur(wrapped_median, "circular")
    # the frames of all nine shifts at once (elementwise: the same values as one shift at a time)
    m = _rolled(wrapped_median)  # right but on its 1-pixel frame
    m[..., 0, :], m[..., -1, :], m[..., :, 0], m[..., :, -1] = _frame_medians(_rolled(x))
    top, bottom = _blur(m[..., :3, :])[..., :2, :], _blur(m[..., -3:, :])[..., -2:, :]
    cols = _blur(torch.cat([m[..., :3].transpose(-1, -2), m[..., -3:].transpose(-1, -2)]), transposed=True)
    left, right = cols[:len(m), ..., :2, :].transpose(-1, -2), cols[len(m):, ..., -2:, :].transpose(-1, -2)
    for k, s in enumerate(SHIFTS):
        y = torch.roll(wrapped_blur, shifts=s, dims=(2, 3))  # right but on its 2-pixel frame
        at = slice(k * n, (k + 1) * n)
        y[..., :2, :], y[..., -2:, :], y[..., :, :2], y[..., :, -2:] = top[at], bottom[at], left[at], right[at]
        yield s, unit_rows(y.flatten(1))


def exact(shape: tuple[int, ...]) -> bool:
    """Whether `shifted_features` equals structure_features bit for bit for C x H x W images here."""
    if shape not in _EXACT:
        probe = np.random.default_rng(0).integers(0, 256, (PROBE, *shape), dtype=np.uint8)
        _EXACT[shape] = all(torch.equal(f, structure_features(probe, s)) for s, f in _shifted(probe))
    return _EXACT[shape]


def shifted_features(images: np.ndarray) -> Iterator[tuple[tuple[int, int], torch.Tensor]]:
    """(shift, structure_features(images, shift)) for each shift of SHIFTS, in that order."""
    if min(images.shape[2:]) < MIN_SIDE or not exact(tuple(images.shape[1:])):
        yield from ((s, structure_features(images, s)) for s in SHIFTS)
        return
    yield from _shifted(images)
