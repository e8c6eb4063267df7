"""What an attacker holding every public file tells about a season 2026-s2 draw's members, before the reveal.

The attacker has the repository (the recipe, the registry rows, the encrypted weight files), the open twin's
model, the whole sealed block, the aux block, and the burned season 2026-s1's draw models. It cannot know a
2026-s2 draw's pool (drawn from the whole block with the season key), so it scores every block image and the
measurement asks how well those scores tell the draw's members from its non-members (the pool's other half):

- open-model loss: the open twin's model's cross-entropy on the image (low loss: "member");
- per-class vs aux: that loss standardised by the open model's loss on the aux images of the same class;
- s1 models' loss: the mean loss of the five burned 2026-s1 draw models of the same twin (static twins).

Per draw: the AUC, and the accuracy at the best threshold chosen on another draw of the twin (d+1 mod K; members
and non-members are equally many, so it is the balanced accuracy), and "pick": how many of the 5 lowest-loss
block images of the draw's classes are its members (a loss pick over the carried block, issue 43's attack; the
base rate is members/block). As the reference, in the same run, each 2026-s1 static draw's own model (public)
scored on its own public pool of 2n images, the leak issue 43 found (0.91-0.98 on fashion-n100).

    nice -n 10 .venv/bin/python benchmarks/bench_sealed_public_attacker.py --seal-key ../shared/secrets/seal.key [TWIN ...]

The key is read by its path only to learn each draw's members for the measurement; nothing derived from it
but these accuracies is printed.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import torch

PICKS = 5


def losses(model, images: torch.Tensor, labels: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        out = torch.cat([model(images[i:i + 1024]) for i in range(0, len(images), 1024)])
        return torch.nn.functional.cross_entropy(out, torch.from_numpy(labels), reduction="none").numpy()


def auc(score: np.ndarray, member: np.ndarray) -> float:
    """P(score of a member > score of a non-member), ties half (Mann-Whitney)."""
    from scipy.stats import rankdata

    r = rankdata(score)
    n1, n0 = member.sum(), (~member).sum()
    return float((r[member].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def best_threshold(score: np.ndarray, member: np.ndarray) -> float:
    cuts = np.unique(score)
    accs = [np.mean((score >= t) == member) for t in cuts]
    return float(cuts[int(np.argmax(accs))])


def accuracy(score: np.ndarray, member: np.ndarray, threshold: float) -> float:
    return float(np.mean((score >= threshold) == member))


def evaluate(scores: list[np.ndarray], members: list[np.ndarray]) -> list[tuple[float, float]]:
    """Per draw: (AUC, accuracy at the threshold that was best on the next draw)."""
    k = len(scores)
    return [(auc(scores[d], members[d]), accuracy(scores[d], members[d],
             best_threshold(scores[(d + 1) % k], members[(d + 1) % k]))) for d in range(k)]


def s2_rows(group: str, master: bytes):
    """The table rows of a v2 twin's draws, each method's (AUC, accuracy) per draw, and the pool's size."""
    from reconbench.core.sealed_weights import opening
    from reconbench.core.tracks import get_track, sealed_draws
    from reconbench.image.data.fashion_splits import fashion_splits, sealed_block
    from reconbench.image.sealed import opened_draw
    from reconbench.image.track_files import load_target_model

    draws = sealed_draws(group)
    seal = draws[0].seal
    opened = get_track(seal.open_twin)
    block = sealed_block(opened.dataset)
    x = block.as_float()
    model = load_target_model(opened)
    loss = losses(model, x, block.labels)
    aux = fashion_splits(opened.dataset, opened.train_size).aux_same
    aux_loss = losses(model, aux.as_float(), aux.labels)
    z = np.empty_like(loss)
    for c in np.unique(block.labels):
        ref = aux_loss[aux.labels == c]
        z[block.labels == c] = (loss[block.labels == c] - ref.mean()) / (ref.std() + 1e-12)
    methods = {"open-model loss": -loss, "per-class vs aux": -z}
    burned = [t for t in sealed_draws(group.removesuffix("-s2")) if not t.update_size]
    if burned:  # the public 2026-s1 models of the same twin, trained on halves of the block's first 2n
        methods["s1 models' loss"] = -np.mean([losses(load_target_model(t), x, block.labels) for t in burned], axis=0)
    pools, inside = [], []
    with opening(master):
        for t in draws:
            indices, member, _ = opened_draw(t)
            pools.append(indices)
            inside.append(member)
    found = {name: evaluate([s[p] for p in pools], inside) for name, s in methods.items()}
    rows = []
    for d, t in enumerate(draws):
        classes = np.isin(block.labels, np.unique(block.labels[pools[d]]))
        order = np.flatnonzero(classes)[np.argsort(loss[classes], kind="stable")[:PICKS]]
        picked = int(np.isin(order, pools[d][inside[d]]).sum())
        cells = [f"{found[m][d][0]:.3f} / {found[m][d][1]:.3f}" if m in found else "-" for m in
                 ("open-model loss", "per-class vs aux", "s1 models' loss")]
        rows.append(f"| {t.id} | {len(pools[d])} | {' | '.join(cells)} | {picked} of {PICKS} "
                    f"(base {PICKS * inside[d].sum() / len(block):.2f}) |")
    return rows, found, len(pools[0])


def s1_rows(group: str, master: bytes) -> tuple[list[str], list[float]]:
    from reconbench.core.tracks import sealed_draws
    from reconbench.image.sealed import members, pool
    from reconbench.image.track_files import load_target_model

    draws = sealed_draws(group)
    scores, inside = [], []
    for t in draws:
        p = pool(t)
        scores.append(-losses(load_target_model(t), p.as_float(), p.labels))
        inside.append(members(t, master))
    found = evaluate(scores, inside)
    return [f"| {t.id} | {len(s)} | {a:.3f} | {acc:.3f} |" for t, s, (a, acc) in zip(draws, scores, found)], \
        [acc for _, acc in found]


def main(argv: list[str]) -> None:
    from reconbench.core.seal import read_key
    from reconbench.core.threads import set_threads
    from reconbench.image.models.sealed_registry import SEALED, SEASON_V2, season_group

    set_threads(1)
    if "--seal-key" not in argv:
        sys.exit("--seal-key PATH is required (the board's key, read by its path)")
    master = read_key(argv[argv.index("--seal-key") + 1])
    twins = [a for a in argv if a in SEALED] or list(SEALED)
    cpu = time.process_time()
    print(f"Season {SEASON_V2}: the public attacker, per draw (AUC / accuracy at the threshold best on the next draw)\n")
    print("| draw | pool | open-model loss | per-class vs aux | s1 models' loss | members in the 5 lowest-loss block images |")
    print("|---|---|---|---|---|---|")
    summary = []
    for name in twins:
        group = season_group(SEALED[name], SEASON_V2)
        rows, found, size = s2_rows(group, master)
        print("\n".join(rows))
        band = 1.96 * np.sqrt(0.25 / size)  # a coin's accuracy on one draw's pool: 95% within 0.5 +- band
        for m, v in found.items():
            summary.append(f"| {group} | {m} | {np.mean([a for a, _ in v]):.3f} | {np.mean([c for _, c in v]):.3f} | "
                           f"{max(c for _, c in v):.3f} | 0.5 ± {band:.3f} |")
    print("\nPer twin and method, over its draws: a draw's membership is independent of every public file, so the "
          "expected AUC and accuracy are 0.5 exactly; the last column is a coin's 95% range on one draw's pool\n")
    print("| twin | method | mean AUC | mean accuracy | highest draw | chance on one draw |\n|---|---|---|---|---|---|")
    print("\n".join(summary))
    print("\nReference, season 2026-s1 (burned): each static draw's public model on its public pool\n")
    print("| draw | pool | AUC | accuracy |\n|---|---|---|---|")
    ref = []
    for name in twins:
        if SEALED[name].update_size:
            continue
        rows, accs = s1_rows(name, master)
        print("\n".join(rows))
        ref += accs
    if ref:
        print(f"\n2026-s1 reference: accuracy {min(ref):.3f} to {max(ref):.3f} over {len(ref)} draws")
    print(f"\nCPU s: {time.process_time() - cpu:.0f}")


if __name__ == "__main__":
    main(sys.argv[1:])
