"""What every sealed command says (issue 45, item 2): how many of the twin's draws ran, what happens
next, and when the score is published. One wording for `evaluate` on a twin (`--draws N`), a draw's
closing lines, `submit` and `validate`, so a newcomer never reads only "scored at validation".

The facts come from the draw's registry row (core/tracks.Seal): K, the twin, the season and its
reveal date. The membership gap and the extraction count need the members, which only the board's key
opens: CI scores them with the key after the pull request (.github/workflows/sealed.yml, docs/sealed.md),
the twin's board publishes them, and after the reveal anyone recomputes them (`seal verify`).
"""

from __future__ import annotations

from collections.abc import Iterable

WHEN = ("its membership gap and extraction count are scored by CI's keyed validation after your pull request "
        "(a maintainer approves that run) and published on the twin's board")


def seal_of(track_id: str):
    """The draw's registry row (core/tracks.Seal), or None for an open track or an unknown id."""
    from reconbench.core.tracks import TrackError, get_track

    try:
        return getattr(get_track(track_id), "seal", None)
    except TrackError:
        return None


def kind(seal) -> str:
    """What the twin is for (issue 43): a burned season's public practice draws, or a v2 season's board-run
    draws, whose models and pools never leave the board."""
    from reconbench.core.seasons import burned

    if burned(seal.season):
        return f"practice draws (season {seal.season}, burned: membership public)"
    if getattr(seal, "scheme", "v1") == "v2":
        return "board-run (the board runs your attack: recon-submit seal run)"
    return f"sealed (season {seal.season})"


def short_kind(seal) -> str:
    """kind() in a table cell (`recon-submit tracks`): the footer under the table says it in full."""
    from reconbench.core.seasons import burned

    if burned(seal.season):
        return f"practice ({seal.season}, burned)"
    return "board-run" if getattr(seal, "scheme", "v1") == "v2" else f"sealed ({seal.season})"


def practice_note(seal) -> str:
    """After a run on practice draws: they give no verdict, and where the verdict is earned instead."""
    from reconbench.core.seasons import burned

    if not burned(seal.season):
        return ""
    return (f" These are {kind(seal)}: their numbers give no verdict, badge or rank; the board's verdict comes from a "
            "board-run twin's sealed run (`recon-submit seal run`).")


def reveal(seal) -> str:
    return f"the key of season {seal.season} is revealed after {seal.reveal_after}, and then anyone can recompute them"


def draw_line(track_id: str) -> str | None:
    """A draw's closing line: which draw of how many, and when its numbers come."""
    seal = seal_of(track_id)
    if seal is None:
        return None
    return (f"sealed: draw {seal.draw + 1} of {seal.draws} of twin {seal.group}, {kind(seal)}; {WHEN}; {reveal(seal)} "
            "(docs/sealed.md). No verdict here: only the board's key opens the members")


def ran_line(track_ids: Iterable[str]) -> str | None:
    """After `evaluate` on a twin: N of K draws ran, what a partial run means, and the next step."""
    seals = [s for s in map(seal_of, track_ids) if s is not None]
    if not seals:
        return None
    first, n = seals[0], len(seals)
    done = ", ".join(f"d{s.draw}" for s in seals)
    partial = ("" if n >= first.draws else
               f" The board gives no verdict on fewer than {first.draws}: it shows \"partial: {n} of {first.draws} "
               "draws\" until every draw is in (--draws all, the default, runs them all).")
    return (f"sealed twin {first.group}: {n} of {first.draws} draws ran ({done}).{partial} Next: submit each draw's "
            f"folder (one entry per draw), validate, and open the pull request; {WHEN.replace('its ', 'their ', 1)}; "
            f"{reveal(first)}.{practice_note(first)}")


def submitted_line(track_id: str, on_board: int) -> str | None:
    """After `submit` of a draw: how many draws of this run the team has on the board, and what comes next."""
    seal = seal_of(track_id)
    if seal is None:
        return None
    more = ("every draw of this run is in" if on_board >= seal.draws
            else f"submit the other {seal.draws - on_board} draw folders too: the board's verdict needs all {seal.draws}")
    return (f"sealed: draw {seal.draw + 1} of {seal.draws} of twin {seal.group}; {on_board} of {seal.draws} draws of "
            f"this run are under your team's folder ({more}); {WHEN}; {reveal(seal)}")


def draws_in(team_dir, payload) -> int:
    """How many draws of `payload`'s run (same twin, scenario, attack, configuration and seed) the team
    folder holds, this one included. Read as plain JSON: a folder that does not parse counts for nothing."""
    import json
    from pathlib import Path

    marker = getattr(payload, "sealed", None)
    if marker is None:
        return 0
    mine = (marker.group, payload.scenario, payload.attack.name, dict(payload.attack.config), payload.provenance.seed)
    draws = set()
    for file in sorted(Path(team_dir).glob("*/result.json")):
        try:
            other = json.loads(file.read_text(encoding="utf-8"))["payload"]
            key = ((other.get("sealed") or {}).get("group"), other["scenario"], other["attack"]["name"],
                   other["attack"]["config"], other["provenance"]["seed"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if key == mine:
            draws.add(other["sealed"].get("draw"))
    return len(draws)
