"""Check 3 (after the schema), identity: a team's slug and display name must not look like another's.

Readers tell teams apart by their names, so a newcomer whose slug or display name is confusable
with an existing team's slug or display name, or with a name the maintainers reserve, would borrow
that team's standing (a slug with the digit 1 for an l, the maintainers' display name in Cyrillic).
Confusable means equal keys under reconbench.submissions.identity (Unicode TR39 skeletons, case,
compatibility forms, accents, whitespace and punctuation ignored). A slug or display name on its own
must also be visible whole (identity.profile_problems: no invisible or default-ignorable character,
UTS #39's Allowed identifier characters, no mixed scripts), whoever came first.

First come, first served, as for entries (board.Board.team_arrival): the team that reached the
board first keeps its identity and the later one fails, with the earlier one named. In a checkout
with history (CI always has one) the first commit that added a file of the team decides; in a plain
folder, its earliest entry's finish time, and between teams without entries their slugs' order. Reserved names
(maintainers/identities.toml beside the reproducers file, and every reproducer's name in it) belong
to the maintainers whatever the order; the maintainers' own team is an ordinary team that came first.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from reconbench.submissions.checks.base import Check, CheckFailed, Context
from reconbench.submissions.identity import identity_keys, profile_problems
from reconbench.submissions.layout import show

RESERVED_FILE = "identities.toml"


def reserved_names(reproducers: Path | None = None) -> list[tuple[str, str]]:
    """(name, where it is reserved) from the maintainers' folder (the reproducers file's folder)."""
    from reconbench.reproduction.record import RecordError, default_reproducers_path, reproducer_keys

    path = Path(reproducers) if reproducers else default_reproducers_path()
    names = []
    file = path.parent / RESERVED_FILE
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        data = {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise CheckFailed(f"{file}: cannot be read as TOML ({exc})") from None
    for name in data.get("reserved", []):
        if isinstance(name, str):
            names.append((name, f"reserved by the maintainers ({file.parent.name}/{RESERVED_FILE})"))
    try:
        names += [(n, "a reproducer's name") for n in sorted(set(reproducer_keys(path).values()))]
    except RecordError:
        pass  # no reproducers file here: the reproduction check says so where it matters
    return names


def clash(team, others: dict, reserved: list[tuple[str, str]]) -> list[str]:
    """Why `team` (its slug or name) looks like another identity that takes precedence over it."""
    mine = {"slug": identity_keys(team.slug), "display name": identity_keys(team.name)}
    problems = []
    for name, why in reserved:
        keys = identity_keys(name)
        for what, own in mine.items():
            if own & keys:
                problems.append(f"team {what} {show(getattr(team, 'slug' if what == 'slug' else 'name'))!r} looks like "
                                f"{show(name)!r}, {why}")
    for slug, other in others.items():
        theirs = {"slug": identity_keys(other.slug), "display name": identity_keys(other.name)}
        for what, own in mine.items():
            for their_what, keys in theirs.items():
                if own & keys:
                    value = team.slug if what == "slug" else team.name
                    shown = other.slug if their_what == "slug" else other.name
                    problems.append(f"team {what} {show(value)!r} looks like the {their_what} {show(shown)!r} of team "
                                    f"'{other.slug}', which came first")
    return problems


def check(ctx: Context) -> list[Check]:
    from reconbench.submissions.checks.reproduction import REPRODUCERS

    team = ctx.team
    board = ctx.board
    mine = board.team_arrival(team.slug)
    earlier = {slug: t for slug, t in board.teams().items() if slug != team.slug and board.team_arrival(slug) < mine}
    problems = clash(team, earlier, reserved_names(REPRODUCERS))
    problems += [f"team {what} {show(value)!r} {p}" for what, value in (("slug", team.slug), ("display name", team.name))
                 for p in profile_problems(value)]
    if problems:
        raise CheckFailed(problems[0] + " (slugs and display names must not be confusable: Unicode TR39 skeletons, "
                          "case, 0/O and 1/l, accents, spaces and punctuation ignored)"
                          + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""), problems)
    return [Check("identity", "pass", f"slug '{team.slug}' and display name {show(team.name)!r} look like no other "
                                      f"team's ({len(board.teams()) - 1} other team(s)) and no reserved name")]
