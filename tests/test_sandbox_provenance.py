"""provenance.sandbox (issue 23): "none" or "bubblewrap <version>", signed; results made before the
field existed (no field) still validate and read as not sandboxed."""

from __future__ import annotations

import pytest
from submission_helpers import failure, fresh_board, status


@pytest.fixture
def board(tmp_path_factory, tmp_path):
    return fresh_board(tmp_path_factory, tmp_path)


@pytest.mark.parametrize("value, sandboxed", [("none", False), ("bubblewrap 0.8.0", True), (None, False)])
def test_validate_accepts_none_a_bubblewrap_version_and_absence(board, value, sandboxed):
    def mutate(payload):
        payload["provenance"].pop("sandbox", None)
        if value is not None:
            payload["provenance"]["sandbox"] = value

    board.resign(mutate)
    report = board.only()
    assert report.trust == "signed", [c.to_dict() for c in report.checks]
    assert status(report, "schema") == "pass"
    assert report.result.payload.provenance.sandbox == value
    assert report.result.payload.provenance.sandboxed is sandboxed
    # absent stays absent in the signed form (the signature of an old result covers no such key)
    assert ("sandbox" in report.result.payload.model_dump(mode="json")["provenance"]) is (value is not None)


@pytest.mark.parametrize("value", ["", "bubblewrap", "firejail 0.9", "bubblewrap 0.8.0; rm -rf /", "None"])
def test_any_other_sandbox_value_is_refused_by_the_schema(board, value):
    board.resign(lambda p: p["provenance"].update(sandbox=value))
    check = failure(board.only())
    assert check.name == "schema" and "sandbox" in check.message


def test_the_field_is_part_of_the_published_schema():
    from reconbench.image.results import result_json_schema

    schema = result_json_schema()
    assert "sandbox" in schema["$defs"]["Provenance"]["properties"]
    assert "sandbox" not in schema["$defs"]["Provenance"].get("required", [])
