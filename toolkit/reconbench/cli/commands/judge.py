"""`recon-submit judge`: an LLM-as-judge study of 2-6 entries (SoK §6.1). Logic: reconbench.judge."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from reconbench.core.console import console, err_console, fail


def register(app: typer.Typer) -> None:
    @app.command()
    def judge(
        entries: list[Path] = typer.Argument(..., help="2 to 6 entry folders of one track (the conditions)"),
        model: str = typer.Option(..., help="judge model name, as the endpoint knows it (e.g. gpt-4o)"),
        targets: Optional[int] = typer.Option(None, help="targets sampled from the target set (default min(1000, all); SoK: 1,000)"),
        repeats: int = typer.Option(5, help="answers per target and order mode (SoK: 5)"),
        order: str = typer.Option("random", help="candidate order: random (seeded per repeat), fixed (the SoK's) or both"),
        seed: int = typer.Option(0, help="seed of the target sample and of the orders"),
        out: Path = typer.Option(Path("judgements"), help="studies folder; the study goes to OUT/<study-id>/"),
        team: Optional[str] = typer.Option(None, help="team publishing the study (its team.toml holds your key)"),
        key: Optional[Path] = typer.Option(None, help="ed25519 private key (default: keygen's)"),
        title: Optional[str] = typer.Option(None, help="study title on the site (default: the attacks and track)"),
        image_size: int = typer.Option(256, help="longer image side sent, nearest-neighbour upscaled"),
        temperature: Optional[float] = typer.Option(None, help="sampling temperature (default: not sent)"),
        max_tokens: Optional[int] = typer.Option(None, help="max_tokens of each answer (default: not sent)"),
        invalid_retries: int = typer.Option(2, help="re-asks of an answer that is not a valid index"),
        max_retries: int = typer.Option(5, help="retries of a call on 429, 5xx, timeouts"),
        timeout: float = typer.Option(60.0, help="seconds per request"),
        concurrency: int = typer.Option(4, help="calls in flight at once"),
        base_url: Optional[str] = typer.Option(None, help="OpenAI-compatible base URL (default $OPENAI_BASE_URL, else OpenAI)"),
        api_key: Optional[str] = typer.Option(None, help="API key (default $OPENAI_API_KEY)"),
        cache: Optional[Path] = typer.Option(None, help="answer cache folder (default ~/.cache/reconbench/judge)"),
        yes: bool = typer.Option(False, "--yes", "-y", help="do not ask for confirmation"),
        dry_run: bool = typer.Option(False, "--dry-run", help="print the plan and the first request; call nothing"),
    ) -> None:
        """Ask a vision LLM which entry's reconstruction looks most like each target; write a signed study.

        Example: recon-submit judge submissions/team-a/ENTRY submissions/team-b/ENTRY --model gpt-4o --team my-lab --dry-run
        """
        from reconbench.cli import USER_ERRORS
        from reconbench.judge.api import finish
        from reconbench.judge.cache import AnswerCache, default_cache_dir
        from reconbench.judge.client import CallFailed, Endpoint, JudgeError
        from reconbench.judge.runner import Options, plan_study, redacted_request
        from reconbench.core.signing import default_key_path

        modes = {"random": ("random",), "fixed": ("fixed",), "both": ("random", "fixed")}.get(order)
        if modes is None:
            fail(f"--order must be random, fixed or both, got {order!r}")
        options = Options(model=model, targets=targets, repeats=repeats, seed=seed, modes=modes, image_size=image_size,
                          temperature=temperature, max_tokens=max_tokens, invalid_retries=invalid_retries,
                          concurrency=concurrency)
        try:
            plan = plan_study(entries, options)
            endpoint = Endpoint(base_url=base_url, api_key=api_key or ("(dry run)" if dry_run else None),
                                timeout=timeout, max_retries=max_retries)
        except (JudgeError, *USER_ERRORS) as exc:
            fail(str(exc))
        answers = AnswerCache(cache or default_cache_dir())
        cached = sum(answers.get(c.key) is not None for c in plan.calls)
        calls, per_call = len(plan.calls), plan.k + 1
        for i, c in enumerate(plan.conditions):
            console.print(f"condition {i + 1}: {c.team}/{c.entry_id} ({c.attack})", highlight=False, markup=False)
        console.print(f"{len(plan.indices)} targets of {plan.track}'s {plan.split} set (seed {seed}) x {repeats} repeats "
                      f"x {len(modes)} order mode(s) = {calls} calls, {cached} already cached; {per_call} images per call "
                      f"({(calls - cached) * per_call} images to send, {image_size} px); up to "
                      f"{(calls - cached) * (invalid_retries + 1)} requests if answers are invalid", highlight=False)
        console.print(f"judge: {model} at {endpoint.public_url()}", highlight=False, markup=False)
        if dry_run:
            console.print("first request (images shortened; the API key is sent as a header, not shown):")
            console.print(redacted_request(plan, plan.calls[0]), highlight=False, markup=False, soft_wrap=True)
            return
        if team is None:
            fail("--team is required: the team whose team.toml lists the key that signs the study")
        if cached < calls and not yes and not typer.confirm(f"Send {calls - cached} calls to {model}?", default=False):
            fail("cancelled; nothing was sent", code=1)
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(TextColumn("judging"), BarColumn(), MofNCompleteColumn(),
                      TextColumn("done {task.fields[done]} · cached {task.fields[cached]} · failed {task.fields[failed]}"),
                      TimeElapsedColumn(), console=err_console) as bar:
            task = bar.add_task("judge", total=calls, done=0, cached=0, failed=0)

            def progress(tally) -> None:
                bar.update(task, completed=tally.done + tally.cached + tally.failed, done=tally.done,
                           cached=tally.cached, failed=tally.failed)

            try:
                result = finish(plan, endpoint, answers, team=team, key_path=key or default_key_path(), out_root=out,
                                title=title, progress=progress)
            except (JudgeError, CallFailed, *USER_ERRORS) as exc:
                fail(str(exc))
        from reconbench.judge.aggregate import TIE_RULE, major_ties_split

        agg = result.payload["aggregates"]
        for mode, a in agg.items():
            split = major_ties_split([{"votes": t["votes"][mode]} for t in result.payload["targets"]],
                                     len(plan.conditions))
            console.print(f"\n{mode} order: condition  # of Major  (ties split)  # of All  Pred Rate", highlight=False)
            for i, c in enumerate(plan.conditions):
                console.print(f"  {i + 1} {c.attack:<20} {a['major'][i]:>6} {split[i]:>13.2f} {a['all'][i]:>9} "
                              f"{a['pred_rate'][i]:>10.3f}", highlight=False, markup=False)
            pb = a["position_bias"]
            console.print(f"  ties {a['ties']}, invalid answers {a['invalid_answers']}, re-asks {a['reasks']}; "
                          f"position shares {', '.join(f'{s:.2f}' for s in pb['shares'])} (chi2 p = {pb['p_value']})",
                          highlight=False)
        console.print(f"\nties split: {TIE_RULE}", highlight=False, markup=False)
        console.print(f"\ncalls made {result.tally.done}, cached {result.tally.cached}; reported model(s): "
                      f"{', '.join(result.payload['judge']['models_reported'])}", highlight=False, markup=False)
        console.print(f"signed study: {result.path}", highlight=False, markup=False)

    @app.command("judge-rerun")
    def judge_rerun(
        study: Path = typer.Argument(..., help="study folder, judgements/<study-id>"),
        key: Path = typer.Option(..., help="reproducer's private key (listed in maintainers/reproducers.toml)"),
        submissions: Path = typer.Option(Path("submissions"), help="the submissions folder the study's entries are in"),
        reproducers: Optional[Path] = typer.Option(None, help="reproducer keys file (default maintainers/reproducers.toml)"),
        base_url: Optional[str] = typer.Option(None, help="the maintainers' OpenAI-compatible base URL (default $OPENAI_BASE_URL)"),
        api_key: Optional[str] = typer.Option(None, help="API key (default $OPENAI_API_KEY)"),
        max_retries: int = typer.Option(5, help="retries of a call on 429, 5xx, timeouts"),
        timeout: float = typer.Option(60.0, help="seconds per request"),
        cache: Optional[Path] = typer.Option(None, help="answer cache folder for this re-run (default: a fresh one)"),
    ) -> None:
        """Maintainers: ask your endpoint a study's own plan again and sign judgements/<id>/rerun.json.

        The site shows a study as self-reported until such a re-run agrees with it.
        Example: recon-submit judge-rerun judgements/STUDY --key maintainer-reproducer.pem
        """
        from reconbench.cli import USER_ERRORS
        from reconbench.judge.client import CallFailed, Endpoint, JudgeError
        from reconbench.judge.rerun import RerunError, rerun_study
        from reconbench.reproduction.record import RecordError

        try:
            endpoint = Endpoint(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries)
            path, record = rerun_study(study, submissions, endpoint, key_path=key, reproducers=reproducers, cache_dir=cache)
        except (RerunError, RecordError, JudgeError, CallFailed, *USER_ERRORS) as exc:
            fail(str(exc))
        for c in record.comparisons:
            console.print(f"{c.mode} order, condition {c.condition + 1}: study {c.study:.3f}, re-run {c.rerun:.3f} "
                          f"(±{c.tolerance:.3f}) {'ok' if c.within else 'DIFFERS'}", highlight=False, markup=False)
        console.print(f"{'agrees' if record.agrees else 'does NOT agree'}; signed re-run: {path}", highlight=False, markup=False)
        if not record.agrees:
            raise typer.Exit(1)
