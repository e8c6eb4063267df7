"""Target-model zoo commands (maintainers): `data prepare`, `targets train`, `targets grid`,
`hub publish`. Logic: reconbench.zoo; the recipe for the whole zoo is in docs/zoo.md."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from reconbench.console import console, escape, fail

WORK = Path("zoo-build")  # default working folder: zoo-build/data/<dataset>/, zoo-build/targets/<track>/


def _data_dir(dataset: str) -> Path:
    return WORK / "data" / dataset


def _target_dir(track: str) -> Path:
    return WORK / "targets" / track


def _errors():
    from reconbench.hub import HubError
    from reconbench.io import FileFormatError
    from reconbench.tracks import TrackError

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
        from reconbench.text.grid import is_text_dataset
        from reconbench.text.zoo import prepare_text_dataset
        from reconbench.zoo.prepare import prepare_dataset

        folder = out or _data_dir(dataset)
        text = is_text_dataset(dataset)  # sst2, agnews, imdb: parquet from the Hub (docs/zoo.md, text section)
        try:
            manifest = prepare_text_dataset(dataset, folder, source, revision=revision) if text else \
                prepare_dataset(dataset, folder, source)
        except _errors() as exc:
            fail(str(exc))
        for split, entry in manifest["splits"].items():
            console.print(escape(f"{split:<18} {entry['count']:>7,} {'texts' if text else 'images'}  {entry['sha256']}"))
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
        from reconbench.text.grid import is_text_zoo_track
        from reconbench.zoo.grid import parse_track_id
        from reconbench.zoo.targets import Overrides, train_track

        if is_text_zoo_track(track):  # GPT-2 and gtr-t5 of a text track (reconbench.text.finetune)
            if width_div or memorization or init_weights:
                fail(f"{track}: --width-div, --memorization and --init-weights are for image tracks only")
            return _train_text(track, data, out, device, epochs, batch_size, lr, seed, quiet)
        try:
            spec = parse_track_id(track)
            config = train_track(
                track, data or _data_dir(spec.dataset), out or _target_dir(track),
                overrides=Overrides(epochs=epochs, batch_size=batch_size, lr=lr, seed=seed, width_div=width_div),
                device=device, memorization_models=memorization, init_weights=init_weights,
                echo=None if quiet else lambda e: console.print(json.dumps(e), highlight=False, markup=False, soft_wrap=True))
        except _errors() as exc:
            fail(str(exc))
        console.print(escape(f"{track}: train accuracy {config['train_accuracy']:.4f}, test accuracy {config['test_accuracy']:.4f}"
                             + (f", variant {config['variant_report']}" if config["variant_report"] else "")))
        console.print(f"wrote {escape(out or _target_dir(track))} (model sha256 {config['model']['sha256']})")

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
        from reconbench.text.grid import is_text_zoo_track, parse_text_track_id
        from reconbench.text.tracks import text_registry_path
        from reconbench.text.publish import publish_text_track
        from reconbench.zoo.grid import parse_track_id, zoo_registry_path
        from reconbench.zoo.publish import publish_track

        text = is_text_zoo_track(track)
        try:
            dataset = parse_text_track_id(track)[0].name if text else parse_track_id(track).dataset
            entry = (publish_text_track if text else publish_track)(
                track, org, model_dir=model_dir or _target_dir(track), data_dir=data or _data_dir(dataset),
                registry=registry)
        except _errors() as exc:
            fail(str(exc))
        src = entry["source"]
        console.print(escape(f"model: {src['model_repo']} @ {src['model_revision']}"))
        console.print(escape(f"data:  {src['data_repo']} @ {src['data_revision']}"))
        console.print(escape(f"pinned '{track}' in {registry or (text_registry_path() if text else zoo_registry_path())}"))


def _train_text(track, data, out, device, epochs, batch_size, lr, seed, quiet) -> None:
    from reconbench.text.finetune import TextOverrides, train_text_track
    from reconbench.text.grid import parse_text_track_id

    try:
        config = train_text_track(
            track, data or _data_dir(parse_text_track_id(track)[0].name), out or _target_dir(track),
            overrides=TextOverrides(epochs=epochs, batch_size=batch_size, lr=lr, seed=seed), device=device,
            echo=None if quiet else lambda e: console.print(json.dumps(e), highlight=False, markup=False))
    except _errors() as exc:
        fail(str(exc))
    for role in ("generator", "embedder"):
        console.print(escape(f"{track} {role}: {json.dumps(config[role]['measured'], sort_keys=True)}"))
    console.print(f"wrote {escape(out or _target_dir(track))}")
