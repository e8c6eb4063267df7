"""Re-issue example entries whose signed files carry a machine path (issue 36: "no machine path appears
in anything that is signed or published"): each entry's recorded command is run again with the
current toolkit (whose notes name no local folder, core/redact.py) under the team's key, submitted,
re-reproduced with the reproducer key in the same invocation (a sandboxed re-run) where the old entry
had a reproduction record, and validated with re-scoring; the old folder is moved aside while this runs
(its twin would be a duplicate of it) and put back on any failure.

    RECONBENCH_SANDBOX=bubblewrap nice -n 10 .venv/bin/python scripts/reissue_entries.py \
        [--root submissions] [--team reconbench-baselines] [--limit N] [ENTRY_DIR ...]

Without ENTRY_DIR: every entry of the team whose result.json or reproduction.json fails the machine-path
rule (submissions/checks/machine_paths.py), cheapest recorded wall time first; ENTRY_DIRs in the order given. Prints one row per entry:
old and new folder, whether the new reconstructions are byte-identical to the old ones, and the wall
seconds of the run and of the reproduction's re-run (as their result and record say). A new entry whose bytes differ is
kept (it is the honest re-run) and said so.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TEAM = "reconbench-baselines"


def cli(*args: str) -> None:
    exe = Path(sys.executable).with_name("recon-submit")
    subprocess.run([str(exe), *args], check=True)


def list_pending(root: Path) -> int:
    import hashlib

    from reconbench.submissions.checks.machine_paths import _file_problems, _published, pending_path

    lines = ["# Entry files signed before the toolkit cut machine paths from its notes (issue 36), by their exact",
             "# bytes: validate's paths check lets these alone pass with a warning until each entry is re-issued",
             "# (scripts/reissue_entries.py). Written by `scripts/reissue_entries.py --list-pending`; only shrinks.", ""]
    for entry in sorted(root.glob("*/*/")):
        for where, raw in _published(entry):
            if _file_problems(raw, Path(where).name, where):
                lines += ["[[file]]", f'file = "{where}"', f'sha256 = "{hashlib.sha256(raw).hexdigest()}"', ""]
    path = pending_path()
    path.write_text("\n".join(lines), encoding="utf-8")
    print(f"{path}: {sum(line == '[[file]]' for line in lines)} files")
    return 0


def _same_setting(old, new) -> bool:
    """The same run: track, attack, cell, seed and budget, and every option the old entry recorded (an option
    the attack gained since is recorded by the new one at its default)."""
    def key(p):
        return p.track, p.attack.name, p.scenario, p.provenance.seed, p.attack.budget
    return key(old) == key(new) and old.attack.config.items() <= new.attack.config.items()


def reissue_table(root: Path, team: str, base: str) -> int:
    """Old entry (in BASE, gone now) beside its re-issue (new since BASE, same setting): the same bytes or
    not, the run's and the reproduction re-run's wall seconds, and the metrics outside the reproduction
    tolerances of the old claim."""
    from reconbench.image.results import RESULT_FILE
    from reconbench.reproduction import tolerances
    from reconbench.reproduction.record import RECORD_FILE, read_record
    from reconbench.text.results import parse_any_result

    folder = f"{Path(root).resolve().relative_to(REPO)}/{team}/"

    def listed(ref: str | None) -> set[str]:
        """The entry folders of the team at `ref` (None: the index)."""
        args = ["git", "ls-tree", "--name-only", ref, folder] if ref else ["git", "ls-files", folder]
        out = subprocess.run(args, capture_output=True, text=True, check=True, cwd=REPO).stdout.split()
        return {name for name in (line[len(folder):].split("/")[0] for line in out) if "." not in name}

    before, now = listed(base), listed(None)
    with tempfile.TemporaryDirectory() as tmp:
        old = {}
        for name in sorted(before - now):
            blob = subprocess.run(["git", "show", f"{base}:{folder}{name}/{RESULT_FILE}"],
                                  capture_output=True, check=True, cwd=REPO).stdout
            (Path(tmp) / name).write_bytes(blob)
            old[name] = parse_any_result(Path(tmp) / name).payload
        print("| old entry | new entry | same reconstructions bytes | run wall s | reproduction re-run wall s "
              "| outside the tolerances of the old claim |")
        print("|---|---|---|---|---|---|")
        for name in sorted(now - before):
            new = root / team / name
            payload = parse_any_result(new / RESULT_FILE).payload
            twin = next((o for o, p in old.items() if _same_setting(p, payload)), None)
            if twin is None:
                continue
            was = old.pop(twin)
            outside = [f"{m} {c.value:.4g} → {payload.metrics[m].value:.4g}" for m, c in sorted(was.metrics.items())
                       if c.status == "computed" and not tolerances.for_metric(m).allows(c.value, payload.metrics[m].value)]
            rerun = f"{read_record(new / RECORD_FILE).record.reported.wall_seconds:.0f}" if (new / RECORD_FILE).is_file() else "-"
            same = "yes" if was.reconstructions.sha256 == payload.reconstructions.sha256 else "no"
            print(f"| {twin} | {name} | {same} | {payload.provenance.wall_seconds:.0f} | {rerun} | {', '.join(outside) or 'none'} |")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("entries", nargs="*", type=Path)
    parser.add_argument("--root", type=Path, default=REPO / "submissions")
    parser.add_argument("--team", default=TEAM)
    parser.add_argument("--key", type=Path, default=None, help="the team's private key")
    parser.add_argument("--reproducer-key", type=Path, default=None)
    parser.add_argument("--limit", type=int, default=None, help="at most this many entries")
    parser.add_argument("--report", metavar="BASE", default=None,
                        help="re-run nothing: the table of this team's entries re-issued since git commit BASE")
    parser.add_argument("--list-pending", action="store_true",
                        help="re-run nothing: write the exact bytes of every entry file still holding a machine path "
                             "(any team) to maintainers/machine-paths-pending.toml")
    args = parser.parse_args(argv)
    if args.list_pending:
        return list_pending(args.root)
    if args.report:
        return reissue_table(args.root, args.team, args.report)
    os.environ["RECONBENCH_SANDBOX"] = "bubblewrap"  # a sandboxed run or an error, never a silent fallback

    from reconbench.core.io import sha256_file
    from reconbench.core.signing import default_key_path
    from reconbench.image.results import RESULT_FILE
    from reconbench.reproduction.record import RECORD_FILE, read_record
    from reconbench.submissions import validate_board
    from reconbench.submissions.checks.machine_paths import machine_path_problems
    from reconbench.submissions.layout import README_FILE
    from reconbench.submissions.submit import submit_result
    from reconbench.text.results import parse_any_result

    sys.path.insert(0, str(REPO / "scripts"))
    from make_example_entries import TEAM_NAME, readme

    keys = default_key_path().parent
    team_key = args.key or keys / f"{args.team}.pem"
    reproducer_key = args.reproducer_key or keys / "reconbench-reproducer.pem"
    folders = args.entries
    if not folders:
        folders = [p for p in sorted((args.root / args.team).glob("*/")) if machine_path_problems(p)]
        folders.sort(key=lambda p: parse_any_result(p / RESULT_FILE).payload.provenance.wall_seconds)
    rows = []
    for old in folders[: args.limit]:
        payload = parse_any_result(old / RESULT_FILE).payload
        command = payload.provenance.command
        words = shlex.split(command)
        if words[:2] != ["recon-submit", "evaluate"]:
            print(f"{old.name}: recorded command is not `recon-submit evaluate …`: {command}", file=sys.stderr)
            return 1
        print(f"running: {command}", flush=True)
        # The old entry leaves the board first: its twin (same run, same bytes) is not a duplicate of it.
        kept = Path(tempfile.mkdtemp(prefix="reissue-")) / old.name
        shutil.move(old, kept)
        new = None
        try:
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp) / "result"
                cli(*words[1:], "--key", str(team_key), "--out", str(out), "--quiet")
                new_payload = parse_any_result(out / RESULT_FILE).payload
                (out / README_FILE).write_text(readme(new_payload, new_payload.provenance.command), encoding="utf-8")
                new = submit_result(out, args.team, root=args.root, key_path=team_key, team_name=TEAM_NAME).entry
            same = sha256_file(new / new_payload.reconstructions.file) == payload.reconstructions.sha256
            rerun_wall = "-"
            if (kept / RECORD_FILE).is_file():
                cli("reproduce", str(new), "--key", str(reproducer_key), "--quiet")
                rerun_wall = f"{read_record(new / RECORD_FILE).record.reported.wall_seconds:.0f}"
            report = validate_board([new], args.root, rescore=True)
            fails = [f"{c.name}: {c.message}" for r in report.entries for c in r.checks if c.status == "fail"]
            if fails:
                raise RuntimeError(f"{new.name} does not validate:\n  " + "\n  ".join(fails))
        except BaseException as exc:
            if new is not None and new.exists():
                shutil.rmtree(new)
            shutil.move(kept, old)  # nothing is lost on a failure
            print(f"{old.name}: kept ({type(exc).__name__}: {exc})", file=sys.stderr, flush=True)
            if not isinstance(exc, Exception):
                raise
            rows.append((old.name, "-", "-", "-", "- (failed: kept)"))
            continue
        shutil.rmtree(kept.parent)
        rows.append((old.name, new.name, "yes" if same else "NO (kept: the honest re-run)",
                     f"{new_payload.provenance.wall_seconds:.0f}", rerun_wall))
        print(" | ".join(rows[-1]), flush=True)
    print()
    print("| old entry | new entry | same reconstructions bytes | run wall s | reproduction re-run wall s |")
    print("|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    return 1 if any(row[1] == "-" for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
