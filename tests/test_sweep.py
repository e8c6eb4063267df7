"""`recon-submit sweep`: a small grid on local Ray (started once for the module), reruns, failures, Ctrl-C."""

from __future__ import annotations

import json
import textwrap

import pytest
from typer.testing import CliRunner

from reconbench.cli import app
from reconbench.image.results import verify_result_dir
from reconbench.sweep import GridError, load_grid, run_sweep
from reconbench.sweep.run import RESULTS, SUMMARY
from site_entries import NO_WEIGHTS

pytestmark = pytest.mark.slow  # a minute or more of CPU: the slow set (make test-slow; benchmarks/bench_test_split.py)

# A user's attack that fails (or, once fixed, works): bring-your-own `file.py:Class`.
FLAKY = '''
from reconbench.image.attacks.mi_face import MIFace

class Flaky(MIFace):
    name = "flaky"
    def run(self, knowledge, *, seed, progress):
        {body}
'''


def write_grid(folder, extra: str = "") -> object:
    path = folder / "grid.toml"
    path.write_text(textwrap.dedent(f'''
        name = "digits-quick"
        tracks = ["digits"]
        attacks = ["mi-face", "deepdream"]
        seeds = [0, 1]
        budget = "quick"
        [options."mi-face"]
        iterations = 15
        init = "uniform"      # seeded start: seeds give different reconstructions
        [options.deepdream]
        iterations = 4
    ''') + textwrap.dedent(extra))
    return path


@pytest.fixture(scope="module")
def ray_instance():
    from reconbench.sweep.cluster import ray_session

    with ray_session(num_cpus=2) as ray:  # one local instance for the module; run_sweep reuses it
        yield ray


def test_grid_on_local_ray_verifies_reruns_nothing_and_retries_failures(tmp_path, signing_key, ray_instance):
    attack_file = tmp_path / "flaky.py"
    attack_file.write_text(FLAKY.format(body='raise RuntimeError("boom: the GPU caught fire\\n(second line)")'))
    grid_path = write_grid(tmp_path, f'''
        [[include]]
        attacks = ["{attack_file}:Flaky"]
        seeds = [0]
    ''')
    grid = load_grid(grid_path)
    assert len(grid.jobs) == 5
    out = tmp_path / "out"

    first = run_sweep(grid.jobs, out=out, key_path=signing_key, weights_dir=NO_WEIGHTS, grid=grid.name)
    counts = first.counts()
    assert (counts["done"], counts["failed"], counts["skipped"]) == (4, 1, 0)
    failed = [o for o in first.outcomes if o.status == "failed"]
    error = failed[0].error  # its first line only (the harness may wrap it: "AttackError: attack 'flaky' failed: ...")
    assert "RuntimeError: boom: the GPU caught fire" in error and "second line" not in error
    assert failed[0].job.attack.endswith(":Flaky")
    hashes = set()
    for o in first.outcomes:
        if o.status == "done":
            result = verify_result_dir(out / RESULTS / o.job.id)
            p = result.payload
            assert (p.track, p.attack.name, p.provenance.seed) == ("digits", o.job.attack, o.job.seed)
            assert "--budget quick" in p.provenance.command and "--seed" in p.provenance.command
            hashes.add(p.reconstructions.sha256)
    assert len(hashes) == 4  # each seed its own reconstructions
    summary = json.loads((out / SUMMARY).read_text())
    assert summary["counts"]["failed"] == 1 and summary["jobs"][-1]["error"] == error
    assert (out / "failed" / f"{failed[0].job.id}.json").is_file()

    attack_file.write_text(FLAKY.format(body="return super().run(knowledge, seed=seed, progress=progress)"))
    second = run_sweep(grid.jobs, out=out, key_path=signing_key, weights_dir=NO_WEIGHTS, grid=grid.name)
    assert (second.counts()["skipped"], second.counts()["done"], second.counts()["failed"]) == (4, 1, 0)
    assert not (out / "failed" / f"{failed[0].job.id}.json").exists()

    started = []
    third = run_sweep(grid.jobs, out=out, key_path=signing_key, weights_dir=NO_WEIGHTS, grid=grid.name,
                      on_start=started.append)
    assert started == [0] and third.counts()["skipped"] == 5


def test_a_tampered_result_is_not_done_and_is_kept_aside(tmp_path, signing_key):
    grid = load_grid(write_grid(tmp_path, '\n[[exclude]]\nattack = "deepdream"\n[[exclude]]\nseed = 1\n'))
    assert [(j.attack, j.seed) for j in grid.jobs] == [("mi-face", 0)]
    out = tmp_path / "out"
    run_sweep(grid.jobs, out=out, key_path=signing_key, weights_dir=NO_WEIGHTS, backend="local")
    folder = out / RESULTS / grid.jobs[0].id
    doc = json.loads((folder / "result.json").read_text())
    doc["payload"]["metrics"]["ssim"]["value"] = 0.999
    (folder / "result.json").write_text(json.dumps(doc))
    again = run_sweep(grid.jobs, out=out, key_path=signing_key, weights_dir=NO_WEIGHTS, backend="local")
    assert again.counts()["done"] == 1
    verify_result_dir(folder)
    assert len(list((out / RESULTS).glob(f"{grid.jobs[0].id}.invalid-*"))) == 1


def test_ctrl_c_leaves_finished_results_and_no_half_written_one(tmp_path, signing_key):
    grid = load_grid(write_grid(tmp_path, '\n[[exclude]]\nattack = "deepdream"\n'))
    out = tmp_path / "out"

    def interrupt(outcome):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(grid.jobs, out=out, key_path=signing_key, weights_dir=NO_WEIGHTS, backend="local", on_done=interrupt)
    summary = json.loads((out / SUMMARY).read_text())
    assert [j["status"] for j in summary["jobs"]] == ["done", "interrupted"]
    assert [p.name for p in (out / RESULTS).iterdir()] == [grid.jobs[0].id]  # no temporary folder left
    verify_result_dir(out / RESULTS / grid.jobs[0].id)


def test_include_exclude_and_stable_ids(tmp_path):
    grid = load_grid(write_grid(tmp_path, '''
        [[exclude]]
        attack = ["deepdream"]
        seed = 0
        [[include]]
        tracks = ["digits-mlp"]
        attacks = ["mi-face"]
        scenarios = ["static/white-box/none", "static/black-box/same"]
    '''))
    cells = [(j.track, j.attack, j.seed) for j in grid.jobs]
    assert cells == [("digits", "mi-face", 0), ("digits", "mi-face", 1), ("digits", "deepdream", 1),
                     ("digits-mlp", "mi-face", 0), ("digits-mlp", "mi-face", 1)]
    assert grid.not_applicable == 2  # mi-face is white-box only: the black-box cell is no job
    again = load_grid(tmp_path / "grid.toml")
    assert [j.id for j in again.jobs] == [j.id for j in grid.jobs]
    other = load_grid(tmp_path / "grid.toml", budget="paper")
    assert not {j.id for j in other.jobs} & {j.id for j in grid.jobs}  # the budget is a parameter


def test_surrogate_jobs_keep_other_ids_and_run_through_evaluate_surrogate(tmp_path):
    plain = load_grid(write_grid(tmp_path))
    grid = load_grid(write_grid(tmp_path, '''
        [[include]]
        attacks = ["mi-face", "inv-alignment"]
        scenarios = "all"
        surrogate = "aux"
    '''))
    assert [j.id for j in grid.jobs[: len(plain.jobs)]] == [j.id for j in plain.jobs]  # ids without a surrogate unchanged
    via = [j for j in grid.jobs if j.surrogate]
    # mi-face through an aux surrogate: the black-box cell with aux data only; inv-alignment is black-box already
    assert [(j.attack, j.scenario, j.seed) for j in via] == [("mi-face", "static/black-box/same", 0), ("mi-face", "static/black-box/same", 1)]
    assert grid.not_applicable == 2 and "mi-face-via-aux" in via[0].id
    from reconbench.sweep.grid import Job
    from reconbench.sweep.run import job_command

    assert Job.from_params(via[0].params()) == via[0] and "--surrogate aux" in job_command(via[0], "cpu")


def test_estimate_prices_the_gan_attacks_and_the_dfme_surrogate_on_the_grid_tracks():
    """The cost model (sweep/estimate.py) on the grid tracks: FLOPs of the real networks (64x64 CelebA;
    32x32 CIFAR-10 and zero-padded 28x28 MNIST on GMI's MNIST pair, attacks/gan/architectures.py)."""
    from reconbench.sweep.estimate import job_hours
    from reconbench.sweep.grid import Job

    cache: dict = {}
    cell, bb = "static/white-box/same", "static/black-box/same"
    plg = job_hours(Job("celeba-resnet18-n1000", "plg-mi", cell, 0, "paper"), cache)
    via = job_hours(Job("celeba-resnet18-n1000", "plg-mi", bb, 0, "paper", surrogate="dfme"), cache)
    quick = job_hours(Job("celeba-resnet18-n1000", "plg-mi", cell, 0, "quick"), cache)
    assert 0 < quick < plg < via  # stealing 2M queries adds to the attack's own cost
    small = [job_hours(Job(t, "plg-mi", cell, 0, "paper"), cache) for t in ("cifar10-resnet18-n1000", "mnist-vgg16-n1000")]
    assert all(0 < h < plg for h in small), small  # a 32x32 GAN costs less than a 64x64 one
    assert job_hours(Job("celeba-resnet18-n1000", "my.py:Mine", cell, 0, "paper"), cache) is None
    # a track outside the zoo's grid (the findings grid's Fashion-MNIST tracks) is listed, not priced
    assert job_hours(Job("fashion-n100", "plg-mi", cell, 0, "quick"), cache) is None


@pytest.mark.parametrize("text, message", [
    ("tracks = [", "not a readable TOML file"),
    ('tracks = ["digits"]\nattacks = ["mi-face"]\n[options."mi-face"]\nwarp = 9', "warp"),
    ('tracks = ["nope"]\nattacks = ["mi-face"]', "unknown track 'nope'"),
    ('tracks = ["digits"]\nattacks = ["nope"]', "unknown attack 'nope'"),
    ('tracks = ["digits"]\nattacks = ["mi-face"]\nseeds = ["0"]', "seeds.0"),
    ('tracks = ["digits"]\nattacks = ["mi-face"]\nbudget = "huge"', "budget"),
    ('tracks = ["digits"]\nattacks = ["mi-face"]\nscenarios = ["static/grey-box/none"]', "grey-box"),
    ('tracks = ["digits"]\nattacks = ["mi-face"]\ncolour = 1', "colour"),
    ('tracks = ["digits"]\nattacks = ["mi-face"]\n[options.deepdream]\niterations = 1', "not in the grid"),
])
def test_bad_grid_files_fail_with_one_line_naming_the_file(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(GridError, match=message) as info:
        load_grid(path)
    assert str(path) in str(info.value)
    res = CliRunner().invoke(app, ["sweep", str(path), "--dry-run"])
    assert res.exit_code == 1 and message.split("'")[0] in res.output and "Traceback" not in res.output


def test_cli_dry_run_lists_jobs_and_their_state(tmp_path):
    res = CliRunner().invoke(app, ["sweep", str(write_grid(tmp_path)), "--dry-run", "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    assert "4 jobs" in res.output and res.output.count("to run") == 4


def test_memorization_on_ray_gives_the_sequential_numbers(ray_instance):
    import numpy as np

    from reconbench.image.models.memorization import track_memorization
    from reconbench.core.tracks import get_track

    sequential = track_memorization(get_track("digits"), n_models=3, seed=5, epochs=1)
    spread = track_memorization(get_track("digits"), n_models=3, seed=5, epochs=1, ray=True)
    np.testing.assert_array_equal(sequential.scores, spread.scores)
    np.testing.assert_array_equal(sequential.n_in, spread.n_in)
    assert np.isfinite(sequential.model_level) and np.isfinite(sequential.scores).sum() > 100
    res = CliRunner().invoke(app, ["memorization", "--models", "3", "--seed", "5", "--epochs", "1", "--ray"])
    assert res.exit_code == 0, res.output
    assert f"memorization of 'digits': {sequential.model_level:.4f}" in res.output
