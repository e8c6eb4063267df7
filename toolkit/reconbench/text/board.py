"""The text part of the site: one board per text track, an entry page per text entry, text exports.

Text entries (payload.modality "text") share the validator, the trust levels and the rule that only
verified values rank, but not the image columns (no FID, no coverage): they get a frame of their own
with the text metrics (bleu, rouge_l, similarity, exact_match; all ↑). The board is ordered by the
first of TEXT_RANK_PREFERENCE that a ranked entry has verified: BLEU, the metric Vec2Text and the
SoK's Tables 9/12 lead with.

Entry pages show a table of targets beside their reconstructions: the first TABLE_ROWS ids, with
the whole reconstructions.jsonl published beside the page for download. Every text is contributor
data (or corpus data): it is autoescaped like all template output, control and format characters
(bidi overrides, zero-width joiners) are shown as \\uXXXX escapes so they cannot reorder or hide
what is shown, and each cell is cut at CELL_CHARS characters.
"""

from __future__ import annotations

import html
import json
import unicodedata
from functools import lru_cache

import pandas as pd

from reconbench.leaderboard import leakage, leakage_view
from reconbench.leaderboard.frame import TRUST_RANK, UNRANKED, entry_folder, entry_page
from reconbench.core.attack_source import own_attack_label
from reconbench.core.report import MetricInfo
from reconbench.submissions.identity import shown

TEXT_METRICS = ("bleu", "rouge_l", "similarity", "exact_match")
TEXT_RANK_PREFERENCE = TEXT_METRICS
TEXT_LABELS = {"bleu": "BLEU", "rouge_l": "ROUGE-L", "similarity": "Similarity", "exact_match": "Exact match"}
# Shown with the column headers and on the methodology page; what reconbench.text.metrics computes.
TEXT_INFO = {
    "bleu": MetricInfo("bleu", "corpus BLEU of the reconstructions against their own targets (sacrebleu), / 100",
                       "[0, 1]", "↑", "sample", "Papineni et al., ACL 2002; Post, WMT 2018 (sacrebleu)"),
    "rouge_l": MetricInfo("rouge_l", "mean ROUGE-L F-measure of each reconstruction against its own target (rouge-score)",
                          "[0, 1]", "↑", "sample", "Lin, ACL 2004 workshop"),
    "similarity": MetricInfo("similarity", "mean cosine similarity of all-MiniLM-L6-v2 embeddings of each reconstruction "
                             "and its own target", "[-1, 1]", "↑", "sample", "SoK App. B; Reimers & Gurevych 2019"),
    "exact_match": MetricInfo("exact_match", "share of reconstructions equal to their own target", "[0, 1]", "↑",
                              "sample", "verbatim memorisation (Carlini et al. 2021)"),
}
# What each taxonomy value hands a text attacker (reconbench.text.knowledge), per target role.
TEXT_KNOWLEDGE = {
    "static": "the target model after training on D_tar (the track's target split)",
    "white-box": "the model itself, besides its outputs",
    "black-box": {"generator": "a counted query function: greedy continuations of prompts",
                  "embedder": "a counted query function: embeddings of texts; the targets' embeddings leaked"},
    "none": "no auxiliary texts (Complete: the first words of each target as its prompt)",
    "similar": "auxiliary texts of a similar distribution, disjoint from D_tar",
    "same": "auxiliary texts of the same distribution (the aux split), disjoint from D_tar",
}
TABLE_ROWS = 50
CELL_CHARS = 1000
RECONSTRUCTIONS_DOWNLOAD = "reconstructions.jsonl"

TEXT_COLUMNS = [
    "team", "team_name", "entry_id", "entry_dir", "page", "trust", "trust_rank", "track", "dataset", "train_size",
    "target_size", "scenario", "training", "access", "data", "role", "attack", "attack_version", "family", "paper",
    "code", "registered", "date", "toolkit_version", "git_commit", "git_dirty", "seed", "device", "hardware",
    "command", "wall_seconds", "queries", "count", "attack_label", "held_reason", "position",
] + [f"{m}{s}" for m in TEXT_METRICS for s in ("", "_claimed", "_note")] + leakage.COLUMNS
TEXT_EXPORT = [c for c in TEXT_COLUMNS if c not in ("entry_dir", "page", "trust_rank", "attack_label", "membership")]


def visible(text) -> str:
    """Text as it can be shown: control/format/private-use characters as \\uXXXX (newlines as ⏎), capped."""
    text = str(text)
    cut = len(text) > CELL_CHARS
    out = []
    for c in text[:CELL_CHARS]:
        if c == "\n":
            out.append("⏎ ")
        elif unicodedata.category(c) in ("Cc", "Cf", "Co", "Cs", "Zl", "Zp"):
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    return "".join(out) + (" …" if cut else "")


def _tracks() -> dict:
    from reconbench.text.tracks import all_text_tracks
    from reconbench.core.tracks import TrackError

    try:
        return {t.id: t for t in all_text_tracks()}
    except TrackError:
        return {}


def text_frame(reports) -> pd.DataFrame:
    """Text EntryReports -> one row each (failed ones keep a row without metrics), as entries_frame does."""
    from reconbench.core.catalogue import BY_NAME, TEXT_BY_NAME

    try:
        from reconbench.text.attacks import TEXT_ATTACKS
    except ImportError:  # a toolkit without the text attacks: every text entry failed validation anyway
        TEXT_ATTACKS = {}
    tracks = _tracks()
    rows = []
    for report in reports:
        result, team_info = report.result, report.team_info
        row = dict.fromkeys(TEXT_COLUMNS, None)
        p, prov = result.payload, result.payload.provenance
        training, access, data = p.scenario.split("/")
        track = tracks.get(p.track)
        registered = p.attack.name in TEXT_ATTACKS
        linked = p.attack.name in TEXT_BY_NAME or p.attack.name in BY_NAME  # built in: it has an attack page
        row.update(
            team=str(report.team), team_name=shown(team_info.name) if team_info is not None else str(report.team),
            entry_id=str(report.entry_id), entry_dir=str(report.path), page=entry_page(str(report.team), str(report.entry_id)),
            trust=str(report.trust), trust_rank=TRUST_RANK.get(str(report.trust), 0), track=p.track,
            dataset=track.dataset if track else None, train_size=track.train_size if track else None,
            target_size=track.split_sizes.get("target") if track else None,
            scenario=p.scenario, training=training, access=access, data=data, role=p.role, attack=p.attack.name,
            attack_version=p.attack.version, family=p.attack.family, paper=p.attack.paper, code=p.attack.code,
            registered=linked, date=pd.Timestamp(prov.finished).tz_convert("UTC") if prov.finished.tzinfo
            else pd.Timestamp(prov.finished, tz="UTC"),
            toolkit_version=prov.toolkit_version, git_commit=prov.git_commit, git_dirty=prov.git_dirty, seed=prov.seed,
            device=prov.device, hardware=prov.hardware, command=prov.command, wall_seconds=prov.wall_seconds,
            queries=prov.queries, count=p.reconstructions.count,
            attack_label=p.attack.name if registered else own_attack_label(p.attack.code, p.attack.name, report.team),
            held_reason=getattr(report, "held_reason", None),
        )
        verified = set(getattr(report, "verified", ()) or ())
        for name, metric in (p.metrics.items() if row["trust"] != "failed" else ()):
            if name in TEXT_METRICS and metric.status == "computed" and metric.value is not None:
                row[f"{name}_claimed"] = float(metric.value)
                if name in verified:
                    row[name] = float(metric.value)
            if name in TEXT_METRICS:
                row[f"{name}_note"] = metric.note
        leakage.fill_row(row, report, p, lambda _: track.holdout_set_sha256 if track is not None else None)
        if row["trust"] == "held":  # held is held everywhere (issue 43): listed with its numbers, no verdict, no badge
            row.update(leaks=None, tier=None, verdict=None, verdict_p=None, extracts=None)
        rows.append(row)
    frame = leakage.typed(pd.DataFrame(rows, columns=TEXT_COLUMNS))
    for m in TEXT_METRICS:
        frame[m] = frame[m].astype(float)
        frame[f"{m}_claimed"] = frame[f"{m}_claimed"].astype(float)
    frame["date"] = pd.to_datetime(frame["date"], utc=True)
    return frame.sort_values(["track", "page"], kind="stable").reset_index(drop=True)


def text_rank_metric(rows: pd.DataFrame) -> str | None:
    ranked = rows[~rows["trust"].isin(UNRANKED)]
    return next((m for m in TEXT_RANK_PREFERENCE if ranked[m].notna().any()), None)


def sort_text_board(rows: pd.DataFrame) -> pd.DataFrame:
    """Ranked rows (verified value of the rank metric, not held or failed) first, in the boards' order of
    evidence (leakage.by_evidence: verdict tier, the lead gap's lower bound, then the rank metric); then the rest."""
    metric = text_rank_metric(rows)
    can_rank = ~rows["trust"].isin(UNRANKED) & (rows[metric].notna() if metric else False)
    top = leakage.by_evidence(rows[can_rank], [metric, "trust_rank", "date"], [False, False, False]) \
        if metric else rows.iloc[0:0]
    rest = rows[~can_rank].sort_values(["trust_rank", "date"], ascending=[False, False], kind="stable")
    out = pd.concat([top, rest])
    out["position"] = pd.array(list(range(1, len(top) + 1)) + [pd.NA] * len(rest), dtype="Int64")
    return out


def text_figure(rows: pd.DataFrame, track_id: str):
    """Grouped bars: the verified text metrics of each ranked entry (higher = stronger attack)."""
    import plotly.graph_objects as go

    ranked = rows[rows["position"].notna()]
    if ranked.empty:
        return None
    labels = [f"#{int(r['position'])} {html.escape(str(r['attack_label']))} · {html.escape(str(r['team_name']))}"
              for _, r in ranked.iterrows()]
    fig = go.Figure()
    for m in TEXT_METRICS:
        fig.add_trace(go.Bar(name=TEXT_LABELS[m], x=labels, y=ranked[m].tolist(),
                             hovertemplate="%{x}<br>" + TEXT_LABELS[m] + " %{y:.3f}<extra></extra>"))
    fig.update_layout(barmode="group", title=dict(text=f"Verified text metrics ({html.escape(track_id)}; ↑ higher is better)"),
                      yaxis=dict(title=dict(text="value in [0, 1] (↑)"), range=[0, 1]), height=420,
                      plot_bgcolor="white", paper_bgcolor="white", legend=dict(title=dict(text="metric")))
    return fig


@lru_cache(maxsize=4)
def _targets(track_id: str) -> dict[str, str]:
    """id -> target text of a text track's target split (public data), {} when it cannot be loaded."""
    from reconbench.text.files import load_text_splits
    from reconbench.text.tracks import get_text_track

    try:
        split = load_text_splits(get_text_track(track_id), ["target"])["target"]
    except Exception:  # noqa: BLE001 - the page then shows the reconstructions alone
        return {}
    return dict(zip(split.ids, split.texts))


def text_table(report, row: dict, files: dict) -> dict | None:
    """The first TABLE_ROWS (target, reconstruction) pairs, and the full file published beside the page."""
    from reconbench.text.jsonl import TextFileError, read_jsonl
    from reconbench.text.results import TEXT_RECONSTRUCTIONS_FILE

    if row["trust"] == "failed":
        return None
    try:
        recs = read_jsonl(report.path / TEXT_RECONSTRUCTIONS_FILE)
    except TextFileError:
        return None
    download = f"{entry_folder(row['team'], row['entry_id'])}/{RECONSTRUCTIONS_DOWNLOAD}"
    files[download] = (report.path / TEXT_RECONSTRUCTIONS_FILE).read_bytes()
    targets = _targets(row["track"])
    shown = [dict(id=visible(i.id), target=visible(targets.get(i.id, "")), text=visible(i.text),
                  exact=targets.get(i.id) == i.text) for i in recs.items[:TABLE_ROWS]]
    return dict(rows=shown, total=len(recs), download=download, has_targets=bool(targets))


def cell_tables(rows: pd.DataFrame, by=("scenario",)) -> list[dict]:
    """The text boards' tables: one ranking per taxonomy cell, as the image boards (leaderboard/cells.py)."""
    from reconbench.leaderboard import cells

    return cells.groups(rows, sort_text_board, TEXT_METRICS, TEXT_LABELS, text_rank_metric, by=by, describe=_knowledge)


def _knowledge(cell: str, rows: pd.DataFrame) -> str:
    role = rows["role"].dropna().iloc[0] if len(rows) and rows["role"].notna().any() else None
    return knowledge_text(cell, role)


def knowledge_text(cell: str, role: str | None) -> str:
    """What a text attacker is given in this cell (the black-box query depends on the role attacked)."""
    training, access, data = cell.split("/")
    told = TEXT_KNOWLEDGE.get(access, access)
    return "; ".join([TEXT_KNOWLEDGE.get(training, training), told.get(role, "") if isinstance(told, dict) else told,
                      TEXT_KNOWLEDGE.get(data, data)])


class TextBoard:
    """The text modality's board (its plug-in hands it to leaderboard/build.py): a board per text track,
    the entry pages with targets beside reconstructions, and the text downloads."""

    def __init__(self, reports: list, *, rescore: bool, galleries: bool, site_url: str | None, timings: dict):
        self.reports = reports
        self.frame = text_frame(reports) if reports else pd.DataFrame(columns=TEXT_COLUMNS)

    def attack_tables(self, attack: str) -> list[dict]:
        """A text attack's page: its listed entries, one table per (track, cell)."""
        if self.frame.empty:
            return []
        rows = self.frame[(self.frame["trust"] != "failed") & (self.frame["attack"] == attack)]
        return cell_tables(rows, by=("track", "scenario"))

    knowledge = staticmethod(knowledge_text)

    def add_boards(self, pages, files: dict, nav: dict) -> None:
        from reconbench.leaderboard import cells
        from reconbench.leaderboard.charts import chart_html

        frame = self.frame
        frame["position"] = pd.array([pd.NA] * len(frame), dtype="Int64")
        listed = frame[frame["trust"] != "failed"]
        for track in _tracks().values():
            if track.status == "unpublished" and not (frame["track"] == track.id).any():
                continue
            rows = sort_text_board(listed[listed["track"] == track.id])
            tables = cell_tables(rows)
            cells.place_positions(frame, tables)  # the place in its cell's ranking (exports)
            pages.page(f"leaderboards/{track.id}.md", "text_leaderboard.md.j2", track=track, rows=rows, groups=tables,
                       board_prefix=f"board-{track.id}", show_track=False, show_attack=True,
                       ranked_count=sum(t["ranked_count"] for t in tables),
                       failed=int(((frame["track"] == track.id) & (frame["trust"] == "failed")).sum()),
                       chart=chart_html(text_figure(rows, track.id), f"chart-text-{track.id}"))
            nav["leaderboards"].append((track.id, f"leaderboards/{track.id}.md"))

    def add_entries(self, pages, files: dict, nav: dict, catalogue: list[dict]) -> None:
        """The entry pages, the text downloads and the methodology page's text-metric table."""
        from reconbench.leaderboard.reproduction import record_for
        from reconbench.text.metrics import TEXT_METRICS as METRIC_INFO  # the table only: no scoring library

        frame = self.frame
        for report, row in zip(_in_order(self.reports, frame), frame.to_dict("records")):
            knowledge = [TEXT_KNOWLEDGE[row["training"]], _access(row), TEXT_KNOWLEDGE[row["data"]]]
            record = record_for(row)  # a reproduced entry's signed record, published beside its page (as for images)
            if record is not None:
                files[record[0]] = record[1]
            pages.page(row["page"], "text_entry.md.j2", row=row, knowledge=knowledge, result=report.result,
                       checks=list(report.checks or []), reproduction=record[2] if record else None,
                       title=row["page"].split("/")[-2], table=text_table(report, row, files),
                       evidence=getattr(report, "evidence", None) or None, team_name=row["team_name"],
                       team_links=list(getattr(report.team_info, "links", None) or []),
                       team_contact=getattr(report.team_info, "contact", None), readme_text=getattr(report, "readme", None),
                       leakage=leakage_view.entry_view(report, row, TEXT_LABELS) if row["trust"] != "failed" else None)
        files.update(text_exports(frame))
        pages.fragment("text-metric-table", "fragments/text_metric_table.html.j2", metrics=METRIC_INFO)


def _access(row: dict) -> str:
    told = TEXT_KNOWLEDGE[row["access"]]
    return told.get(row["role"], "") if isinstance(told, dict) else told


def _in_order(reports: list, frame: pd.DataFrame) -> list:
    by_dir = {str(r.path): r for r in reports}
    return [by_dir[d] for d in frame["entry_dir"]]


def text_exports(frame: pd.DataFrame) -> dict[str, str]:
    """downloads/text-leaderboard.json and .csv (CSV cells that a spreadsheet reads as formulas neutralised)."""
    from reconbench.leaderboard.downloads import DOWNLOADS_DIR, neutralised_csv, plain

    doc = {
        "schema_version": 1,
        "description": "All ReconBench text entries (failed ones included, without metrics); <m> is the verified value "
                       "(the only one that ranks), <m>_claimed the claimed one. Each reconstruction is scored against "
                       "its own target; all metrics are in [0, 1], higher = stronger attack.",
        "metrics": {m: {"direction": TEXT_INFO[m].direction, "range": TEXT_INFO[m].range, "definition": TEXT_INFO[m].formula}
                    for m in TEXT_METRICS},
        "entries": [{c: plain(r[c]) for c in TEXT_EXPORT} for _, r in frame.iterrows()],
    }
    from reconbench.text.results import text_result_json_schema

    return {f"{DOWNLOADS_DIR}/text-leaderboard.json": json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False) + "\n",
            f"{DOWNLOADS_DIR}/text-leaderboard.csv": neutralised_csv(frame, TEXT_EXPORT),
            f"{DOWNLOADS_DIR}/text-result.schema.json": json.dumps(text_result_json_schema(), indent=2) + "\n"}
