"""The membership gap of every entry on the board, as `validate` re-scores it (issue 21's done-when table).

    .venv/bin/python scripts/leakage_table.py                    # every entry under submissions/
    .venv/bin/python scripts/leakage_table.py --metrics ssim bleu

One row per entry and metric: the metric against the target set, against the holdout, the gap
(positive = closer to the members), its 95% interval, p (one-sided), and the entry's verdict (the
board's badge: "membership signal (p < 0.01)" when the smallest p of its metrics, Bonferroni over
them, is below 0.01), and the entry's extraction count ("extracts k of n members (holdout: j), p",
core/extraction.py). Every number comes from validate_board (re-scoring on), never from a claim.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reconbench.image.metrics.membership import entry_leaks

SHOWN = ("mse", "psnr", "ssim", "knn_dist", "bleu", "rouge_l", "similarity", "exact_match")


def verdict(membership: dict) -> str:
    ps = [g.p for g in membership.values() if g.status == "computed" and g.p is not None]
    if not ps:
        return "no gap"
    return "membership signal (p < 0.01)" if entry_leaks(ps) else "no measurable leakage"


def rows(root: Path, metrics: tuple[str, ...]) -> list[list[str]]:
    from reconbench.submissions import validate_board

    out = []
    for r in validate_board(None, root, rescore=True).entries:
        if not r.is_entry or not r.membership:
            continue
        badge = verdict(r.membership)
        count = r.extraction.sentence() if getattr(r, "extraction", None) is not None else "no count"
        for name in metrics:
            g = r.membership.get(name)
            if g is None or g.status != "computed":
                continue
            out.append([r.entry_id, r.trust, name, f"{g.vs_target:.4g}", f"{g.vs_holdout:.4g}", f"{g.gap:+.4g}",
                        f"[{g.low:+.4g}, {g.high:+.4g}]", f"{g.p:.3g}", badge, count])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("submissions"))
    parser.add_argument("--metrics", nargs="+", default=list(SHOWN))
    args = parser.parse_args(argv)
    head = ["entry", "trust", "metric", "vs target", "vs holdout", "gap", "95% interval", "p", "verdict", "extraction count"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in rows(args.root, tuple(args.metrics)):
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
