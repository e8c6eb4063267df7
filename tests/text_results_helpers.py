"""Text result folders made from known texts (no attack run): what evaluate_text writes, signed with a test key.

`make_text_result` builds the payload exactly as reconbench.text.evaluation does after an attack
returns; tests use it to forge and tamper with entries without running an attack.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from reconbench.core.report import MetricResult
from reconbench.core.envelope import Provenance, TargetIdentity, make_entry_id
from reconbench.core.signing import load_private_key
from reconbench.text.items import TextItem
from reconbench.text.results import TextAttackInfo, TextPayload, reconstructions_info, sign_text_result, write_text_result_dir

ZERO = "0" * 64


def make_text_result(out: Path, key_path: Path, pairs, *, track: str = "lee-news", attack: str = "complete",
                     scenario: str = "static/black-box/none", role: str = "generator", metrics: dict | None = None,
                     model_sha256: str = ZERO, target_set_sha256: str = ZERO, code: str | None = None,
                     family: str = "extraction", finished: datetime | None = None, entry_id: str | None = None):
    items = tuple(TextItem(i, t) for i, t in pairs)
    info = reconstructions_info(items)
    finished = finished or datetime.now(timezone.utc)
    started = finished - timedelta(seconds=2)
    values = metrics if metrics is not None else {"bleu": 0.25, "rouge_l": 0.5, "similarity": 0.75, "exact_match": 0.0}
    payload = TextPayload(
        entry_id=entry_id or make_entry_id(track, attack, started, info.sha256),
        track=track, scenario=scenario, role=role,
        attack=TextAttackInfo(name=attack, version="1", family=family, paper="a paper",
                          code=code or f"reconbench.text.attacks.{attack}:{attack.title()}", config={}, budget="default"),
        target=TargetIdentity(model_sha256=model_sha256, target_set_sha256=target_set_sha256),
        metrics={k: v if isinstance(v, MetricResult) else MetricResult(value=v, status="computed") for k, v in values.items()},
        reconstructions=info,
        provenance=Provenance(toolkit_version="test", python="3", torch="2", device="cpu", hardware="test", seed=0,
                              command="recon-submit evaluate --track lee-news", started=started, finished=finished,
                              wall_seconds=2.0, queries=len(items) if "black-box" in scenario else None),
    )
    result = sign_text_result(payload, load_private_key(key_path))
    write_text_result_dir(out, result, items)
    return result


def submitted_text_entry(work: Path, subs: Path, team: str, key: Path, texts, *, name: str | None = None,
                         attack: str = "complete", score: bool = True) -> Path:
    """A text entry on the real lee-news target split, honestly scored (reconbench.text.metrics) and
    submitted as `recon-submit submit` does. `texts(target_texts) -> reconstruction texts`.
    score=False: placeholder metrics (for an entry a test breaks before its metrics matter)."""
    from reconbench.submissions.submit import submit_result
    from reconbench.text.files import load_text_splits, model_sha256
    from reconbench.text.evaluation import score_pairs
    from reconbench.text.tracks import get_text_track

    track = get_text_track("lee-news")
    target = load_text_splits(track, ["target"])["target"]
    recs = list(texts(target.texts))
    role, scenario = ("generator", "static/black-box/none") if attack == "complete" else ("embedder", "static/black-box/same")
    import tempfile

    out = Path(tempfile.mkdtemp(prefix=f"text-run-{team}-{attack}-", dir=work)) / "result"
    make_text_result(out, key, list(zip(target.ids, recs)), attack=attack, role=role, scenario=scenario,
                     family="extraction" if attack == "complete" else "training",
                     metrics=score_pairs(recs, target.texts) if score else None, model_sha256=model_sha256(track, role),
                     target_set_sha256=target.sha256)
    return submit_result(out, team, root=subs, key_path=key, team_name=name).entry


HOSTILE_TEXTS = ('<script>window.__xss=1</script>', '<img src=x onerror="window.__xss=1">', '=HYPERLINK("http://x","y")',
                 '[a](javascript:alert(1)) **b**', '\u202egnp.exe')


def hostile_texts(targets: list[str]) -> list[str]:
    """Honest first-three-words reconstructions with markup, a formula and a bidi override appended."""
    return [" ".join(t.split()[:3]) + " " + HOSTILE_TEXTS[k % len(HOSTILE_TEXTS)] for k, t in enumerate(targets)]


def text_parts_landed() -> bool:
    """Whether the text attacks and lee-news' two target models are on this checkout (issue 16 items 1-2,
    other owners): a valid text entry needs both. Until then the site tests leave their text entry out."""
    try:
        import reconbench.text.attacks  # noqa: F401
        from reconbench.text.tracks import get_text_track

        track = get_text_track("lee-news")
        return track.generator is not None and track.embedder is not None
    except ImportError:
        return False
