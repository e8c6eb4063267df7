"""Dynamic scenarios (SoK Def. 3.1, training type "dynamic"): an update set changes the target.

The target set of a dynamic scenario is the update set: "the subset of data that directly
contributes to the model change" (SoK Def. 3.2), so |D_tar| = track.update_size (digits and
digits-mlp: 100 images, the `update` split of data/digits.py; Hub tracks state theirs in the
registry). The evaluator scores against `splits.update`; the update set never enters a view.

What `update_view` returns, for `knowledge.extras` (read them with `knowledge.extra(name)`):

dynamic/white-box (Deep-Leakage's cell; "white-box ... even gradients of the target sample
calculated on the target model", SoK Sec. 3.1):
  "model_before"      the target model before the update (the module `knowledge.model` also is)
  "update_gradients"  ObservedGradients: the update set, in a fixed seeded order, is cut into
                      consecutive batches of GRADIENT_BATCH_SIZE images; for each batch the view
                      holds the gradient of the batch's mean cross-entropy with respect to every
                      parameter of the model before the update (eval mode, so BatchNorm uses its
                      running statistics). This is FedSGD: every local batch's gradient, computed
                      on the same global model, is shared. The batch sizes are known; the images
                      and labels are not.
dynamic/black-box (Updates-Leak's cell):
  "query_before"      probabilities of the model before the update (a counted QueryFunction)
  "query_after"       probabilities of the model after the update (a counted QueryFunction)
  Both charge `knowledge.query`'s counter and budget, so `knowledge.query.queries` is the total
  over both versions (what the result's provenance records); each also counts its own share.

The update (black-box view), after Salem et al., USENIX Sec'20 (the `updateModel` step of their
public code, dataGeneration.py): fine-tune the target on the update set for 1 epoch of SGD with
lr 1e-3, momentum 0.9, batches of 64 in a seeded order. The one change: our targets have
BatchNorm, and a 100-image fine-tune in train mode would replace its running statistics with those
of two small batches, so the update runs in eval mode (statistics frozen, weights and BN affine
parameters trained). Everything is seeded by UPDATE_SEED, not by the run's seed: the update is
part of the track, and every entry attacks the same one.

A sealed update twin (image/sealed.py, docs/sealed.md) draws its update set from the board's key, so
nobody else can compute either view: the key holder computes both by this recipe from the draw's
members (image/models/sealed_registry.py) and publishes them, pinned by sha256 in the registry
(Seal.observation); update_view reads them (observed_update) in place of computing them.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from typing import TYPE_CHECKING

from reconbench.image.data.arrays import ArraySet, TrackSplits
from reconbench.core.queries import KnowledgeError, LinkedQueryFunction, QueryFunction
from reconbench.core.scenario import Scenario

if TYPE_CHECKING:  # the registry is the evaluator's; this module only reads the track it is given
    from reconbench.core.tracks import Track

__all__ = ["GRADIENT_BATCH_SIZE", "LinkedQueryFunction", "ObservedGradients", "UPDATE_RECIPE", "UPDATE_SEED",
           "UpdateRecipe", "fine_tune", "observed_gradients", "update_view"]

UPDATE_SEED = 20190403  # any fixed value (this one: Updates-Leak's arXiv month, 2019-04); never change it,
# published entries were made against the update it gives
# DLG (Zhu et al., NeurIPS'19) reconstructs a batch from its gradient and reports batches of up
# to 8 images. We observe the update in batches of 4, a small local batch within that range:
# 100 update images -> 25 observed gradients. A track may set its own (Track.gradient_batch_size:
# the Fashion-MNIST update tracks observe their whole update of 1, 8 or 64 images as one batch).
GRADIENT_BATCH_SIZE = 4


@dataclass(frozen=True)
class UpdateRecipe:
    """How the model after the update is made (Salem et al.'s `updateModel`: SGD, 1 epoch)."""

    lr: float = 1e-3
    momentum: float = 0.9
    batch_size: int = 64
    epochs: int = 1
    seed: int = UPDATE_SEED


UPDATE_RECIPE = UpdateRecipe()


@dataclass(frozen=True)
class ObservedGradients:
    """Per-batch gradients of the update, as an honest-but-curious server would receive them.

    gradients[b][k] is d(mean CE of batch b)/d(parameter k), parameters in `parameter_names`
    order (that of `model_before.named_parameters()`).
    """

    parameter_names: tuple[str, ...]
    gradients: tuple[tuple[torch.Tensor, ...], ...]
    batch_sizes: tuple[int, ...]
    loss: str = "mean cross-entropy over the batch, model in eval mode"

    def __len__(self) -> int:
        return len(self.gradients)


def _order(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).permutation(n)


def observed_gradients(model: nn.Module, update: ArraySet, batch_size: int = GRADIENT_BATCH_SIZE,
                       seed: int = UPDATE_SEED, device: str | torch.device = "cpu") -> ObservedGradients:
    """The white-box view: one gradient per batch of the update set, at the model before the update."""
    model = copy.deepcopy(model).to(device).eval()
    names = tuple(name for name, _ in model.named_parameters())
    params = [p.requires_grad_(True) for _, p in model.named_parameters()]
    x_all, y_all = update.as_float(device), torch.from_numpy(update.labels).to(device)
    order = torch.from_numpy(_order(len(update), seed)).to(device)
    grads, sizes = [], []
    for start in range(0, len(update), batch_size):
        idx = order[start : start + batch_size]
        with torch.enable_grad():
            loss = nn.functional.cross_entropy(model(x_all[idx]), y_all[idx])
            g = torch.autograd.grad(loss, params, allow_unused=True)
        grads.append(tuple((torch.zeros_like(p) if gi is None else gi).detach().clone() for gi, p in zip(g, params)))
        sizes.append(int(idx.numel()))
    return ObservedGradients(parameter_names=names, gradients=tuple(grads), batch_sizes=tuple(sizes))


def fine_tune(model: nn.Module, data: ArraySet, recipe: UpdateRecipe = UPDATE_RECIPE,
              device: str | torch.device = "cpu") -> nn.Module:
    """A copy of `model` after the update (Salem et al.'s recipe, BatchNorm statistics frozen)."""
    updated = copy.deepcopy(model).to(device).eval()
    params = [p for p in updated.parameters()]
    for p in params:
        p.requires_grad_(True)
    opt = torch.optim.SGD(params, lr=recipe.lr, momentum=recipe.momentum)
    x_all, y_all = data.as_float(device), torch.from_numpy(data.labels).to(device)
    for epoch in range(recipe.epochs):
        order = torch.from_numpy(_order(len(data), recipe.seed + epoch)).to(device)
        for start in range(0, len(data), recipe.batch_size):
            idx = order[start : start + recipe.batch_size]
            opt.zero_grad(set_to_none=True)
            with torch.enable_grad():
                nn.functional.cross_entropy(updated(x_all[idx]), y_all[idx]).backward()
            opt.step()
    for p in params:
        p.requires_grad_(False)
    return updated.eval()


def update_view(scenario: Scenario, track: Track, splits: TrackSplits, target_model: nn.Module,
                white_box: nn.Module | None, query: QueryFunction, device: torch.device) -> dict[str, object]:
    """The dynamic part of a scenario's view (see the module docstring).

    `white_box` is the view's private copy of the target (white-box cells), `query` its counted
    query function, whose counter and budget the two versions' query functions share.
    """
    if track.seal is not None:  # a sealed update twin: its members are the key's, its observation is published
        return _sealed_view(scenario, track, target_model, white_box, query, device)
    if splits.update is None or not track.update_size:
        raise KnowledgeError(f"track '{track.id}' has no update set, so no dynamic scenario")
    if len(splits.update) != track.update_size:
        raise KnowledgeError(f"track '{track.id}': the update set has {len(splits.update)} images, the registry says {track.update_size}")
    if scenario.access == "white-box":
        batch = track.gradient_batch_size or GRADIENT_BATCH_SIZE
        return {"model_before": white_box,  # already a private copy of the target, in eval mode
                "update_gradients": observed_gradients(target_model, splits.update, batch_size=batch, device=device)}
    after = fine_tune(target_model, splits.update, device=device)
    shape = tuple(track.input_shape)
    return {"query_before": LinkedQueryFunction(copy.deepcopy(target_model), query, shape, device),
            "query_after": LinkedQueryFunction(after, query, shape, device)}


def _sealed_view(scenario: Scenario, track: Track, target_model: nn.Module, white_box: nn.Module | None,
                 query: QueryFunction, device: torch.device) -> dict[str, object]:
    """update_view on a sealed update twin: the same keys, read from the observation the board computed
    with the key by this module's recipe (image/models/sealed_registry.py) and pinned by hash."""
    gradients, after = observed_update(track, target_model, device)
    if scenario.access == "white-box":
        return {"model_before": white_box, "update_gradients": gradients}
    shape = tuple(track.input_shape)
    return {"query_before": LinkedQueryFunction(copy.deepcopy(target_model), query, shape, device),
            "query_after": LinkedQueryFunction(after, query, shape, device)}


def observed_update(track: Track, before, device="cpu"):
    """A sealed update twin's published observation, hash-checked against the registry: (ObservedGradients of
    the members at the model `before` the update, the model after the fine-tune). update_view hands
    these to the attack in place of what it computes from an open track's update set."""
    from reconbench.core.io import load_arrays, sha256_file
    from reconbench.core.tracks import TrackError, embedded_file
    from reconbench.image.models import load_model

    if track.seal is not None and track.seal.scheme == "v2":  # encrypted: opened in memory in the board's run
        return _sealed_observation(track, before, device)
    seen = track.seal.observation if track.seal is not None else None
    if seen is None:
        raise TrackError(f"track '{track.id}' is a sealed update twin but publishes no observation")
    paths = {}
    for what, name, pinned in (("gradient", seen.gradients_file, seen.gradients_sha256),
                               ("updated model", seen.updated_model_file, seen.updated_model_sha256)):
        path = embedded_file(name)
        if not path.is_file():
            raise TrackError(f"{path}: the {what} file of sealed track '{track.id}' is missing")
        if sha256_file(path) != pinned:
            raise TrackError(f"{path}: the {what} file's sha256 is not the {pinned} the registry pins")
        paths[what] = path
    arrays = load_arrays(paths["gradient"])
    names = tuple(name for name, _ in before.named_parameters())
    batches = int(arrays["batch_sizes"].size)
    grads = tuple(tuple(torch.from_numpy(arrays[f"{b}/{n}"]).to(device) for n in names) for b in range(batches))
    after = load_model(track.architecture, paths["updated model"], device=device, **track.arch_kwargs)
    return ObservedGradients(parameter_names=names, gradients=grads,
                             batch_sizes=tuple(int(v) for v in arrays["batch_sizes"])), after


def _sealed_observation(track: Track, before, device="cpu"):
    """observed_update of a v2 update twin: its gradients and updated model decrypted in memory with the key in
    context (image/sealed.open_weights checks both hashes); outside the board's run, the one sealed line."""
    from safetensors.numpy import load as load_arrays_bytes

    from reconbench.core.io import FileFormatError
    from reconbench.image.models.registry import load_model_bytes
    from reconbench.image.sealed import open_weights, require_opened

    require_opened(track)
    plain = open_weights(track, "gradients")
    try:
        arrays = load_arrays_bytes(plain)
    except Exception as exc:  # noqa: BLE001 - safetensors raises its own error types on bad bytes
        raise FileFormatError(f"{track.id}/gradients (decrypted): not a valid safetensors file ({exc})") from None
    names = tuple(name for name, _ in before.named_parameters())
    batches = int(arrays["batch_sizes"].size)
    grads = tuple(tuple(torch.from_numpy(arrays[f"{b}/{n}"]).to(device) for n in names) for b in range(batches))
    after = load_model_bytes(track.architecture, open_weights(track, "updated_model"),
                             f"{track.id}/updated_model (decrypted)", device=device, **track.arch_kwargs)
    return ObservedGradients(parameter_names=names, gradients=grads,
                             batch_sizes=tuple(int(v) for v in arrays["batch_sizes"])), after


def observation_arrays(gradients) -> dict:
    """ObservedGradients as the arrays of a published gradient file (observed_update reads them back)."""
    arrays = {f"{b}/{n}": g.detach().cpu().numpy() for b, batch in enumerate(gradients.gradients)
              for n, g in zip(gradients.parameter_names, batch)}
    return arrays | {"batch_sizes": np.asarray(gradients.batch_sizes, dtype=np.int64)}

