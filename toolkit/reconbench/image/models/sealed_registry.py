"""registry/sealed.json and the sealed draws' weights: the maintainers' (CI's) command, run with the board's key.

    python -m reconbench.image.models.sealed_registry --seal-key ../shared/secrets/seal.key [--draws K] [TWIN ...]
    python -m reconbench.image.models.sealed_registry --seal-key ../shared/secrets/seal.key --pin-signers

For each sealed twin (SEALED below: the open track it mirrors) and each draw d < K: the pool of 2n
images (fashion_splits.sealed_pool), the members drawn from the key (core/seal.draw_members), a model
trained on them with the open twin's recipe (fashion_targets: the same architecture, optimiser,
epochs and seeds, one CPU thread), written to data/fashion/sealed/<twin>-d<d>.safetensors, and a row
`<twin>-d<d>` that pins the model, the pool, the commitment and the public key CI's sealed.json
records are signed by (core/seal.record_signer; `--pin-signers` adds it to draws made before). The key
is read from its path and never written anywhere: only the commitments and that public key leave this
process.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

SEASON = "2026-s1"
REVEAL_AFTER = "2027-03-01"  # the season's end: its key is then published (recon-submit seal reveal)
DRAWS = 5  # K, chosen by benchmarks/bench_sealed_draws.py (benchmarks/README.md, "Sealed tracks")


@dataclass(frozen=True)
class Twin:
    group: str  # the sealed twin's name; its draws are <group>-d<i>
    open_twin: str  # the open track whose recipe it follows
    weights: str  # fashion_targets.TARGETS name of that recipe
    update_size: int | None = None  # an update twin: members are the update set, the model before it is public


SEALED = {t.group: t for t in (
    Twin("fashion-n100-sealed", "fashion-n100", "mcnn-n100"),
    Twin("fashion-n500-sealed", "fashion-n500", "mcnn-n500"),
    Twin("fashion-n1000-sealed", "fashion-n1000", "mcnn-n1000"),
    Twin("fashion-split5-n500-sealed", "fashion-split5-n500", "split5-mcnn-n500"),
    Twin("fashion-oddeven-n100-sealed", "fashion-oddeven-n100", "oddeven-mlp-n100"),
    *(Twin(f"fashion-n1000-u{k}-sealed", f"fashion-n1000-u{k}", "mcnn-n1000", update_size=k) for k in (64, 8)),
)}


def weight_file(group: str, draw: int, what: str = "") -> str:
    return f"fashion/sealed/{group}-d{draw}{what}.safetensors"


def update_row(twin: Twin, draw: int, draws: int, key: bytes, out_dir: Path, season: str, reveal_after: str) -> dict:
    """Draw `draw` of an update twin: the members are half of the update pool (fashion_splits.sealed_update_pool);
    the model before the update is the open twin's (public); what the attack observes is computed here with
    the key, exactly as image/dynamic.py computes it from an open track's update set (the gradient of the
    whole update as one batch, and the model after Salem et al.'s fine-tune), and published, pinned by hash."""
    import numpy as np

    from reconbench.core.io import save_arrays, sha256_file
    from reconbench.core.seal import commitment, draw_members, record_signer_public
    from reconbench.core.threads import one_torch_thread
    from reconbench.core.tracks import get_track
    from reconbench.image.data.fashion_splits import sealed_update_pool
    from reconbench.image.dynamic import fine_tune, observation_arrays, observed_gradients
    from reconbench.image.models.registry import save_model
    from reconbench.image.track_files import load_target_model

    opened = get_track(twin.open_twin)
    pool = sealed_update_pool(opened.dataset, twin.update_size)
    inside = draw_members(key, twin.group, draw, pool.labels)
    members = pool.subset(np.flatnonzero(inside))
    before = load_target_model(opened)
    with one_torch_thread():
        gradients = observed_gradients(before, members, batch_size=opened.gradient_batch_size or len(members))
        after = fine_tune(before, members)
    names = {what: weight_file(twin.group, draw, what) for what in ("-gradients", "-updated")}
    for name in names.values():
        (out_dir / name).parent.mkdir(parents=True, exist_ok=True)
    save_arrays(out_dir / names["-gradients"], observation_arrays(gradients),
                metadata={"observation": f"gradients of sealed draw {draw}'s update at {opened.source.model_file}"})
    save_model(after, out_dir / names["-updated"], metadata={"architecture": opened.architecture, "recipe":
               f"{opened.source.model_file} fine-tuned on the members of sealed draw {draw} (image/dynamic.py)"})
    row = opened.model_dump(mode="json", exclude_none=True)
    for gone in ("holdout_set_sha256", "update_holdout_set_sha256", "near_copy", "memorization"):
        row.pop(gone, None)
    row["evaluation_model"]["accuracy"] = {}  # measured on the update set: membership, so not published
    return row | {
        "id": f"{twin.group}-d{draw}",
        "title": f"{opened.title} (sealed: the update drawn from the board's key, draw {draw} of {draws})",
        "update_set_sha256": pool.sha256,
        "recipe": f"python -m reconbench.image.models.sealed_registry {twin.group} (image/dynamic.py's update of "
                  f"{opened.source.model_file} by the draw's members)",
        "seal": {"group": twin.group, "draw": draw, "draws": draws, "open_twin": twin.open_twin, "season": season,
                 "reveal_after": reveal_after, "pool_size": len(pool), "pool_sha256": pool.sha256,
                 "commitment": commitment(key, twin.group, draw, pool.sha256, inside),
                 "record_signer": record_signer_public(key),
                 "observation": {"gradients_file": names["-gradients"],
                                 "gradients_sha256": sha256_file(out_dir / names["-gradients"]),
                                 "updated_model_file": names["-updated"],
                                 "updated_model_sha256": sha256_file(out_dir / names["-updated"])}},
    }


def train_members(weights: str, members, config=None):
    """A model of the `weights` recipe (config: its TrainConfig unless given) trained on `members`."""
    import torch

    from reconbench.core.threads import one_torch_thread
    from reconbench.image.models.embedded import LogisticGDConfig, train_logistic_gd
    from reconbench.image.models.fashion_targets import TARGETS
    from reconbench.image.models.registry import build_model
    from reconbench.image.models.training import train_classifier

    spec = TARGETS[weights]
    config = config or spec.config
    with one_torch_thread():
        torch.manual_seed(config.seed)
        model = build_model(spec.architecture, **spec.arch_kwargs)
        if isinstance(config, LogisticGDConfig):
            return train_logistic_gd(model, members, config)
        return train_classifier(model, members, config)


def draw_row(twin: Twin, draw: int, draws: int, key: bytes, out_dir: Path, config=None,
             season: str = SEASON, reveal_after: str = REVEAL_AFTER) -> dict:
    """Train draw `draw` of `twin` into out_dir and return its registry row (a dict of tracks.json's schema)."""
    if twin.update_size:
        return update_row(twin, draw, draws, key, out_dir, season, reveal_after)
    import numpy as np

    from reconbench.core.io import sha256_file
    from reconbench.core.seal import commitment, draw_members, record_signer_public
    from reconbench.core.tracks import get_track
    from reconbench.image.data.fashion_splits import sealed_pool
    from reconbench.image.models.fashion_targets import RECIPE
    from reconbench.image.models.registry import save_model
    from reconbench.image.models.training import accuracy

    opened = get_track(twin.open_twin)
    pool = sealed_pool(opened.dataset, opened.train_size)
    inside = draw_members(key, twin.group, draw, pool.labels)
    model = train_members(twin.weights, pool.subset(np.flatnonzero(inside)), config)
    name = weight_file(twin.group, draw)
    path = out_dir / name
    path.parent.mkdir(parents=True, exist_ok=True)
    save_model(model, path, metadata={"architecture": opened.architecture,
                                      "recipe": f"{RECIPE} {twin.weights}, on the members of sealed draw {draw}"})
    row = opened.model_dump(mode="json", exclude_none=True)
    for gone in ("holdout_set_sha256", "near_copy", "memorization", "train_accuracy"):
        row.pop(gone, None)
    row["evaluation_model"]["accuracy"] = {}  # measured on target/holdout: membership, so not published
    return row | {
        "id": f"{twin.group}-d{draw}",
        "title": f"{opened.title} (sealed: members drawn from the board's key, draw {draw} of {draws})",
        "source": {"kind": "embedded", "model_file": name},
        "target_model_sha256": sha256_file(path),
        "target_set_sha256": pool.sha256,
        "test_accuracy": round(accuracy(model, get_track_test(opened)), 4),
        "recipe": f"python -m reconbench.image.models.sealed_registry {twin.group} (the {twin.weights} recipe on "
                  f"the draw's members)",
        "seal": {"group": twin.group, "draw": draw, "draws": draws, "open_twin": twin.open_twin, "season": season,
                 "reveal_after": reveal_after, "pool_size": len(pool), "pool_sha256": pool.sha256,
                 "commitment": commitment(key, twin.group, draw, pool.sha256, inside),
                 "record_signer": record_signer_public(key)},
    }


def get_track_test(track):
    from reconbench.image.data.fashion_splits import fashion_splits

    return fashion_splits(track.dataset, track.train_size).test


def registry_file() -> Path:
    from reconbench.core.tracks import SEALED_FILE

    return Path(str(resources.files("reconbench") / "registry" / SEALED_FILE))


def write_registry(rows: list[dict], path: Path | None = None) -> None:
    """Rewrite registry/sealed.json: the given rows replace those of the same id, the others stay."""
    from reconbench.core.io import atomic_path

    path = path or registry_file()
    old = json.loads(path.read_text())["tracks"] if path.is_file() else []
    ids = {r["id"] for r in rows}
    rows = sorted([r for r in old if r["id"] not in ids] + rows, key=lambda r: (r["seal"]["group"], r["seal"]["draw"]))
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps({"schema_version": 1, "tracks": rows}, indent=2) + "\n", encoding="utf-8")


def pin_record_signers(key: bytes, path: Path | None = None) -> list[str]:
    """Pin the record signer of `key` on every draw it opens (draws made before signed records existed);
    the ids pinned. A draw the key does not open keeps what it has."""
    from reconbench.core.seal import SealError, record_signer_public
    from reconbench.core.tracks import get_track
    from reconbench.image.sealed import members

    path = path or registry_file()
    rows = json.loads(path.read_text())["tracks"]
    pinned = []
    for row in rows:
        try:
            members(get_track(row["id"]), key)
        except SealError:
            continue
        row["seal"]["record_signer"] = record_signer_public(key)
        pinned.append(row["id"])
    write_registry(rows, path)
    return pinned


def main(argv: list[str]) -> int:
    from reconbench.core.seal import SealError, read_key
    from reconbench.image.models.fashion_registry import with_near_copy

    args, key_path, draws, groups, pin = iter(argv), None, DRAWS, [], False
    for arg in args:
        if arg == "--pin-signers":
            pin = True
        elif arg == "--seal-key":
            key_path = next(args, None)
        elif arg == "--draws":
            draws = int(next(args, "0"))
        elif arg in SEALED:
            groups.append(arg)
        else:
            print(f"unknown sealed twin '{arg}' (known: {', '.join(SEALED)})", file=sys.stderr)
            return 2
    if not key_path:
        print("--seal-key PATH is required (the board's CI secret; never copied)", file=sys.stderr)
        return 2
    try:
        key = read_key(key_path)
    except SealError as exc:
        print(exc, file=sys.stderr)
        return 2
    if pin:
        pinned = pin_record_signers(key)
        print(f"record signer pinned on {len(pinned)} draws", file=sys.stderr)
        return 0 if pinned else 1
    out = Path(str(resources.files("reconbench") / "data"))
    rows = []
    for group in groups or list(SEALED):
        known = {}
        for d in range(draws):
            row = with_near_copy(draw_row(SEALED[group], d, draws, key, out), known)
            known[row["near_copy"]["pool_sha256"]] = row["near_copy"]  # every draw of a twin has the same public pool
            rows.append(row)
            print(f"{row['id']}: test accuracy {row['test_accuracy']}", file=sys.stderr)
    write_registry(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
