"""The MkDocs hook (mkdocs.yml `hooks:`): `mkdocs build --strict` alone builds the board.

on_config        validate submissions/ and build every generated page in memory (build.py);
                 expand the Leaderboards and Attacks nav entries into sections
on_files         add the generated pages, galleries, downloads and the bundled plotly.min.js as
                 File objects (nothing is written into docs_dir or git), and the repository docs
                 the site publishes as they are (REPO_DOCS: docs/sealed.md, one source for both)
on_post_build    log the end of the build (each stage above logs a progress line: build.StageLog)
on_page_content  put the HTML fragments back into the rendered pages, links made relative; keep
                 entry pages and board tables out of the search index (search.py)

Settings (environment): RECONBENCH_SUBMISSIONS (default: submissions/ beside mkdocs.yml),
RECONBENCH_JUDGEMENTS (judge studies; default: judgements/ beside the submissions folder),
RECONBENCH_SITE_RESCORE=0 to skip re-scoring, RECONBENCH_SITE_DEVICE (default cpu). The build runs one
torch thread and (unless OPENBLAS_NUM_THREADS / MKL_NUM_THREADS say otherwise) one BLAS thread.

Progress: the first line is logged when MkDocs loads this hook, before the toolkit's imports; then one
line per track's reference baselines and one per validated entry, each with the time left at the pace so
far, and one per stage (build.StageLog). An entry whose re-scored outcome is in the validation cache
(submissions/validation_cache.py: authenticated, outside the checkout) is not re-scored: a second build
re-scores only what changed.
"""

from __future__ import annotations

import logging
import os
import re
import time
from pathlib import Path

log = logging.getLogger("mkdocs.hooks.reconbench")  # under "mkdocs": warnings fail --strict
# One BLAS thread (numpy's OpenBLAS reads this when it loads, below): on a busy 2-core machine a second
# thread spins waiting for a core. With the defaults `make site` took 312 CPU-s, with one BLAS and one torch
# thread 186, the same bytes (benchmarks/README.md, issue 45). Torch's threads: one for the whole build
# (build.build_site, on_config). An explicit OPENBLAS_NUM_THREADS / MKL_NUM_THREADS is kept.
for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
# The first progress line, before the imports below (pandas, torch: seconds, tens of seconds on a loaded
# machine): `make site` says at once that it has started (issue 45: nothing for the first 221 s).
log.info("reconbench: the site build starts: loading the toolkit (torch, pandas), then the reference baselines "
         "and each entry's validation, one line each")

from mkdocs.structure.files import File, Files  # noqa: E402

from reconbench.leaderboard.build import SiteBundle, build_site, settings_from_env, usage  # noqa: E402
from reconbench.leaderboard.pages import PLACEHOLDER, docs_url, resolve_links  # noqa: E402
from reconbench.leaderboard.search import for_search, summaries  # noqa: E402

PLOTLY_JS = "assets/javascripts/plotly.min.js"
NAV_SECTIONS = {"leaderboards/index.md": "leaderboards", "attacks/index.md": "attacks",
                "judgements/index.md": "judgements", "matrix/index.md": "matrix", "tracks/index.md": "tracks"}

# Repository docs published on the site from their one copy in docs/ (site path -> path beside mkdocs.yml):
# a newcomer finds the sealed tracks from the home page, the methodology and the nav (issue 45, item 2).
REPO_DOCS = {"sealed.md": "docs/sealed.md"}

_bundle: SiteBundle | None = None
_summaries: dict[str, str] = {}


def plotly_js_path() -> Path:
    """plotly.js as shipped inside the plotly Python package (served from the site, no CDN)."""
    import plotly

    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: plotly.min.js is missing from the plotly package")
    return path


def on_config(config):
    from reconbench.core.threads import one_torch_thread

    with one_torch_thread():  # the stages after build_site (model cards, findings) run torch too
        return _on_config(config)


def _on_config(config):
    global _bundle, _summaries
    start = time.perf_counter()
    root, rescore, device = settings_from_env(Path(config.config_file_path).parent / "submissions")
    _bundle = build_site(root, rescore=rescore, device=device, site_url=config.site_url)
    from reconbench.leaderboard.judgements import add_to_bundle  # judge studies (reconbench.judge)
    from reconbench.leaderboard import defenses, findings, track_cards  # model cards; SoK findings; Table 10

    conditions = Path(config.config_file_path).parent / findings.CONDITIONS
    for stage, add in (("judge studies", lambda b: add_to_bundle(b, root)), ("model cards", track_cards.add_to_bundle),
                       ("findings page and its charts", lambda b: findings.add_to_bundle(b, conditions)),
                       ("defenses view", defenses.add_to_bundle)):
        t0 = time.perf_counter()
        add(_bundle)
        _bundle.timings[stage] = time.perf_counter() - t0  # logged as it is recorded (build.StageLog)
    _summaries = summaries(_bundle.frame)
    phases = ", ".join(f"{k} {v:.2f} s" for k, v in _bundle.timings.items() if k != "total")
    log.info("reconbench: %d entries from %s (re-score %s) in %.2f s (%s)", len(_bundle.frame), root,
             "on" if rescore else "off", time.perf_counter() - start, phases)
    config.nav = _expand_nav(config.nav, _bundle) if config.nav else config.nav
    return config


def _expand_nav(nav: list, bundle: SiteBundle) -> list:
    """`- Leaderboards: leaderboards/index.md` -> a section: the combined view, then one per track (at any
    depth: Judge studies sit under Findings)."""
    out = []
    for item in nav:
        if isinstance(item, dict) and len(item) == 1:
            (title, value), = item.items()
            if isinstance(value, str) and value in NAV_SECTIONS:
                out.append({title: [_nav_item(item) for item in bundle.nav[NAV_SECTIONS[value]]]})
                continue
            if isinstance(value, list):
                out.append({title: _expand_nav(value, bundle)})
                continue
        out.append(item)
    return out


def _nav_item(item: tuple) -> dict:
    title, target = item
    return {title: target if isinstance(target, str) else [_nav_item(i) for i in target]}


def on_files(files: Files, config):
    assert _bundle is not None, "on_config runs first"
    for path, content in _bundle.files.items():
        if files.get_file_from_path(path) is not None:
            log.warning("reconbench: %s is generated at build time; remove the copy from %s", path, config.docs_dir)
            files.remove(files.get_file_from_path(path))
        files.append(File.generated(config, path, content=content))
    root = Path(config.config_file_path).parent
    for path, source in REPO_DOCS.items():
        if files.get_file_from_path(path) is None:
            files.append(File.generated(config, path, content=(root / source).read_text(encoding="utf-8")))
    if files.get_file_from_path(PLOTLY_JS) is None:
        files.append(File.generated(config, PLOTLY_JS, abs_src_path=str(plotly_js_path())))
    return files


def on_pre_build(config):
    log.info("reconbench: MkDocs renders the pages (%s)", usage())


def on_post_build(config):
    log.info("reconbench: site written to %s (%s)", config.site_dir, usage())


def on_page_content(html: str, page, config, files):
    assert _bundle is not None
    src = page.file.src_uri
    return for_search(_insert_fragments(html, page, config), src, _summaries.get(src))


def _insert_fragments(html: str, page, config) -> str:
    if "rb:" not in html:
        return html
    use_dir = config.use_directory_urls

    def url_of(path: str) -> str:
        return docs_url(path, use_dir)

    def insert(match: re.Match) -> str:
        key = match.group(1)
        fragment = _bundle.fragments.get(key)
        if fragment is None:
            log.warning("reconbench: %s has a placeholder <!-- rb:%s --> that nothing generates", page.file.src_uri, key)
            return ""
        return resolve_links(fragment, url_of, page.url)

    return PLACEHOLDER.sub(insert, html)
