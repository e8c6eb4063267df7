"""team.toml: a team's display name, links, contact and the ed25519 public keys it signs with.

```toml
name = "ReconBench baselines"
links = ["https://github.com/example/reconbench"]
contact = "maintainers@example.org"   # optional
keys = [
  { key = "base64 of the 32-byte ed25519 public key", added = 2026-11-29 },
  { key = "...", added = 2026-11-29, removed = 2026-12-24 },   # rotated out: still vouches for older entries
]
```

The folder name is the team's slug (its identity); it is not repeated in the file.

Keys are history: each carries the date it was added (`recon-submit submit` writes it) and, once
rotated out, the date it was removed; a removed key stays in the file. An entry is valid under the
key that signed it when that key was listed on the entry's date (the day it reached the board:
see board.Board.entry_day), so rotating a key out never invalidates what it signed before. A bare
string (the older form) is a key listed since forever and never removed. Every key a pull request
adds or removes is flagged for maintainer review in the validation report (report.key_changes).
"""

from __future__ import annotations

import base64
import binascii
import os
import stat
import tomllib
from datetime import date
from pathlib import Path
from typing import Annotated

import tomli_w
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator

from reconbench.core.io import atomic_path
from reconbench.submissions.layout import SIZE_CAPS, TEAM_FILE, TEAM_SLUG, is_plain_text, show

MAX_KEYS = 16  # rotation and a few members' keys; a list longer than this is a mistake or abuse
MAX_LINKS = 10


class TeamError(Exception):
    """A team.toml that is missing, too large, not TOML, or not of the team schema."""


def _plain(text: str) -> str:
    if not is_plain_text(text):
        raise ValueError("must be NFC-normalised text without control or format characters "
                         "(no bidi overrides or zero-width characters)")
    if text != text.strip() or not text:
        raise ValueError("must be non-empty, without leading or trailing spaces")
    return text


def _https(url: str) -> str:
    if not url.startswith("https://") or any(c.isspace() for c in url) or not url.isascii():
        raise ValueError(f"links must be https:// URLs in ASCII, got {show(url)!r}")
    return url


def _ed25519_key(value: str) -> str:
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("keys must be base64 ed25519 public keys (recon-submit keygen prints one)") from None
    if len(raw) != 32:
        raise ValueError(f"an ed25519 public key is 32 bytes, this one is {len(raw)}")
    return value


DisplayText = Annotated[str, StringConstraints(max_length=80), AfterValidator(_plain)]
Link = Annotated[str, StringConstraints(max_length=300), AfterValidator(_https)]
PublicKey = Annotated[str, StringConstraints(max_length=64), AfterValidator(_ed25519_key)]
Slug = Annotated[str, StringConstraints(pattern=TEAM_SLUG.pattern)]


class KeyRecord(BaseModel):
    """One listed key and its history (dates in UTC; `removed` absent while it is in use)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: PublicKey
    added: date | None = None  # None: a bare string of the older form, listed since forever
    removed: date | None = None

    def listed_on(self, day: date) -> bool:
        return (self.added is None or self.added <= day) and (self.removed is None or day < self.removed)


class Team(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    slug: Slug
    name: DisplayText
    links: list[Link] = Field(default_factory=list, max_length=MAX_LINKS)
    contact: Annotated[str, StringConstraints(max_length=200), AfterValidator(_plain)] | None = None
    # In team.toml and in the schema this is `keys`: a list of base64 keys or {key, added, removed}.
    records: list[KeyRecord] = Field(alias="keys", min_length=1, max_length=MAX_KEYS)

    @field_validator("records", mode="before")
    @classmethod
    def _bare_strings(cls, value):
        return [{"key": k} if isinstance(k, str) else k for k in value] if isinstance(value, list) else value

    @property
    def keys(self) -> list[str]:
        """Every key the file lists, removed ones included (each vouches for its own dates)."""
        return [r.key for r in self.records]

    @property
    def current_keys(self) -> list[str]:
        return [r.key for r in self.records if r.removed is None]

    def record(self, key: str) -> KeyRecord | None:
        return next((r for r in self.records if r.key == key), None)

    def with_key(self, key: str, today: date) -> "Team":
        data = self.model_dump()
        return Team.model_validate({**data, "records": [*data["records"], {"key": key, "added": today}]})

    def toml_dict(self) -> dict:
        data = {"name": self.name, "links": list(self.links)}
        if self.contact is not None:
            data["contact"] = self.contact
        data["keys"] = [r.key if r.added is None and r.removed is None
                        else {k: v for k, v in r.model_dump().items() if v is not None} for r in self.records]
        return data


def new_team(slug: str, name: str, links: list[str], contact: str | None, key: str, today: date) -> Team:
    return Team(slug=slug, name=name, links=links, contact=contact, keys=[{"key": key, "added": today}])


def team_file(path: Path) -> Path:
    path = Path(path)
    return path if path.name == TEAM_FILE else path / TEAM_FILE


def read_capped(path: Path, cap: int) -> bytes:
    """The bytes of a regular file (not a link, FIFO or device) no larger than `cap`, size checked first."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise TeamError(f"{path}: file not found") from None
    except OSError as exc:
        raise TeamError(f"{path}: cannot be read ({exc.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise TeamError(f"{path}: not a regular file")
    if st.st_nlink > 1:
        raise TeamError(f"{path}: has {st.st_nlink} hard links (refused: it may be a file outside submissions/)")
    if st.st_size > cap:
        raise TeamError(f"{path}: {st.st_size} bytes, over the {cap}-byte limit")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
    with os.fdopen(os.open(path, flags), "rb") as f:
        data = f.read(cap + 1)
    if len(data) > cap:
        raise TeamError(f"{path}: over the {cap}-byte limit")
    return data


def load_team(path: Path) -> Team:
    """Parse `<team>/team.toml` (or the team folder); raises TeamError with the file and the problem."""
    file = team_file(path)
    data = read_capped(file, SIZE_CAPS[TEAM_FILE])
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TeamError(f"{file}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TeamError(f"{file}: malformed TOML ({exc})") from None
    except RecursionError:
        raise TeamError(f"{file}: malformed TOML (nested too deeply)") from None
    if not isinstance(raw, dict) or "slug" in raw:
        raise TeamError(f"{file}: expected a table with name, links, contact, keys (the slug is the folder name)")
    try:
        team = Team.model_validate({**raw, "slug": file.parent.name})
    except ValidationError as exc:
        if exc.errors()[0]["loc"][:1] == ("slug",):
            raise TeamError(f"{file}: team folder name {show(file.parent.name)!r} must match [a-z0-9-] "
                            "(no capitals, dots or non-ASCII)") from None
        raise TeamError(f"{file}: {all_errors(exc)}") from None
    if len(set(team.keys)) != len(team.keys):
        raise TeamError(f"{file}: a key is listed twice (one entry per key: its dates say when it was in use)")
    for r in team.records:
        if r.added and r.removed and r.removed < r.added:
            raise TeamError(f"{file}: key {key_id_of(r.key)} removed ({r.removed}) before it was added ({r.added})")
    return team


def key_id_of(public: str) -> str:
    from reconbench.core.signing import key_id

    return key_id(public)


def all_errors(exc: ValidationError, limit: int = 5) -> str:
    """Every problem (up to `limit`), each as `field: message`, so one run shows what to fix."""
    parts = [f"{'.'.join(str(p) for p in e['loc']) or '(top level)'}: {e['msg']}" for e in exc.errors()[:limit]]
    more = exc.error_count() - limit
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def write_team(folder: Path, team: Team) -> Path:
    """Write team.toml atomically (the file appears whole or not at all)."""
    file = team_file(folder)
    with atomic_path(file) as tmp:
        tmp.write_text(tomli_w.dumps(team.toml_dict()), encoding="utf-8")
        os.chmod(tmp, 0o644)  # a public file (mkstemp creates 0600)
    return file
