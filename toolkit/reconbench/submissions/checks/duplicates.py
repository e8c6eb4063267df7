"""Check 8, duplicates: this reconstruction file (sha256) and this entry_id are on the board once.

The board is every other entry under the root whose result.json parses and whose signature verifies
under its team's keys (so an unsigned stray file cannot block a real entry by claiming its hash).
"""

from __future__ import annotations

from reconbench.submissions.checks.base import Check, CheckFailed, Context


def check(ctx: Context) -> list[Check]:
    payload = ctx.result.payload
    me = ctx.entry_dir
    same_file = [str(p) for p in ctx.board.by_sha256(payload.reconstructions.sha256) if p != me]
    same_id = [str(p) for p in ctx.board.by_entry_id(payload.entry_id) if p != me]
    problems = []
    if same_file:
        problems.append(f"the same reconstruction file (sha256 {payload.reconstructions.sha256[:16]}...) is "
                        f"already on the board as {', '.join(same_file)}")
    if same_id:
        problems.append(f"entry_id '{payload.entry_id}' is already on the board as {', '.join(same_id)}")
    if problems:
        raise CheckFailed(problems[0] + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""), problems)
    return [Check("duplicates", "pass", f"reconstruction file and entry_id unique among {ctx.board.size()} signed entries")]
