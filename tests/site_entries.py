"""Synthetic submissions for the site tests and benchmarks/bench_site_build.py.

Real entries come from the real toolkit: `evaluate` runs MI-Face (a few dozen iterations, ~1 s on
the embedded digits track) and `submit_result` puts the signed folder into submissions/<team>/,
writing team.toml exactly as `recon-submit submit` does. For the 1,000-entry benchmark,
`clone_entries` derives more entries from one real result: each clone gets its own entry_id,
slightly different reconstructions (so its sha256 is unique, as the duplicates check demands)
and is signed again by its team's key; its claimed metrics are kept, so clones are only valid
with re-scoring off (RECONBENCH_SITE_RESCORE=0).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from reconbench.evaluation import evaluate
from reconbench.io import save_arrays
from reconbench.results import RECONSTRUCTIONS_FILE, RESULT_FILE, ResultFile, Signature, load_reconstructions
from reconbench.signing import generate_key, load_private_key, sign_payload
from reconbench.submissions.submit import submit_result

# An empty folder (evaluate's preflight wants --weights-dir to exist): FID/LPIPS "not computed", fast, offline
NO_WEIGHTS = Path(tempfile.mkdtemp(prefix="reconbench-no-weights-"))


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
             weights_dir=NO_WEIGHTS, command=f"recon-submit evaluate --attack {attack} --seed {seed}")
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


def clone_entries(template: Path, root: Path, count: int, keys_dir: Path, *, teams: int = 20, seed: int = 0) -> list[Path]:
    """`count` more entries under `root` derived from the real result folder `template`."""
    rng = np.random.default_rng(seed)
    result = ResultFile.model_validate(json.loads((Path(template) / RESULT_FILE).read_text()))
    images, labels = load_reconstructions(Path(template) / RECONSTRUCTIONS_FILE)
    team_keys = {}
    for t in range(teams):
        slug = f"team-{t:03d}"
        key = make_key(keys_dir, slug)
        team_keys[slug] = load_private_key(key)
        pub = (keys_dir / f"{slug}.pem.pub").read_text().split()[-1]
        (root / slug).mkdir(parents=True, exist_ok=True)
        (root / slug / "team.toml").write_text(
            f'name = "Team {t:03d}"\nlinks = ["https://example.org/{slug}"]\nkeys = ["{pub}"]\n', encoding="utf-8")
    out = []
    payload = result.payload.model_dump(mode="json")
    for i in range(count):
        slug = f"team-{i % teams:03d}"
        imgs = images.copy()
        flat = imgs.reshape(-1)
        flat[i % flat.size] ^= 1  # one grey level on one pixel: a unique file, not a copy of anything
        flat[(i * 7919 + 1) % flat.size] ^= 2
        entry_id = f"{payload['track']}-clone-{i:05d}"
        folder = root / slug / entry_id
        folder.mkdir(parents=True)
        save_arrays(folder / RECONSTRUCTIONS_FILE, {"images": imgs, "labels": labels})
        from reconbench.io import sha256_file

        p = json.loads(json.dumps(payload))
        p["entry_id"] = entry_id
        p["reconstructions"]["sha256"] = sha256_file(folder / RECONSTRUCTIONS_FILE)
        p["provenance"]["seed"] = i
        jitter = float(rng.uniform(0.7, 1.3))
        for name in ("ssim", "mse"):
            metric = p["metrics"][name]
            if metric["value"] is not None:
                metric["value"] = round(min(metric["value"] * jitter, 0.99), 6)
                metric["coverage"] = round(float(rng.uniform(0.01, 0.3)), 4)
        p["metrics"]["psnr"]["coverage"] = p["metrics"]["mse"]["coverage"]
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
