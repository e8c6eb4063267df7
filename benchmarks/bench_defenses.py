"""Does DP-SGD (or pruning) stop an attack that leaks on fashion-n100? One attack, the three tracks.

    .venv/bin/python benchmarks/bench_defenses.py [--attack deepdream] [--budget default] [--seed 0] [--out DIR]

Runs `recon-submit evaluate` (sandboxed, signed, as a user would) of the attack on fashion-n100,
fashion-n100-dp and fashion-n100-prune (a run whose signed result is already in --out is kept), then
prints one row per track: the target's test accuracy and its own loss-threshold MIA AUC
(reconbench.image.models.mia), the attack's Acc@1 and SSIM, its SSIM membership gap with interval
and p, and the boards' verdict (leaderboard/leakage.SIGNIFICANCE_RULE) over all its gaps.
One seed is one draw: the defenses view and the findings page ask for three before a verdict.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "toolkit"))

TRACKS = ("fashion-n100", "fashion-n100-dp", "fashion-n100-prune")


def run(track: str, attack: str, budget: str, seed: int, out: Path) -> float | None:
    """Evaluate into out/<track>-<attack> unless its result is there; its wall seconds (None: kept). Wall,
    not CPU: the attack runs in the sandbox's own process tree, which os.times() does not see."""
    folder = out / f"{track}-{attack}-s{seed}"
    if (folder / "result.json").is_file():
        return None
    cli = Path(sys.executable).parent / "recon-submit"
    start = time.perf_counter()
    subprocess.run([str(cli), "evaluate", "--track", track, "--attack", attack, "--seed", str(seed), "--budget", budget,
                    "--out", str(folder)], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def row(track_id: str, folder: Path) -> str:
    from reconbench.core.tracks import get_track
    from reconbench.image.models.mia import loss_threshold_auc
    from reconbench.leaderboard.leakage import verdict

    track = get_track(track_id)
    payload = json.loads((folder / "result.json").read_text())["payload"]
    metrics, gaps = payload["metrics"], payload["membership"]["metrics"]
    computed = {m: SimpleNamespace(status="computed", p=g["p"], gap=g["gap"]) for m, g in gaps.items()
                if g.get("p") is not None}
    leaks, text = verdict(computed)
    g = gaps["ssim"]
    return (f"| {track_id} | {track.test_accuracy:.3f} | {loss_threshold_auc(track):.3f} | {metrics['acc_top1']['value']:.2f} "
            f"| {metrics['ssim']['value']:.3f} | {g['gap']:+.4f} [{g['low']:+.4f}, {g['high']:+.4f}] | {g['p']:.3g} | {text} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attack", default="deepdream")
    parser.add_argument("--budget", default="default")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("runs/bench-defenses"))
    args = parser.parse_args(argv)
    seconds = {t: run(t, args.attack, args.budget, args.seed, args.out) for t in TRACKS}
    print(f"# {args.attack} at --budget {args.budget}, seed {args.seed}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print("| track | test accuracy | MIA AUC | Acc@1 | SSIM | SSIM gap [95 %] | p | boards' verdict |")
    print("|---|---|---|---|---|---|---|---|")
    for t in TRACKS:
        print(row(t, args.out / f"{t}-{args.attack}-s{args.seed}"))
    ran = {t: s for t, s in seconds.items() if s is not None}
    if ran:
        print("# evaluate wall seconds (under this machine's load): " + ", ".join(f"{t} {s:.0f}" for t, s in ran.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
