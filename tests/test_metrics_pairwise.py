"""Pairwise MSE / PSNR / SSIM against scikit-image pair by pair on real images, and the
class-restricted nearest-neighbour map and coverage against a naive double loop."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from skimage.metrics import mean_squared_error, peak_signal_noise_ratio, structural_similarity

from reconbench.image.metrics import score
from reconbench.image.metrics.pairwise import Budget, naive_nearest_same_class, nearest_same_class
from reconbench.image.metrics.pixel import MSEKernel, psnr_from_mse
from reconbench.image.metrics.ssim import SSIMKernel, window_size
from reconbench.image.metrics.testdata import digits, perturb, photo_patches


pytestmark = pytest.mark.usefixtures("single_torch_thread")



def small_budget(kernel):
    """Super-chunks of 3 images and blocks of ~6 pairs: exercises every loop of the engine."""
    return Budget(state_bytes=2 * 3 * kernel.state_bytes(), block_bytes=6 * kernel.pair_bytes())


@pytest.fixture(scope="module")
def digit_set():
    x, y = digits()
    return x[:60], y[:60]


@pytest.fixture(scope="module")
def photo_set():
    return photo_patches(40, size=32, seed=1)


def full_matrix(kernel, a, b):
    return kernel.block(kernel.prepare(torch.from_numpy(a)), kernel.prepare(torch.from_numpy(b))).double().numpy()


def unit_hwc(img):
    return (img.astype(np.float64) / 255.0).transpose(1, 2, 0)


def sk_ssim(a, b, win):
    return structural_similarity(
        unit_hwc(a), unit_hwc(b), gaussian_weights=True, sigma=1.5, use_sample_covariance=False,
        data_range=1, channel_axis=2, win_size=win,
    )


@pytest.mark.parametrize("which", ["digits", "photos"])
def test_mse_psnr_match_skimage(which, digit_set, photo_set):
    x, _ = digit_set if which == "digits" else photo_set
    rec = perturb(x[:20], 20.0, seed=3)
    mse = full_matrix(MSEKernel(x.shape[1:]), rec, x)
    psnr = psnr_from_mse(mse)
    for i in range(len(rec)):
        for j in range(len(x)):
            a, b = unit_hwc(rec[i]), unit_hwc(x[j])
            assert abs(mse[i, j] - mean_squared_error(a, b)) < 1e-6 * max(1.0, mse[i, j])
            assert abs(psnr[i, j] - peak_signal_noise_ratio(b, a, data_range=1)) < 1e-6 * max(1.0, psnr[i, j])


@pytest.mark.parametrize("which", ["digits", "photos", "photos_9x13"])
def test_ssim_matches_skimage(which, digit_set, photo_set):
    x = digit_set[0] if which == "digits" else photo_set[0]
    if which == "photos_9x13":
        x = np.ascontiguousarray(x[:, :, :9, :13])
    rec = perturb(x[:12], 25.0, seed=4)
    win = window_size(*x.shape[2:])
    assert win == {"digits": 7, "photos": 11, "photos_9x13": 9}[which]
    ssim = full_matrix(SSIMKernel(x.shape[1:]), rec, x)
    ref = np.array([[sk_ssim(r, t, win) for t in x] for r in rec])
    assert np.abs(ssim - ref).max() < 1e-4


def test_ssim_float64_is_exact(photo_set):
    x = photo_set[0][:10]
    ssim = full_matrix(SSIMKernel(x.shape[1:], dtype=torch.float64), x[::-1].copy(), x)
    ref = np.array([[sk_ssim(r, t, 11) for t in x] for r in x[::-1]])
    assert np.abs(ssim - ref).max() < 1e-10


@pytest.mark.parametrize("mode", ["int8", "float32", "float64"])
@pytest.mark.parametrize("shape", [(3, 64, 64), (3, 160, 160)])
def test_mse_is_exact_at_large_dimension(mode, shape):
    """Every way of forming x.t gives the exact integer SSE: 64x64x3 (where a plain float32
    expansion loses digits) and 160x160x3 (more pixels than one int8 GEMM slice), with the
    extreme images 0 and 255 (products of -128 * -128, the slices' worst case) among them."""
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (4, *shape), dtype=np.uint8)
    a[0], a[1] = 0, 255
    b = a.copy()
    b[:, 0, 0, 0] ^= 1  # differ by one grey level in one pixel
    mse = full_matrix(MSEKernel(shape, mode=mode), a, b)
    dim = int(np.prod(shape))
    expected = ((a[:, None].astype(np.int64) - b[None].astype(np.int64)) ** 2).sum((2, 3, 4)) / (dim * 255.0**2)
    np.testing.assert_array_equal(mse, expected)


def test_mse_mode_follows_float32_matmul_precision():
    from reconbench.image.metrics.pixel import int8_gemm_is_exact, matmul_mode

    cuda = torch.device("cuda")
    before = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("highest")
        assert matmul_mode(torch.device("cpu")) == ("int8" if int8_gemm_is_exact() else "float32")
        assert matmul_mode(cuda) == ("float64" if torch.backends.cuda.matmul.allow_tf32 else "float32")
        torch.set_float32_matmul_precision("high")  # TF32 / bf16 allowed: float32 is no longer exact
        assert matmul_mode(cuda) == "float64"
    finally:
        torch.set_float32_matmul_precision(before)


def naive_from_skimage(rec, ry, tar, ty, kind, win=None):
    """skimage on every same-class pair (other pairs are never read), then the naive double loop."""
    def d(r, t):
        return sk_ssim(r, t, win) if kind == "ssim" else mean_squared_error(unit_hwc(r), unit_hwc(t))

    dist = np.array([[d(r, t) if a == b else np.nan for t, b in zip(tar, ty)] for r, a in zip(rec, ry)])
    if kind == "ssim":
        return naive_nearest_same_class(dist, ry, ty, larger_is_better=True, worst=-1.0)
    return naive_nearest_same_class(dist, ry, ty, larger_is_better=False, worst=1.0)


@pytest.mark.parametrize("which", ["digits", "photos"])
@pytest.mark.parametrize("kind", ["mse", "ssim"])
def test_class_restricted_nearest_matches_naive_loop(which, kind, digit_set, photo_set):
    x, y = digit_set if which == "digits" else photo_set
    rec, ry = perturb(x[:30], 30.0, seed=5), y[:30]
    kernel = MSEKernel(x.shape[1:]) if kind == "mse" else SSIMKernel(x.shape[1:])
    got = nearest_same_class(kernel, torch.from_numpy(rec), torch.from_numpy(ry), torch.from_numpy(x), torch.from_numpy(y), budget=small_budget(kernel))
    ref = naive_from_skimage(rec, ry, x, y, kind, win=window_size(*x.shape[2:]))
    np.testing.assert_array_equal(got.match, ref.match)
    np.testing.assert_allclose(got.best, ref.best, atol=1e-4 if kind == "ssim" else 1e-12)
    assert all(y[got.match] == ry)  # same class only


def test_coverage_and_sdis_against_naive(photo_set):
    x, y = photo_set
    rec, ry = perturb(x[[0, 0, 1, 2, 3, 10, 11]], 10.0), y[[0, 0, 1, 2, 3, 10, 11]]
    report = score(rec, ry, x, y, lpips=False, fid=False)
    ref = naive_from_skimage(rec, ry, x, y, "mse")
    assert report.metrics["mse"].value == pytest.approx(ref.best.mean(), abs=1e-12)
    assert report.metrics["mse"].coverage == pytest.approx(len(set(ref.match)) / len(x))
    assert report.metrics["psnr"].value == pytest.approx(psnr_from_mse(ref.best).mean(), abs=1e-9)
    ref_ssim = naive_from_skimage(rec, ry, x, y, "ssim", win=11)
    assert report.metrics["ssim"].value == pytest.approx(ref_ssim.best.mean(), abs=1e-4)
    assert report.metrics["ssim"].coverage == pytest.approx(len(set(ref_ssim.match)) / len(x))
    np.testing.assert_array_equal(report.matches["ssim"], ref_ssim.match)


@pytest.mark.parametrize("which", ["digits", "photos"])
def test_identical_sets_have_full_coverage(which, digit_set, photo_set):
    x, y = digit_set if which == "digits" else photo_set
    report = score(x, y, x, y, lpips=False, fid=False)
    for name, best in [("mse", 0.0), ("psnr", 100.0), ("ssim", 1.0)]:
        assert report.metrics[name].coverage == 1.0
        assert report.metrics[name].value == pytest.approx(best, abs=1e-5)
        np.testing.assert_array_equal(report.matches[name], np.arange(len(x)))


def test_missing_class_rule(photo_set):
    x, y = photo_set
    keep = y != 9
    ry = y[:10].copy()  # one reconstruction of class 9, which the targets lack
    report = score(x[:10], ry, x[keep], y[keep], lpips=False, fid=False)
    assert report.matches["mse"][9] == -1 and report.matches["ssim"][9] == -1
    mse = report.metrics["mse"]
    assert "1 of 10 reconstructions have no target of their class" in mse.note
    assert mse.value == pytest.approx(1.0 / 10)  # nine exact copies (0) + the worst value (1)
    assert report.metrics["psnr"].value == pytest.approx(9 * 100.0 / 10)
    assert report.metrics["ssim"].value == pytest.approx((9 * 1.0 - 1.0) / 10, abs=1e-5)
    assert mse.coverage == pytest.approx(9 / keep.sum())


def test_result_does_not_depend_on_budget(photo_set):
    x, y = photo_set
    rec = perturb(x, 40.0, seed=7)
    args = (torch.from_numpy(rec), torch.from_numpy(y), torch.from_numpy(x), torch.from_numpy(y))
    kernel = SSIMKernel(x.shape[1:])
    a = nearest_same_class(kernel, *args, budget=small_budget(kernel))
    b = nearest_same_class(kernel, *args)
    np.testing.assert_array_equal(a.match, b.match)
    np.testing.assert_allclose(a.best, b.best, atol=1e-6)


def test_ties_go_to_the_lowest_target_index():
    t = np.zeros((4, 1, 8, 8), dtype=np.uint8)  # four identical targets of one class
    got = nearest_same_class(MSEKernel((1, 8, 8)), torch.from_numpy(t[:2]), torch.zeros(2, dtype=torch.int64),
                             torch.from_numpy(t), torch.zeros(4, dtype=torch.int64), budget=Budget(64, 8))
    np.testing.assert_array_equal(got.match, [0, 0])


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 12), st.integers(1, 12), st.integers(1, 3), st.integers(0, 2**31 - 1))
def test_engine_equals_naive_on_random_sets(n, m, n_classes, seed):
    rng = np.random.default_rng(seed)
    rec = rng.integers(0, 256, (n, 1, 6, 5), dtype=np.uint8)
    tar = rng.integers(0, 256, (m, 1, 6, 5), dtype=np.uint8)
    ry, ty = rng.integers(0, n_classes, n), rng.integers(0, n_classes, m)
    kernel = MSEKernel((1, 6, 5))
    got = nearest_same_class(kernel, torch.from_numpy(rec), torch.from_numpy(ry), torch.from_numpy(tar), torch.from_numpy(ty),
                             budget=Budget(state_bytes=3000, block_bytes=200))
    ref = naive_nearest_same_class(full_matrix(kernel, rec, tar), ry, ty, larger_is_better=False, worst=1.0)
    np.testing.assert_array_equal(got.match, ref.match)
    np.testing.assert_array_equal(got.best, ref.best)


@pytest.mark.portable
@pytest.mark.parametrize("isa", ["", "AVX2"])
def test_pairwise_mse_is_exact_whatever_int8_kernel_the_cpu_has(isa, tmp_path):
    """Issue 47: oneDNN's int8 GEMM without VNNI (x86 before Ice Lake / Zen 4, or ONEDNN_MAX_CPU_ISA=AVX2)
    saturates at int16, and the pairwise MSE of the "int8" mode came back wrong. In a fresh process with
    that kernel setting, the CPU's mode (probed) gives the exact matrix; the probe says whether int8 is
    exact, and a forced int8 mode differs from exact arithmetic exactly when the probe says it is not."""
    import json
    import os
    import subprocess
    import sys

    code = """
import json, numpy as np, torch
from reconbench.image.metrics.pixel import MSEKernel, int8_gemm_is_exact, matmul_mode
rng = np.random.default_rng(3)
a = rng.integers(0, 256, (40, 1, 32, 32), dtype=np.uint8); b = rng.integers(0, 256, (30, 1, 32, 32), dtype=np.uint8)
a[0], b[0] = 255, 0
exact = ((a[:, None].astype(np.int64) - b[None].astype(np.int64)) ** 2).sum((2, 3, 4)) / (1024 * 255.0**2)
def matrix(mode):
    k = MSEKernel((1, 32, 32), mode=mode)
    return k.block(k.prepare(torch.from_numpy(a)), k.prepare(torch.from_numpy(b))).numpy()
print(json.dumps({"exact_int8": int8_gemm_is_exact(), "mode": matmul_mode(torch.device("cpu")),
                  "cpu_ok": bool(np.array_equal(matrix(None), exact)), "int8_ok": bool(np.array_equal(matrix("int8"), exact))}))
"""
    env = os.environ | ({"ONEDNN_MAX_CPU_ISA": isa} if isa else {})
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["cpu_ok"], got
    assert got["int8_ok"] == got["exact_int8"] and got["mode"] == ("int8" if got["exact_int8"] else "float32"), got
