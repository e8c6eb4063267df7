"""The SoK's text grid in registry/text_tracks.json: generated (not typed), pinned bases, listed as planned."""

import json

import pytest
from typer.testing import CliRunner

from reconbench.cli import app
from reconbench.core.console import invoked_as
from reconbench.text.grid import (GPT2_BASE, SIZES, grid_rows, main, parse_text_track_id, regenerated,
                                  text_track_id)
from reconbench.text.tracks import TextRegistry, TextTrack, all_text_tracks, get_text_track, text_registry_path
from reconbench.core.tracks import TrackError
from reconbench.zoo import ZooError

runner = CliRunner()


def test_grid_is_the_sok_text_study():
    rows = grid_rows()
    assert len(rows) == len({r["id"] for r in rows}) == 18
    assert {(r["dataset"], r["train_size"]) for r in rows} == {(d, n) for d in ("sst2", "agnews", "imdb") for n in SIZES}
    assert SIZES == (1000, 2000, 5000, 10000, 15000, 20000)
    for row in rows:
        track = TextTrack.model_validate(row)
        assert track.status == "unpublished" and track.prompt_words == 3
        assert track.model("generator").architecture == "gpt2" and track.model("generator").config["epochs"] == 20
        assert track.model("embedder").architecture == "gtr-t5"
        assert track.model("embedder").base.startswith("sentence-transformers/gtr-t5-base")
        assert track.model("generator").base == f"{GPT2_BASE['repo']}@{GPT2_BASE['revision']}"
        assert parse_text_track_id(track.id)[1] == track.train_size
    sst2 = next(r for r in rows if r["id"] == "sst2-n1000")
    assert "column `sentence` of stanfordnlp/sst2" in sst2["derivation"]
    imdb = next(r for r in rows if r["id"] == "imdb-n20000")
    assert "column `text` of stanfordnlp/imdb" in imdb["derivation"] and "plain_text/train" in imdb["derivation"]


def test_packaged_text_registry_holds_the_generated_grid():
    current = json.loads(text_registry_path().read_text())
    assert current == regenerated(current)
    TextRegistry.model_validate(current)
    assert main(["--check"]) == 0
    ids = {t.id for t in all_text_tracks()}
    assert {text_track_id(d, n) for d in ("sst2", "agnews", "imdb") for n in SIZES} <= ids
    with pytest.raises(TrackError, match="not published yet"):
        get_text_track("agnews-n5000").require_runnable()


def test_regenerating_keeps_other_rows_and_published_grid_rows():
    lee = {"id": "lee-news", "status": "embedded", "title": "kept as is"}
    published = dict(grid_rows()[3], status="published", title="published, kept")
    stale = dict(grid_rows()[4], title="a stale unpublished row is regenerated")
    new = regenerated({"tracks": [published, lee, stale]})
    assert new["tracks"][0] == lee and len(new["tracks"]) == 19
    by_id = {t["id"]: t for t in new["tracks"]}
    assert by_id[published["id"]] == published and by_id[stale["id"]] == grid_rows()[4]


@pytest.mark.parametrize("bad", ["sst2", "sst2-n123", "mnist-n1000", "sst2-n1000-x", "SST2-n1000"])
def test_bad_text_track_ids_are_refused(bad):
    with pytest.raises(ZooError):
        parse_text_track_id(bad)


def test_tracks_lists_text_tracks_as_planned():
    res = runner.invoke(app, ["tracks"], env={"COLUMNS": "250"})
    assert res.exit_code == 0 and "sst2-n1000" not in res.output
    assert f"18 planned text tracks not shown: {invoked_as()} tracks --all" in res.output  # as it runs in this shell
    res = runner.invoke(app, ["tracks", "--all"], env={"COLUMNS": "250"})
    assert res.exit_code == 0 and "text tracks (" in res.output
    assert all(text_track_id(d, n) in res.output for d in ("sst2", "agnews", "imdb") for n in SIZES)
    assert "gpt2 / gtr-t5" in res.output


def test_a_text_track_may_not_take_an_image_tracks_id(tmp_path, monkeypatch):
    """A registry that names a text track `digits` would send `evaluate --track digits` down the text
    pipeline: refused on load, naming the file and the id."""
    row = json.loads(text_registry_path().read_text())["tracks"][0] | {"id": "digits"}
    forged = tmp_path / "text_tracks.json"
    forged.write_text(json.dumps({"schema_version": 1, "tracks": [row]}))
    monkeypatch.setenv("RECONBENCH_TEXT_REGISTRY", str(forged))
    with pytest.raises(TrackError, match=r"text_tracks.json: text track id\(s\) also used by an image track: digits"):
        all_text_tracks()
