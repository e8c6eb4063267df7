"""The image boards (the image modality's board, which its plug-in hands to leaderboard/build.py):
one board per image track, the memorization and quality charts, the attack x variant matrices, entry
pages with galleries, the downloads (JSON, CSV, schema, badges) and the fragments of the
hand-written pages. text/board.py is the text modality's."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pandas as pd
from markupsafe import Markup

from reconbench.core.catalogue import BY_NAME
from reconbench.leaderboard import baselines, cells, charts, downloads, leakage, leakage_view, matrix, recovery_view, seeds
from reconbench.leaderboard.frame import (
    BOARD_METRICS,
    LABELS,
    best_per_dataset,
    entries_frame,
    last_update,
    listed,
    rank_metric,
    ranked,
    sort_board,
)
from reconbench.leaderboard.gallery import TargetSets, entry_gallery, near_copy_evidence
from reconbench.leaderboard.calibration import track_calibration
from reconbench.leaderboard.leakage import LEAK_LABELS
from reconbench.leaderboard.pages import KNOWLEDGE
from reconbench.leaderboard.reproduction import record_for as reproduction_record
from reconbench.leaderboard.sealed import nav_links as sealed_nav_links, sealed_view, twin_pages

log = logging.getLogger(__name__)


class ImageBoard:
    """The image entries' frame (one row per entry; seed groups collapsed on `board`) and the reference
    baselines of every track, made once; then the pages, in the order build_site asks for them."""

    def __init__(self, reports: list, *, rescore: bool, galleries: bool, site_url: str | None, timings: dict):
        from reconbench.core.tracks import TrackError, all_tracks

        self.reports, self.rescore, self.galleries, self.site_url, self.timings = reports, rescore, galleries, site_url, timings
        t1 = time.perf_counter()
        frame = entries_frame(reports)
        try:
            tracks = all_tracks()
        except TrackError as exc:
            log.warning("tracks registry unreadable: %s", exc)
            tracks = []
        known = {t.id for t in tracks}
        unknown = ranked(frame)[~ranked(frame)["track"].isin(known)]
        if not unknown.empty:  # the validator should have failed these; never rank them here
            log.warning("%d entries name tracks outside the registry; not ranked", len(unknown))
            frame.loc[unknown.index, ["trust", "trust_rank"]] = ["failed", 0]
        frame["seed_group"] = seeds.group_ids(frame)  # verified (ranked) entries only
        board = sort_board(seeds.collapse(listed(frame)))  # a seed group is one row: mean ± std
        timings["frame"] = time.perf_counter() - t1
        t_ref = time.perf_counter()
        # cached on disk by target-set hash; gaps only where entries stand beside them (each costs a permutation test)
        with_entries = set(frame["track"].dropna())
        references = baselines.all_baselines(tracks, gaps_for=with_entries, only=with_entries)
        for track_id, refs in references.items():
            for ref in refs:
                ref["track"] = track_id
        timings["baselines"] = time.perf_counter() - t_ref
        leakage.add_lift(frame, references)  # lift over knowledge: the best reference baseline of each row's cell
        leakage.add_lift(board, references)

        self.frame, self.tracks, self.board, self.references = frame, tracks, board, references

    def add_boards(self, pages, files: dict, nav: dict) -> None:
        """One page per track, the combined view, the planned tracks and the charts page."""
        frame, tracks, board, references, timings = self.frame, self.tracks, self.board, self.references, self.timings
        # --- boards and charts: one page per track; one memorization chart per family of tracks
        t2 = time.perf_counter()
        families: dict[tuple, list] = {}
        for track in tracks:
            families.setdefault(charts.family_key(track), []).append(track)
        memo_by_family = {}
        for key, members in families.items():
            members.sort(key=lambda t: t.train_size)
            has_entries = board["track"].isin([t.id for t in members]).any()
            family_refs = [r for t in members for r in references.get(t.id, [])]
            fig = charts.memorization_figure(board, members[0], tracks, family_refs) if has_entries else None
            sizes = sorted(int(v) for v in ranked(board)[ranked(board)["track"].isin([t.id for t in members])]["train_size"].dropna().unique())
            memo_by_family[key] = Markup(charts.chart_html(fig, "chart-memo-" + "-".join(filter(None, key)),
                                                           empty=charts.memorization_note(charts.family_title(members[0]), sizes)))
        # A planned track (unpublished, no entries) gets no board of its own: they share one page.
        planned = [t for t in tracks if t.status == "unpublished" and not (frame["track"] == t.id).any()]
        planned_ids = {t.id for t in planned}
        track_views = []
        frame["position"] = pd.array([pd.NA] * len(frame), dtype="Int64")  # set per table below (cells.place_positions)
        for track in tracks:
            if track.id in planned_ids:
                continue
            rows = sort_board(board[board["track"] == track.id])
            tables = cell_tables(rows, references.get(track.id, []))
            quality = charts.quality_diversity_figure(rows, f" ({track.id})", references.get(track.id, [])) if len(rows) else None
            view = dict(
                track=track, count=len(rows), family=charts.family_title(track),
                memo_chart=memo_by_family[charts.family_key(track)],
                quality_chart=Markup(charts.chart_html(quality, f"chart-quality-{track.id}")),
            )
            track_views.append(view)
            cells.place_positions(frame, tables)  # the place in its cell's ranking on its track's board (exports)
            failed = int(((frame["track"] == track.id) & (frame["trust"] == "failed")).sum())
            pages.page(f"leaderboards/{track.id}.md", "leaderboard.md.j2", track=track, rows=rows, groups=tables,
                       sealed=sealed_view(track, self.reports),
                       board_prefix=f"board-{track.id}", show_track=False, show_attack=True,
                       ranked_count=sum(t["ranked_count"] for t in tables), failed=failed,
                       family=view["family"], memo_chart=view["memo_chart"], quality_chart=view["quality_chart"],
                       calibration=track_calibration(track.id))
        for key, members in families.items():  # nav: a family of several sizes is a sub-section; a sealed twin is one item
            links = sealed_nav_links([t for t in members if t.id not in planned_ids])
            if links:
                nav["leaderboards"].append(links[0] if len(links) == 1 else (charts.family_title(members[0]), links))
        counts = {v["track"].id: v["count"] for v in track_views}
        for twin in twin_pages([t for t in tracks if t.id not in planned_ids], self.reports, counts):
            pages.page(twin["path"], "sealed_group.md.j2", sealed=twin["sealed"], draws=twin["draws"])
        if planned:
            nav["leaderboards"].append(("Planned tracks", "leaderboards/planned.md"))
            pages.page("leaderboards/planned.md", "planned.md.j2", matrix=planned_matrix(planned), count=len(planned))
        combined_families = [
            dict(title=charts.family_title(members[0]),
                 tracks=[v for v in track_views if charts.family_key(v["track"]) == key])
            for key, members in families.items()
        ]
        # "All tracks": one board per track with entries; entries of different tracks are never ranked together
        by_track = [dict(track=v["track"], groups=cell_tables(board[board["track"] == v["track"].id],
                                                              references.get(v["track"].id, [])))
                    for v in track_views if v["count"]]
        pages.page("leaderboards/index.md", "combined.md.j2", families=[f for f in combined_families if f["tracks"]],
                   by_track=by_track, failed=frame[frame["trust"] == "failed"], planned=len(planned))
        chart_sections = [
            dict(title=charts.family_title(members[0]), memo_chart=memo_by_family[key],
                 tracks=[v for v in track_views if charts.family_key(v["track"]) == key and v["count"]])
            for key, members in families.items()
        ]
        pages.page("charts.md", "charts.md.j2", sections=[c for c in chart_sections if c["tracks"]],
                   empty=[c["title"] for c in chart_sections if not c["tracks"]])
        timings["boards"] = time.perf_counter() - t2


    def attack_tables(self, attack: str) -> list[dict]:
        """An image attack's page: its listed entries, one table per (track, cell), with the baselines beside them."""
        rows = self.board[self.board["attack"] == attack]
        return cell_tables(rows, baselines.for_entries(self.references, rows) if len(rows) else [], by=("track", "scenario"))

    @staticmethod
    def knowledge(cell: str, role: str | None = None) -> str:
        """What an image attacker is given in this cell (the same whatever the attack)."""
        return "; ".join(KNOWLEDGE.get(axis, axis) for axis in cell.split("/"))

    def add_entries(self, pages, files: dict, nav: dict, catalogue: list[dict]) -> None:
        """The matrices, the entry pages and galleries, the downloads and the hand-written pages' fragments."""
        frame, tracks, board, references, timings = self.frame, self.tracks, self.board, self.references, self.timings
        reports, galleries, rescore, site_url = self.reports, self.galleries, self.rescore, self.site_url
        # --- the attack x variant matrix, one page per dataset and architecture
        image_attacks = [a for a in catalogue if a["name"] in BY_NAME]  # the matrix, badges and taxonomy table
        matrices = matrix.matrices(tracks, board, [a["name"] for a in image_attacks])
        for m in matrices:
            pages.page(m["page"], "matrix.md.j2", m=m)
            nav["matrix"].append((f"{m['dataset']} · {m['architecture']}", m["page"]))
        pages.page("matrix/index.md", "matrix_index.md.j2", matrices=matrices)

        # --- entries: page + gallery PNG each
        t3 = time.perf_counter()
        targets = TargetSets()
        gallery_seconds = 0.0
        for report, row in zip(_in_frame_order(reports, frame), frame.to_dict("records")):
            gallery = None
            if galleries and report.result is not None and row["trust"] != "failed":
                g0 = time.perf_counter()
                gallery = entry_gallery(report.path, report.result.payload, targets)
                gallery_seconds += time.perf_counter() - g0
                if gallery is not None:
                    files[row["gallery"]] = gallery.png
            evidence = near_copy_evidence(report, row, files) if galleries else None
            team = report.team_info
            record = reproduction_record(row)  # a reproduced entry's signed record, published beside its page
            if record is not None:
                files[record[0]] = record[1]
            pages.page(
                row["page"], "entry.md.j2", row=row, result=report.result, checks=list(report.checks or []),
                reproduction=record[2] if record else None,
                title=Path(row["page"]).parent.name, gallery=gallery, evidence=evidence,
                leakage=leakage_view.entry_view(report, row, {**LEAK_LABELS, **LABELS}),
                recovery=recovery_view.entry_recovery(report, row, targets if galleries else None, files)
                if row["trust"] != "failed" else None,
                team_name=row["team_name"], team_links=list(getattr(team, "links", None) or []),
                team_contact=getattr(team, "contact", None), readme_text=getattr(report, "readme", None),
            )
        timings["entries"] = time.perf_counter() - t3
        timings["galleries"] = gallery_seconds

        # --- downloads
        files[downloads.JSON_FILE] = downloads.leaderboard_json(frame, references)
        files[downloads.CSV_FILE] = downloads.leaderboard_csv(frame)
        schema = downloads.schema_json()
        files[downloads.SCHEMA_FILE] = schema
        badges = []
        for attack in image_attacks:
            badge = downloads.badge(attack["name"], frame)
            files[downloads.badge_file(attack["name"])] = downloads.json.dumps(badge, ensure_ascii=False) + "\n"
            badges.append(dict(attack=attack["name"], file=downloads.badge_file(attack["name"]), badge=badge))
        pages.page("downloads.md", "downloads.md.j2", json_file=downloads.JSON_FILE, csv_file=downloads.CSV_FILE,
                   schema_file=downloads.SCHEMA_FILE, badges_dir=downloads.BADGES_DIR, badges=badges,
                   count=len(frame), site_url=(site_url or "").rstrip("/"))

        # --- fragments of the hand-written pages
        ranked_rows = ranked(frame)
        pages.fragment("home-best", "fragments/home_best.html.j2", best=best_per_dataset(frame),
                       quiet=leakage.without_leakage(ranked(frame)))
        pages.fragment("leakage-table", "fragments/leakage_table.html.j2", rows=leakage.example_table(listed(frame)))
        pages.fragment("home-updated", "fragments/home_updated.html.j2", ranked=len(ranked_rows),
                       teams=ranked_rows["team"].nunique(), failed=int((frame["trust"] == "failed").sum()),
                       updated=last_update(frame), rescored=rescore)
        cell_attacks: dict[str, list[str]] = {}
        for attack in image_attacks:
            for s in attack["scenarios"]:
                cell_attacks.setdefault(s, []).append(attack["name"])
        pages.fragment("taxonomy-table", "fragments/taxonomy_table.html.j2", cells=cell_attacks)
        pages.fragment("metric-table", "fragments/metric_table.html.j2")
        pages.fragment("result-schema", "fragments/result_schema.html.j2", schema=schema, schema_file=downloads.SCHEMA_FILE)



def planned_matrix(planned: list) -> dict:
    """The planned tracks as a matrix: one row per dataset · architecture (variant), one column
    per training-set size; each cell is the track id (SoK Table 2's grid)."""
    sizes = sorted({t.train_size for t in planned})
    rows: dict[str, dict[int, str]] = {}
    for t in planned:
        rows.setdefault(charts.family_title(t), {})[t.train_size] = t.id
    return dict(sizes=sizes, rows=rows)


def cell_tables(rows: pd.DataFrame, references=(), by=("scenario",)) -> list[dict]:
    """The image boards' tables: one ranking per taxonomy cell (leaderboard/cells.py)."""
    return cells.groups(rows, sort_board, BOARD_METRICS, LABELS, rank_metric, references, by=by,
                        describe=lambda cell, _: ImageBoard.knowledge(cell))


def _in_frame_order(reports: list, frame: pd.DataFrame) -> list:
    """The reports reordered like the frame's rows (entries_frame sorts by track, then page)."""
    by_dir = {str(r.path): r for r in reports}
    return [by_dir[d] for d in frame["entry_dir"]]
