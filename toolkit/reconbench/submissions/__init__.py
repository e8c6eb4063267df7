"""Submissions: the layout of submissions/, team files, the validator and its report, `submit`.

    from reconbench.submissions import discover_entries, validate_entries, EntryReport, Check, TrustLevel, load_team

validate_entries(paths=None, root=Path("submissions"), rescore=True, device="cpu") -> list[EntryReport]
runs, for each entry: structure, schema, signature, registry, reconstructions, rescore, copies,
duplicates (see validate.py), and gives it a trust level: failed / signed / re-scored.
"""

from reconbench.submissions.checks.base import Check, TrustLevel
from reconbench.submissions.layout import DEFAULT_ROOT, SIZE_CAPS, discover_entries
from reconbench.submissions.team import Team, TeamError, load_team
from reconbench.submissions.validate import BoardReport, EntryReport, validate_board, validate_entries

__all__ = ["Check", "TrustLevel", "DEFAULT_ROOT", "SIZE_CAPS", "discover_entries", "Team", "TeamError", "load_team",
           "BoardReport", "EntryReport", "validate_board", "validate_entries"]
