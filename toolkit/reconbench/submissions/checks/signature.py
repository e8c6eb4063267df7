"""Check 3, signature: valid ed25519 over the RFC 8785 payload, by a key the team's team.toml listed on
the day the entry reached the board (keys carry the dates they were added and removed: team.py), and,
in a git checkout, in the team.toml of the commit that brought the entry to the main line (key_history.py:
the history's word, which no back-dated commit or edited date changes)."""

from __future__ import annotations

from reconbench.image.results import payload_dict
from reconbench.core.signing import SigningError, key_id, verify_payload
from reconbench.submissions.checks.base import Check, CheckFailed, Context


def check(ctx: Context) -> list[Check]:
    result, team = ctx.result, ctx.team
    signature = result.signature.model_dump()
    try:
        ctx.key_id = verify_payload(payload_dict(result), signature, trusted_keys=list(team.keys))
    except SigningError as exc:
        message = f"result.json: {exc}"
        if result.signature.public_key not in team.keys:
            owners = ctx.board.key_owners(result.signature.public_key)
            listed = ", ".join(key_id(k) for k in team.keys)
            message += f" (team.toml of '{team.slug}' lists {listed})"
            if owners:
                message += f"; that key belongs to team(s) {', '.join(sorted(owners))}"
        raise CheckFailed(message) from None
    except ValueError as exc:  # rfc8785 cannot canonicalise it (e.g. an integer beyond 2^53)
        raise CheckFailed(f"result.json: the payload has no RFC 8785 canonical form ({exc})") from None
    record = team.record(result.signature.public_key)
    day = ctx.board.entry_day(ctx.entry_dir)
    if record is not None and not record.listed_on(day):
        span = f"from {record.added or 'the start'}" + (f" until {record.removed}" if record.removed else "")
        raise CheckFailed(f"result.json: signed by key {ctx.key_id}, which {team.slug}/team.toml lists only {span}; "
                          f"this entry reached the board on {day}")
    history = ctx.board.listed_at_arrival(ctx.entry_dir, result.signature.public_key)
    if history is not None and not history[0]:  # the history's word, whatever dates the files or commits carry
        raise CheckFailed(f"result.json: signed by key {ctx.key_id}, which {team.slug}/team.toml did not list as a "
                          f"current key at commit {history[1][:12]}, where this entry reached the main line")
    where = f"at commit {history[1][:12]}" if history is not None else f"on {day}"
    return [Check("signature", "pass", f"signed by key {ctx.key_id}, listed in {team.slug}/team.toml {where}")]
