"""Publish the example judge study: two baseline entries on digits, judged by the SCRIPTED test
server of tests/judgeserver.py (it answers with the candidate nearest the target by MSE; it is not
an LLM), so that the judgements/ pages and `validate` have a real, signed study to show.

    .venv/bin/python scripts/make_example_judgement.py        # writes judgements/<study-id>/study.json

The study is signed with the reconbench-baselines team key (default
~/.config/reconbench/keys/reconbench-baselines.pem, as scripts/make_example_entries.py; created on first
use, and its public key must then be in submissions/reconbench-baselines/team.toml).
A real study is the same command line with a real endpoint:
    recon-submit judge ENTRY ENTRY --model gpt-4o --team reconbench-baselines --key KEY
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # the scripted server lives with the tests

from judge_helpers import example_entry  # noqa: E402
from judgeserver import MODEL, JudgeServer, best_policy  # noqa: E402

from reconbench.judge.api import run_study  # noqa: E402
from reconbench.judge.client import Endpoint  # noqa: E402
from reconbench.judge.runner import Options  # noqa: E402
from reconbench.core.signing import default_key_path, generate_key  # noqa: E402

TEAM = "reconbench-baselines"
ATTACKS = ["deepinversion", "deepdream"]  # their current example entries on digits


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--key", type=Path, default=default_key_path().parent / f"{TEAM}.pem")
    parser.add_argument("--targets", type=int, default=100)
    parser.add_argument("--out", type=Path, default=REPO / "judgements")
    args = parser.parse_args(argv)
    if not args.key.exists():
        _, public = generate_key(args.key)
        print(f"created {args.key}; add its public key {public} to submissions/{TEAM}/team.toml")
    dirs = [REPO / "submissions" / TEAM / example_entry(a) for a in ATTACKS]
    options = Options(model=MODEL, targets=args.targets, repeats=5, seed=0, modes=("random", "fixed"))
    with JudgeServer(best_policy) as server, tempfile.TemporaryDirectory() as cache:
        out = run_study(dirs, options, team=TEAM, key_path=args.key, endpoint=Endpoint(base_url=server.base_url, api_key=server.key),
                        cache_dir=Path(cache), out_root=args.out,
                        title="Scripted test judge (not an LLM): deepinversion vs deepdream on digits")
        print(f"{server.calls} calls answered by the scripted server; study: {out.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
