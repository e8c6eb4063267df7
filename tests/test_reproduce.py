"""`recon-submit reproduce` and the `reproduced` trust level (issue 12, item 3).

A fresh MI-Face entry (tests/submission_helpers.py) is re-run from its signed provenance and
reproduced within tolerance; a tampered configuration, a swapped attack source and forged or
misplaced records are caught."""

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reconbench.cli import app
from reconbench.reproduction.record import RECORD_FILE, RecordError, read_record, write_record
from reconbench.reproduction.rerun import ReproduceError, load_entry
from reconbench.reproduction.sign import reproduce_entry, sign_record
from reconbench.core.signing import load_private_key
from submission_helpers import failure, fresh_board, listed_reproducer

ATTACKS_DIR = Path(__file__).parent / "attacks"


pytestmark = pytest.mark.slow  # a minute or more of CPU: the slow set (make test-slow; benchmarks/bench_test_split.py)


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    with listed_reproducer(tmp_path_factory.mktemp("reproducers")) as pair:
        yield pair


@pytest.fixture(scope="module")
def reproduced(tmp_path_factory, keys):
    """One reproduction of the session's MI-Face entry (every fresh board holds the same payload)."""
    b = fresh_board(tmp_path_factory, tmp_path_factory.mktemp("reproduced"))
    return reproduce_entry(b.entry, key_path=keys[0])


@pytest.fixture
def board(tmp_path_factory, tmp_path, keys):
    b = fresh_board(tmp_path_factory, tmp_path)
    b.reproducer_key, b.stranger_key = keys
    return b


def test_a_fresh_mi_face_entry_is_reproduced_and_validates_as_reproduced(board, reproduced):
    write_record(board.entry / RECORD_FILE, sign_record(reproduced.record, load_private_key(board.reproducer_key)))
    rec = reproduced.record
    assert rec.verdict == "reproduced" and reproduced.record_path.name == RECORD_FILE
    assert {c.metric for c in rec.comparisons} >= {"mse", "psnr", "ssim", "acc_top1", "acc_top5", "knn_dist"}
    # The classifier metrics are compared too (the track's pinned evaluation model scores them), not skipped.
    assert all(c.obtained is not None for c in rec.comparisons if c.metric in ("acc_top1", "acc_top5", "knn_dist"))
    # Same machine, same thread count: the CPU re-run is bit-identical (the tolerances are for other machines).
    assert rec.reconstructions_sha256 == board.payload()["reconstructions"]["sha256"]
    assert all(c.within and abs(c.obtained - c.claimed) < 1e-9 for c in rec.comparisons if c.obtained is not None)
    report = board.only()  # re-scoring is another check's business (tests/test_submissions_forgeries.py)
    assert report.trust == "reproduced", [c.to_dict() for c in report.checks]
    assert any(c.name == "reproduction" and "test reproducer" in c.message for c in report.checks)
    # The site shows the level and publishes the record beside the entry's page, linked from it.
    from reconbench.leaderboard.build import build_site

    bundle = build_site(board.root, rescore=False, galleries=False)
    record = [p for p in bundle.files if p.endswith("/" + RECORD_FILE)]
    assert len(record) == 1 and bundle.files[record[0]] == (board.entry / RECORD_FILE).read_bytes()
    assert any("reproduction record" in html and RECORD_FILE in html for html in bundle.fragments.values())
    # What the signer computed and what the run job only reported are told apart on the page.
    page = next(html for html in bundle.fragments.values() if "reproduction record" in html)
    assert "Reported by the run job, not verified" in page and "sandbox bubblewrap" in page


def test_a_tampered_configuration_is_caught(board):
    board.resign(lambda p: p["attack"]["config"].update(iterations=1))  # re-signed by the team itself
    out = reproduce_entry(board.entry, key_path=board.reproducer_key)
    assert out.record.verdict == "not-reproduced"
    assert any(c.within is False for c in out.record.comparisons)
    assert board.only().trust != "reproduced"
    # A registered attack whose code changed version since the entry ran: not the same code, refused.
    board.resign(lambda p: p["attack"].update(version="0"))
    with pytest.raises(ReproduceError, match="the entry ran version 0"):
        reproduce_entry(board.entry)
    # Changed without re-signing: refused before anything runs.
    data = json.loads(board.result_json.read_text())
    data["payload"]["attack"]["config"]["iterations"] = 2
    board.result_json.write_text(json.dumps(data))
    with pytest.raises(ReproduceError, match="signature does not match"):
        reproduce_entry(board.entry)


def test_a_record_must_be_signed_by_a_listed_reproducer_and_be_for_this_entry(board, reproduced):
    out = reproduced
    forged = sign_record(out.record, load_private_key(board.stranger_key))
    write_record(board.entry / RECORD_FILE, forged)
    assert "not a reproducer key listed by the maintainers" in failure(board.only()).message
    # A genuine record, but the payload changed since (re-signed by the team): not this payload's record.
    write_record(board.entry / RECORD_FILE, sign_record(out.record, load_private_key(board.reproducer_key)))
    board.resign(lambda p: p["provenance"].update(command="something else"))
    assert "another version" in failure(board.only()).message
    # Duplicate keys in the record: refused as malformed.
    text = (board.entry / RECORD_FILE).read_text()
    (board.entry / RECORD_FILE).write_text(text.replace('"verdict"', '"verdict": "reproduced", "verdict"', 1))
    assert "duplicate key" in failure(board.only()).message
    # Signing with a key that is not listed is refused before the run.
    with pytest.raises(Exception, match="not a reproducer key"):
        reproduce_entry(board.entry, key_path=board.stranger_key)


def test_bring_your_own_source_is_signed_shipped_and_a_swap_is_caught(board, tmp_path):
    from reconbench.image.evaluation import evaluate
    from reconbench.submissions.submit import submit_result

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "helper.py").write_text("ITERATIONS = 3\n")
    (mine / "attack.py").write_text(
        "from helper import ITERATIONS\nfrom reconbench.image.attacks.mi_face import MIFace\n\n"
        "class Mine(MIFace):\n    name = 'mine'\n\n    def __init__(self, budget='default', **config):\n"
        "        super().__init__(budget, **{'iterations': ITERATIONS, **config})\n")
    out = evaluate(track_id="digits", attack_spec=f"{mine / 'attack.py'}:Mine", key_path=board.alpha_key,
                   out=tmp_path / "result")
    signed = out.result.payload.attack.source_sha256
    assert signed and out.result.payload.attack.code == "attack.py:Mine"
    assert sorted(p.name for p in (tmp_path / "result" / "attack").iterdir()) == ["attack.py", "helper.py"]
    entry = submit_result(tmp_path / "result", "alpha", root=board.root, key_path=board.alpha_key).entry
    assert (entry / "attack" / "helper.py").read_text() == "ITERATIONS = 3\n"
    # A run made by another invocation (--run-only) is compared, never signed (issue 43, item 7) ...
    CliRunner().invoke(app, ["reproduce", str(entry), "--run-only", str(tmp_path / "run"), "--quiet"], catch_exceptions=False)
    res = CliRunner().invoke(app, ["reproduce", str(entry), "--from-run", str(tmp_path / "run"), "--key",
                                   str(board.reproducer_key)], catch_exceptions=False)
    assert res.exit_code != 0 and "signs only a re-run it made itself" in res.output, res.output
    assert not (entry / RECORD_FILE).exists()
    # ... the re-run this invocation makes, in its sandbox, is (as the workflow runs it: one job)
    res = CliRunner().invoke(app, ["reproduce", str(entry), "--key", str(board.reproducer_key), "--quiet"],
                             catch_exceptions=False)
    assert res.exit_code == 0 and "reproduced" in res.output, res.output
    assert read_record(entry / RECORD_FILE).record.attack_source_sha256 == signed
    (entry / "attack" / "helper.py").write_text("ITERATIONS = 30\n")  # swapped source, same file names
    with pytest.raises(ReproduceError, match="changed after signing"):
        reproduce_entry(entry)
    report = [r for r in board.validate().entries if r.path == entry][0]
    assert "not the signed one" in failure(report).message
    shutil.rmtree(entry / "attack")
    report = [r for r in board.validate().entries if r.path == entry][0]
    assert "attack: missing" in failure(report).message


def test_ci_reproduces_registered_attacks_on_embedded_tracks_within_its_time_budget(board, monkeypatch):
    monkeypatch.setenv("RECONBENCH_REPRODUCE_SECONDS", "0.001")
    report = board.only()
    assert report.trust != "reproduced" and any("over this CI's budget" in c.message for c in report.checks)
    monkeypatch.setenv("RECONBENCH_REPRODUCE_SECONDS", "100000")
    report = board.only()
    assert report.trust == "reproduced", [c.to_dict() for c in report.checks]
    assert any(c.name == "reproduction" and "this CI's re-run" in c.message for c in report.checks)


def test_over_the_time_budget_is_not_re_run(board):
    with pytest.raises(ReproduceError, match="over the budget of 0 s"):
        reproduce_entry(board.entry, max_seconds=0)
    res = CliRunner().invoke(app, ["reproduce", str(board.entry), "--max-seconds", "0"])
    assert res.exit_code == 1 and "over the budget" in res.output


def test_a_forged_huge_thread_count_is_refused_before_anything_runs(board):
    """The re-run takes the entry's recorded CPU thread count (floating-point sums depend on it); a
    forged count is refused above MAX_RERUN_THREADS instead of spawning that many threads here."""
    import torch

    from reconbench.reproduction.rerun import MAX_RERUN_THREADS

    before = torch.get_num_threads()
    board.resign(lambda p: p["provenance"].update(hardware=f"cpu, {MAX_RERUN_THREADS + 1} CPU threads"))
    with pytest.raises(ReproduceError, match=f"records {MAX_RERUN_THREADS + 1} CPU threads"):
        reproduce_entry(board.entry)
    assert torch.get_num_threads() == before
    res = CliRunner().invoke(app, ["reproduce", str(board.entry)])
    assert res.exit_code == 1 and "CPU threads" in res.output and not (board.entry / RECORD_FILE).exists()


def test_forged_recorded_limits_are_refused_before_anything_runs(board):
    """The re-run raises its limits to those the entry records (provenance.limits, its signed claim): a
    forged "memory=999TiB" lifted the memory limit on the reproducer's machine. Above RERUN_CEILING:
    refused, naming the limit."""
    from reconbench.pipeline.isolation.limits import RERUN_CEILING, recorded_overrides

    board.resign(lambda p: p["provenance"].update(limits="memory=999TiB pids=1024 cpu=43200s wall=21600s tmp=2GiB shm=512MiB"))
    with pytest.raises(ReproduceError, match=r"provenance\.limits: memory=999TiB is above the 128GiB a re-run takes"):
        reproduce_entry(board.entry)
    assert not (board.entry / RECORD_FILE).exists()
    assert recorded_overrides("paper", f"memory={RERUN_CEILING.memory // (1 << 30)}GiB wall=1h") == {"memory": "128GiB"}


# ---------------------------------------------------------------- issue 23: the record is checked, not believed

def _forged_record(board, record, key=None, **changes):
    """A record changed after the fact and signed again (by the listed reproducer unless told otherwise)."""
    write_record(board.entry / RECORD_FILE,
                 sign_record(record.model_copy(update=changes), load_private_key(key or board.reproducer_key)))


def _with_metric(record, name, **changes):
    metrics = dict(record.metrics)
    metrics[name] = metrics[name].model_copy(update=changes)
    return metrics


def test_the_record_keeps_what_the_signer_computed_apart_from_what_the_run_reported(reproduced):
    rec = reproduced.record
    dumped = rec.model_dump(mode="json")
    assert rec.schema_version == 2 and "run" not in dumped
    reported = dumped["reported_by_run"]  # device, hardware, wall time, commit: the run job's word
    assert set(reported) >= {"device", "hardware", "wall_seconds", "scenario", "sandbox"}
    assert reported["scenario"] == "static/white-box/none" and "queries" not in reported  # white-box: no counted queries
    assert [c.what for c in rec.run_checks] == ["scenario"] and rec.run_checks[0].ok and rec.problems == []
    assert rec.scored_on and rec.toolkit_version  # the signer's own facts stay at the top level


@pytest.mark.parametrize("forge, expected", [
    (lambda r: dict(metrics=_with_metric(r, "ssim", value=0.01)), "ssim 0.01 vs claimed"),
    (lambda r: dict(metrics=_with_metric(r, "mse", coverage=r.metrics["mse"].coverage + 0.3)), "coverage"),
    (lambda r: dict(metrics={k: v for k, v in r.metrics.items() if k != "psnr"}), "psnr claimed"),
    (lambda r: dict(metrics=_with_metric(r, "acc_top1", value=r.metrics["acc_top1"].value - 0.06)), "acc_top1"),
], ids=["ssim-contradicts", "coverage-contradicts", "metric-dropped", "slightly-beyond-tolerance"])
def test_a_reproduced_verdict_whose_own_metrics_contradict_the_claim_lifts_nothing(board, reproduced, forge, expected):
    """A listed reproducer's record that says "reproduced" is compared with the claim, as reproduce does."""
    _forged_record(board, reproduced.record, **forge(reproduced.record))
    report = board.only()
    assert report.trust == "signed", [c.to_dict() for c in report.checks]  # not reproduced, and not failed either
    check = next(c for c in report.checks if c.name == "reproduction")
    assert check.status == "warn" and "contradict the claim" in check.message and expected in check.message


def test_metrics_off_within_the_tolerance_still_reproduce(board, reproduced):
    r = reproduced.record
    _forged_record(board, r, metrics=_with_metric(r, "ssim", value=r.metrics["ssim"].value + 0.019))
    assert board.only().trust == "reproduced"


def test_reported_queries_or_scenario_that_disagree_with_the_claim_are_not_reproduced(board, reproduced):
    r = reproduced.record
    lied = r.reported_by_run.model_copy(update={"queries": 7})
    _forged_record(board, r, reported_by_run=lied)
    check = next(c for c in board.only().checks if c.name == "reproduction")
    assert board.only().trust == "signed" and "provenance.queries" in check.message
    other = r.reported_by_run.model_copy(update={"scenario": "static/white-box/same"})
    _forged_record(board, r, reported_by_run=other)
    assert "scenario" in next(c for c in board.only().checks if c.name == "reproduction").message


def test_reproduce_compares_the_runs_queries_and_scenario(board, tmp_path):
    """The run job's result.json is untrusted: the signer compares what it reports with the claim."""
    run = tmp_path / "run"
    reproduce_entry(board.entry, run_only=run)
    data = json.loads((run / "result.json").read_text())
    data["payload"]["provenance"]["queries"] = 300  # e.g. a run that spent queries the claim does not declare
    (run / "result.json").write_text(json.dumps(data))
    out = reproduce_entry(board.entry, from_run=run)
    assert out.record.verdict == "not-reproduced"
    assert any("provenance.queries: the re-run reported 300, the entry claims None" in p for p in out.record.problems)
    data["payload"]["provenance"]["queries"] = None
    data["payload"]["scenario"] = "static/white-box/same"
    (run / "result.json").write_text(json.dumps(data))
    out = reproduce_entry(board.entry, from_run=run)
    assert out.record.verdict == "not-reproduced" and any(p.startswith("scenario:") for p in out.record.problems)


def test_old_records_of_schema_version_1_still_verify_and_show_what_the_run_reported():
    """The example entries' records were signed before the split: they parse, verify and agree."""
    from reconbench.reproduction import compare
    from reconbench.reproduction.record import reproducer_keys, verify_record
    from reconbench.text.results import parse_any_result

    repo = Path(__file__).resolve().parents[1]
    records = sorted((repo / "submissions").glob("*/*/" + RECORD_FILE))
    assert records
    keys = reproducer_keys(repo / "maintainers" / "reproducers.toml")
    for path in records:
        signed = read_record(path)
        assert verify_record(signed, keys)
        payload = parse_any_result(path.parent / "result.json").payload
        assert compare.metric_problems(compare.compare_metrics(payload.metrics, signed.record.metrics)) == []
        assert signed.record.reported.device  # v1: `run`, read as the run's report


def test_a_record_is_signed_only_for_a_sandboxed_re_run(board, tmp_path, reproduced):
    """A record is signed only for a re-run this invocation made in its own sandbox: a run folder handed in
    is refused whatever it says of its sandbox (issue 43: one that merely claimed bubblewrap was signed),
    and is compared, unsigned, as usual; a re-run whose report names no sandbox is refused by the signer."""
    from reconbench.reproduction.sign import require_sandboxed

    assert reproduced.record.reported.sandbox.startswith("bubblewrap ")  # this machine's re-run was sandboxed
    run = tmp_path / "run"
    reproduce_entry(board.entry, run_only=run)
    data = json.loads((run / "result.json").read_text())
    for sandbox in ("none", None, "bubblewrap 0.11.0"):
        if sandbox is None:
            data["payload"]["provenance"].pop("sandbox", None)  # a run from before the field existed
        else:
            data["payload"]["provenance"]["sandbox"] = sandbox
        (run / "result.json").write_text(json.dumps(data))
        with pytest.raises(RecordError, match="signs only a re-run it made itself"):
            reproduce_entry(board.entry, from_run=run, key_path=board.reproducer_key, record_path=tmp_path / "r.json")
        assert not (tmp_path / "r.json").exists()
        compared = reproduce_entry(board.entry, from_run=run).record  # unsigned: compared as usual
        assert compared.verdict == "reproduced" and compared.run_seen == "handed-in"
        if sandbox != "bubblewrap 0.11.0":
            with pytest.raises(RecordError, match="without the sandbox"):
                require_sandboxed(compared, load_entry(board.entry))


def test_a_record_keeps_the_runs_report_in_one_place_per_schema_version(reproduced):
    """Version 2 files the run's report under reported_by_run only; version 1 under run only: a record
    cannot carry the run's word at the top level, nor two conflicting run blocks."""
    from pydantic import ValidationError

    from reconbench.reproduction.record import ReproductionRecord

    data = reproduced.record.model_dump(mode="json")
    ReproductionRecord.model_validate(data)
    for broken in ({**data, "run": data["reported_by_run"]},
                   {k: v for k, v in data.items() if k != "reported_by_run"},
                   {**data, "schema_version": 1},
                   {**data, "device": "cuda"}):
        with pytest.raises(ValidationError):
            ReproductionRecord.model_validate(broken)


def test_a_rerun_takes_the_thread_count_its_entry_recorded():
    """A CPU run's sums depend on the thread count (Deep-Leakage's example: 1 thread; re-run with 2, 53%
    of its pixels differed): the re-run sets the recorded count and gives the previous one back."""
    import torch

    from reconbench.reproduction.rerun import _threads_of

    before = torch.get_num_threads()
    other = 1 if before != 1 else 2
    with _threads_of(f"Linux x86_64, {other} CPU threads"):
        assert torch.get_num_threads() == other
    assert torch.get_num_threads() == before
    with _threads_of("an accelerator"):  # nothing recorded: the machine's own count
        assert torch.get_num_threads() == before
