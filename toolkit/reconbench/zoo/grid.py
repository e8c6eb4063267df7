"""Track ids, the SoK's grid of targets, and their registry entries (registry/zoo.json).

A zoo track id reads `<dataset>-<architecture>-n<size>[-<variant>]`, e.g. `cifar10-vgg16-n1000`
or `celeba-vgg16-n20000-backdoor`. The grid is generated here, never typed by hand:

    VGG16 and ResNet-18  x  {CelebA: 1k..20k (6 sizes), CIFAR-10 and MNIST: 100..20k (7 sizes)}
    CelebA VGG16 variants (SoK §7): pretrained, bn-frozen, dp, prune at the six sizes;
    bottleneck512/128 at 1k and 20k (Table 6); backdoor at 20k (Fig. 6)

`python -m reconbench.zoo.grid` rewrites registry/zoo.json: every grid track that is not
published yet gets an `unpublished` entry; published entries are kept exactly as they are.
`--check` only reports whether the file is up to date (exit 1 if not).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from reconbench.zoo import ZooError
from reconbench.zoo.datasets import CELEBA_SIZES, DATASETS, DatasetSpec, get_dataset
from reconbench.zoo.recipes import default_arch_kwargs
from reconbench.zoo.variants import VARIANTS

# Query budget of every grid track (Track.query_budget): DFME's largest per-dataset budget in Truong
# et al. (20M on CIFAR-10, run_cifar_dfme.sh; 2M on SVHN, run_svhn_dfme.sh), so that the SoK's
# black-box cells through a DFME surrogate (SoK Fig. 4) run at the paper's budget on every dataset.
SOK_GRID_QUERY_BUDGET = 20_000_000

ARCHITECTURES = {
    "vgg16": "VGG16-BN",
    "resnet18": "ResNet-18",
    "small-cnn": "small CNN",
    "homogeneous-mlp": "bias-free MLP",
}
SOK_DATASETS = ("celeba", "cifar10", "mnist")
_ID = re.compile(r"(?P<dataset>[a-z0-9]+)-(?P<arch>" + "|".join(map(re.escape, ARCHITECTURES))
                 + r")-n(?P<size>[0-9]+)(?:-(?P<variant>[a-z0-9-]+))?")


@dataclass(frozen=True)
class TrackSpec:
    dataset: str
    architecture: str
    size: int
    variant: str | None = None

    @property
    def id(self) -> str:
        return f"{self.dataset}-{self.architecture}-n{self.size}" + (f"-{self.variant}" if self.variant else "")

    @property
    def data(self) -> DatasetSpec:
        return get_dataset(self.dataset)


def parse_track_id(track_id: str) -> TrackSpec:
    m = _ID.fullmatch(track_id)
    if not m:
        raise ZooError(f"'{track_id}' is not a zoo track id (<dataset>-<architecture>-n<size>[-<variant>], "
                       "e.g. cifar10-vgg16-n1000)")
    spec = TrackSpec(m["dataset"], m["arch"], int(m["size"]), m["variant"])
    data = get_dataset(spec.dataset)
    if spec.size not in data.sizes:
        raise ZooError(f"track '{track_id}': dataset '{spec.dataset}' has target sizes {', '.join(map(str, data.sizes))}")
    if spec.variant is not None and spec.variant not in VARIANTS:
        raise ZooError(f"track '{track_id}': unknown variant '{spec.variant}' (known: {', '.join(VARIANTS)})")
    return spec


def sok_grid() -> list[TrackSpec]:
    grid = [TrackSpec(ds, arch, n) for ds in SOK_DATASETS for arch in ("vgg16", "resnet18") for n in DATASETS[ds].sizes]
    for variant in ("pretrained", "bn-frozen", "dp", "prune"):  # Tables 5, 7, 10: all six sizes
        grid += [TrackSpec("celeba", "vgg16", n, variant) for n in CELEBA_SIZES]
    for variant in ("bottleneck512", "bottleneck128"):  # Table 6: sizes 1,000 and 20,000
        grid += [TrackSpec("celeba", "vgg16", n, variant) for n in (1000, 20000)]
    grid.append(TrackSpec("celeba", "vgg16", 20000, "backdoor"))  # Fig. 6
    return grid


def scenarios(data: DatasetSpec) -> list[str]:
    """Every taxonomy cell the SoK benchmarks (Table 1); 'similar' only where the dataset has such data."""
    cells = ["static/white-box/none", "static/white-box/similar", "static/white-box/same",
             "static/black-box/similar", "static/black-box/same", "dynamic/white-box/none", "dynamic/black-box/same"]
    return [c for c in cells if data.similar or not c.endswith("/similar")]


def registry_entry(spec: TrackSpec, *, arch_kwargs: dict[str, int] | None = None) -> dict:
    """The unpublished registry entry of a track (publish.py fills in source, hashes and accuracy)."""
    from reconbench.zoo.recipes import base_recipe
    from reconbench.zoo.variants import apply_variant

    data = spec.data
    if arch_kwargs is None:
        _, arch_kwargs = apply_variant(spec.variant, data, spec.architecture, base_recipe(data, spec.architecture),
                                       default_arch_kwargs(data, spec.architecture))
    title = f"{data.title}, {ARCHITECTURES[spec.architecture]}" + (f" ({spec.variant})" if spec.variant else "") \
        + f", {spec.size:,} training images"
    return {
        "id": spec.id,
        "title": title,
        "dataset": spec.dataset,
        "architecture": spec.architecture,
        "arch_kwargs": dict(arch_kwargs),
        "variant": spec.variant,
        "input_shape": list(data.input_shape),
        "num_classes": data.num_classes,
        "train_size": spec.size,
        "update_size": data.update_size,
        "status": "unpublished",
        "scenarios": scenarios(data),
        "query_budget": SOK_GRID_QUERY_BUDGET,
        "recipe": f"recon-submit targets train {spec.id}",
    }


def zoo_registry_path() -> Path:
    return Path(str(resources.files("reconbench") / "registry" / "zoo.json"))


def regenerated(current: dict | None) -> dict:
    """The zoo registry with the grid's unpublished entries, keeping every published entry as it is."""
    kept = {t["id"]: t for t in (current or {}).get("tracks", []) if t.get("status") == "published"}
    tracks = [kept.pop(spec.id, None) or registry_entry(spec) for spec in sok_grid()]
    return {"schema_version": 1, "tracks": tracks + sorted(kept.values(), key=lambda t: t["id"])}


def main(argv: list[str]) -> int:
    from reconbench.zoo.registry_file import regenerate_file

    return regenerate_file(zoo_registry_path(), regenerated, check="--check" in argv, module="reconbench.zoo.grid")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
