"""Deep-Leakage (Zhu et al., NeurIPS'19) and the batched L-BFGS it runs on."""

import math

import torch

from reconbench.image.attacks import ATTACKS, Progress, enforce_size
from reconbench.image.attacks.priors import BatchedLBFGS
from reconbench.image.dynamic import observed_gradients
from reconbench.image.knowledge import build_knowledge
from reconbench.image.metrics import score
from reconbench.image.models import build_model
from reconbench.core.scenario import Scenario
from reconbench.core.tracks import get_track
from reconbench.image.track_files import load_splits

SCENARIO = Scenario.parse("dynamic/white-box/none")


def test_batched_lbfgs_solves_independent_problems_and_survives_a_diverging_one():
    """Five quadratics with different curvatures and minima: each must reach its own minimum
    (a shared L-BFGS history would mix their curvature pairs); a sixth problem whose loss turns
    NaN must be frozen without stopping the others."""
    torch.manual_seed(0)
    scale = torch.tensor([0.5, 1.0, 3.0, 10.0, 30.0, 1.0])[:, None]
    centre = torch.randn(6, 4)
    x = torch.zeros(6, 4, requires_grad=True)

    def closure():
        x.grad = None
        losses = (scale * (x - centre) ** 2).sum(1)
        losses = torch.cat([losses[:5], losses[5:] * float("nan")])  # problem 5 diverges
        losses.sum().backward()
        return losses.detach()

    opt = BatchedLBFGS([x], lr=1.0, max_iter=20)
    for _ in range(5):
        opt.step(closure)
    assert torch.allclose(x.detach()[:5], centre[:5], atol=1e-4)


def test_dlg_recovers_a_single_image_from_its_gradient():
    """The DLG paper's setting: one image, a randomly initialised network, the gradient of its
    loss observed. After 30 L-BFGS steps the image must come back at > 25 dB PSNR (DLG reports
    near pixel-exact recovery; we see ~50 dB) and its label must be the true one."""
    torch.manual_seed(0)
    fresh = build_model("small-cnn").eval()  # the paper attacks a randomly initialised model
    update = load_splits(get_track("digits")).update
    one = update.subset([3])
    k = build_knowledge(get_track("digits"), SCENARIO)
    k.extras["model_before"] = fresh
    k.extras["update_gradients"] = observed_gradients(fresh, one, batch_size=1)
    k.target_size = 1
    rec = ATTACKS["deep-leakage"](iterations=30).run(k, seed=0, progress=Progress())
    mse = float(((rec.images - one.as_float()) ** 2).mean())
    assert 10 * math.log10(1 / max(mse, 1e-12)) > 25
    assert rec.labels.tolist() == one.labels.tolist()


def test_dlg_on_the_track_view_returns_one_image_per_update_image():
    """The harness's view: 25 observed batches of 4 on the trained digits target; a tiny budget
    only checks the wiring (every batch becomes 4 reconstructions with labels in range) and that
    the SoK metrics score them against the update set."""
    k = build_knowledge(get_track("digits"), SCENARIO)
    attack = ATTACKS["deep-leakage"](iterations=1, max_iter=2)
    rec = enforce_size(attack.run(k, seed=0, progress=Progress()), k.target_size, k.input_shape)
    assert rec.images.shape == (100, 1, 8, 8) and 0 <= int(rec.labels.min()) and int(rec.labels.max()) < 10
    assert attack.config["iterations"] == 1  # a number the user sets is kept
    update = load_splits(get_track("digits")).update
    report = score(rec.to_uint8().numpy(), rec.labels.numpy(), update.images, update.labels, lpips=False, fid=False)
    assert report.metrics["mse"].status == "computed"


def test_auto_budget_is_resolved_and_recorded():
    k = build_knowledge(get_track("digits"), SCENARIO)
    k.extras["update_gradients"] = observed_gradients(k.model, load_splits(get_track("digits")).update.subset([0]), batch_size=1)
    k.target_size = 1
    attack = ATTACKS["deep-leakage"](max_iter=1)
    attack.run(k, seed=0, progress=Progress())
    assert attack.config["iterations"] == 40  # the 8x8 tracks' budget, written back for the result file
