"""Reading and atomically rewriting a registry file (registry/zoo.json, or a copy via --registry).

Several people may touch a registry at once: `upsert_track` re-reads the file right before it
writes, replaces (or appends) only the one entry, validates the result against the registry's
schema, and renames a complete temporary file over the old one, so a reader never sees half a file.
"""

from __future__ import annotations

import json
from pathlib import Path

from reconbench.core.io import FileFormatError, atomic_path, read_json


def read_registry_file(path: Path) -> dict:
    data = read_json(path, missing="registry file not found", invalid="not a valid registry file")
    if not isinstance(data, dict) or not isinstance(data.get("tracks"), list):
        raise FileFormatError(f"{path}: a registry is {{\"schema_version\": 1, \"tracks\": [...]}}")
    return data


def dump_registry(data: dict) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def write_registry_file(path: Path, data: dict, schema: type | None = None) -> None:
    """`schema`: the pydantic model of the whole file (default the image Registry; text: TextRegistry)."""
    from pydantic import ValidationError

    from reconbench.core.tracks import Registry

    try:
        (schema or Registry).model_validate(data)
    except ValidationError as exc:
        raise FileFormatError(f"{path}: refusing to write an invalid registry ({exc.errors()[0]['msg']} at "
                              f"{'.'.join(map(str, exc.errors()[0]['loc']))})") from None
    ids = [t["id"] for t in data["tracks"]]
    if len(ids) != len(set(ids)):
        raise FileFormatError(f"{path}: refusing to write duplicate track ids")
    with atomic_path(Path(path)) as tmp:
        tmp.write_text(dump_registry(data), encoding="utf-8")


def upsert_track(path: Path, entry: dict, schema: type | None = None) -> None:
    """Put `entry` into the registry at `path` (creating the file if needed), touching no other entry."""
    path = Path(path)
    data = read_registry_file(path) if path.exists() else {"schema_version": 1, "tracks": []}
    tracks = data["tracks"]
    for i, track in enumerate(tracks):
        if track.get("id") == entry["id"]:
            tracks[i] = entry
            break
    else:
        tracks.append(entry)
    write_registry_file(path, data, schema)


def regenerate_file(path: Path, regenerate, *, check: bool, module: str, schema: type | None = None) -> int:
    """Rewrite a generated registry file with `regenerate(current)`, or with check=True only say whether
    it is up to date (exit status 1 if not). `module` names the command that regenerates it."""
    path = Path(path)
    current = read_registry_file(path) if path.exists() else None
    new = regenerate(current)
    if check:
        ok = current is not None and dump_registry(current) == dump_registry(new)
        print(f"{path}: {'up to date' if ok else f'out of date: run python -m {module}'}")
        return 0 if ok else 1
    write_registry_file(path, new, schema)
    print(f"{path}: {len(new['tracks'])} tracks")
    return 0
