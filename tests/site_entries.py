"""Synthetic submissions for the site tests and benchmarks/bench_site_build.py.

Real entries come from the real toolkit: `evaluate` runs MI-Face (a few dozen iterations, ~1 s on
the embedded digits track) and `submit_result` puts the signed folder into submissions/<team>/,
writing team.toml exactly as `recon-submit submit` does. For the 1,000-entry benchmark,
`blend_entries` makes entries that pass every check from real runs' reconstructions (see there).
"""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from reconbench.image.evaluation import evaluate
from reconbench.core.io import save_arrays
from reconbench.image.results import RECONSTRUCTIONS_FILE, RESULT_FILE, ResultFile, Signature, load_reconstructions
from reconbench.core.signing import generate_key, load_private_key, sign_payload
from reconbench.submissions.submit import submit_result
from submission_helpers import with_seed

# An empty folder (evaluate's preflight wants --weights-dir to exist): FID/LPIPS "not computed", fast, offline
NO_WEIGHTS = Path(tempfile.mkdtemp(prefix="reconbench-no-weights-"))
atexit.register(shutil.rmtree, NO_WEIGHTS, ignore_errors=True)  # one was left in /tmp per test process


def make_key(folder: Path, name: str = "key") -> Path:
    path = Path(folder) / f"{name}.pem"
    if not path.exists():
        generate_key(path)
    return path


def evaluate_entry(workdir: Path, key: Path, *, attack: str = "mi-face", seed: int = 0, iterations: int = 30,
                   scenario: str | None = None) -> Path:
    """A real signed result folder (digits track, FID/LPIPS not computed)."""
    out = Path(workdir) / f"run-{attack}-{seed}-{iterations}-{(scenario or 'default').replace('/', '_')}"
    evaluate(attack_spec=attack, key_path=key, out=out, seed=seed, config={"iterations": iterations}, scenario=scenario,
             weights_dir=NO_WEIGHTS)  # it records the evaluate line of these arguments (core/run_command.py)
    return out


def submit_entry(result_dir: Path, root: Path, team: str, key: Path, *, name: str | None = None,
                 links: list[str] | None = None, contact: str | None = None, readme: str | None = None) -> Path:
    """The contributor's `recon-submit submit` step; returns submissions/<team>/<entry-id>/."""
    readme_path = None
    if readme is not None:
        readme_path = Path(result_dir).parent / f"README-{team}.md"
        readme_path.write_text(readme, encoding="utf-8")
    return submit_result(result_dir, team, root=root, key_path=key, team_name=name, links=links,
                         contact=contact, readme=readme_path).entry


def _teams(root: Path, keys_dir: Path, teams: int) -> dict[str, object]:
    """`teams` team folders (team.toml listing one fresh key each); slug -> private key."""
    team_keys = {}
    for t in range(teams):
        slug = f"team-{t:04d}"
        key = make_key(keys_dir, slug)
        team_keys[slug] = load_private_key(key)
        pub = (keys_dir / f"{slug}.pem.pub").read_text().split()[-1]
        (root / slug).mkdir(parents=True, exist_ok=True)
        (root / slug / "team.toml").write_text(
            f'name = "Team {t:04d}"\nlinks = ["https://example.org/{slug}"]\nkeys = ["{pub}"]\n', encoding="utf-8")
    return team_keys


def diverse_sources(folders: list[Path], shape: tuple[int, ...], share: float = 0.1) -> list[Path]:
    """Entry folders whose reconstructions have the given shape and at most `share` of them near-copies
    of another of the same entry (class-level attacks such as MI-Face return one image per class)."""
    from reconbench.submissions.nearcopy import Space, public_thresholds
    from reconbench.core.tracks import get_track

    out = []
    for folder in folders:
        images, _ = load_reconstructions(Path(folder) / RECONSTRUCTIONS_FILE)
        if tuple(images.shape) != tuple(shape):
            continue
        thresholds = public_thresholds(get_track(json.loads((Path(folder) / RESULT_FILE).read_text())["payload"]["track"]))
        pixel, _, struct, _ = Space(images).nearest(images, exclude_self=True)
        if ((pixel <= thresholds.pixel_mse) | (struct <= thresholds.structure)).mean() <= share:
            out.append(Path(folder))
    return out


def blend_entries(template: Path, sources: list[Path], root: Path, count: int, keys_dir: Path, *, per_team: int = 5,
                  seed: int = 0) -> list[Path]:
    """`count` entries under `root` that pass every check, re-scoring included (benchmarks/bench_site_build.py).

    Each reconstruction is a convex blend (Dirichlet(4, 4, 4) weights: no image dominates) of three
    reconstructions of the same class drawn from `sources` (reconstruction files of real runs on the
    template's track, whose images are not near-copies of one another: see diverse_sources): a new image,
    no copy of a public image nor of another entry's (measured: 0.9% of a blend's images are near one of
    another blend's, 2% at most over 120 pairs; 5% makes a duplicate). Its metrics are computed by the
    toolkit's own score() against the track's target set, exactly as evaluate and re-scoring compute
    them; the payload is the template's (a real signed run) with the entry id, seed, reconstructions
    hash and metrics replaced, signed by a fresh team key: entries i*per_team .. (i+1)*per_team - 1 are team i's,
    the seeds of its one configuration (a seed group, as the SoK's 3-5 seeds make one: a board of N
    entries has N / per_team teams, so each entry's seed-copy comparisons stay per_team - 1 whatever N)."""
    from reconbench.core.io import sha256_file
    from reconbench.image.metrics import score
    from reconbench.image.track_files import load_splits
    from reconbench.core.tracks import get_track

    rng = np.random.default_rng(seed)
    result = ResultFile.model_validate(json.loads((Path(template) / RESULT_FILE).read_text()))
    payload = result.payload.model_dump(mode="json")
    track = get_track(payload["track"])
    target = load_splits(track).target
    pool = [load_reconstructions(Path(s) / RECONSTRUCTIONS_FILE if Path(s).is_dir() else Path(s)) for s in sources]
    images = np.concatenate([p[0] for p in pool]).astype(np.float64)
    labels = np.concatenate([p[1] for p in pool])
    by_class = {int(c): np.flatnonzero(labels == c) for c in np.unique(labels)}
    classes = np.array(sorted(by_class))
    team_keys = _teams(root, keys_dir, -(-count // per_team))
    n = len(target)
    out = []
    for i in range(count):
        slug = f"team-{i // per_team:04d}"
        y = rng.choice(classes, n)
        picks = np.stack([rng.choice(by_class[int(c)], 3) for c in y])
        weights = rng.dirichlet(np.full(3, 4.0), n)
        blend = np.einsum("nk,nkchw->nchw", weights, images[picks])
        imgs, labs = np.rint(blend).clip(0, 255).astype(np.uint8), y.astype(np.int64)
        entry_id = f"{payload['track']}-blend-{i:05d}"
        folder = root / slug / entry_id
        if (folder / RESULT_FILE).is_file():  # made by an earlier, interrupted call (the draws above are the same)
            out.append(folder)
            continue
        folder.mkdir(parents=True, exist_ok=True)
        save_arrays(folder / RECONSTRUCTIONS_FILE, {"images": imgs, "labels": labs})
        report = score(imgs, labs, target.images, target.labels, track=track, lpips=False, fid=False)
        p = json.loads(json.dumps(payload))
        p["entry_id"] = entry_id
        p["reconstructions"]["sha256"] = sha256_file(folder / RECONSTRUCTIONS_FILE)
        with_seed(p, i)
        for name, metric in report.metrics.items():
            if name in p["metrics"] and (metric.status == "computed" or p["metrics"][name]["status"] == "computed"):
                p["metrics"][name] = metric.model_dump(mode="json")
        p.pop("membership", None)  # the template's claim is about its own reconstructions: validate computes this one's
        signature = Signature(**sign_payload(p, team_keys[slug]))
        signed = ResultFile.model_validate({"payload": p, "signature": signature.model_dump()})
        (folder / RESULT_FILE).write_text(json.dumps(signed.model_dump(mode="json"), indent=2, sort_keys=True) + "\n")
        out.append(folder)
    return out


REPO = Path(__file__).resolve().parents[1]


@contextmanager
def local_server(folder: Path) -> Iterator[str]:
    """An HTTP server for `folder` on 127.0.0.1 (a free port), yielding its URL; the folder may be
    filled after it starts (the site's URL must be known to build it: instant navigation)."""
    import functools
    import http.server
    import threading

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def build_site(submissions: Path, site_dir: Path, *, rescore: bool = True, site_url: str | None = None,
               timeout: float = 600):
    """`mkdocs build --strict` of the repository's mkdocs.yml from `submissions`, into `site_dir`."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "RECONBENCH_SUBMISSIONS": str(submissions), "RECONBENCH_SITE_RESCORE": "1" if rescore else "0",
           "NO_MKDOCS_2_WARNING": "1"}
    if site_url:
        env["RECONBENCH_SITE_URL"] = site_url
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(REPO / "mkdocs.yml"), "-d", str(site_dir)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout,
    )
