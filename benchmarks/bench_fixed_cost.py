"""`recon-submit evaluate`'s fixed cost against a reference DeepInversion loop on the same model.

    .venv/bin/python benchmarks/bench_fixed_cost.py [--iterations 5 105] [--repeat 2]

Three commands, each in a fresh interpreter (as a user runs them), one torch thread, the digits
track's 500 images, DeepInversion at two iteration counts:
  reference    benchmarks/reference_deepinversion.py: the NVlabs-style loop alone (torch + safetensors)
  evaluate     recon-submit evaluate --attack deepinversion --set iterations=T --threads 1 (offline):
               the attack in its own process (reconbench.pipeline.isolation), then scoring and signing
  in-process   the same work in one interpreter (evaluation.attack_run(isolate=False), score, sign):
               what evaluate costs without the attack's process; evaluate minus this = isolation
Each cost c(T) = fixed + T x per-step: the per-step cost is the slope between the two counts, the
fixed cost is c(T1) - T1 x slope (interpreter start, imports, loading the track, the model, scoring,
signing, writing). CPU = user + system seconds of the child processes (getrusage), the sandboxed
attack's included (bench_cpu.run_tree: this process adopts and reaps what bubblewrap leaves, and samples
/proc for what a kill takes out of getrusage's count); wall = elapsed.
The best of --repeat runs counts (a shared machine only ever adds time). The commands alternate,
so load changes hit all three alike.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_cpu import adopt_orphans, byte_compile, run_tree  # noqa: E402
IN_PROCESS = """
import sys, torch
from pathlib import Path
from reconbench.image.attacks import Progress
from reconbench.image.evaluation import attack_run
from reconbench.image.metrics import score
from reconbench.core.tracks import get_track
from reconbench.image.track_files import load_splits
from reconbench.core.signing import generate_key, load_private_key, sign_payload
torch.set_num_threads(1)
track = get_track("digits")
run = attack_run(track, "deepinversion", None, config={"iterations": int(sys.argv[1])}, seed=0,
                 device=torch.device("cpu"), progress=Progress(), budget="default", isolate=False)
target = load_splits(track).target
rec = run.reconstruction.to_uint8().numpy()
report = score(rec, run.reconstruction.labels.numpy(), target.images, target.labels, track=track)
key = Path(sys.argv[2]) / "key.pem"
generate_key(key)
sign_payload({m: r.model_dump(mode="json") for m, r in report.metrics.items()}, load_private_key(key))
"""


def run(argv: list[str], env: dict) -> tuple[float, float]:
    return run_tree(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO)


def commands(iterations: int, work: Path, key: Path) -> dict[str, list[str]]:
    out = work / f"run-{iterations}-{time.monotonic_ns()}"
    out.mkdir()
    return {
        "reference": [sys.executable, str(REPO / "benchmarks" / "reference_deepinversion.py"), "--iterations",
                      str(iterations), "--out", str(out / "ref.safetensors")],
        "evaluate": [sys.executable, "-m", "reconbench.cli", "evaluate", "--attack", "deepinversion", "--set",
                     f"iterations={iterations}", "--threads", "1", "--quiet", "--offline", "--key", str(key),
                     "--out", str(out / "evaluate")],
        "in-process": [sys.executable, "-c", IN_PROCESS, str(iterations), str(out)],
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--iterations", type=int, nargs=2, default=[5, 105])
    p.add_argument("--repeat", type=int, default=2)
    args = p.parse_args()
    t1, t2 = args.iterations
    adopt_orphans()
    byte_compile(REPO / "toolkit")  # the steady state of every run after the first (bench_cpu.byte_compile)
    with tempfile.TemporaryDirectory(prefix="bench-fixed-") as tmp:
        work = Path(tmp)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "toolkit"), os.environ.get("PYTHONPATH", "")]),
               "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "RECONBENCH_CACHE": str(work / "cache")}
        from reconbench.core.signing import generate_key

        key = work / "key.pem"
        generate_key(key)
        best: dict[tuple[str, int], tuple[float, float]] = {}
        for _ in range(args.repeat):
            for iterations in (t1, t2):
                for name, argv in commands(iterations, work, key).items():
                    wall, cpu = run(argv, env)
                    old = best.get((name, iterations), (float("inf"), float("inf")))
                    best[(name, iterations)] = (min(old[0], wall), min(old[1], cpu))
    load = os.getloadavg()
    print(f"DeepInversion on digits (500 images), 1 torch thread, best of {args.repeat}; iterations {t1} and {t2}; "
          f"load average {load[0]:.1f} / {load[2]:.1f} (1 / 15 min), {os.cpu_count()} CPUs")
    print("| command | fixed wall s | fixed CPU s | per step wall ms | per step CPU ms | fixed x reference (wall / CPU) |")
    print("|---|---|---|---|---|---|")
    rows = {}
    for name in ("reference", "evaluate", "in-process"):
        (w1, c1), (w2, c2) = best[(name, t1)], best[(name, t2)]
        sw, sc = (w2 - w1) / (t2 - t1), (c2 - c1) / (t2 - t1)
        rows[name] = (w1 - t1 * sw, c1 - t1 * sc, sw, sc)
    ref = rows["reference"]
    for name, (fw, fc, sw, sc) in rows.items():
        print(f"| {name} | {fw:.2f} | {fc:.2f} | {1000 * sw:.1f} | {1000 * sc:.1f} | {fw / ref[0]:.2f} / {fc / ref[1]:.2f} |")
    print(f"per step, evaluate / reference: {rows['evaluate'][2] / ref[2]:.2f} wall, {rows['evaluate'][3] / ref[3]:.2f} CPU")
    iso = rows["evaluate"][0] - rows["in-process"][0], rows["evaluate"][1] - rows["in-process"][1]
    print(f"isolation (evaluate - in-process), fixed: {iso[0]:.2f} s wall, {iso[1]:.2f} CPU-s")


if __name__ == "__main__":
    main()
