"""Sealed count: membership relabelling (issue 43, item 4). How often membership-ignorant outputs would get
"extracts" on a v2 sealed twin, and how often one member per draw does.

    nice -n 10 .venv/bin/python benchmarks/bench_sealed_relabel.py [--entries 200]

Draws: the real Fashion-MNIST sealed block (4,860 images), each draw a core/seal.block_draw of a throwaway
key with fashion-n100's per-class counts (10 members and 10 non-members per class, drawn from the block's
486 items of the class), K = 5 draws per simulated entry, fresh draws for every entry. The extraction
threshold is the registry's (core/tracks.extraction_calibration of fashion-n100), the distances the count's
own exact per-pixel MSE (image/metrics/extraction.mse_matrix, float64 from integer grey levels).

Per entry, each draw's 100 outputs (10 per class) are one of:

  membership-ignorant (null):
    pool copies         every output a copy of a random item of the draw's pool (members and non-members
                        alike), moved by N(0, 3^2) grey levels (within the threshold of its source)
    one pool copy       one such copy per draw, the other 99 the per-class aux mean
    block images        100 random images of the sealed block (exact)
    one block image     one random block image per draw, the other 99 the per-class aux mean
    aux images          100 random aux images (exact)
    public neighbours   for 100 random block images, the nearest public image of the class in the aux block
                        and the test split (exact)
  power:
    member in m draws   one exact member in m of the 5 draws (m = 1..5), the other outputs the per-class
                        aux mean

and per entry, over its 5 draws:
  refused     the keyed copy rule: some output within the threshold of a non-member of the draw (the block's
              non-members, the aux block, the test split; the real rule searches the whole dataset, so it
              refuses at least as often: the badge rates here are upper bounds)
  badge       not refused, more members than pool non-members extracted, and the pooled relabelling p
              (core/relabel.py: candidates = the whole block, strata = draw x class) below alpha
  relabel only, natural only: the badge the relabelling p alone, or the natural-data p alone (the count's
              Poisson null, core/draws' Skellam tail; the rule before issue 43), would give with the copy
              rule switched off: what each test does by itself

The per-class aux mean is the filler because an exact aux image is a public non-member: the copy rule
refuses it (so does it refuse "aux images" and "public neighbours").

The two "pool" kinds know the draw's pool. On a v2 draw the pool is secret (it is drawn with the members),
so no attacker has it; they show what the relabelling test over the block assumes. With a leaked pool each
pool item is a member with probability 1/2, not 10/486, and a single copy per draw gets past the relabelling
whenever it lands on members in all five draws (1/32): the copy rule and the pool's secrecy keep it out.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import torch

from reconbench.core.draws import count_across_draws
from reconbench.core.membership import ALPHA
from reconbench.core.relabel import record as relabel_record, strata_of
from reconbench.core.seal import block_draw, new_key
from reconbench.core.tracks import extraction_calibration, get_track
from reconbench.image.data.fashion import fashion_mnist
from reconbench.image.data.fashion_splits import VIEWS, fashion_splits, layout
from reconbench.image.metrics.extraction import mse_matrix

K = 5
NOISE = 3.0  # grey levels
GROUP = "fashion-n100-sealed-bench"


def arg(name: str, default: int) -> int:
    return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


class Bank:
    """Every image an output is made of (block, aux, test, aux means), and per bank item its neighbours in the
    searched set S (block, aux, test) within a radius wide enough for a copy moved by the noise."""

    def __init__(self, threshold: float):
        train = fashion_mnist()["train"]
        self.block = VIEWS["fashion-mnist"].arrays(train, layout()["sealed"])
        splits = fashion_splits("fashion-mnist", 100)
        self.per_class = {int(c): int(n) for c, n in zip(*np.unique(splits.target.labels, return_counts=True))}
        aux, test = splits.aux_same, splits.test
        means = np.stack([np.rint(aux.images[aux.labels == c].astype(np.float64).mean(0)) for c in range(10)]).astype(np.uint8)
        self.images = np.concatenate([self.block.images, aux.images, test.images, means])
        self.labels = np.concatenate([self.block.labels, aux.labels, test.labels, np.arange(10)])
        nb, na, nt = len(self.block.labels), len(aux.labels), len(test.labels)
        self.aux = np.arange(nb, nb + na)
        self.test = np.arange(nb + na, nb + na + nt)
        self.means = np.arange(nb + na + nt, nb + na + nt + 10)
        self.searched = nb + na + nt  # S: bank items 0..searched-1 (the means are no public image)
        self.threshold = threshold
        # the noise moves a copy by at most `moved` (MSE) in practice; a neighbour within the threshold of the
        # moved copy is then within (sqrt(t) + sqrt(moved))^2 of its source (the triangle inequality in l2)
        self.moved = 4 * (NOISE / 255.0) ** 2
        self.radius = (np.sqrt(threshold) + np.sqrt(self.moved)) ** 2
        self.near = self._neighbours()
        self.public_nn = self._public_neighbours()

    def _public_neighbours(self) -> np.ndarray:
        """Per block item, the nearest public image of its class (aux block and test split), a bank id."""
        out = np.zeros(len(self.block.labels), np.int64)
        for c in range(10):
            rows = np.flatnonzero(self.block.labels == c)
            public = np.r_[self.aux[self.labels[self.aux] == c], self.test[self.labels[self.test] == c]]
            out[rows] = public[mse_matrix(self.images[rows], self.images[public]).argmin(axis=1)]
        return out

    def _neighbours(self) -> list[np.ndarray]:
        """Per bank item, the S items of its class within `radius` (float32 prefilter, then the exact float64 check)."""
        near: list[np.ndarray] = [np.zeros(0, np.int64)] * len(self.labels)
        flat = torch.from_numpy(self.images.reshape(len(self.images), -1).astype(np.float32) / 255.0)
        dim = flat.shape[1]
        for c in range(10):
            rows = np.flatnonzero(self.labels == c)
            cols = rows[rows < self.searched]
            a, b = flat[rows], flat[cols]
            d = ((a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2 * a @ b.T) / dim
            hit = (d <= 1.5 * self.radius + 1e-4).numpy()
            for r, row in zip(rows, hit):
                cand = cols[row]
                if len(cand):
                    exact = mse_matrix(self.images[[r]], self.images[cand])[0]
                    near[r] = cand[exact <= self.radius]
        return near


def make_entry(kind: str, rng: np.random.Generator, bank: Bank, draws: list) -> list[list[tuple]]:
    """Per draw, its outputs as (bank id, moved image or None): the image is the bank item's, or its moved copy."""
    out = []
    for d, (pool_idx, members) in enumerate(draws):
        by_class = {c: pool_idx[bank.block.labels[pool_idx] == c] for c in range(10)}
        outputs = []
        for c, n in bank.per_class.items():
            block_c = np.flatnonzero(bank.block.labels == c)
            if kind == "pool copies":
                outputs += [(int(i), None) for i in rng.choice(by_class[c], n)]
            elif kind == "block images":
                outputs += [(int(i), None) for i in rng.choice(block_c, n, replace=False)]
            elif kind == "aux images":
                outputs += [(int(i), None) for i in rng.choice(bank.aux[bank.labels[bank.aux] == c], n, replace=False)]
            elif kind == "public neighbours":
                outputs += [(int(bank.public_nn[i]), None) for i in rng.choice(block_c, n, replace=False)]
            else:
                outputs += [(int(bank.means[c]), None)] * n
        out.append(outputs)
    if kind in ("one pool copy", "one block image"):
        for d, (pool_idx, _) in enumerate(draws):
            source = rng.choice(pool_idx) if kind == "one pool copy" else rng.integers(len(bank.block.labels))
            out[d][0] = (int(source), None)
    if kind.startswith("member in"):
        m = int(kind.split()[2])
        for d in rng.choice(K, m, replace=False):
            pool_idx, members = draws[d]
            out[d][0] = (int(rng.choice(pool_idx[members])), None)
    # the moved copies: every output of the "pool" kinds
    if kind in ("pool copies", "one pool copy"):
        for d in range(K):
            outputs = out[d]
            for o, (i, _) in enumerate(outputs):
                if i < len(bank.block.labels) and (kind == "pool copies" or o == 0):
                    noisy = np.clip(np.rint(bank.images[i].astype(np.float64) + rng.normal(0, NOISE, bank.images[i].shape)), 0, 255)
                    outputs[o] = (i, noisy.astype(np.uint8))
    return out


def within(bank: Bank, source: int, image: np.ndarray | None) -> np.ndarray:
    """The S items (bank ids) within the threshold of an output made from `source`."""
    near = bank.near[source]
    if image is None:  # the bank item itself: its exact distances
        if not len(near):
            return near
        d = mse_matrix(bank.images[[source]], bank.images[near])[0]
        return near[d <= bank.threshold]
    if not len(near):
        return near
    d = mse_matrix(image[None], bank.images[near])[0]
    assert mse_matrix(image[None], bank.images[[source]])[0, 0] <= bank.moved, "a moved copy left the radius"
    return near[d <= bank.threshold]


def score_entry(bank: Bank, draws: list, outputs: list) -> dict:
    """refused (copy rule), and the count's totals with both tests, over the entry's K draws."""
    refused, counts = False, []
    nb = len(bank.block.labels)
    cache: dict = {}
    for (pool_idx, members), outs in zip(draws, outputs):
        member_set = set(pool_idx[members].tolist())
        pool_set = set(pool_idx.tolist())
        nearest = np.full(nb, np.inf)  # per block item: within the threshold of some output (0) or not
        for source, image in outs:
            key = (source, None if image is None else image.tobytes())
            hits = cache.get(key) if image is None else None
            if hits is None:
                hits = within(bank, source, image)
                if image is None:
                    cache[key] = hits
            if any(h >= nb or h not in member_set for h in hits.tolist()):
                refused = True  # within the threshold of a non-member: an aux/test image, or a block non-member
            hits = hits[hits < nb]
            nearest[hits] = 0.0
        inside = np.zeros(nb, bool)
        inside[pool_idx[members]] = True
        strata = strata_of("", nearest, inside, bank.block.labels, bank.threshold)
        hit_pool = [i for i in np.flatnonzero(nearest <= bank.threshold).tolist() if i in pool_set]
        k = sum(1 for i in hit_pool if i in member_set)
        # the natural null's rates (core/extraction.py): q * sum over classes of n_rec(c) * members(c), and the same
        # for the pool's non-members (as many per class as members)
        lam = bank.rate * sum(sum(1 for s, _ in outs if bank.labels[s] == c) * n for c, n in bank.per_class.items())
        counts.append(dict(members=k, n_members=int(members.sum()), holdout=len(hit_pool) - k,
                           n_holdout=int((~members).sum()), expected_members=lam, expected_holdout=lam,
                           relabel=relabel_record(strata)))
    pooled = count_across_draws(counts)
    natural = pooled.members > pooled.holdout and pooled.p < ALPHA
    return dict(refused=refused, badge=not refused and pooled.extracts, relabel=pooled.extracts, natural=natural)


def main() -> None:
    entries = arg("--entries", 200)
    started = time.process_time()
    cal = extraction_calibration(get_track("fashion-n100"))
    bank = Bank(cal.threshold)
    bank.rate = cal.pair_rate
    print(f"bank: {len(bank.labels)} images, block {len(bank.block.labels)}, threshold {cal.threshold:.3g}, "
          f"neighbour lists in {time.process_time() - started:.0f} CPU s", flush=True)
    key, rng = bytes.fromhex(new_key()), np.random.default_rng(43)
    kinds = ["pool copies", "one pool copy", "block images", "one block image", "aux images", "public neighbours",
             *(f"member in {m} draws" for m in range(1, K + 1))]
    draw_id = 0
    rows = []
    for kind in kinds:
        tally = dict(refused=0, badge=0, relabel=0, natural=0)
        for _ in range(entries):
            draws = []
            for _d in range(K):
                draws.append(block_draw(key, GROUP, draw_id, bank.block.labels, bank.per_class))
                draw_id += 1
            got = score_entry(bank, draws, make_entry(kind, rng, bank, draws))
            for name in tally:
                tally[name] += int(got[name])
        rows.append((kind, {n: v / entries for n, v in tally.items()}))
        print(f"  {kind}: {tally} ({time.process_time() - started:.0f} CPU s)", flush=True)
    from scipy.stats import beta

    print(f"\n{entries} simulated entries per kind, K = {K} draws each, alpha = {ALPHA}; the badge's one-sided 95% "
          "upper bound is Clopper-Pearson's")
    print("| outputs | refused by the copy rule | badge (after the copy rule) | its 95% upper bound | relabelling p alone | "
          "natural-data p alone |")
    print("|---|---|---|---|---|---|")
    for kind, r in rows:
        hits = round(r["badge"] * entries)
        upper = 1.0 if hits == entries else float(beta.ppf(0.95, hits + 1, entries - hits))
        print(f"| {kind} | {r['refused']:.3f} | {r['badge']:.3f} ({hits} of {entries}) | {upper:.3f} | {r['relabel']:.3f} | "
              f"{r['natural']:.3f} |")
    print(f"\ntotal {time.process_time() - started:.0f} CPU s")


if __name__ == "__main__":
    main()
