"""The text result format: reconstructions.jsonl read strictly, result.json signed, verify refuses tampering."""

import json

import pytest
from typer.testing import CliRunner

from reconbench.cli import app
from reconbench.core.envelope import ResultError
from reconbench.text.items import TextItem, jsonl_bytes
from reconbench.text.jsonl import MAX_FILE_BYTES, MAX_LINE_BYTES, TextFileError, check_ids, parse_jsonl, read_jsonl
from reconbench.text.results import parse_any_result, text_result_json_schema, verify_any_result_dir
from text_results_helpers import make_text_result

runner = CliRunner()
PAIRS = [("t-1", "The minister said on Tuesday."), ("t-2", 'Rain, "heavy" rain — <b>ünïcode</b>'), ("t-3", "")]


@pytest.fixture
def folder(tmp_path, signing_key):
    out = tmp_path / "entry"
    make_text_result(out, signing_key, PAIRS)
    return out


def test_written_result_verifies_and_reads_back(folder):
    res = runner.invoke(app, ["verify", str(folder)])
    assert res.exit_code == 0 and "OK" in res.output, res.output
    result = verify_any_result_dir(folder)
    assert result.payload.modality == "text" and result.payload.reconstructions.count == 3
    data = (folder / "reconstructions.jsonl").read_bytes()
    assert data == jsonl_bytes([TextItem(i, t) for i, t in PAIRS])
    assert read_jsonl(folder / "reconstructions.jsonl").texts == [t for _, t in PAIRS]


def test_verify_refuses_a_changed_byte_of_the_texts(folder):
    path = folder / "reconstructions.jsonl"
    path.write_bytes(path.read_bytes().replace(b"Tuesday", b"Tuesdaz"))
    res = runner.invoke(app, ["verify", str(folder)])
    assert res.exit_code != 0 and "sha256" in res.output


def test_verify_refuses_a_changed_metric_and_a_missing_file(folder):
    doc = json.loads((folder / "result.json").read_text())
    doc["payload"]["metrics"]["bleu"]["value"] = 0.9
    (folder / "result.json").write_text(json.dumps(doc))
    res = runner.invoke(app, ["verify", str(folder)])
    assert res.exit_code != 0 and "payload was changed" in res.output
    (folder / "reconstructions.jsonl").unlink()
    with pytest.raises(ResultError):
        verify_any_result_dir(folder)


def test_schema_refuses_image_metrics_ranges_coverage_and_unknown_keys(folder):
    base = json.loads((folder / "result.json").read_text())
    for path, value, needle in [
        (("metrics", "ssim"), {"value": 0.5, "status": "computed"}, "unknown text metric"),
        (("metrics", "bleu"), {"value": 1.5, "status": "computed"}, "outside its range"),
        (("metrics", "bleu"), {"value": 0.5, "coverage": 0.5, "status": "computed"}, "no coverage"),
        (("role",), "classifier", "role"),
        (("scenario",), "dynamic/white-box/none", "scenario"),
        (("reconstructions", "file"), "../x.jsonl", "reconstructions.file"),
        (("shape",), [1, 2, 3], "Extra inputs"),
    ]:
        doc = json.loads(json.dumps(base))
        node = doc["payload"]
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        (folder / "result.json").write_text(json.dumps(doc))
        with pytest.raises(ResultError, match=needle):
            parse_any_result(folder / "result.json")


def test_the_text_schema_is_exported():
    schema = text_result_json_schema()
    assert schema["title"] == "ReconBench text result file"
    res = runner.invoke(app, ["schema", "--text"])
    assert res.exit_code == 0 and json.loads(res.output)["$defs"]["TextPayload"]["properties"]["modality"]


GOOD = jsonl_bytes([TextItem("a", "x"), TextItem("b", "y")])


@pytest.mark.parametrize("data, needle", [
    (b"", "empty"),
    (b"\xef\xbb\xbf" + GOOD, "byte-order mark"),
    (GOOD.replace(b'"x"', b'"\xff"'), "not valid UTF-8"),
    (GOOD[:-1], "no terminating newline"),
    (GOOD + b"\n", "blank line"),
    (b'{"id": "a", "id": "b", "text": "x"}\n', "duplicate key"),
    (GOOD + GOOD[:GOOD.index(b"\n") + 1], "duplicate id"),
    (b'{"id": "a", "text": "x", "extra": 1}\n', "exactly the keys"),
    (b'["a", "x"]\n', "exactly the keys"),
    (b'{"id": "a", "text": 5}\n', "text must be a string"),
    (b'{"id": "a b", "text": "x"}\n', "id must be"),
    (b'{"id": "a", "text": "\\ud800"}\n', "lone surrogate"),
    (b'{"id": "a", "text": "x\\u0000"}\n', "NUL"),
    (b'{"id": "a", "text": NaN}\n', "not one JSON object"),
    (b'{"text": "x", "id": "a"}\n', "canonical form"),
    (b'{"id": "a", "text": "\\u00e9"}\n', "canonical form"),
    (b'{"id":"a","text":"x"}\n', "canonical form"),
    (b'{"id": "a", "text": "x"}\r\n', "canonical form"),
    (jsonl_bytes([TextItem("a", "x" * MAX_LINE_BYTES)]), "cap for one reconstruction"),
])
def test_strict_reading_refuses(data, needle):
    with pytest.raises(TextFileError, match=needle):
        parse_jsonl(data, "recs.jsonl")


def test_huge_file_refused_before_reading(tmp_path):
    path = tmp_path / "reconstructions.jsonl"
    with open(path, "wb") as f:  # sparse: costs nothing on disk
        f.truncate(MAX_FILE_BYTES + 1)
    with pytest.raises(TextFileError, match="over the"):
        read_jsonl(path)
    link = tmp_path / "link.jsonl"
    link.symlink_to(path)
    with pytest.raises(TextFileError, match="not a regular file"):
        read_jsonl(link)


def test_ids_must_be_exactly_the_targets_in_order():
    recs = parse_jsonl(GOOD)
    check_ids(recs, ["a", "b"], "r")
    with pytest.raises(TextFileError, match="have no reconstruction"):
        check_ids(recs, ["a", "b", "c"], "r")
    with pytest.raises(TextFileError, match="not target ids"):
        check_ids(recs, ["a"], "r")
    with pytest.raises(TextFileError, match="target order"):
        check_ids(recs, ["b", "a"], "r")
