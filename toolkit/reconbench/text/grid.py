"""The SoK's text grid (App. B, Tables 9 and 12) and its rows in registry/text_tracks.json.

    SST2, AGNews, IMDB  x  fine-tuning sizes 1,000 / 2,000 / 5,000 / 10,000 / 15,000 / 20,000

Each track has two targets fine-tuned on the same target split: GPT-2 for 20 epochs (Complete)
and sentence-transformers/gtr-t5-base (Vec2Text). A text zoo track id reads `<dataset>-n<size>`,
e.g. `sst2-n1000`. The rows are generated here, never typed by hand:
`python -m reconbench.text.grid` rewrites the grid rows of registry/text_tracks.json (published
rows and rows that are not the grid's, such as `lee-news`, are kept exactly as they are);
`--check` only reports whether the file is up to date (exit 1 if not). No torch, no Hub here.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field

from reconbench.zoo import ZooError

SIZES = (1000, 2000, 5000, 10000, 15000, 20000)  # SoK Tables 9 and 12
# The cells of lee-news: Complete prompts the generator (black- or white-box, no data);
# Vec2Text trains its inverter on aux texts of the same distribution and queries the embedder.
SCENARIOS = ["static/black-box/none", "static/white-box/none", "static/black-box/same"]
AUX_MAX = 10_000  # cap on the aux split (our choice: Vec2Text's inverter needs thousands of texts)
TEST_MAX = 1_000  # cap on the test split (our choice: Complete's target-vs-test comparison)


@dataclass(frozen=True)
class HubFile:
    """A pinned file of a Hub repo; revision/sha256 None = resolved and recorded when first used."""

    repo: str
    path: str
    revision: str | None = None
    sha256: str | None = None


@dataclass(frozen=True)
class TextDatasetSpec:
    """Where a grid dataset comes from: one parquet file for the pool, one for the test split."""

    name: str
    title: str
    repo: str  # the Hugging Face dataset repository
    pool_file: str  # target and aux are cut from this split (parquet, inside `repo`)
    test_file: str  # the held-out split the test texts come from
    column: str  # the text column
    licence: str
    sizes: tuple[int, ...] = SIZES
    aux_max: int = AUX_MAX
    test_max: int = TEST_MAX
    revision: str | None = None  # pinned source commit; None: `main`, resolved and recorded by prepare
    files_sha256: dict[str, str] = field(default_factory=dict)  # pinned parquet sha256 (checked when given)

    @property
    def pool_split(self) -> str:
        return _split_name(self.pool_file)

    @property
    def test_split(self) -> str:
        return _split_name(self.test_file)


def _split_name(path: str) -> str:
    return path.rsplit("/", 1)[-1].split("-", 1)[0]


# The parquet files as the Hub serves them (the repos' own data files, not the parquet-converter branch).
TEXT_DATASETS: dict[str, TextDatasetSpec] = {
    "sst2": TextDatasetSpec(
        "sst2", "SST-2 (Stanford Sentiment Treebank, binary) sentences", "stanfordnlp/sst2",
        "data/train-00000-of-00001.parquet", "data/validation-00000-of-00001.parquet", "sentence",
        "as stated on the stanfordnlp/sst2 dataset card (the test split's labels are hidden; its validation split is the test here)"),
    "agnews": TextDatasetSpec(
        "agnews", "AG News articles (title and description)", "fancyzhx/ag_news",
        "data/train-00000-of-00001.parquet", "data/test-00000-of-00001.parquet", "text",
        "as stated on the fancyzhx/ag_news dataset card (AG's corpus: non-commercial use)"),
    "imdb": TextDatasetSpec(
        "imdb", "IMDB movie reviews", "stanfordnlp/imdb",
        "plain_text/train-00000-of-00001.parquet", "plain_text/test-00000-of-00001.parquet", "text",
        "as stated on the stanfordnlp/imdb dataset card (Maas et al., ACL 2011)"),
}

# The bases the SoK names (App. B). GPT-2's commit and weight hash are the ones the Hub serves for
# openai-community/gpt2 (alias `gpt2`); the training run checks them. gtr-t5-base's commit is
# resolved from `main` and recorded in the model's config and card when the target is trained.
GPT2_BASE = {
    "repo": "openai-community/gpt2",
    "revision": "607a30d783dfa663caf39e06633721c8d4cfcd7e",
    "files": {
        "model.safetensors": "248dfc3911869ec493c76e65bf2fcf7f615828b0254c12b473182f0f81d3a707",
        "config.json": "0daed7749b4f02b8f76240d5444551d7b08712dab4d0adb8239c56ba823bb7b4",
        "tokenizer.json": "8414cab924d8b9b33013f0d221c5862f365ee9be39c5c2bfae8a5a9e970478a6",
    },
}
GTR_BASE = {
    "repo": "sentence-transformers/gtr-t5-base",
    "revision": None,
    "files": {"config.json": None, "model.safetensors": None, "tokenizer.json": None,
              "2_Dense/config.json": None, "2_Dense/model.safetensors": None},
}

# Fine-tuning recipes (reconbench.text.zoo runs them). Where the SoK gives no value, the source of
# the default is named.
GENERATOR_RECIPE = {
    "epochs": 20,  # SoK App. B: "GPT-2 fine-tuned for 20 epochs"
    "lr": 5e-5,  # transformers' TrainingArguments default (AdamW, linear decay, no warmup)
    "batch_size": 8,  # transformers' run_clm.py default per-device batch size
    "max_tokens": 512,  # our choice: covers most IMDB reviews; GPT-2 allows 1024
    "seed": 0,
}
EMBEDDER_RECIPE = {
    # The SoK does not state the embedder's objective: unsupervised SimCSE (Gao et al., EMNLP 2021):
    # each text with itself under two dropout masks as the positive pair, in-batch negatives,
    # cosine similarity / temperature 0.05 (= sentence-transformers' MultipleNegativesRankingLoss
    # with scale 20), one epoch, lr 3e-5, batch 64 (SimCSE's unsupervised settings).
    "objective": "simcse-unsupervised",
    "epochs": 1,
    "lr": 3e-5,
    "batch_size": 64,
    "temperature": 0.05,
    "max_tokens": 128,  # vec2text's default max_seq_length (vec2text/run_args.py)
    "seed": 0,
}

_ID = re.compile(r"(?P<dataset>[a-z0-9]+)-n(?P<size>[0-9]+)")


def get_text_dataset(name: str) -> TextDatasetSpec:
    try:
        return TEXT_DATASETS[name]
    except KeyError:
        raise ZooError(f"unknown text dataset '{name}' (known: {', '.join(TEXT_DATASETS)})") from None


def is_text_dataset(name: str) -> bool:
    return name in TEXT_DATASETS


def text_track_id(dataset: str, size: int) -> str:
    return f"{dataset}-n{size}"


def parse_text_track_id(track_id: str) -> tuple[TextDatasetSpec, int]:
    m = _ID.fullmatch(track_id)
    if not m or m["dataset"] not in TEXT_DATASETS:
        raise ZooError(f"'{track_id}' is not a text zoo track id (<dataset>-n<size>, dataset one of "
                       f"{', '.join(TEXT_DATASETS)}; e.g. sst2-n1000)")
    spec, size = TEXT_DATASETS[m["dataset"]], int(m["size"])
    if size not in spec.sizes:
        raise ZooError(f"track '{track_id}': dataset '{spec.name}' has target sizes {', '.join(map(str, spec.sizes))}")
    return spec, size


def is_text_zoo_track(track_id: str) -> bool:
    try:
        parse_text_track_id(track_id)
    except ZooError:
        return False
    return True


def _pin(base: dict) -> str:
    return base["repo"] + (f"@{base['revision']}" if base["revision"] else " (revision recorded when trained)")


def derivation(spec: TextDatasetSpec) -> str:
    return (f"Texts: column `{spec.column}` of {spec.repo} ({spec.pool_file} for target and aux, {spec.test_file} "
            f"for test), stripped, empty and repeated texts dropped, test texts that also occur in the pool dropped. "
            f"One seeded permutation of the pool: the first {max(spec.sizes):,} are the target block (the target set "
            f"of size n is its first n: nested), the next up to {spec.aux_max:,} are aux; test is a seeded choice of "
            f"up to {spec.test_max:,} texts of the test file. `recon-submit data prepare {spec.name}`.")


def registry_row(spec: TextDatasetSpec, size: int) -> dict:
    """The unpublished row of a grid track (reconbench.text.zoo.publish fills in the pins)."""
    tid = text_track_id(spec.name, size)
    recipe = f"recon-submit data prepare {spec.name} && recon-submit targets train {tid}"
    return {
        "id": tid,
        "title": f"{spec.title}; GPT-2 and GTR-T5 fine-tuned on {size:,} texts",
        "dataset": spec.name,
        "modality": "text",
        "status": "unpublished",
        "train_size": size,
        "split_sizes": {"target": size},
        "generator": {
            "architecture": "gpt2",
            "config": dict(GENERATOR_RECIPE),
            "base": _pin(GPT2_BASE),
            "files": {},
            "fine_tuning": f"GPT-2 (124M) fine-tuned on the target split for {GENERATOR_RECIPE['epochs']} epochs "
                           "(causal language modelling; SoK App. B)",
            "recipe": recipe,
        },
        "embedder": {
            "architecture": "gtr-t5",
            "config": dict(EMBEDDER_RECIPE),
            "base": _pin(GTR_BASE),
            "files": {},
            "fine_tuning": "gtr-t5-base fine-tuned on the target split with the unsupervised SimCSE objective "
                           "(the SoK does not state one)",
            "recipe": recipe,
        },
        "scenarios": list(SCENARIOS),
        "prompt_words": 3,
        "derivation": derivation(spec),
    }


def grid_rows() -> list[dict]:
    return [registry_row(spec, n) for spec in TEXT_DATASETS.values() for n in spec.sizes]


def regenerated(current: dict | None) -> dict:
    """The text registry with the grid's unpublished rows; every other row (lee-news, published
    grid rows) kept as it is, in its place: non-grid rows first, then the grid in grid order."""
    rows = list((current or {}).get("tracks", []))
    grid = {r["id"]: r for r in grid_rows()}
    kept = {r["id"]: r for r in rows if r.get("id") in grid and r.get("status") == "published"}
    others = [r for r in rows if r.get("id") not in grid]
    return {"schema_version": 1, "tracks": others + [kept.get(i) or r for i, r in grid.items()]}


def main(argv: list[str]) -> int:
    from reconbench.text.tracks import TextRegistry, text_registry_path
    from reconbench.zoo.registry_file import regenerate_file

    return regenerate_file(text_registry_path(), regenerated, check="--check" in argv, module="reconbench.text.grid",
                           schema=TextRegistry)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
