"""Model and dataset cards (README.md with YAML metadata) for the zoo's Hub repos.

The YAML block holds the Hub's own keys (license, datasets, tags, library_name) and one
`reconbench` mapping with the facts a reader or a script needs: dataset, size, variant, accuracy,
memorization (when computed), the pinned data revision and the exact commands that made the files.
Values are written as JSON, which is valid YAML, so no YAML library is needed to write them.
"""

from __future__ import annotations

import json

from reconbench.zoo.datasets import get_dataset

TAGS = ["reconbench", "data-reconstruction", "model-inversion", "privacy-benchmark"]


def _front_matter(fields: dict) -> str:
    return "---\n" + "".join(f"{k}: {json.dumps(v, sort_keys=True)}\n" for k, v in fields.items()) + "---\n"


def _licence_fields(licence_id: str) -> dict:
    return {"license": licence_id} if licence_id != "other" else {"license": "other", "license_name": "celeba-and-ffhq"}


def model_card(config: dict, *, data_repo: str, data_revision: str, prepare_command: str) -> str:
    data = get_dataset(config["dataset"])
    mem = (config.get("memorization") or {}).get("value")
    facts = {
        "track": config["track"], "dataset": config["dataset"], "train_size": config["train_size"],
        "architecture": config["architecture"], "arch_kwargs": config["arch_kwargs"], "variant": config["variant"],
        "train_accuracy": config["train_accuracy"], "test_accuracy": config["test_accuracy"], "memorization": mem,
        "variant_report": config.get("variant_report") or {}, "data_repo": data_repo, "data_revision": data_revision,
        "model_sha256": config["model"]["sha256"], "recipe": [prepare_command, config["command"]],
        "licence": data.licence,
    }
    meta = {**_licence_fields(data.licence_id), "library_name": "pytorch", "tags": TAGS + [config["dataset"]],
            "datasets": [data_repo], "reconbench": facts}
    variant = f" (variant: {config['variant']})" if config["variant"] else ""
    rows = [
        ("dataset", f"{data.title}, `{data_repo}` @ `{data_revision[:12]}`"),
        ("training set", f"{config['train_size']:,} images (`{config['data']['target_split']}`)"),
        ("architecture", f"`{config['architecture']}` {json.dumps(config['arch_kwargs'], sort_keys=True)}"),
        ("accuracy (train / test)", f"{config['train_accuracy']:.4f} / {config['test_accuracy']:.4f}"),
        ("memorization (SoK Eq. 2)", "not computed" if mem is None else f"{mem:.4f}"),
        ("model sha256", f"`{config['model']['sha256']}`"),
    ]
    rows += [(f"variant: {k}", f"`{json.dumps(v, sort_keys=True)}`") for k, v in (config.get("variant_report") or {}).items()]
    table = "| | |\n|---|---|\n" + "".join(f"| {k} | {v} |\n" for k, v in rows)
    return (
        _front_matter(meta)
        + f"\n# {config['track']}{variant}\n\n"
        "A **target model of ReconBench**, the benchmark of data reconstruction attacks built on the SoK of Wen, "
        "Liu, Backes and Zhang (USENIX Security 2025). It was trained to be attacked: its training set is the "
        "secret that attacks try to reconstruct. Do not use it for anything else.\n\n"
        + table
        + "\n## How it was made\n\n```\n" + prepare_command + "\n" + config["command"] + "\n```\n\n"
        f"Recipe (`config.json`): `{json.dumps(config['recipe'], sort_keys=True)}`\n\n"
        "Weights are `model.safetensors` (inputs: pixels in [0, 1], N x C x H x W). Load them with "
        f"`reconbench.models.load_model({config['architecture']!r}, path, **arch_kwargs)`.\n\n"
        f"## Licence of the training data\n\n{data.licence}. The weights are derived from these images and "
        "carry their terms.\n"
    )


def dataset_card(manifest: dict, *, repo_id: str) -> str:
    meta = {**_licence_fields(manifest["licence_id"]), "tags": TAGS + [manifest["dataset"]],
            "reconbench": {"dataset": manifest["dataset"], "sizes": manifest["sizes"], "split_seed": manifest["split_seed"],
                           "similar": manifest["similar"], "recipe": manifest["recipe"], "licence": manifest["licence"]}}
    rows = "".join(f"| `{e['file']}` | {e['count']:,} | {e['classes']} | `{e['sha256']}` |\n"
                   for _, e in sorted(manifest["splits"].items()))
    return (
        _front_matter(meta)
        + f"\n# {repo_id}: {manifest['title']}\n\n"
        "The splits of one ReconBench dataset, cut deterministically from the public source by "
        f"`{manifest['recipe']}` (see `manifest.json`). Target sets of the sizes {manifest['sizes']} are nested "
        "and class-balanced; every split is disjoint from every other. Each file holds `images` (uint8, "
        "N x C x H x W), `labels` (int64) and `index` (position in the source).\n\n"
        "| file | images | classes | sha256 |\n|---|---|---|---|\n" + rows
        + f"\n## Licence\n\n{manifest['licence']}.\n"
    )
