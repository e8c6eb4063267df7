"""Shared set-up of the judge tests: a copy of example entries under a team whose key the tests hold."""

from __future__ import annotations

import shutil
from pathlib import Path

from reconbench.judge.client import Endpoint
from reconbench.judge.runner import Options

REPO = Path(__file__).resolve().parents[1]
TEAM = "reconbench-baselines"


def example_entry(attack: str, track: str = "digits") -> str:
    """The example board's entry id of `attack` on `track` (static cell), found by reading the entries:
    example entries are re-made from time to time, so their ids are not written down here."""
    from reconbench.image.results import parse_result_json

    found = []
    for result in (REPO / "submissions" / TEAM).glob("*/result.json"):
        if (result.parent / "reconstructions.jsonl").exists():
            continue  # a text entry: the judge compares images
        payload = parse_result_json(result).payload
        if (payload.track, payload.attack.name) == (track, attack) and payload.scenario.startswith("static/") \
                and payload.surrogate is None:
            found.append(result.parent.name)
    found.sort()
    if not found:
        raise LookupError(f"no example entry of {attack} on {track} under submissions/{TEAM}")
    return found[-1]


class _Entries(dict):
    def __missing__(self, attack: str) -> str:  # static digits entries of the example board (same target set)
        self[attack] = example_entry(attack)
        return self[attack]


ENTRIES = _Entries()


def make_board(tmp: Path, public_key: str, names: list[str]) -> tuple[Path, list[Path]]:
    """tmp/submissions/<team>/ with the named entries and a team.toml that also lists `public_key`."""
    root = tmp / "submissions"
    team = root / TEAM
    team.mkdir(parents=True)
    import tomllib

    import tomli_w

    data = tomllib.loads((REPO / "submissions" / TEAM / "team.toml").read_text())
    data["keys"] = data["keys"] + [public_key]  # the entries' own (dated) signing keys stay valid
    (team / "team.toml").write_text(tomli_w.dumps(data), encoding="utf-8")
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
