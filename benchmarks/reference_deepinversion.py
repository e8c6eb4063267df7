"""A reference DeepInversion loop in the style of NVlabs/DeepInversion (deepinversion.py): the
digits target model, BatchNorm-statistics hooks (R_feature), cross-entropy to class-balanced labels,
a TV-l2 prior, Adam on the pixels with a random roll, and nothing else: no registry, no Hub, no
knowledge view, no second process, no metrics, no signature. bench_fixed_cost.py times it beside
`recon-submit evaluate` to measure what the toolkit adds.

    python benchmarks/reference_deepinversion.py --iterations 100 --out /tmp/di.safetensors

The model is the embedded digits CNN (reconbench/data/digits/cnn.safetensors) built from its class
(reconbench.image.models.small.SmallCNN): the same network, loaded the plain way.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from torch import nn

from reconbench.image.models.small import SmallCNN

MODEL = Path(__file__).resolve().parents[1] / "toolkit" / "reconbench" / "data" / "digits" / "cnn.safetensors"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--iterations", type=int, default=2000)
    p.add_argument("--n", type=int, default=500, help="images (the digits target set's size)")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()
    torch.manual_seed(0)
    model = SmallCNN()
    model.load_state_dict(load_file(str(MODEL)))
    model.eval()
    for q in model.parameters():
        q.requires_grad_(False)
    losses = []

    def r_feature(module, inputs, _output):  # NVlabs' DeepInversionFeatureHook
        x = inputs[0]
        mean = x.mean([0, 2, 3])
        var = x.permute(1, 0, 2, 3).contiguous().view(x.shape[1], -1).var(1, unbiased=False)
        losses.append(torch.norm(module.running_var.data - var, 2) + torch.norm(module.running_mean.data - mean, 2))

    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.register_forward_hook(r_feature)
    labels = torch.arange(args.n) % 10
    out = []
    for start in range(0, args.n, args.batch_size):
        y = labels[start:start + args.batch_size]
        x = (0.5 + 0.2 * torch.randn(len(y), 1, 8, 8)).requires_grad_(True)
        opt = torch.optim.Adam([x], lr=0.05)
        for _ in range(args.iterations):
            opt.zero_grad(set_to_none=True)
            dx, dy = torch.randint(-1, 2, (2,)).tolist()
            xj = torch.roll(x, shifts=(dx, dy), dims=(2, 3))
            losses.clear()
            loss = nn.functional.cross_entropy(model(xj), y)
            diff1, diff2 = x[:, :, :, :-1] - x[:, :, :, 1:], x[:, :, :-1, :] - x[:, :, 1:, :]
            loss = loss + 2.5e-5 * (diff1.pow(2).mean() + diff2.pow(2).mean()) + 10.0 * torch.stack(losses).sum()
            loss.backward()
            opt.step()
            with torch.no_grad():
                x.clamp_(0, 1)
        out.append(x.detach())
    images = (torch.cat(out) * 255).round().to(torch.uint8)
    save_file({"images": images, "labels": labels.to(torch.int64)}, str(args.out))


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
