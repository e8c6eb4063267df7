"""registry/sealed.json and the sealed draws' weights: the maintainers' (CI's) command, run with the board's key.

    python -m reconbench.image.models.sealed_registry --seal-key ../shared/secrets/seal.key [--draws K] [TWIN ...]
    python -m reconbench.image.models.sealed_registry --seal-key ../shared/secrets/seal.key --pin-signers
    python -m reconbench.image.models.sealed_registry --seal-key ../shared/secrets/seal.key --season 2026-s2 [TWIN ...]

Season 2026-s2 (scheme v2, issue 43; `draw_row_v2`): the twins are `<twin>-s2` (fashion-n100-sealed-s2-d0 …);
each draw's pool is drawn from the whole sealed block with the season's key (core/seal.season_key of the
board's key), and its weight files are written only encrypted (data/fashion/sealed/<id>.<role>.sealed,
core/sealed_weights.py): the plaintext never enters the package.

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


# --- Scheme v2 (season 2026-s2 on, issue 43): pools drawn from the whole block, weights encrypted ------------

SEASON_V2 = "2026-s2"
REVEAL_AFTER_V2 = "2027-09-01"


def season_group(twin: Twin, season: str) -> str:
    """The twin's group id in `season`: 2026-s1 kept the bare names, later seasons add their suffix
    (fashion-n100-sealed-s2)."""
    return twin.group if season == SEASON else f"{twin.group}-{season.rsplit('-', 1)[-1]}"


def sealed_name(track_id: str, role: str) -> str:
    """A v2 draw's encrypted file, inside the package's data folder."""
    return f"fashion/sealed/{track_id}.{role}.sealed"


def per_class_counts(twin: Twin) -> dict[int, int]:
    """Members per class: the open twin's target set's class counts (its update set's on an update twin), so a
    draw's model trains on the same class balance as its open twin's."""
    import numpy as np

    from reconbench.core.tracks import get_track
    from reconbench.image.data.fashion_splits import fashion_splits

    opened = get_track(twin.open_twin)
    splits = fashion_splits(opened.dataset, opened.train_size, twin.update_size)
    labels = (splits.update if twin.update_size else splits.target).labels
    counts = np.bincount(labels)
    return {int(c): int(n) for c, n in enumerate(counts) if n}


def _seal_out(plain_path: Path, out_dir: Path, track_id: str, role: str, key: bytes, group: str, draw: int) -> dict:
    """Encrypt one plaintext file into out_dir (core/sealed_weights), and its registry entry (SealedFile)."""
    from reconbench.core.io import sha256_file
    from reconbench.core.seal import weights_key
    from reconbench.core.sealed_weights import label, seal_file

    name = sealed_name(track_id, role)
    seal_file(plain_path, out_dir / name, weights_key(key, group, draw), label(track_id, role))
    return {"file": name, "sha256": sha256_file(out_dir / name), "plain_sha256": sha256_file(plain_path)}


def draw_row_v2(twin: Twin, draw: int, draws: int, master: bytes, out_dir: Path, config=None,
                season: str = SEASON_V2, reveal_after: str = REVEAL_AFTER_V2) -> dict:
    """Train draw `draw` of `twin` in a v2 season and return its registry row; only encrypted files are written
    into out_dir (the plaintext lives in a private temporary folder that is removed, and in memory).

    The pool: per class, the open twin's counts of members and as many non-members, drawn from the whole sealed
    block with the season's key (core/seal.block_draw). A static twin's model trains on the members with the
    open twin's recipe; an update twin's observation (gradients of the members at the open twin's model, and the
    model after image/dynamic.py's fine-tune on them) is computed from the members. Both are encrypted under
    core/seal.weights_key of the season key, labelled "<track id>/<role>"."""
    import tempfile

    import numpy as np

    from reconbench.core.io import save_arrays
    from reconbench.core.seal import block_draw, commitment_v2, record_signer_public, season_key
    from reconbench.core.threads import one_torch_thread
    from reconbench.core.tracks import get_track
    from reconbench.image.data.fashion_splits import sealed_block
    from reconbench.image.models.fashion_targets import RECIPE
    from reconbench.image.models.registry import save_model
    from reconbench.image.models.training import accuracy

    key = season_key(master, season)
    group = season_group(twin, season)
    track_id = f"{group}-d{draw}"
    opened = get_track(twin.open_twin)
    block = sealed_block(opened.dataset)
    per_class = per_class_counts(twin)
    indices, inside = block_draw(key, group, draw, block.labels, per_class)
    pool = block.subset(indices)
    members = pool.subset(np.flatnonzero(inside))  # the order image/sealed.member_set gives
    row = opened.model_dump(mode="json", exclude_none=True)
    for gone in ("holdout_set_sha256", "update_holdout_set_sha256", "target_set_sha256", "update_set_sha256",
                 "near_copy", "memorization", "train_accuracy"):
        row.pop(gone, None)
    row["evaluation_model"]["accuracy"] = {}  # measured on target/holdout: membership, so not published
    files: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="reconbench-seal-") as private:
        plain = Path(private)
        if twin.update_size:
            from reconbench.image.dynamic import fine_tune, observation_arrays, observed_gradients
            from reconbench.image.track_files import load_target_model

            before = load_target_model(opened)
            with one_torch_thread():
                gradients = observed_gradients(before, members, batch_size=opened.gradient_batch_size or len(members))
                after = fine_tune(before, members)
            save_arrays(plain / "gradients", observation_arrays(gradients),
                        metadata={"observation": f"gradients of sealed draw {track_id}'s update at {opened.source.model_file}"})
            save_model(after, plain / "updated_model", metadata={"architecture": opened.architecture, "recipe":
                       f"{opened.source.model_file} fine-tuned on the members of sealed draw {track_id} (image/dynamic.py)"})
            for role in ("gradients", "updated_model"):
                files[role] = _seal_out(plain / role, out_dir, track_id, role, key, group, draw)
            recipe = (f"python -m reconbench.image.models.sealed_registry --season {season} {twin.group} "
                      f"(image/dynamic.py's update of {opened.source.model_file} by the draw's members)")
        else:
            model = train_members(twin.weights, members, config)
            save_model(model, plain / "model", metadata={"architecture": opened.architecture,
                                                         "recipe": f"{RECIPE} {twin.weights}, on the members of sealed draw {track_id}"})
            files["model"] = _seal_out(plain / "model", out_dir, track_id, "model", key, group, draw)
            row.pop("source", None)  # no plaintext file: the model is opened in memory in the board's run
            row["target_model_sha256"] = files["model"]["plain_sha256"]
            row["test_accuracy"] = round(accuracy(model, get_track_test(opened)), 4)
            recipe = (f"python -m reconbench.image.models.sealed_registry --season {season} {twin.group} "
                      f"(the {twin.weights} recipe on the draw's members)")
    return row | {
        "id": track_id,
        "title": f"{opened.title} (sealed, season {season}: pool and members drawn from the board's key, draw "
                 f"{draw} of {draws}; the board runs attacks on it)",
        "recipe": recipe,
        "seal": {"scheme": "v2", "group": group, "draw": draw, "draws": draws, "open_twin": twin.open_twin,
                 "season": season, "reveal_after": reveal_after, "pool_size": len(pool),
                 "commitment": commitment_v2(key, group, draw, block.sha256, indices, inside),
                 "record_signer": record_signer_public(key), "block_sha256": block.sha256,
                 "per_class": {str(c): n for c, n in per_class.items()}, "files": files},
    }


def seasons_file() -> Path:
    from reconbench.core.seasons import SEASONS_FILE

    return Path(str(resources.files("reconbench") / "registry" / SEASONS_FILE))


def add_season(season: str, reveal_after: str, path: Path | None = None) -> None:
    """Add (or keep) a sealed v2 season in registry/seasons.json."""
    from reconbench.core.io import atomic_path

    path = path or seasons_file()
    document = json.loads(path.read_text(encoding="utf-8"))
    entry = {"id": season, "scheme": "v2", "status": "sealed", "reveal_after": reveal_after,
             "why": "its draws' pools are drawn from the whole sealed block and their weights ship only encrypted: "
                    "the board runs entries on them (`recon-submit seal run`) until the season key is revealed"}
    document["seasons"] = [s for s in document["seasons"] if s["id"] != season] + [entry]
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


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

    args, key_path, draws, groups, pin, season = iter(argv), None, DRAWS, [], False, SEASON
    for arg in args:
        if arg == "--pin-signers":
            pin = True
        elif arg == "--seal-key":
            key_path = next(args, None)
        elif arg == "--season":
            season = next(args, "")
            if season not in (SEASON, SEASON_V2):
                print(f"--season {season}: seal {SEASON} (v1, burned) or {SEASON_V2} (v2)", file=sys.stderr)
                return 2
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
    if season == SEASON_V2:
        for group in groups or list(SEALED):
            known = {}
            for d in range(draws):
                row = with_near_copy(draw_row_v2(SEALED[group], d, draws, key, out), known)
                known[row["near_copy"]["pool_sha256"]] = row["near_copy"]  # the public pool: the same for every draw
                rows.append(row)
                write_registry([row])  # one row at a time: a long run that stops keeps what it sealed
                print(f"{row['id']}: sealed", file=sys.stderr)
        add_season(SEASON_V2, REVEAL_AFTER_V2)
        return 0
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
