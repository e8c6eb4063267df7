"""The end of a season: publish its key, and let anyone check what the board published with it.

    recon-submit seal reveal --seal-key KEY --out reveal.json   (maintainers, at `reveal_after`)
    recon-submit seal verify reveal.json [--root submissions]   (anyone, afterwards)

`reveal` first opens every commitment of the season with the key (a wrong key reveals nothing), then
writes the key with the commitments it opens. `verify` reads such a file, opens every sealed draw of
its season in the registry, and recomputes every sealed entry's numbers from its reconstructions
(image/sealed.record), comparing them with the sealed.json the board published; on an update twin it
also recomputes each draw's published observation from the members (image/sealed_scores.observation_matches).

A v2 season (2026-s2 on) is revealed by its SEASON key (core/seal.season_key of the board's key), never the
board's key itself, from which every season's key derives: `reveal` takes the board's key, checks that the
derived season key opens every commitment, and publishes only the season key. `verify` then opens every
commitment with it, decrypts every encrypted weight file in memory and checks its plaintext hash against the
registry (image/sealed.open_weights), and recomputes each update twin's observation from the members. The
board's sealed run records (core/sealed_runs.py) are recomputed by the `hooks` the caller hands in: each is
called as hook(season_key, season, root, tracks) and returns more Verified lines.

Season 2026-s1 (v1) was sealed with the board's key itself, so its reveal publishes each draw's seed and nonce
(core/seal.DrawOpenings), never the key: they open its commitments, and `verify` recomputes as before.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from reconbench.core.seal import SCHEME, SealError
from reconbench.core.tracks import TrackError, all_tracks


def sealed_tracks(season: str | None = None) -> list:
    return [t for t in all_tracks() if t.seal is not None and (season is None or t.seal.season == season)]


def is_v2(season: str) -> bool:
    tracks = sealed_tracks(season)
    return bool(tracks) and all(t.seal.scheme == "v2" for t in tracks)


def open_season(key: bytes, season: str) -> dict[str, str]:
    """track id -> commitment, for every draw of the season, after the key has opened each one (v2: the key is
    the season's, or the board's from which it derives)."""
    from reconbench.image.sealed import members

    tracks = sealed_tracks(season)
    if not tracks:
        raise SealError(f"no sealed track of season '{season}' in the registry")
    for track in tracks:
        members(track, key)  # raises SealError when the key does not open the commitment
    return {t.id: t.seal.commitment for t in tracks}


def reveal(key: bytes, season: str, out: Path) -> dict:
    """Write the reveal file of `season` from the board's key, which is never itself published: a v2 season
    publishes its season key (core/seal.season_key); a v1 season, sealed with the board's key directly,
    publishes each draw's seed and nonce (core/seal.DrawOpenings), which open its commitments and nothing else."""
    from reconbench.core.io import atomic_path
    from reconbench.core.seal import SCHEME_V2, DrawOpenings, season_key

    if is_v2(season):
        published = season_key(key, season)
        document = {"scheme": SCHEME_V2, "season": season, "key": published.hex(),
                    "commitments": open_season(published, season)}
    else:
        commitments = open_season(key, season)
        openings = DrawOpenings.of(key, [(t.seal.group, t.seal.draw) for t in sealed_tracks(season)])
        document = {"scheme": SCHEME, "season": season, "commitments": commitments,
                    "openings": {name: {"seed": seed.hex(), "nonce": nonce.hex()}
                                 for name, (seed, nonce) in sorted(openings.draws.items())}}
    with atomic_path(out) as tmp:
        tmp.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return document


def read_reveal(path: Path):
    """(what opens the season: its key, or a v1 season's DrawOpenings; the season)."""
    from reconbench.core.seal import DrawOpenings

    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
        if "openings" in document:
            return DrawOpenings({name: (bytes.fromhex(o["seed"]), bytes.fromhex(o["nonce"]))
                                 for name, o in document["openings"].items()}), str(document["season"])
        return bytes.fromhex(document["key"]), str(document["season"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SealError(f"{path}: not a reveal file written by `recon-submit seal reveal` ({type(exc).__name__})") from None


@dataclass(frozen=True)
class Verified:
    entry: str
    ok: bool
    message: str


def verify(key: bytes, season: str, root: Path, hooks=(), runs_out: Path | None = None) -> tuple[dict[str, str], list[Verified]]:
    """Open the season's commitments, then recompute every published sealed.json under `root` (v1), decrypt and
    check every encrypted file (v2), recompute every update twin's observation, and run `hooks` (the board's
    sealed run records: hook(key, season, root, tracks) -> list[Verified]); with `runs_out` (the board's output of
    its sealed runs, published after the reveal), recompute every run record of the season from it (verify_runs)."""
    from reconbench.core.io import load_arrays
    from reconbench.core.sealed_records import unsigned
    from reconbench.core.sealed_weights import opening_season
    from reconbench.core.signing import canonical
    from reconbench.image import sealed_scores as sealed
    from reconbench.image.results import parse_result_json
    from reconbench.image.sealed import open_weights
    from reconbench.submissions.layout import RECONSTRUCTIONS_FILE, RESULT_FILE, SEALED_FILE

    import hashlib

    opened = open_season(key, season)
    tracks = {t.id: t for t in sealed_tracks(season)}
    out = []
    with opening_season(season, key):  # v2 draws open with the revealed season key alone
        for path in sorted(Path(root).glob(f"*/*/{SEALED_FILE}")):
            published = json.loads(path.read_text(encoding="utf-8"))
            if published.get("track") not in tracks:
                continue
            result = parse_result_json(path.parent / RESULT_FILE)
            arrays = load_arrays(path.parent / RECONSTRUCTIONS_FILE)
            payload_sha = hashlib.sha256(canonical(result.payload.model_dump(mode="json"))).hexdigest()
            fresh = sealed.record(tracks[published["track"]], key, result.payload.entry_id, payload_sha,
                                  arrays["images"], arrays["labels"])
            ok = sealed.same_numbers(unsigned(published), fresh)
            out.append(Verified(str(path.parent), ok, "recomputed: equal" if ok else "recomputed: DIFFERS from sealed.json"))
        for track in tracks.values():  # a v2 draw's encrypted files: each opens and is the plaintext the row pins
            for role in sorted(track.seal.files):
                try:
                    open_weights(track, role, key)
                    out.append(Verified(f"{track.id} {role}", True, "decrypted: the plaintext's sha256 is the registry's"))
                except (SealError, TrackError) as exc:
                    out.append(Verified(f"{track.id} {role}", False, f"does not decrypt to the pinned file: {exc}"))
        for track in tracks.values():  # an update twin's published observation: the update of the committed members
            if track.seal.observation is not None or {"gradients", "updated_model"} <= set(track.seal.files):
                try:
                    ok = sealed.observation_matches(track, key)
                except (SealError, TrackError):
                    ok = False
                out.append(Verified(f"{track.id} observation", ok, "recomputed from the members: equal" if ok else
                                    "recomputed from the members: DIFFERS from the published gradient or updated model"))
        for hook in hooks:
            out.extend(hook(key, season, Path(root), dict(tracks)))
        if runs_out is not None:
            out += verify_runs(key, season, root, Path(runs_out))
    return opened, out


def verify_runs(key: bytes, season: str, root: Path, runs_out: Path) -> list[Verified]:
    """Every run record of the season (core/sealed_runs) recomputed from the board's output of that run: each
    scored draw's reconstructions file must be the one the record's output_mac names, and its membership gap and
    extraction count, recomputed with the revealed key and rounded as the board rounds them, the record's."""
    from reconbench.core.io import load_arrays
    from reconbench.core.sealed_run_verdict import published
    from reconbench.core.sealed_runs import read_runs
    from reconbench.core.tracks import get_track
    from reconbench.image import sealed_scores as sealed
    from reconbench.image.results import RECONSTRUCTIONS_FILE
    from reconbench.submissions.sealed_run import output_mac

    import hmac

    out = []
    for record in read_runs(root):
        if record.season != season:
            continue
        name = f"{record.season}/{record.team}/{record.run}"
        problems = []
        for draw in record.draws:
            if draw.status != "scored":
                continue
            file = Path(runs_out) / record.season / record.team / record.run / draw.track / RECONSTRUCTIONS_FILE
            if not file.is_file():
                problems.append(f"{draw.track}: no {RECONSTRUCTIONS_FILE} in the run's output")
                continue
            if not hmac.compare_digest(output_mac(key, draw.track, file), str(draw.output_mac)):
                problems.append(f"{draw.track}: the output is not the one the record was scored on (output_mac)")
                continue
            arrays = load_arrays(file)
            fresh = published(sealed.sealed_numbers(get_track(draw.track), key, arrays["images"], arrays["labels"]))
            if not (sealed.same_numbers(fresh["membership"], draw.membership, 1e-2)
                    and sealed.same_numbers(fresh["extraction"], draw.extraction, 1e-2)):
                problems.append(f"{draw.track}: recomputed numbers DIFFER from the record")
        ok = not problems
        out.append(Verified(f"sealed run {name}", ok, "recomputed from the run's output: equal" if ok else "; ".join(problems)))
    return out
