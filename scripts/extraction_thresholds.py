"""Write each image track's extraction calibration into the registry (tracks.json, fashion.json).

    nice -n 10 python scripts/extraction_thresholds.py [TRACK ...]

For every published or embedded image track (or those named): the threshold and pair rate that
reconbench.image.metrics.extraction.calibrate computes on the track's whole public dataset, as the
track's `extraction` object. Tracks of one dataset and view share one calibration (computed once).
Exact and deterministic: a re-run writes the same bytes. Fashion-MNIST's 70,000 images take a few
CPU minutes (brute-force same-class distances). A calibration that changes is kept, constants only, in
the track's `retired_extraction`: entries signed at it still validate (their count is re-scored at the new
one), and a count at constants the registry never held is refused (submissions/checks/rescore.py).
"""

from __future__ import annotations

import json
import math
import sys
from importlib import resources
from pathlib import Path

from reconbench.core.io import atomic_path
from reconbench.core.tracks import Track
from reconbench.image.metrics.extraction import calibrate_pixels, dataset_sha256, informative
from reconbench.image.track_files import public_dataset

FILES = ("tracks.json", "fashion.json")


def main(argv: list[str]) -> int:
    wanted = set(argv)
    done: dict[str, dict] = {}
    for name in FILES:
        path = Path(str(resources.files("reconbench") / "registry" / name))
        data = json.loads(path.read_text(encoding="utf-8"))
        for row in data["tracks"]:
            if row.get("status") == "unpublished" or (wanted and row["id"] not in wanted):
                continue
            images, labels = public_dataset(Track.model_validate(row))
            flat, dim = informative(images), math.prod(images.shape[1:])
            key = dataset_sha256(flat, labels)  # a padded view shares the unpadded one's distances
            if key not in done:
                done[key] = calibrate_pixels(flat, labels, dim) | {"dim": dim}
            cal = dict(done[key])
            # per-pixel MSE is the squared grey-level distance over the view's pixel count
            cal["threshold"] = cal["threshold"] * cal["dim"] / dim
            if "tail" in cal:
                cal["tail"] = cal["tail"] | {"anchor": cal["tail"]["anchor"] * cal["dim"] / dim}
            del cal["dim"]
            old = row.get("extraction")
            if old is not None and (old["threshold"], old["pair_rate"]) != (cal["threshold"], cal["pair_rate"]):
                retired = row.setdefault("retired_extraction", [])
                if not any((r["threshold"], r["pair_rate"]) == (old["threshold"], old["pair_rate"]) for r in retired):
                    retired.append({"threshold": old["threshold"], "pair_rate": old["pair_rate"],
                                    "until": "replaced by a later run of scripts/extraction_thresholds.py"})
            row["extraction"] = cal | {"dataset_sha256": dataset_sha256(images, labels)}
            print(f"{row['id']}: threshold {cal['threshold']:.6g}, pair rate {cal['pair_rate']:.3g}", flush=True)
        text = path.read_text(encoding="utf-8")
        if text != json.dumps(json.loads(text), indent=2) + "\n":  # hand-formatted (tracks.json): keep its layout
            for row in data["tracks"]:
                for key in ("extraction", "retired_extraction"):
                    if key in row:
                        text = with_key(text, row["id"], key, row[key])
            assert json.loads(text) == data, f"{path}: the edited text does not parse to the registry written"
        else:
            text = json.dumps(data, indent=2) + "\n"
        with atomic_path(path) as tmp:
            tmp.write_text(text, encoding="utf-8")
    return 0


def with_key(text: str, track_id: str, key: str, value: dict) -> str:
    """`text` with `key` set to `value` (one line) as the last key of the track object of `track_id`, the
    rest of the file byte for byte: a track object is the lines from its "id" to its closing "    }"."""
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if line.strip().startswith(f'"id": {json.dumps(track_id)}'))
    end = next(i for i in range(start, len(lines)) if lines[i].rstrip(",") == "    }")
    entry = f"      {json.dumps(key)}: {json.dumps(value)}"
    old = next((i for i in range(start, end) if lines[i].startswith(f"      {json.dumps(key)}:")), None)
    if old is not None:
        lines[old] = entry + ("," if lines[old].endswith(",") else "")
    else:
        lines[end - 1] += ","
        lines.insert(end, entry)
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
