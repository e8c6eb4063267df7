"""Model and dataset cards (README.md with YAML metadata) for the text zoo's Hub repos.

Same shape as the image zoo's cards (zoo/cards.py): the Hub's own keys plus one `reconbench`
mapping with what a reader or a script needs; values written as JSON (valid YAML).
"""

from __future__ import annotations

import json

from reconbench.zoo.cards import TAGS, _front_matter


def text_model_card(config: dict, *, data_repo: str, data_revision: str, prepare: str) -> str:
    gen, emb = config["generator"], config["embedder"]
    facts = {"track": config["track"], "dataset": config["dataset"], "train_size": config["train_size"],
             "data_repo": data_repo, "data_revision": data_revision, "recipe": [prepare, config["command"]],
             "generator": {k: gen[k] for k in ("base", "recipe", "measured", "files")},
             "embedder": {k: emb[k] for k in ("base", "recipe", "measured", "files")}}
    meta = {"license": "other", "library_name": "transformers", "tags": TAGS + ["text", config["dataset"]],
            "datasets": [data_repo], "reconbench": facts}
    rows = [("dataset", f"`{data_repo}` @ `{data_revision[:12]}`, {config['train_size']:,} target texts"),
            ("generator", f"GPT-2 from `{gen['base']['repo']}@{gen['base']['revision']}`, "
                          f"recipe `{json.dumps(gen['recipe'], sort_keys=True)}`"),
            ("embedder", f"gtr-t5 from `{emb['base']['repo']}@{emb['base']['revision']}`, "
                         f"recipe `{json.dumps(emb['recipe'], sort_keys=True)}`")]
    rows += [(f"{role}: {k}", f"{v:.4f}") for role in ("generator", "embedder") for k, v in config[role]["measured"].items()]
    table = "| | |\n|---|---|\n" + "".join(f"| {k} | {v} |\n" for k, v in rows)
    return (_front_matter(meta) + f"\n# {config['track']}\n\n"
            "Two **target models of ReconBench** (the SoK of Wen, Liu, Backes and Zhang, USENIX Security 2025, "
            "App. B), fine-tuned on the same secret target texts: `generator/` (GPT-2, attacked by Complete) and "
            "`embedder/` (gtr-t5: T5 encoder, mean pooling, dense projection, L2 norm; attacked by Vec2Text). "
            "They were trained to be attacked; do not use them for anything else.\n\n" + table
            + "\n## How they were made\n\n```\n" + prepare + "\n" + config["command"] + "\n```\n\n"
            "Load them with `reconbench.text.gpt2.load_gpt2_folder` and `reconbench.text.gtr.load_gtr_folder` "
            "(safetensors only).\n\n## Licence of the training data\n\nThe weights are derived from the texts of "
            f"`{data_repo}` and carry their terms.\n")


def text_dataset_card(manifest: dict, *, repo_id: str) -> str:
    src = manifest["source"]
    meta = {"license": "other", "tags": TAGS + ["text", manifest["dataset"]],
            "reconbench": {"dataset": manifest["dataset"], "sizes": manifest["sizes"], "split_seed": manifest["split_seed"],
                           "source": src, "column": manifest["column"], "recipe": manifest["recipe"]}}
    rows = "".join(f"| `{e['file']}` | {e['count']:,} | `{e['sha256']}` |\n" for _, e in sorted(manifest["splits"].items()))
    return (_front_matter(meta) + f"\n# {repo_id}: {manifest['title']}\n\n"
            + f"The splits of one ReconBench text dataset, cut deterministically from column `{manifest['column']}` of "
            + (f"`{src['repo']}` @ `{src['revision']}`" if src["revision"] else f"a local copy of `{src['repo']}`")
            + f" by `{manifest['recipe']}` (see `manifest.json`; it lists the source files' sha256). Target sets of "
            f"the sizes {manifest['sizes']} are nested; target, aux and test share no text. Each file is JSON Lines, "
            "one `{\"id\", \"text\"}` object per line.\n\n| file | texts | sha256 |\n|---|---|---|\n" + rows
            + f"\n## Licence\n\n{manifest['licence']}.\n")
