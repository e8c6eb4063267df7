"""Everything the site generates, as one in-memory `SiteBundle` (the hook hands it to MkDocs).

Generated docs paths (none of them exist in git):
    leaderboards/index.md, leaderboards/<track>.md      the boards (combined, per track)
    charts.md                                          the Plotly views of every track
    attacks/index.md, attacks/<attack>.md              the attacks and their entries
    matrix/index.md, matrix/<dataset>-<architecture>.md  the attack x variant matrices (matrix.py)
    entries/<team>/<entry>/index.md, .../gallery.png,   entry pages, galleries and near-copy evidence,
    .../near-copies.png                                each entry's files in a folder of its own
    downloads.md, downloads/*                          JSON, CSV, schema, shields.io badges
and the named fragments the hand-written pages embed with `<!-- rb:NAME -->`:
    home-best, home-updated (site/index.md), taxonomy-table, metric-table, text-metric-table (site/methodology.md),
    result-schema (site/submit.md).
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from reconbench.leaderboard.frame import attack_page, listed
from reconbench.leaderboard.pages import Pages

# Progress lines go under MkDocs' own logger, which `mkdocs build` prints at INFO (a logger outside
# "mkdocs" has no handler there, and its INFO lines would be dropped); outside MkDocs, set a handler.
log = logging.getLogger("mkdocs.hooks.reconbench.build")

SUBMISSIONS_ENV = "RECONBENCH_SUBMISSIONS"
RESCORE_ENV = "RECONBENCH_SITE_RESCORE"
DEVICE_ENV = "RECONBENCH_SITE_DEVICE"


class StageLog(dict):
    """The build's stage timings (name -> wall seconds), each logged as it is recorded: `make site`
    prints one line per stage (validation, the boards and their charts, pages, galleries), with the
    process's CPU seconds and peak memory so far, instead of nothing for minutes (issue 37)."""

    def __setitem__(self, stage: str, seconds: float) -> None:
        super().__setitem__(stage, seconds)
        if stage != "total":
            log.info("reconbench: %s done in %.1f s (%s)", STAGE_NAMES.get(stage, stage), seconds, usage())


STAGE_NAMES = {"warm_baselines": "reference baselines, scored before validation", "validate": "validation", "frame": "the board's table", "baselines": "reference baselines",
               "boards": "boards and charts", "entries": "entry pages", "galleries": "galleries (within entry pages)"}


def usage() -> str:
    """CPU seconds and peak resident memory of this process so far (what the site build's log shows)."""
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    peak_mb = r.ru_maxrss / (1024 * 1024 if os.uname().sysname == "Darwin" else 1024)  # bytes on macOS, kB on Linux
    return f"process so far: {r.ru_utime + r.ru_stime:.1f} CPU-s, peak {peak_mb:.0f} MB"


_VALIDATION_START: list = [None]  # perf_counter at the first entry's start (the ETA's clock)


def log_validation(done: int, total: int, report, seconds: float) -> None:
    """One line per validated entry: which, how long, whether it was re-scored or came from the cache,
    and the time left at the mean pace so far (issue 45: a build that says when it will end)."""
    how = ("from the validation cache" if report.from_cache else "re-scored" if report.verified else "checked")
    now = time.perf_counter()
    if done == 1 or _VALIDATION_START[0] is None:
        _VALIDATION_START[0] = now - seconds
    elapsed = now - _VALIDATION_START[0]
    log.info("reconbench: validation %d/%d %s/%s: %s, %s in %.1f s (%s); %s", done, total, report.team,
             report.entry_id or "(team)", report.trust, how, seconds, usage(), eta(elapsed, done, total))
    _between_tracks(getattr(getattr(report.result, "payload", None), "track", None))


def eta(elapsed: float, done: int, total: int) -> str:
    """'about 3 min left' at the mean pace of the `done` of `total` so far ('done' at the end)."""
    if done >= total:
        return "done"
    left = elapsed / max(done, 1) * (total - done)
    return f"about {left:.0f} s left" if left < 90 else f"about {left / 60:.0f} min left"


_LAST_TRACK: list = [None]


def _between_tracks(track: str | None) -> None:
    """When validation moves to another track (entries come grouped by folder), hand the heap that the
    last track's scoring freed back to the system, so that it is not still resident while the next
    track's arrays are made (the build's peak grew track after track, issue 37)."""
    if track != _LAST_TRACK[0]:
        from reconbench.leaderboard import heap

        _LAST_TRACK[0] = track
        heap.release()


@dataclass
class SiteBundle:
    files: dict[str, str | bytes]  # docs path -> content (Markdown pages, PNGs, downloads)
    fragments: dict[str, str]  # placeholder key -> HTML (inserted after Markdown; see pages.py)
    nav: dict[str, list[tuple]]  # section -> [(title, docs path) or (title, [(title, path), ...])]
    frame: pd.DataFrame
    timings: dict[str, float] = field(default_factory=dict)
    rescored: bool = True


def settings_from_env(default_root: Path) -> tuple[Path, bool, str]:
    """(submissions folder, re-score?, device) from RECONBENCH_SUBMISSIONS / _SITE_RESCORE / _SITE_DEVICE."""
    root = Path(os.environ.get(SUBMISSIONS_ENV) or default_root)
    flag = os.environ.get(RESCORE_ENV, "1").strip().lower()
    if flag not in {"0", "1", "false", "true", "no", "yes", ""}:
        raise ValueError(f"{RESCORE_ENV}={flag!r}: expected 0 or 1")
    return root, flag not in {"0", "false", "no"}, os.environ.get(DEVICE_ENV, "cpu")


def load_reports(root: Path, *, rescore: bool, device: str) -> list:
    """Validate every entry under `root` (reconbench.submissions); an absent folder has none."""
    from reconbench.submissions import discover_entries, validate_entries

    root = Path(root)
    if not root.is_dir():
        return []
    paths = discover_entries(root)
    if not paths:
        return []
    log.info("reconbench: validation of %d entries from %s (re-score %s)", len(paths), root, "on" if rescore else "off")
    return list(validate_entries(paths, root=root, rescore=rescore, device=device, progress=log_validation))


def warm_reference_baselines(root: Path) -> None:
    """Score the reference baselines (leaderboard/baselines.py) before validation, for the same tracks and
    with gaps where the same entries stand: their scores land in the on-disk baseline cache, which the
    boards read after validation. Their large temporaries (a 1,000-image track's scoring) then come on
    top of a fresh process, not of what validation leaves resident (issue 37: the build's peak)."""
    import json

    from reconbench.core.tracks import TrackError, all_tracks
    from reconbench.leaderboard import baselines, heap

    tracks = set()
    results = list(Path(root).glob("*/*/result.json"))
    for result in results:
        try:
            tracks.add(json.loads(result.read_text(encoding="utf-8"))["payload"]["track"])
        except (OSError, ValueError, KeyError, TypeError):
            continue  # validation reports it; the board then scores what it needs itself
    log.info("reconbench: %d entries under %s; first the reference baselines of the tracks they are on (%s)",
             len(results), root, usage())
    heap.trim(freeze=True)  # the imports stay: each track's trim below then scans only that track's objects
    t0 = time.perf_counter()

    def progress(done: int, total: int, track_id: str) -> None:
        log.info("reconbench: reference baselines %d/%d %s (%s); %s", done, total, track_id, usage(),
                 eta(time.perf_counter() - t0, done, total))

    try:
        baselines.all_baselines(all_tracks(), gaps_for=tracks, only=tracks, progress=progress)
    except TrackError as exc:
        log.warning("tracks registry unreadable: %s", exc)
    heap.trim()


def release_validation_memory() -> None:
    """Drop what only validation needed (the public pools' search structures) and hand the freed heap
    back to the system (glibc keeps freed small blocks otherwise): the pages and baselines that
    follow then start from less, which keeps the build's peak down (issue 37: <= 2 GB)."""
    from reconbench.leaderboard import heap
    from reconbench.submissions import publiccopy, publicspace
    from reconbench.submissions.checks import recovery

    publicspace.release()  # rebuilt on demand (their thresholds stay)
    publiccopy.release()
    recovery.release()  # the public images the recovery count's shifted nn searched
    heap.trim(freeze=True)  # what is alive now (the reports, the modules) stays: later trims skip it


def attack_catalogue(frames: list[pd.DataFrame]) -> list[dict]:
    """Built-in attacks only, of every modality, from reconbench.core.catalogue (no attack code is imported).
    A name that is not built in comes from an entry's own text: it never gets a page, a nav item or
    a badge (one entry must not add to the site's structure); it shows only on its entries' pages.
    `frames`: each modality board's entries, for the count of listed entries per attack."""
    from reconbench.core.catalogue import BY_NAME, TEXT_BY_NAME

    counts: dict[str, int] = {}
    for frame in frames:
        if len(frame):
            counts.update(listed(frame)["attack"].value_counts().to_dict())
    out = []
    for name, a in sorted({**BY_NAME, **TEXT_BY_NAME}.items()):
        out.append(dict(
            name=name, registered=True, paper=a.paper, family=a.family, version=a.version, modality=a.modality,
            role=a.role, scenarios=list(a.scenarios), code=a.target, codes=[], summary=a.summary,
            count=counts.get(name, 0),
        ))
    return out


def build_site(root: Path, *, rescore: bool = True, device: str = "cpu", galleries: bool = True,
               site_url: str | None = None) -> SiteBundle:
    """Each modality's board (its plug-in's `board`) gets the entries whose result it owns, then adds its
    pages in turn: the boards, the attack pages of every built-in attack, the entries and downloads.
    One torch thread throughout (as validation always had): the reference baselines' SSIM matrices at
    torch's default of one thread per core spun waiting for a core on a busy 2-core machine (issue 45)."""
    from reconbench.core.threads import one_torch_thread

    with one_torch_thread():
        return _build_site(root, rescore=rescore, device=device, galleries=galleries, site_url=site_url)


def _build_site(root: Path, *, rescore: bool, device: str, galleries: bool, site_url: str | None) -> SiteBundle:
    from reconbench.modalities import MODALITIES, for_attack, for_result

    from reconbench.leaderboard import heap

    heap.large_blocks_unmapped()
    timings: dict[str, float] = StageLog()
    t0 = time.perf_counter()
    warm_reference_baselines(root)
    timings["warm_baselines"] = time.perf_counter() - t0
    t_val = time.perf_counter()
    reports = load_reports(root, rescore=rescore, device=device)
    from reconbench.leaderboard.sealed_runs_view import use_root

    use_root(root)  # the sealed twins' pages read the board's run records from it
    release_validation_memory()
    timings["validate"] = time.perf_counter() - t_val
    # an entry whose result.json did not parse goes to the first modality's board, which lists it as failed
    boards = {m: m.board([r for r in reports if for_result(r.result) is m], rescore=rescore, galleries=galleries,
                         site_url=site_url, timings=timings) for m in MODALITIES}

    pages = Pages()
    files: dict[str, str | bytes] = {}
    nav: dict[str, list[tuple[str, str]]] = {"leaderboards": [("All tracks", "leaderboards/index.md")],
                                             "attacks": [("All attacks", "attacks/index.md")],
                                             "matrix": [("All matrices", "matrix/index.md")]}
    for board in boards.values():
        board.add_boards(pages, files, nav)

    # --- attacks: every built-in attack has a page, its tables from its modality's board
    catalogue = attack_catalogue([board.frame for board in boards.values()])
    for attack in catalogue:
        board = boards[for_attack(attack["name"])]
        knows = [(cell, board.knowledge(cell, attack["role"])) for cell in attack["scenarios"]]
        pages.page(attack_page(attack["name"]), "attack.md.j2", attack=attack, groups=board.attack_tables(attack["name"]),
                   knows=knows, board_prefix=f"board-attack-{attack['name']}", show_track=False, show_attack=False)
        nav["attacks"].append((attack["name"], attack_page(attack["name"])))
    pages.page("attacks/index.md", "attacks_index.md.j2", attacks=catalogue)

    for board in boards.values():
        board.add_entries(pages, files, nav, catalogue)
    files.update(pages.markdown)
    timings["total"] = time.perf_counter() - t0
    # the first modality's frame (image): the search summaries, findings and model cards read it
    return SiteBundle(files=files, fragments=pages.fragments, nav=nav, frame=boards[MODALITIES[0]].frame,
                      timings=timings, rescored=rescore)
