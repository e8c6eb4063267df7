"""Shared set-up of the judge tests: a copy of example entries under a team whose key the tests hold."""

from __future__ import annotations

import shutil
from pathlib import Path

from reconbench.judge.client import Endpoint
from reconbench.judge.runner import Options

REPO = Path(__file__).resolve().parents[1]
TEAM = "reconbench-baselines"
ENTRIES = {  # static digits entries of the example board (same target set)
    "deepinversion": "digits-deepinversion-20261129171830-7df88901",
    "deepdream": "digits-deepdream-20261129190144-dedb2c0c",
    "inv-alignment": "digits-inv-alignment-20261129190714-d53d0cb3",
    "mi-face": "digits-mi-face-20261129174924-5fac14f0",
}


def make_board(tmp: Path, public_key: str, names: list[str]) -> tuple[Path, list[Path]]:
    """tmp/submissions/<team>/ with the named entries and a team.toml that also lists `public_key`."""
    root = tmp / "submissions"
    team = root / TEAM
    team.mkdir(parents=True)
    import tomllib

    keys = tomllib.loads((REPO / "submissions" / TEAM / "team.toml").read_text())["keys"] + [public_key]
    listed = ", ".join(f'"{k}"' for k in keys)  # the entries' own signing key stays valid
    (team / "team.toml").write_text(f'name = "ReconBench baselines"\nlinks = []\nkeys = [{listed}]\n', encoding="utf-8")
    dirs = []
    for name in names:
        dst = team / ENTRIES[name]
        shutil.copytree(REPO / "submissions" / TEAM / ENTRIES[name], dst)
        dirs.append(dst)
    return root, dirs


def public_key_of(key_path: Path) -> str:
    return Path(str(key_path) + ".pub").read_text().split()[1]


def endpoint(server, **kw) -> Endpoint:
    return Endpoint(base_url=server.base_url, api_key=server.key, **kw)


def options(**kw) -> Options:
    base = dict(model="judge-under-test", image_size=64, concurrency=2)
    return Options(**{**base, **kw})
