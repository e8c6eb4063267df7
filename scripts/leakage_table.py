"""The membership gap of every entry on the board, as `validate` re-scores it (issue 21's done-when table).

    .venv/bin/python scripts/leakage_table.py                    # every entry under submissions/
    .venv/bin/python scripts/leakage_table.py --metrics ssim bleu

One row per entry and metric: the metric against the target set, against the holdout, the gap
(positive = closer to the members), its 95% interval, p (one-sided), the entry's verdict in the board's
words and by the board's rule (core/verdict.py: extracts k, membership signal, no evidence), and the
entry's extraction count ("k of n members extracted against j holdout items, p ...", core/extraction.py).
Every number comes from validate_board (re-scoring on), never from a claim.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reconbench.core.verdict import entry_verdict

SHOWN = ("mse", "psnr", "ssim", "knn_dist", "bleu", "rouge_l", "similarity", "exact_match")


def verdict(membership: dict, extraction=None) -> str:
    """The board's verdict (core/verdict.py), with the p it rests on and the threshold it was held to."""
    v = entry_verdict(membership, extraction)
    if v.tier is None:
        return "no gap"
    return f"{v.label} ({v.signal_p})" if v.signal_p else v.label


def rows(root: Path, metrics: tuple[str, ...]) -> list[list[str]]:
    from reconbench.submissions import validate_board

    out = []
    for r in validate_board(None, root, rescore=True).entries:
        if not r.is_entry or not r.membership:
            continue
        badge = verdict(r.membership, getattr(r, "extraction", None))
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
