"""How much a sealed update twin's published gradient tells an attack that carries the public pool.

The pool of a sealed update twin is public (its recipe: fashion_splits.sealed_update_pool), and the
white-box cell's observation is the mean gradient of the k members, a linear mix of the pool items'
own gradients. An attack file that carries the 2k pool images can solve for the mix (least squares
over the per-item gradients at the public model before the update) and return the k items of largest
weight: exact copies of members and nothing else, so the carried-data rule (a copy of a non-member)
never fires. This measures how often that pick is exactly the members, over draws of a throwaway key.

    nice -n 10 .venv/bin/python benchmarks/bench_sealed_update_pick.py [--draws N] [TWIN ...]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch


def per_item_gradients(model, pool) -> torch.Tensor:
    """(2k, P): each pool item's cross-entropy gradient at `model` (eval mode), flattened."""
    from reconbench.image.dynamic import observed_gradients

    seen = observed_gradients(model, pool, batch_size=1, seed=0)
    order = np.random.default_rng(0).permutation(len(pool))  # observed_gradients' seeded order, batch of one
    flat = torch.stack([torch.cat([g.flatten() for g in batch]) for batch in seen.gradients])
    out = torch.empty_like(flat)
    out[torch.from_numpy(order)] = flat
    return out


def main(argv: list[str]) -> None:
    from reconbench.core.seal import new_key
    from reconbench.core.tracks import Track, get_track
    from reconbench.image.data.fashion_splits import sealed_update_pool
    from reconbench.image.dynamic import observed_update  # the twin's own reader: what the attack is handed
    from reconbench.image.models.sealed_registry import SEALED, update_row
    from reconbench.image.sealed import members
    from reconbench.image.track_files import load_target_model

    draws = int(argv[argv.index("--draws") + 1]) if "--draws" in argv else 20
    groups = [a for a in argv if a in SEALED] or [g for g, t in SEALED.items() if t.update_size]
    print("| twin | pool | draws | pick = the members exactly | members in the pick (mean) | CPU s |")
    print("|---|---|---|---|---|---|")
    for group in groups:
        twin = SEALED[group]
        opened = get_track(twin.open_twin)
        before = load_target_model(opened)
        pool = sealed_update_pool(opened.dataset, twin.update_size)
        cpu = time.process_time()
        basis = per_item_gradients(before, pool).double()  # (2k, P)
        exact, share = 0, []
        with tempfile.TemporaryDirectory() as tmp:
            for d in range(draws):
                key = bytes.fromhex(new_key())
                row = update_row(twin, 0, 1, key, Path(tmp), "bench", "2000-01-01")
                for name in ("gradients_file", "updated_model_file"):
                    row["seal"]["observation"][name] = str(Path(tmp) / row["seal"]["observation"][name])
                track = Track.model_validate(row)
                seen, _ = observed_update(track, before)
                target = torch.cat([g.flatten() for g in seen.gradients[0]]).double()
                weights = torch.linalg.lstsq(basis.T, target[:, None]).solution[:, 0].numpy()
                pick = np.argsort(-weights)[: twin.update_size]
                inside = members(track, key)
                exact += int(inside[pick].all())
                share.append(inside[pick].mean())
        cpu = time.process_time() - cpu
        print(f"| {group} | {len(pool)} | {draws} | {exact} of {draws} | {np.mean(share):.3f} | {cpu:.0f} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
