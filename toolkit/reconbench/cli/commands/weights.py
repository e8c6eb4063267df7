"""`recon-submit weights fetch | status`: the pinned backbones of FID, PRDC and LPIPS."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import typer

from reconbench.core.console import console, fail, rich_task


def weights_dir_option():
    return typer.Option(None, help="folder holding pt_inception-2015-12-05-6726825d.pth (FID, PRDC) and "
                        "alexnet-owt-7be5be79.pth (LPIPS), or their .safetensors conversions; the cache filled by "
                        "`recon-submit weights fetch` is always searched first")


def offline_option():
    return typer.Option(False, "--offline", help="download nothing, not even missing backbone weights "
                        "(same as HF_HUB_OFFLINE=1)")


def apply_offline(offline: bool) -> None:
    if offline:  # read by reconbench.image.metrics.weights.downloads_allowed and reconbench.core.hub
        os.environ["HF_HUB_OFFLINE"] = "1"


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Backbone weights of FID/PRDC (InceptionV3) and LPIPS (AlexNet): fetch, status.\n\n"
                             "Example: recon-submit weights status",
                        no_args_is_help=True)
    app.add_typer(group, name="weights")
    group.command("fetch")(fetch)
    group.command("status")(status)


# Where the official addresses cannot be reached: the two other ways to the same checked files
OFFLINE_WAYS = (
    "without the official addresses: serve the two official files from a server you can reach and pass "
    "--mirror URL (or set RECONBENCH_WEIGHTS_MIRROR); the same size and sha256 checks apply",
    "or copy the official files (or their conversions) into a folder and pass --weights-dir DIR to "
    "evaluate, score and validate; `recon-submit weights status` lists the file names",
)


def fetch(
    mirror: Optional[str] = typer.Option(None, help="base URL serving the files under their official names "
                                         "(default: $RECONBENCH_WEIGHTS_MIRROR, else the official addresses)"),
    quiet: bool = typer.Option(False, help="no progress bar"),
) -> None:
    """Download the official backbone files, check size and sha256, convert them to safetensors in the cache.

    Example: recon-submit weights fetch
    """
    from reconbench.image.metrics.download import WeightsError, fetch as fetch_one, source_url
    from reconbench.image.metrics.weights import all_pinned, downloads_allowed

    if not downloads_allowed():
        fail("HF_HUB_OFFLINE=1 is set, so nothing is downloaded; unset it to fetch the weights (from the official "
             "addresses, or from your mirror: --mirror URL)", options=OFFLINE_WAYS[1:])
    for spec in all_pinned():
        try:
            path, downloaded = fetch_one(spec, mirror=mirror, progress=None if quiet else rich_task)
        except WeightsError as exc:
            fail(str(exc), options=OFFLINE_WAYS)
        if downloaded:
            console.print(f"{spec.key} ({spec.used_by}): fetched {source_url(spec, mirror)}, sha256 {spec.sha256} "
                          f"checked, converted to {path}", highlight=False)
        else:
            console.print(f"{spec.key} ({spec.used_by}): already in the cache: {path}", highlight=False)


def status(
    cache_key: bool = typer.Option(False, "--cache-key", help="print only a key naming the pinned files (for CI caches)"),
) -> None:
    """Say which backbone files are present, where, and with which digest.

    Example: recon-submit weights status
    """
    from reconbench.image.metrics.weights import FETCH_COMMAND, all_pinned, load_weights, weights_cache_dir
    from reconbench.image.metrics.weights import cache_key as key

    if cache_key:
        print(key())
        return
    console.print(f"cache: {weights_cache_dir()}", highlight=False)
    missing = 0
    for spec in all_pinned():
        loaded = load_weights(spec)
        if loaded is None:
            missing += 1
            console.print(f"{spec.key} ({spec.used_by}): missing ({spec.filename}, {spec.size:,} bytes, "
                          f"sha256 {spec.sha256})", highlight=False)
        else:
            console.print(f"{spec.key} ({spec.used_by}): present: {loaded.path} (official file sha256 "
                          f"{loaded.sha256})", highlight=False)
    if missing:
        console.print(f"fetch the missing files with `{FETCH_COMMAND}` (offline: put the official files in a "
                      "folder served by RECONBENCH_WEIGHTS_MIRROR, or pass --weights-dir)", highlight=False)
