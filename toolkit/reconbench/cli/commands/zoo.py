"""Target-model zoo commands (maintainers): `data prepare`, `targets train`, `targets grid`,
`hub publish`. Logic: reconbench.zoo; the recipe for the whole zoo is in docs/zoo.md."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from reconbench.core.console import console, escape, fail

WORK = Path("zoo-build")  # default working folder: zoo-build/data/<dataset>/, zoo-build/targets/<track>/


def _data_dir(dataset: str) -> Path:
    return WORK / "data" / dataset


def _target_dir(track: str) -> Path:
    return WORK / "targets" / track


def _errors():
    from reconbench.core.hub import HubError
    from reconbench.core.io import FileFormatError
    from reconbench.core.tracks import TrackError

    return (HubError, FileFormatError, TrackError, ValueError, FileExistsError)  # ZooError is a ValueError


def register(app: typer.Typer) -> None:
    data = typer.Typer(help="Zoo datasets: prepare hash-pinned splits from the public sources.\n\n"
                            "Example: recon-submit data prepare digits", no_args_is_help=True)
    targets = typer.Typer(help="Zoo target models: train a track's model by its recipe; regenerate the grid.\n\n"
                               "Example: recon-submit targets train cifar10-vgg16-n1000 --device cuda", no_args_is_help=True)
    hub = typer.Typer(help="Publish a trained track to the Hugging Face Hub and pin it in the registry.\n\n"
                           "Example: recon-submit hub publish cifar10-vgg16-n1000 --org reconbench", no_args_is_help=True)
    app.add_typer(data, name="data")
    app.add_typer(targets, name="targets")
    app.add_typer(hub, name="hub")

    @data.command("prepare")
    def prepare(
        dataset: str = typer.Argument(..., help="celeba, cifar10, mnist, digits (offline stand-in); text: sst2, agnews, imdb"),
        source: Optional[Path] = typer.Option(None, help="local copy of the original files (see docs/zoo.md)"),
        revision: Optional[str] = typer.Option(None, help="text datasets: the source repo's commit (default: main, recorded)"),
        out: Optional[Path] = typer.Option(None, help="output folder (default zoo-build/data/DATASET)"),
    ) -> None:
        """Cut the dataset's nested target sets, update/aux/test splits and similar data; write a manifest.

        Example: recon-submit data prepare digits
        """
        from reconbench.modalities import for_dataset

        folder = out or _data_dir(dataset)
        modality = for_dataset(dataset)  # text datasets (sst2, agnews, imdb): parquet from the Hub (docs/zoo.md)
        try:
            manifest = modality.prepare_dataset(dataset, folder, source, revision)
        except _errors() as exc:
            fail(str(exc))
        for split, entry in manifest["splits"].items():
            console.print(escape(f"{split:<18} {entry['count']:>7,} {modality.NAME}s  {entry['sha256']}"))
        console.print(f"wrote {escape(folder)}")

    @targets.command("train")
    def train(
        track: str = typer.Argument(..., help="zoo track id, e.g. cifar10-vgg16-n1000 (see `recon-submit tracks`)"),
        data: Optional[Path] = typer.Option(None, help="prepared data folder (default zoo-build/data/DATASET)"),
        out: Optional[Path] = typer.Option(None, help="output folder (default zoo-build/targets/TRACK)"),
        device: str = typer.Option("cpu", help="cpu, cuda, cuda:1, ..."),
        epochs: Optional[int] = typer.Option(None, help="override the recipe's epochs (smoke runs)"),
        batch_size: Optional[int] = typer.Option(None, help="override the recipe's batch size"),
        lr: Optional[float] = typer.Option(None, help="override the recipe's learning rate"),
        seed: Optional[int] = typer.Option(None, help="override the recipe's seed (default 0)"),
        width_div: Optional[int] = typer.Option(None, help="vgg16 only: divide conv widths (smoke runs)"),
        memorization: int = typer.Option(0, help="models for the memorization estimate (SoK Eq. 2); 0 = skip"),
        init_weights: Optional[Path] = typer.Option(None, help="safetensors to start from (tensors matched by name)"),
        quiet: bool = typer.Option(False, help="no per-epoch log"),
    ) -> None:
        """Train one track's target model; write model.safetensors, config.json and train_log.jsonl.

        Example: recon-submit targets train cifar10-vgg16-n1000 --device cuda
        """
        from reconbench.modalities import for_zoo_track

        modality = for_zoo_track(track)  # a text track: its GPT-2 and gtr-t5 (reconbench.text.finetune)
        echo = None if quiet else lambda e: console.print(json.dumps(e), highlight=False, markup=False, soft_wrap=True)
        try:
            folder = out or _target_dir(track)
            lines = modality.train_target(
                track, data or _data_dir(modality.zoo_dataset(track)), folder, device=device, epochs=epochs,
                batch_size=batch_size, lr=lr, seed=seed, width_div=width_div, memorization=memorization,
                init_weights=init_weights, echo=echo)
        except _errors() as exc:
            fail(str(exc))
        for line in lines:
            console.print(escape(line))

    @targets.command("grid")
    def grid(check: bool = typer.Option(False, help="only check that registry/zoo.json is up to date")) -> None:
        """Regenerate registry/zoo.json from the SoK grid (published entries are kept).

        Example: recon-submit targets grid --check
        """
        from reconbench.zoo.grid import main

        raise typer.Exit(main(["--check"] if check else []))

    @hub.command("publish")
    def publish(
        track: str = typer.Argument(..., help="zoo track id"),
        org: str = typer.Option(..., help="Hub organisation (or user) that receives the repos"),
        model_dir: Optional[Path] = typer.Option(None, help="trained model folder (default zoo-build/targets/TRACK)"),
        data: Optional[Path] = typer.Option(None, help="prepared data folder (default zoo-build/data/DATASET)"),
        registry: Optional[Path] = typer.Option(None, help="registry file to pin the track in (default the packaged zoo.json)"),
    ) -> None:
        """Upload the track's data and model (with cards), then pin revisions and sha256 in the registry.

        Example: recon-submit hub publish cifar10-vgg16-n1000 --org reconbench
        """
        from reconbench.modalities import for_zoo_track

        modality = for_zoo_track(track)
        try:
            entry = modality.publish_track(track, org, model_dir=model_dir or _target_dir(track),
                                           data_dir=data or _data_dir(modality.zoo_dataset(track)), registry=registry)
        except _errors() as exc:
            fail(str(exc))
        src = entry["source"]
        console.print(escape(f"model: {src['model_repo']} @ {src['model_revision']}"))
        console.print(escape(f"data:  {src['data_repo']} @ {src['data_revision']}"))
        console.print(escape(f"pinned '{track}' in {registry or modality.zoo_registry_path()}"))
