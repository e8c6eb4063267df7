"""A target model's own leakage to membership inference, for its model card and the defenses view.

The loss-threshold attack (Yeom et al., CSF 2018): a sample is called a member when the model's
cross-entropy loss on it is low. Its AUC over the track's members (D_tar, the training set) and
non-members (the holdout: same size and classes, seen by no model) is the Mann-Whitney statistic

    AUC = P(loss(member) < loss(non-member)) + 1/2 P(equal)

0.5 is no membership signal, 1.0 perfect separation. Read beside the test accuracy, it is the
utility/privacy pair a model owner asks about a defense (SoK Table 10).
"""

from __future__ import annotations

import logging

import numpy as np

log = logging.getLogger(__name__)


def auc(members: np.ndarray, nonmembers: np.ndarray) -> float:
    """Mann-Whitney AUC that a member's score is below a non-member's (ties count half)."""
    m, n = np.asarray(members, dtype=float), np.asarray(nonmembers, dtype=float)
    below = (m[:, None] < n[None, :]).sum() + 0.5 * (m[:, None] == n[None, :]).sum()
    return float(below / (len(m) * len(n)))


def losses(model, images: np.ndarray, labels: np.ndarray) -> np.ndarray:
    import torch

    with torch.no_grad():
        x = torch.from_numpy(images).float() / 255.0
        return torch.nn.functional.cross_entropy(model.eval()(x), torch.from_numpy(labels).long(),
                                                 reduction="none").numpy()


def loss_threshold_auc(track) -> float | None:
    """The target's loss-threshold MIA AUC on D_tar vs the holdout (None when its files are not here
    or the track has no holdout)."""
    from reconbench.image.track_files import load_splits, load_target_model

    try:
        splits = load_splits(track, ("target", "holdout"))
        if splits.holdout is None:
            return None
        model = load_target_model(track)
    except Exception as exc:  # noqa: BLE001 - a card without the figure rather than no site
        log.info("MIA AUC of %s: unavailable (%s)", track.id, exc)
        return None
    return auc(losses(model, splits.target.images, splits.target.labels),
               losses(model, splits.holdout.images, splits.holdout.labels))
