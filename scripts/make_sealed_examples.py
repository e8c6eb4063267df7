"""Example entries on a sealed twin: each attack run on every draw, submitted as team `sealed-examples`,
then validated with the board's seal key, which writes each entry's sealed.json (a maintainer's step,
as CI's: it reads the key by its path and writes nothing derived from it but the published numbers).

    .venv/bin/python scripts/make_sealed_examples.py --seal-key ../shared/secrets/seal.key [--group fashion-n100-sealed]

The team's private key lives outside the repository (~/.config/reconbench/keys/sealed-examples.pem,
created on first use). An attack already on a draw is skipped.
"""

from __future__ import annotations

import argparse
import shlex
import tempfile
from pathlib import Path

from reconbench.cli import parse_overrides
from reconbench.core.seal import read_key
from reconbench.core.signing import default_key_path, generate_key
from reconbench.core.tracks import all_tracks
from reconbench.image.evaluation import evaluate
from reconbench.submissions import validate_board
from reconbench.submissions.submit import submit_result

TEAM, TEAM_NAME = "sealed-examples", "Sealed-track examples"
# quick budgets (CI validates every entry): the options the open twin's example entries ran with
ATTACKS = [
    ("mi-face", "static/white-box/none", "default", []),
    ("deepdream", "static/white-box/none", "quick", []),
    ("deepinversion", "static/white-box/none", "quick", []),
    ("revealer", "static/white-box/same", "quick", ["gan_width_div=8", "gan_epochs=4"]),
    ("kedmi", "static/white-box/same", "quick", ["gan_width_div=8", "gan_epochs=4"]),
]
# A twin whose model is not a CNN gets its own list: on the oddeven MLP, DeepDream and Haim et al.'s
# reconstruction from a trained MLP at the open twin's quick entry (MI-Face returns all-black images there,
# the same file on every draw, which the duplicate rule refuses)
BY_TWIN = {"fashion-oddeven-n100-sealed": [ATTACKS[1], ("bias-rec", "static/white-box/none", "quick", ["epochs=500"])],
           # the update twins: Deep-Leakage inverts each draw's published gradient (quick: 10 L-BFGS steps)
           **{f"fashion-n1000-u{k}-sealed": [("deep-leakage", "dynamic/white-box/none", "quick", [])] for k in (64, 8)}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seal-key", type=Path, required=True)
    parser.add_argument("--group", default="fashion-n100-sealed")
    parser.add_argument("--root", type=Path, default=Path("submissions"))
    parser.add_argument("--attack", action="append", help="only these attacks")
    args = parser.parse_args()
    seal_key = read_key(args.seal_key)
    team_key = default_key_path().parent / f"{TEAM}.pem"
    if not team_key.exists():
        generate_key(team_key)
    draws = sorted((t for t in all_tracks() if t.seal is not None and t.seal.group == args.group), key=lambda t: t.seal.draw)
    done = {(p.name.rsplit("-", 2)[0]) for p in (args.root / TEAM).glob("*") if p.is_dir()}
    added = []
    for track in draws:
        for attack, scenario, budget, options in BY_TWIN.get(args.group, ATTACKS):
            if args.attack and attack not in args.attack:
                continue
            stem = f"{track.id}-{attack}"
            if stem in done:
                print(f"skip {stem}: already there")
                continue
            command = ["recon-submit", "evaluate", "--track", track.id, "--attack", attack, "--scenario", scenario,
                       "--seed", "0", "--device", "cpu", "--budget", budget, *[x for o in options for x in ("--set", o)]]
            with tempfile.TemporaryDirectory() as tmp:
                out = evaluate(track_id=track.id, attack_spec=attack, scenario=scenario, seed=0, key_path=team_key,
                               out=Path(tmp) / "result", config=parse_overrides(options), budget=budget,
                               command=shlex.join(command))
                submit_result(Path(tmp) / "result", TEAM, root=args.root, key_path=team_key, team_name=TEAM_NAME)
            added.append(args.root / TEAM / out.result.payload.entry_id)
            print(f"added {added[-1]} ({out.result.payload.provenance.wall_seconds:.0f} s)", flush=True)
    report = validate_board(None, args.root, explicit=added or [args.root / TEAM], seal_key=seal_key, write_sealed=True)
    for entry in report.entries:
        sealed = next((c for c in entry.checks if c.name == "sealed"), None)
        print(f"{entry.trust:10s} {entry.entry_id}: {sealed.message if sealed else '-'}")


if __name__ == "__main__":
    main()
