"""The zoo's datasets: where each comes from, its sizes, its splits' sizes and its licence.

SoK §4/§7: targets on CelebA, CIFAR-10 and MNIST, trained on 1k-20k images (CelebA) or
100-20k (CIFAR-10, MNIST); similar-distribution auxiliary data is FFHQ, CIFAR-100 and KMNIST.
`digits` (scikit-learn, shipped offline) is the stand-in that tests and smoke runs use.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from reconbench.image.data.arrays import ArraySet
from reconbench.core.io import FileFormatError
from reconbench.zoo import ZooError

CELEBA_SIZES = (1000, 2000, 5000, 10000, 15000, 20000)  # SoK Table 2
# SoK Fig. 1: "100 to 20,000" for CIFAR-10/MNIST; the intermediate sizes are not in the
# camera-ready, so we use CelebA's six plus the smallest.
SMALL_SIZES = (100,) + CELEBA_SIZES
UPDATE_SIZE = 100  # |D_tar| of the dynamic setting; the SoK's whole-percent coverages suggest 100
AUX_MAX = 30_000  # cap on each auxiliary split (our choice: about the GMI line's public face set)


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    title: str
    num_classes: int
    input_shape: tuple[int, int, int]
    sizes: tuple[int, ...]  # nested target-set sizes
    test_per_class: int  # 0: the source's own test split; n: n images per class held out of the pool
    similar: str | None  # similar-distribution auxiliary dataset (SoK §7)
    licence: str  # of the source images: what the data repo and model cards state
    licence_id: str  # Hugging Face licence identifier
    flip: bool  # random horizontal flips when training (KEDMI does for faces; standard for CIFAR)
    dark_background: bool  # the backdoor trigger is white here (a black square would be invisible)
    source_help: str  # what --source must hold
    loader: Callable[[Path | None], tuple[ArraySet, ArraySet | None]]
    similar_loader: Callable[[Path | None, int], ArraySet] | None = None
    update_size: int = UPDATE_SIZE
    aux_max: int = AUX_MAX

    def load(self, source: Path | None) -> tuple[ArraySet, ArraySet | None]:
        """(pool, test): the images the splits are cut from, and the source's own test split if any."""
        return self.loader(source)


def _need(source: Path | None, spec_name: str) -> Path:
    if source is None:
        raise FileFormatError(f"dataset '{spec_name}' needs --source DIR (a local copy: {DATASETS[spec_name].source_help})")
    if not Path(source).is_dir():
        raise FileFormatError(f"{source}: not a folder")
    return Path(source)


def _digits(source: Path | None) -> tuple[ArraySet, None]:
    from reconbench.image.data.digits import load_digits_arrays

    return load_digits_arrays(), None


def _mnist(source: Path | None) -> tuple[ArraySet, ArraySet]:
    from reconbench.zoo.sources import load_mnist_like

    return load_mnist_like(_need(source, "mnist"), "MNIST")


def _kmnist(source: Path | None, count: int) -> ArraySet:
    from reconbench.zoo.sources import load_mnist_like

    return load_mnist_like(_need(source, "mnist"), "KMNIST")[0]


def _cifar10(source: Path | None) -> tuple[ArraySet, ArraySet]:
    from reconbench.zoo.sources import load_cifar_binary

    return load_cifar_binary(_need(source, "cifar10"), "cifar10")


def _cifar100(source: Path | None, count: int) -> ArraySet:
    from reconbench.zoo.sources import load_cifar_binary

    return load_cifar_binary(_need(source, "cifar10"), "cifar100")[0]


def _celeba(source: Path | None) -> tuple[ArraySet, None]:
    from reconbench.zoo.sources import load_celeba

    return load_celeba(_need(source, "celeba"), identities=1000), None


def _ffhq(source: Path | None, count: int) -> ArraySet:
    from reconbench.zoo.sources import load_ffhq

    # Decoding all 70,000 thumbnails to keep 30,000 would waste an hour: pick the files first.
    return load_ffhq(_need(source, "celeba"), count=count, seed=SIMILAR_FILE_SEED)


SIMILAR_FILE_SEED = 7  # which FFHQ files are decoded; any fixed value would do

DATASETS: dict[str, DatasetSpec] = {
    spec.name: spec
    for spec in (
        DatasetSpec(
            name="celeba", title="CelebA, 1,000 identities, 64x64 (GMI crop)", num_classes=1000,
            input_shape=(3, 64, 64), sizes=CELEBA_SIZES, test_per_class=3, similar="ffhq",
            licence="CelebA: non-commercial research purposes only (CelebA agreement); "
                    "FFHQ: CC BY-NC-SA 4.0 (NVIDIA), images under their Flickr licences",
            licence_id="other", flip=True, dark_background=False,
            source_help="celeba/img_align_celeba/*.jpg + celeba/identity_CelebA.txt, and thumbnails128x128/ of FFHQ",
            loader=_celeba, similar_loader=_ffhq,
        ),
        DatasetSpec(
            name="cifar10", title="CIFAR-10, 32x32", num_classes=10, input_shape=(3, 32, 32),
            sizes=SMALL_SIZES, test_per_class=0, similar="cifar100",
            licence="CIFAR-10/100 (Krizhevsky, 2009): no licence stated by the authors", licence_id="unknown",
            flip=True, dark_background=False,
            source_help="cifar-10-batches-bin/ and cifar-100-binary/ (the binary versions)",
            loader=_cifar10, similar_loader=_cifar100,
        ),
        DatasetSpec(
            name="mnist", title="MNIST, padded to 32x32", num_classes=10, input_shape=(1, 32, 32),
            sizes=SMALL_SIZES, test_per_class=0, similar="kmnist",
            licence="MNIST: CC BY-SA 3.0 (LeCun & Cortes); KMNIST: CC BY-SA 4.0 (Clanuwat et al.)",
            licence_id="cc-by-sa-3.0", flip=False, dark_background=True,
            source_help="MNIST/raw/ and KMNIST/raw/ with the four idx files each (torchvision's layout)",
            loader=_mnist, similar_loader=_kmnist,
        ),
        DatasetSpec(
            name="digits", title="scikit-learn digits, 8x8 (offline stand-in for tests)", num_classes=10,
            input_shape=(1, 8, 8), sizes=(50, 100, 200), test_per_class=30, similar=None,
            licence="UCI Optical Recognition of Handwritten Digits: CC BY 4.0", licence_id="cc-by-4.0",
            flip=False, dark_background=True, source_help="nothing: shipped with scikit-learn",
            loader=_digits, update_size=50,
        ),
    )
}


def get_dataset(name: str) -> DatasetSpec:
    if name not in DATASETS:
        raise ZooError(f"unknown zoo dataset '{name}' (known: {', '.join(DATASETS)})")
    return DATASETS[name]
