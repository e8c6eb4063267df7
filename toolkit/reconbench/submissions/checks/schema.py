"""Check 2, schema: team.toml and result.json parse under their strict schemas.

result.json: results.parse_result_json (pydantic, extra="forbid", no NaN/inf, ranges per metric);
the folder must be named by the payload's entry_id. team.toml: team.Team. README.md: UTF-8 text
without control or bidi-override characters (it is shown on the site).
"""

from __future__ import annotations

import unicodedata

from reconbench.core.envelope import RESULT_FILE, ResultError
from reconbench.text.results import parse_any_result
from reconbench.submissions.checks.base import Check, CheckFailed, Context
from reconbench.submissions.layout import README_FILE, SIZE_CAPS, show
from reconbench.submissions.team import TeamError, load_team, read_capped


def _readme(ctx: Context) -> str | None:
    path = ctx.entry_dir / README_FILE
    if not path.exists():
        return None
    try:
        text = read_capped(path, SIZE_CAPS[README_FILE]).decode("utf-8")
    except TeamError as exc:
        raise CheckFailed(str(exc)) from None
    except UnicodeDecodeError as exc:
        raise CheckFailed(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    bad = [c for c in text if unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co") and c not in "\n\r\t"]
    if bad:
        raise CheckFailed(f"{path}: holds control or format characters such as {ascii(bad[0])} "
                          "(bidi overrides and zero-width characters can disguise text)")
    return text


def check(ctx: Context) -> list[Check]:
    try:
        ctx.team = load_team(ctx.team_dir)
    except TeamError as exc:
        raise CheckFailed(str(exc)) from None
    if not ctx.unit.entry_id:
        return [Check("schema", "pass", f"team.toml: '{ctx.team.name}', {len(ctx.team.keys)} key(s)")]
    path = ctx.entry_dir / RESULT_FILE
    try:
        ctx.result = parse_any_result(path, max_bytes=SIZE_CAPS[RESULT_FILE])  # image or text (payload.modality)
    except ResultError as exc:
        raise CheckFailed(str(exc)) from None
    except RecursionError:
        raise CheckFailed(f"{path}: malformed JSON (nested too deeply)") from None
    entry_id = ctx.result.payload.entry_id
    if entry_id != ctx.entry_dir.name:
        raise CheckFailed(f"{path}: payload.entry_id is '{entry_id}' but the folder is named "
                          f"'{show(ctx.entry_dir.name)}' (they must be equal)")
    ctx.readme = _readme(ctx)
    return [Check("schema", "pass", "result.json and team.toml parse under the strict schemas"
                  + (", README.md is plain UTF-8" if ctx.readme is not None else ""))]
