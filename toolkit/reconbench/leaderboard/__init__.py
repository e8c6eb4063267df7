"""The leaderboard site, generated from `submissions/` at `mkdocs build` time.

One result, from the command line to the web page:

    submissions/<team>/<entry>/result.json
      -> reconbench.submissions.validate_entries   (schema, signature, registry, re-score: trust level)
      -> frame.py     one pandas row per entry (metrics, coverage, taxonomy cell, provenance)
      -> charts.py    Plotly figures (memorization view, quality vs. diversity)
      -> gallery.py   PNG grid: reconstructions above their nearest same-class targets
      -> downloads.py leaderboard.json / .csv, shields.io badge JSON, the result JSON Schema
      -> pages.py     jinja2 (autoescaped) -> Markdown pages with HTML fragments
      -> build.py     all of the above as one `SiteBundle` of in-memory files
      -> hook.py      the MkDocs hook that adds those files to the build (nothing is written to git)

Environment: RECONBENCH_SUBMISSIONS (the submissions folder, default ./submissions beside
mkdocs.yml), RECONBENCH_SITE_RESCORE=0 (skip re-scoring during the build), RECONBENCH_SITE_DEVICE.
"""

from reconbench.leaderboard.build import SiteBundle, build_site

__all__ = ["SiteBundle", "build_site"]
