"""The extraction count of every image entry on the board, as `validate` re-scores it (issue 33).

    nice -n 10 .venv/bin/python scripts/extraction_table.py          # every image entry under submissions/

One row per entry: its track and scenario, the count ("k of n members extracted against j holdout items,
p ...", core/extraction.py and core/verdict.py), the relabelling p, the verdict "extracts k" where it fires, and how many reconstructions the copies check
refuses as copies of public non-members (submissions/publiccopy.py; 0 for every honest entry). The same function validate's rescore stage
runs (image/metrics/extraction.image_extraction on the entry's reconstructions, the track's target set
or update set and its holdout, the registry's calibration), without the other metrics, so the whole
board takes a minute. Text entries: see scripts/leakage_table.py (their count comes with the gaps).
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    from reconbench.core.envelope import RESULT_FILE, ResultError
    from reconbench.core.tracks import TrackError, get_track
    from reconbench.core.verdict import EXTRACTS, count_text, label
    from reconbench.image.metrics.extraction import image_extraction
    from reconbench.image.results import RECONSTRUCTIONS_FILE, load_reconstructions
    from reconbench.image.track_files import load_splits
    from reconbench.text.results import parse_any_result

    root = Path(argv[0]) if argv else Path("submissions")
    from reconbench.submissions.publiccopy import non_member_copies, public_index

    print("| entry | track | scenario | extraction count | relabelling p | badge | non-member copies |")
    print("|---|---|---|---|---|---|---|")
    for result_file in sorted(root.glob(f"*/*/{RESULT_FILE}")):
        try:
            payload = parse_any_result(result_file).payload
            track = get_track(payload.track)
        except (ResultError, TrackError, OSError):
            continue
        if track.extraction is None or not (result_file.parent / RECONSTRUCTIONS_FILE).is_file():
            continue
        images, labels = load_reconstructions(result_file.parent / RECONSTRUCTIONS_FILE)
        s = load_splits(track)
        dynamic = payload.scenario.startswith("dynamic/")
        target, holdout = (s.update, s.update_holdout) if dynamic else (s.target, s.holdout)
        e = image_extraction(images, labels, target.images, target.labels, holdout.images, holdout.labels,
                             track.extraction.threshold, track.extraction.pair_rate)
        print(f"| {result_file.parent.name} | {track.id} | {payload.scenario} | {count_text(e)} | {e.p_relabel:.2g} | "
              f"{label(EXTRACTS, e.members) if e.extracts else '–'} | "
              f"{len(non_member_copies(images, target.images, public_index(track), track.extraction.threshold))} |",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
