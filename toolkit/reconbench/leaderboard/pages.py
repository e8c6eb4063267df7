"""jinja2 templates -> the site's generated Markdown pages and HTML fragments.

Escaping. Every template is rendered with autoescape on, so contributor text (team names, links,
notes, commands, check messages) is HTML-escaped. Contributor text must also never reach the
Markdown processor (Python-Markdown has no sanitiser: `[x](javascript:…)` would become a link, and
its preprocessors run even inside raw HTML). So a template marks its HTML with
`<!--rb:html-->…<!--/rb:html-->`; `split_fragments` cuts those regions out, leaves an HTML comment
placeholder in the Markdown, and the hook puts the fragment back into the page *after* Markdown
(hook.on_page_content). Only trusted text (registry names, headings) is Markdown.

An entry's README is Markdown from a contributor: it is rendered with markdown-it-py with raw
HTML off (tags come out as text), images off (no third-party requests) and markdown-it's link
validation (no javascript:/vbscript:/file:/data: URLs).

Links between pages are written `href="rb:/<path in docs_dir>"` and resolved relative to the
page that shows them when the fragment is inserted (`resolve_links`), so templates need not know
where a page ends up (use_directory_urls or not).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable

import pandas as pd
from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from reconbench.core.redact import no_machine_paths
from reconbench.leaderboard.frame import BOARD_METRICS, LABELS, attack_page
from reconbench.core.labels import labels_wrong
from reconbench.image.metrics import METRICS

FRAGMENT = re.compile(r"<!--rb:html-->(.*?)<!--/rb:html-->", re.S)
PLACEHOLDER = re.compile(r"<!--\s*rb:([A-Za-z0-9_./#-]+)\s*-->")
LINK = re.compile(r'(href|src)="rb:/([^"#?]*)([^"]*)"')
README_LIMIT = 50_000  # characters shown of an entry's README

# What each value of each axis of Definition 3.1 hands the attacker (knowledge.py builds these views).
KNOWLEDGE = {
    "static": "the target model after training on D_tar (the whole training set is the target)",
    "dynamic": "the model before and after an update on D_tar (the update set is the target)",
    "white-box": "the model itself: architecture, parameters and gradients",
    "black-box": "a query function only: output probabilities, every queried image counted",
    "none": "no auxiliary data",
    "similar": "auxiliary data of a similar distribution, disjoint from D_tar",
    "same": "auxiliary data of the same distribution, disjoint from D_tar",
}
TRUST_TEXT = {
    "signed": "schema, signature, registered team key and pinned target hashes check out",
    "re-scored": "CI recomputed every metric from the submitted reconstructions and got the claimed numbers",
    "reproduced": "someone else re-ran the attack from the recorded code, seed and config, within tolerance",
    "failed": "validation failed: not ranked",
    "held": "held: near-copies of public images, exact copies of its own targets, or near-duplicates of an earlier "
            "entry; shown with the evidence, not ranked until reproduced. A replicate (the same attack, settings "
            "and seed as an earlier entry, other images) is listed beside it and never ranked: its setting ranks once",
}


def split_fragments(text: str, key_prefix: str) -> tuple[str, dict[str, str]]:
    """Cut the marked HTML regions out of rendered template text; return (markdown, fragments)."""
    fragments: dict[str, str] = {}

    def stash(match: re.Match) -> str:
        key = f"{key_prefix}#{len(fragments)}"
        fragments[key] = match.group(1).strip()
        return f"\n\n<!-- rb:{key} -->\n\n"

    return FRAGMENT.sub(stash, text), fragments


def resolve_links(fragment: str, url_of: Callable[[str], str], page_url: str) -> str:
    """`rb:/path` -> the URL of that docs path relative to the page at `page_url`."""
    from mkdocs.utils import get_relative_url

    def repl(match: re.Match) -> str:
        target = url_of(match.group(2))
        return f'{match.group(1)}="{html.escape(get_relative_url(target, page_url), quote=True)}{match.group(3)}"'

    return LINK.sub(repl, fragment)


def docs_url(path: str, use_directory_urls: bool) -> str:
    """The URL MkDocs gives a docs_dir path (pages: foo.md -> foo/ or foo.html; assets: as is)."""
    if not path.endswith(".md"):
        return path
    stem = path[:-3]
    if stem == "index" or stem.endswith("/index"):
        stem = stem[: -len("index")]
        return stem if use_directory_urls else stem + "index.html"
    return stem + "/" if use_directory_urls else stem + ".html"


# ---------------------------------------------------------------- template helpers (filters)

def external_url(url) -> str | None:
    """A contributor's link, kept only when it is http(s) (no javascript:, data:, relative paths)."""
    text = str(url or "").strip()
    return text if re.match(r"^https?://\S+$", text, re.I) else None  # autoescape guards the attribute


def metric_cell(row: pd.Series, metric: str) -> str:
    value = row.get(metric)
    if value is None or pd.isna(value):
        return "n/a"
    cov = row.get(f"{metric}_coverage")
    wrong = labels_wrong(row.get(f"{metric}_note"))
    if wrong is not None:  # reconstructions of a class the targets lack: a count apart, not worst-value quality
        quality = wrong.quality(float(value))
        kept = wrong.total - wrong.count
        text = f"{quality:.3f} on {kept} of {wrong.total}" if quality is not None else f"{value:.3f}"
        if cov is not None and pd.notna(cov):
            text += f" ({100 * cov:.2f}%)"
        return text + f" · {wrong.count} label wrong"
    text = f"{value:.3f}"
    std = row.get(f"{metric}_std")
    if std is not None and pd.notna(std):  # a seed group (leaderboard/seeds.py): mean ± std
        text += f" ± {std:.3f}"
    if cov is not None and pd.notna(cov):
        text += f" ({100 * cov:.2f}%)"
    return text


def claimed_cell(row: pd.Series, metric: str) -> str:
    """A claimed (unverified) value: same format, from the `_claimed` columns."""
    return metric_cell({metric: row.get(f"{metric}_claimed"), f"{metric}_coverage": row.get(f"{metric}_claimed_coverage")},
                       metric)


def sort_value(value) -> str:
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return ""
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    return str(value)


def date_text(value) -> str:
    return "" if value is None or pd.isna(value) else value.strftime("%Y-%m-%d")


def rb_link(path: str) -> str:
    return "rb:/" + path


def render_readme(text: str | None) -> Markup | None:
    """Contributor Markdown -> safe HTML (see the module docstring)."""
    if not text:
        return None
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable("table").disable("image")
    tokens = md.parse(text[:README_LIMIT])
    for token in tokens:  # the README sits under the page's "README" heading (h2): # -> h3 ... h6
        if token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(6, int(token.tag[1]) + 2)}"
        for child in token.children or ():
            if child.type == "link_open":  # contributor links: no endorsement, no window.opener
                child.attrSet("rel", "nofollow ugc noopener")
    rendered = md.renderer.render(tokens, md.options, {})
    # markdown-it escapes text and drops unsafe URLs; the output holds only its own tags.
    return Markup(rendered)


# An absolute path of the machine that ran or validated an entry (a cache, a home folder): never
# published. URLs are left alone (their slashes follow "://" or a host name).
def no_paths(text) -> str:
    """Text for a public page with every absolute local path cut to its last part (core/redact.py)."""
    return no_machine_paths(text)


def merged_checks(checks) -> list[dict]:
    """The validation report as a page shows it: consecutive checks of one stage with the same status
    and the same message (after the metric's own name) on one line, e.g. FID and the four PRDC values
    not computable here for one missing file; no machine paths."""
    lines: list[dict] = []
    for c in checks:
        message = no_paths(re.sub(r"\((?:[\w -]+): not computed \(", "(", c.message))
        stage = c.name.split(".")[0]
        last = lines[-1] if lines else None
        if last and last["stage"] == stage != c.name and last["status"] == c.status and last["message"] == message:
            last["names"].append(c.name)
            continue
        lines.append(dict(stage=stage, status=c.status, names=[c.name], message=message))
    return lines


def not_computed(metrics: dict) -> list[dict]:
    """Metrics a result could not compute, grouped by why (one line each on the entry page)."""
    from reconbench.leaderboard.cells import reason

    groups: dict[str, list[str]] = {}
    for name in metric_order(metrics):
        m = metrics[name]
        if m.value is None:
            groups.setdefault(reason([m.note or ""], "this entry"), []).append(LABELS.get(name, name))
    return [dict(names=names, reason=why) for why, names in groups.items()]


def metric_order(metrics: dict) -> list[str]:
    """The registry's order (METRICS), then any other names a result carries."""
    return [m for m in METRICS if m in metrics] + sorted(m for m in metrics if m not in METRICS)


def pretty_json(value) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)


def caveated(metrics) -> list[str]:
    """The metrics of a table whose header carries a footnote (MetricInfo.caveat), in column order."""
    return [m for m in metrics if m in METRICS and METRICS[m].caveat]


def footnotes(metrics) -> list[list[str]]:
    """The caveated metrics grouped by their footnote's text, in column order: Acc@1 and Acc@5 share one
    footnote (the same caveat), instead of the same paragraph printed twice."""
    groups: dict[str, list[str]] = {}
    for m in caveated(metrics):
        groups.setdefault(METRICS[m].caveat, []).append(m)
    return list(groups.values())


def footnote_number(metric: str, metrics) -> int:
    """The mark of `metric`'s footnote among those of a table of `metrics` (footnotes)."""
    return next(i for i, group in enumerate(footnotes(metrics), 1) if metric in group)


def caveat_for(metric: str, tracks=()) -> str:
    """A metric column's footnote for the tracks its table shows: SSIM's names the valid window the
    images of those tracks get (7x7 on 8x8 digits, 11x11 on 32x32 Fashion), not one typed size."""
    from reconbench.core.tracks import all_tracks
    from reconbench.image.metrics.info import ssim_convention

    if metric != "ssim" or not tracks:
        return METRICS[metric].caveat
    sizes = [tuple(t.input_shape[1:]) for t in all_tracks() if t.id in set(tracks) and hasattr(t, "input_shape")]
    return ssim_convention(sizes)


def make_env() -> Environment:
    env = Environment(
        loader=PackageLoader("reconbench.leaderboard", "templates"),
        autoescape=True,  # every template: all output ends up as HTML
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(metric=metric_cell, claimed=claimed_cell, sortval=sort_value, date=date_text, link=rb_link,
                       attack_page=attack_page, external=external_url, pretty_json=pretty_json, caveated=caveated, footnotes=footnotes,
                       no_paths=no_paths, merged_checks=merged_checks, not_computed=not_computed)
    from reconbench.text.board import TEXT_INFO, TEXT_LABELS, visible

    env.filters.update(visible=visible)  # contributor text in text tables: controls and bidi shown, capped
    # The text metrics join the lookups the shared macros use (board columns, ↑/↓); image pages never list them.
    from reconbench.leaderboard.leakage import (BY_KEY, EXTRACTS_TEXT, LEAK_LABELS, ORDER, ORDER_WHY, SIGNIFICANCE_RULE,
                                                RECOVERS_TEXT, TIERS, VERDICT_TEXT, count_p, count_text, gap_metrics, held_to,
                                                recovery_p, recovery_text, tier_held,
                                                lift_metric, tier_rank)
    from reconbench.core.membership import ALPHA

    # the verdict tiers' words and what they mean (core/verdict.py): every template shows a verdict through them
    env.globals.update(VERDICT_TEXT=VERDICT_TEXT, SIGNIFICANCE_RULE=SIGNIFICANCE_RULE, EXTRACTS_TEXT=EXTRACTS_TEXT,
                       TIERS=TIERS, TIER_BY_KEY=BY_KEY, TIER_ORDER=ORDER, ORDER_WHY=ORDER_WHY, count_p=count_p,
                       held_to=held_to, tier_rank=tier_rank, count_text=count_text, ALPHA=ALPHA,
                       RECOVERS_TEXT=RECOVERS_TEXT, recovery_p=recovery_p, recovery_text=recovery_text,
                       tier_held=tier_held)
    env.filters.update(gap_metrics=gap_metrics, lift_metric=lift_metric)
    env.globals.update(METRICS={**METRICS, **TEXT_INFO}, LABELS={**LEAK_LABELS, **LABELS, **TEXT_LABELS}, BOARD_METRICS=BOARD_METRICS,
                       KNOWLEDGE=KNOWLEDGE,
                       TRUST_TEXT=TRUST_TEXT, readme=render_readme, notna=pd.notna,
                       metric_order=metric_order, caveat_for=caveat_for, footnote_number=footnote_number)
    return env


class Pages:
    """Renders generated pages; collects (markdown per docs path, fragments by key)."""

    def __init__(self):
        self.env = make_env()
        self.markdown: dict[str, str] = {}
        self.fragments: dict[str, str] = {}

    def page(self, path: str, template: str, **context) -> None:
        text = self.env.get_template(template).render(page_path=path, **context)
        markdown, fragments = split_fragments(text, path)
        self.markdown[path] = markdown
        self.fragments.update(fragments)

    def fragment(self, key: str, template: str, **context) -> None:
        """A named fragment for a hand-written page (`<!-- rb:KEY -->` in site/*.md)."""
        self.fragments[key] = self.env.get_template(template).render(**context).strip()
