"""Submission commands: `submit` (result folder -> submissions/ layout), `validate` (the checks CI
runs on a pull request), `schema` (the JSON Schema of result.json). Logic: reconbench.submissions."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Optional

import typer

from reconbench.cli.commands.weights import apply_offline, offline_option, weights_dir_option
from reconbench.cli.commands.seal_key import read_seal_key
from reconbench.core.console import console, escape, fail, invoked_as, suggest

FORMATS = ("text", "markdown", "json")


def _read_paths(file: Path) -> list[Path]:
    """Paths one per line, or NUL-separated (`git diff -z --name-only`): no shell word splitting."""
    try:
        data = file.read_bytes()
    except OSError as exc:
        fail(f"{file}: cannot read the list of paths ({exc.strerror})")
    sep = b"\0" if b"\0" in data else b"\n"
    return [Path(p.decode("utf-8", "surrogateescape")) for p in data.split(sep) if p.strip()]


def register(app: typer.Typer) -> None:
    @app.command()
    def submit(
        result_dir: Path = typer.Argument(..., help="a folder written by `recon-submit evaluate`"),
        team: str = typer.Option(..., help="team slug: the folder under submissions/ (lower-case letters, digits and hyphens)"),
        root: Path = typer.Option(Path("submissions"), help="the submissions folder of your checkout"),
        key: Optional[Path] = typer.Option(None, help="the private key that signed the result (default: keygen's)"),
        name: Optional[str] = typer.Option(None, help="display name, when the team is new"),
        link: list[str] = typer.Option([], help="https:// link for a new team (repeatable)"),
        contact: Optional[str] = typer.Option(None, help="optional contact for a new team; it is PUBLISHED on every entry page and in the site's search: leave it out to publish none"),
        add_key: bool = typer.Option(False, help="add your key to an existing team's team.toml"),
        readme: Optional[Path] = typer.Option(None, help="README.md for the entry: method, code link, notes"),
        hub_repo: Optional[str] = typer.Option(None, help="Hub repo holding the reconstructions (large files)"),
        hub_revision: Optional[str] = typer.Option(None, help="full commit sha of that Hub repo"),
        hub_filename: str = typer.Option("reconstructions.safetensors", help="file name in the Hub repo"),
    ) -> None:
        """Copy a signed result into submissions/<team>/<entry-id>/ and print the pull-request steps.

        Example: recon-submit submit recon-results/ENTRY --team my-lab --name "My Lab" --link https://example.org
        """
        from reconbench.cli import USER_ERRORS
        from reconbench.submissions.submit import HubPin, SubmitError, submit_result
        from reconbench.submissions.team import TeamError

        if result_dir.is_file():
            if (result_dir.parent / "result.json").is_file():
                fail(f"{result_dir}: pass the result folder written by evaluate, not a file in it: "
                     f"recon-submit submit {shlex.quote(str(result_dir.parent))} --team {team}")
            fail(f"{result_dir}: a file, not a result folder: pass the folder that `recon-submit evaluate` wrote "
                 "(it holds result.json; evaluate prints its path, under recon-results/ unless --out was given)")
        if (hub_repo is None) != (hub_revision is None):
            fail("--hub-repo and --hub-revision go together")
        pin = HubPin(hub_repo, hub_revision, hub_filename) if hub_repo else None
        try:
            out = submit_result(result_dir, team, root=root, key_path=key, team_name=name, links=link,
                                contact=contact, add_key=add_key, readme=readme, hub=pin)
        except (SubmitError, TeamError, *USER_ERRORS) as exc:
            fail(str(exc), options=getattr(exc, "options", ()))
        here = Path.cwd()
        entry = out.entry.relative_to(here) if out.entry.is_relative_to(here) else out.entry
        team_file = out.team_file.relative_to(here) if out.team_file.is_relative_to(here) else out.team_file
        console.print(f"entry written: [bold]{escape(entry)}[/]")
        if out.team_created:
            console.print(f"new team file: {escape(team_file)} (check the display name and links)", soft_wrap=True)
        if out.key_added:
            console.print(f"your key was added to {escape(out.team_file)}")
        if out.note:  # the same run as an entry on the board, other reconstructions: accepted, not ranked
            console.print(f"note: {escape(out.note)}", highlight=False, soft_wrap=True)
        from reconbench.core.sealed_next import draws_in, submitted_line

        sealed = submitted_line(out.result.payload.track, draws_in(out.entry.parent, out.result.payload))
        if sealed:  # which draw of how many, how many are in, when the score comes (issue 45)
            console.print(escape(sealed), highlight=False, soft_wrap=True)
        entry_id = out.result.payload.entry_id
        # validate looks for team.toml under --root: a non-default root must be passed on, or step 1 fails
        root_arg = "" if root.resolve() == Path("submissions").resolve() else f" --root {shlex.quote(str(root))}"
        console.print(
            "\nNext steps:\n"
            f"  1. {invoked_as()} validate {shlex.quote(str(entry))}{root_arg}        # the checks CI runs, re-scoring included\n"
            f"  2. git checkout -b submit/{entry_id}\n"
            f"  3. git add {shlex.quote(str(entry.parent))}\n"
            f"  4. git commit -m 'Add {entry_id}'\n"
            f"  5. git push -u origin submit/{entry_id}, and open a pull request against main:\n"
            "     CI validates the changed entries and shows the report in the run's summary.",
            highlight=False, markup=False, soft_wrap=True,
        )

    @app.command()
    def check(
        run: Path = typer.Argument(..., help="a folder written by `recon-submit evaluate` (its --out)"),
        no_rescore: bool = typer.Option(False, "--no-rescore", help="skip re-scoring"),
        device: str = typer.Option("cpu", help="device for re-scoring and the copy check"),
        weights_dir: Optional[Path] = weights_dir_option(),
        offline: bool = offline_option(),
    ) -> None:
        """Run every check CI runs that needs no board on a run folder, before you submit it: schema,
        signature, registry, reconstructions, re-scoring, copies, near-copies, the attack's source.

        Example: recon-submit check runs/first
        """
        apply_offline(offline)
        from reconbench.cli.commands.verdict import print_verdict
        from reconbench.submissions.check_run import check_run, summary
        from reconbench.submissions.report import render_entry

        report = check_run(run, rescore=not no_rescore, device=device, weights_dir=weights_dir)
        render_entry(report, console, label=str(run))
        if report.result is not None and not report.failed:
            print_verdict(console, report.result.payload)
        console.print(escape(suggest(summary(report, run))), highlight=False, soft_wrap=True)
        if report.failed:
            raise typer.Exit(1)

    @app.command()
    def validate(
        paths: Optional[list[Path]] = typer.Argument(None, help="changed files or folders (default: every entry)"),
        root: Path = typer.Option(Path("submissions"), help="the submissions folder"),
        format: str = typer.Option("text", "--format", help="text, markdown or json"),
        no_rescore: bool = typer.Option(False, "--no-rescore", help="skip re-scoring (trust stays 'signed')"),
        device: str = typer.Option("cpu", help="device for re-scoring and the copy check"),
        weights_dir: Optional[Path] = weights_dir_option(),
        offline: bool = offline_option(),
        paths_from: Optional[Path] = typer.Option(None, help="file listing paths (one a line, or NUL-separated)"),
        summary: Optional[Path] = typer.Option(None, help="also append the Markdown report to this file"),
        judgements: Optional[Path] = typer.Option(None, help="judge studies folder, checked too (default: judgements/ beside --root)"),
        base_root: Optional[Path] = typer.Option(None, help="the base branch's submissions folder: flag key changes"),
        no_cache: bool = typer.Option(False, "--no-cache", help="re-check everything: reuse no cached check "
                                      "outcome or feature (the nightly full re-validation)"),
        seal_key: Optional[Path] = typer.Option(None, "--seal-key", help="the board's seal key (CI's secret): score "
                                                "the sealed tracks' membership gap and check their sealed.json"),
        write_sealed: bool = typer.Option(False, "--write-sealed", help="with --seal-key: write a missing sealed.json"),
    ) -> None:
        """Check submissions: structure, schema, signature, registry, reconstructions, re-score, copies,
        near-copies, duplicates; with --base-root, flag every team key added or removed.

        Example: recon-submit validate submissions/my-lab/ENTRY
        """
        apply_offline(offline)
        if format not in FORMATS:
            fail(f"--format must be one of {', '.join(FORMATS)}")
        # Paths typed on the command line must each hold an entry (a typo is an error); paths from a
        # pull request's diff (--paths-from) may name deleted entries.
        explicit = list(paths) if paths else None
        from_file = _read_paths(paths_from) if paths_from is not None else None
        selected = None if explicit is None and from_file is None else (explicit or []) + (from_file or [])
        from reconbench.submissions.check_run import is_run_outside

        for path in explicit or []:  # a run folder, not yet submitted: `check` is the command for it
            if is_run_outside(path, root):
                fail(f"{path}: a run folder, not an entry under {root}/: validate checks the board's entries",
                     options=[f"{invoked_as()} check {shlex.quote(str(path))}    # every check that needs no board, re-scoring included",
                              f"{invoked_as()} submit {shlex.quote(str(path))} --team YOUR-TEAM    # then validate the entry it writes"])
        if selected is None and not root.is_dir():  # outside a checkout: nothing to check is not "OK"
            fail(f"--root {root}: no such folder, so nothing to validate (run it in a checkout of the "
                 "repository, or pass --root or the entry folders)")
        from reconbench.submissions import validate_board  # the heavy part: after the checks of the arguments
        from reconbench.submissions.report import render_json, render_markdown, render_text

        from reconbench.judge import report as studies  # judge studies: reconbench.judge.check

        judgements = judgements or root.parent / "judgements"
        selected, study_paths, board = studies.split_paths(selected, judgements)
        study_reports = studies.run(study_paths, judgements, root)
        if not board:
            sys.stdout.write(studies.render(study_reports, format, console))
            if summary is not None:
                with open(summary, "a", encoding="utf-8") as f:
                    f.write(studies.render(study_reports, "markdown", console))
            raise typer.Exit(0 if all(r.ok for r in study_reports) else 1)
        key = read_seal_key(seal_key) if seal_key is not None else None
        if write_sealed and key is None:
            fail("--write-sealed needs --seal-key")
        from reconbench.submissions.sealed_run_check import runs_report, touched

        kept = {p for p in selected or [] if not touched(root, [p]) or os.path.abspath(p) == os.path.abspath(root)}
        if selected and not kept:  # only run records were named: they are all there is to check
            runs_ok = runs_report(root, selected, console, summary)
            sys.stdout.write(studies.render(study_reports, format, console))
            raise typer.Exit(0 if runs_ok and all(r.ok for r in study_reports) else 1)
        report = validate_board(None if from_file is None else [p for p in from_file if p in kept], root,
                                rescore=not no_rescore, device=device, weights_dir=weights_dir,
                                explicit=[p for p in explicit if p in kept] or None if explicit else None,
                                base_root=base_root, cache=not no_cache, seal_key=key, write_sealed=write_sealed)
        if format == "text":
            render_text(report, console)
        else:
            sys.stdout.write(render_markdown(report) if format == "markdown"
                             else studies.merge_json(render_json(report), study_reports))
        if summary is not None:
            with open(summary, "a", encoding="utf-8") as f:
                f.write(render_markdown(report) + studies.render(study_reports, "markdown", console))
        if format != "json":  # json: merged into the one document above
            sys.stdout.write(studies.render(study_reports, format, console))
        runs_ok = runs_report(root, selected, console, summary, quiet=format == "json")  # the board's sealed run records
        if not report.ok or not all(r.ok for r in study_reports) or not runs_ok:
            raise typer.Exit(1)

    @app.command()
    def schema(team: bool = typer.Option(False, help="the schema of team.toml instead of result.json"),
               text: bool = typer.Option(False, help="the schema of a text result.json (payload.modality \"text\")")) -> None:
        """Print the JSON Schema of result.json (or of team.toml, as JSON).

        Example: recon-submit schema > result.schema.json
        """
        if team and not text:  # --text names the result's schema, whatever --team says
            from reconbench.submissions.team import Team

            sys.stdout.write(json.dumps(Team.model_json_schema(), indent=2) + "\n")
            return
        from reconbench.modalities import by_name

        sys.stdout.write(json.dumps(by_name("text" if text else "image").result_schema(), indent=2) + "\n")
